package slackfake

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Streaming messages (chat.startStream, chat.appendStream, chat.stopStream):
// the way a Slack AI app shows its work since 2025 — a message in a thread
// that grows by chunks (markdown_text, task_update cards with sources,
// plan_update, blocks) and ends with optional final blocks. Facts modelled
// here are in shared/slack-facts.md ("Agent messages"): thread_ts is
// required, channels (not DMs) need recipient_user_id and
// recipient_team_id, task_display_mode is timeline (default) or plan, a
// task card source needs text and a url of at most 3,000 characters, a
// blocks chunk holds at most 50 blocks, markdown_text and chunks are
// exclusive, and a stopped stream takes no more chunks.

// WithoutStreaming makes the streaming methods answer code (for example
// unknown_method, as a Slack that does not serve them does, or
// missing_scope), for tests of a bot's fallback; "" serves them (the
// default).
func WithoutStreaming(code string) Option { return func(c *config) { c.noStreaming = code } }

// Stream is a streaming message as the fake saw it.
type Stream struct {
	Channel       string
	TS            string
	ThreadTS      string
	DisplayMode   string // "timeline" or "plan"
	RecipientUser string
	RecipientTeam string
	Chunks        []json.RawMessage // every chunk appended, in order (markdown_text from start/append as chunks too)
	FinalBlocks   json.RawMessage   // the blocks chat.stopStream ended it with
	Open          bool
	StartedAt     time.Time
	StoppedAt     time.Time
	AppendCalls   int
	AppendedAt    []time.Time // when the fake took each chat.appendStream, in order
}

// Tasks returns the last state of each task card of a stream by id, in
// the order the cards first appeared.
func (st Stream) Tasks() []TaskCard {
	var order []string
	cards := map[string]TaskCard{}
	for _, raw := range st.Chunks {
		var c TaskCard
		if json.Unmarshal(raw, &c) != nil || c.Type != "task_update" {
			continue
		}
		if _, ok := cards[c.ID]; !ok {
			order = append(order, c.ID)
		}
		cards[c.ID] = c
	}
	out := make([]TaskCard, 0, len(order))
	for _, id := range order {
		out = append(out, cards[id])
	}
	return out
}

// PlanTitle returns the last plan_update title of a stream.
func (st Stream) PlanTitle() string {
	title := ""
	for _, raw := range st.Chunks {
		var c struct{ Type, Title string }
		if json.Unmarshal(raw, &c) == nil && c.Type == "plan_update" {
			title = c.Title
		}
	}
	return title
}

// TaskCard is a task_update chunk.
type TaskCard struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Title   string       `json:"title"`
	Status  string       `json:"status,omitempty"`
	Details string       `json:"details,omitempty"`
	Output  string       `json:"output,omitempty"`
	Sources []TaskSource `json:"sources,omitempty"`
}

// TaskSource is a source on a task card.
type TaskSource struct {
	Type string `json:"type"`
	URL  string `json:"url"`
	Text string `json:"text"`
}

var taskStatuses = []string{"pending", "in_progress", "complete", "error"}

// maxSourceURL bounds a task card source's url. Slack documents no limit
// for the url source element; Block Kit's other url fields (a button's
// url, an image's) take at most 3,000 characters, and a longer URL in a
// block is refused (slack-facts.md). The fake refuses a longer source url
// with invalid_chunks: the strict choice.
const maxSourceURL = 3000

// validateChunks checks a chunks parameter as Slack does and returns the
// chunks, or an error code.
func validateChunks(raw string) ([]json.RawMessage, string) {
	if raw == "" {
		return nil, ""
	}
	var chunks []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &chunks); err != nil {
		return nil, "invalid_chunks"
	}
	for _, c := range chunks {
		if e := validateChunk(c); e != "" {
			return nil, e
		}
	}
	return chunks, ""
}

// validateChunk checks one chunk; the error code, "" when it is valid.
func validateChunk(c json.RawMessage) string {
	var head struct {
		Type   string            `json:"type"`
		Text   *string           `json:"text"`
		ID     string            `json:"id"`
		Title  string            `json:"title"`
		Status string            `json:"status"`
		Blocks []json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal(c, &head); err != nil {
		return "invalid_chunks"
	}
	switch head.Type {
	case "markdown_text":
		if head.Text == nil {
			return "invalid_chunks"
		}
	case "task_update":
		return validateTaskCard(c)
	case "plan_update":
		if head.Title == "" {
			return "invalid_chunks"
		}
	case "blocks":
		if len(head.Blocks) == 0 || len(head.Blocks) > maxBlocks {
			return "invalid_blocks"
		}
		b, _ := json.Marshal(head.Blocks)
		return validateBlocks(string(b))
	default:
		return "invalid_chunks"
	}
	return ""
}

// validateTaskCard checks a task_update chunk: an id, a title, a known
// status, and sources that are URLs with text.
func validateTaskCard(c json.RawMessage) string {
	var card TaskCard
	if err := json.Unmarshal(c, &card); err != nil || card.ID == "" || card.Title == "" {
		return "invalid_chunks"
	}
	if card.Status != "" && !slices.Contains(taskStatuses, card.Status) {
		return "invalid_chunks"
	}
	for _, src := range card.Sources {
		if strings.TrimSpace(src.Text) == "" || src.URL == "" {
			return "invalid_chunks" // a source without text is rejected
		}
		if src.Type != "url" || utf8.RuneCountInString(src.URL) > maxSourceURL {
			return "invalid_chunks"
		}
	}
	return ""
}

// streamChunks reads markdown_text and chunks of a streaming call.
func streamChunks(r *apiRequest) ([]json.RawMessage, string) {
	chunks, e := validateChunks(r.get("chunks"))
	if e != "" {
		return nil, e
	}
	if md := r.get("markdown_text"); md != "" {
		if len(chunks) > 0 {
			// One or the other (hermes-agent#104173; a probe against
			// Slack in vercel/chat#886 saw no other chunk refused).
			return nil, "cannot_provide_both_markdown_text_and_chunks"
		}
		b, _ := json.Marshal(map[string]string{"type": "markdown_text", "text": md})
		chunks = []json.RawMessage{b}
	}
	return chunks, ""
}

func (s *Server) chatStartStream(r *apiRequest) apiResult {
	if s.cfg.noStreaming != "" {
		return fail(s.cfg.noStreaming)
	}
	channel, threadTS := r.get("channel"), r.get("thread_ts")
	if channel == "" {
		return fail("channel_not_found")
	}
	if threadTS == "" {
		return fail("invalid_arguments")
	}
	mode := r.get("task_display_mode")
	if mode == "" {
		mode = "timeline"
	}
	if mode != "timeline" && mode != "plan" {
		return fail("invalid_arguments")
	}
	chunks, e := streamChunks(r)
	if e != "" {
		return fail(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	channel = s.resolveChannelLocked(channel)
	// In channels a stream is addressed to the user it answers (the
	// method's reference; the error codes as reported in openclaw#20988).
	if !strings.HasPrefix(channel, "D") {
		switch {
		case r.get("recipient_team_id") == "":
			return fail("missing_recipient_team_id")
		case r.get("recipient_user_id") == "":
			return fail("missing_recipient_user_id")
		}
	}
	m := &Message{Channel: channel, TS: s.nextTSLocked(), ThreadTS: threadTS, User: s.cfg.botUserID, BotID: s.cfg.botID, PostedAt: time.Now(), Params: map[string]string{"streaming": "true"}}
	m.Blocks = withChunkBlocks(m.Blocks, chunks)
	s.addMessageLocked(m)
	st := &Stream{Channel: channel, TS: m.TS, ThreadTS: threadTS, DisplayMode: mode, RecipientUser: r.get("recipient_user_id"),
		RecipientTeam: r.get("recipient_team_id"), Chunks: chunks, Open: true, StartedAt: time.Now()}
	s.streams = append(s.streams, st)
	s.notifyLocked()
	return ok(map[string]any{"channel": channel, "ts": m.TS})
}

func (s *Server) streamLocked(channel, ts string) *Stream {
	for _, st := range s.streams {
		if st.Channel == channel && st.TS == ts {
			return st
		}
	}
	return nil
}

// openStreamLocked finds the stream the request names, or the error to
// answer with when there is none or it has stopped.
func (s *Server) openStreamLocked(r *apiRequest) (*Stream, string) {
	st := s.streamLocked(s.resolveChannelLocked(r.get("channel")), r.get("ts"))
	switch {
	case st == nil:
		return nil, "message_not_found"
	case !st.Open:
		return nil, "message_not_in_streaming_state"
	}
	return st, ""
}

func (s *Server) chatAppendStream(r *apiRequest) apiResult {
	return s.streamMore(r, func(chunks []json.RawMessage) string {
		if len(chunks) == 0 {
			return "invalid_arguments"
		}
		return ""
	}, func(st *Stream) {
		st.AppendCalls++
		st.AppendedAt = append(st.AppendedAt, time.Now())
	})
}

func (s *Server) chatStopStream(r *apiRequest) apiResult {
	blocks := r.get("blocks")
	return s.streamMore(r, func([]json.RawMessage) string { return validateBlocks(blocks) }, func(st *Stream) {
		st.FinalBlocks = rawJSON(blocks)
		st.Open, st.StoppedAt = false, time.Now()
		if m := s.findMessageLocked(st.Channel, st.TS); m != nil && len(st.FinalBlocks) > 0 {
			m.Blocks = st.FinalBlocks
		}
	})
}

// streamMore adds the request's chunks to the open stream it names, then has
// change do the rest under the lock; check refuses a request first.
func (s *Server) streamMore(r *apiRequest, check func(chunks []json.RawMessage) string, change func(st *Stream)) apiResult {
	if s.cfg.noStreaming != "" {
		return fail(s.cfg.noStreaming)
	}
	chunks, e := streamChunks(r)
	if e != "" {
		return fail(e)
	}
	if e := check(chunks); e != "" {
		return fail(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, e := s.openStreamLocked(r)
	if e != "" {
		return fail(e)
	}
	st.Chunks = append(st.Chunks, chunks...)
	if m := s.findMessageLocked(st.Channel, st.TS); m != nil {
		m.Blocks = withChunkBlocks(m.Blocks, chunks)
	}
	change(st)
	s.notifyLocked()
	return ok(map[string]any{"channel": st.Channel, "ts": st.TS})
}

// withChunkBlocks adds the blocks of blocks chunks to a streaming
// message's blocks: what people see (and click) while it streams, until
// chat.stopStream's final blocks replace them.
func withChunkBlocks(blocks json.RawMessage, chunks []json.RawMessage) json.RawMessage {
	var all []json.RawMessage
	if len(blocks) > 0 && json.Unmarshal(blocks, &all) != nil {
		return blocks
	}
	added := false
	for _, raw := range chunks {
		var c struct {
			Type   string            `json:"type"`
			Blocks []json.RawMessage `json:"blocks"`
		}
		if json.Unmarshal(raw, &c) == nil && c.Type == "blocks" {
			all = append(all, c.Blocks...)
			added = true
		}
	}
	if !added {
		return blocks
	}
	out, _ := json.Marshal(all)
	return out
}

// Streams returns the streaming messages the bot started, in order.
func (s *Server) Streams() []Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Stream, 0, len(s.streams))
	for _, st := range s.streams {
		cp := *st
		cp.Chunks = slices.Clone(st.Chunks)
		cp.AppendedAt = slices.Clone(st.AppendedAt)
		out = append(out, cp)
	}
	return out
}
