package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"deepresearch/agent/links"
	"deepresearch/clock"
	"deepresearch/research"

	"github.com/slack-go/slack"
	"golang.org/x/net/idna"
)

// runStatus shows a run's progress in its thread: a streamed plan of task
// cards (streamStatus) where the workspace serves Slack's streaming
// methods, else the edited status message (statusMessage).
type runStatus interface {
	// Progress records a new progress snapshot (the ProgressSink).
	Progress(research.Progress)
	// setProgress replaces the snapshot without showing it.
	setProgress(research.Progress)
	lastProgress() research.Progress
	// setResult gives the final picture the report's summary.
	setResult(research.Result)
	// Final shows the last picture of a turn: waiting, done, failed or
	// cancelled.
	Final(ctx context.Context, state research.RunState, note string) error
	// halt stops showing progress; what was shown stays as it is (another
	// process may continue the run).
	halt()
}

func (s *statusMessage) setProgress(p research.Progress) {
	s.mu.Lock()
	s.view.Progress = p
	s.mu.Unlock()
}

// setResult does nothing: the report's summary goes with the file.
func (s *statusMessage) setResult(research.Result) {}

// Limits of what a stream shows.
const (
	appendsPerMinute = 100 // chat.appendStream is Tier 4 (100+ a minute per workspace)
	// chat.startStream and chat.stopStream are Tier 2 (20+ a minute per
	// workspace, each): a run that finds no start token is shown with a
	// status message instead of meeting a 429, and a stop waits for one.
	streamCallsPerMinute = 20
	appendBurst          = 20
	maxCardSources       = 20  // sources on one task card
	maxCardTitle         = 150 // runes of a card's or the plan's title
	maxSourceText        = 120
	// maxSourceURL bounds a card source's URL (characters). Slack refuses
	// a chunk whose source url passes 3,000 characters (Block Kit's url
	// limit, slack-facts.md), and every card is re-sent as it changes: a
	// longer URL (tracking junk, a page built to be long) is left off the
	// card; the report lists it.
	maxSourceURL = 1000
)

// streaming remembers, per workspace (team id), whether Slack serves the
// streaming methods; a workspace not yet tried is unknown.
type streaming struct {
	probe sync.Mutex // held by the first start in a workspace not yet tried
	mu    sync.Mutex
	off   map[string]bool // team id -> true: refused, false: served
}

// known returns whether streaming works in team and whether that is known.
func (s *streaming) known(team string) (on, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off, ok := s.off[team]
	return !off, ok
}

// set records the answer for team; a refusal is final for the process.
func (s *streaming) set(team string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off == nil {
		s.off = map[string]bool{}
	}
	if s.off[team] {
		return
	}
	s.off[team] = !on
}

// streamRefused reports whether err is Slack refusing a streaming method
// itself, for the whole workspace (the method is unknown or retired, the
// token lacks its scope or is of the wrong type, the workspace or its
// admins do not allow it): the workspace falls back to the edited status
// message. What a call carried (streamContentRefused) is not such a
// refusal.
func streamRefused(err error) bool {
	switch errorCode(err) {
	case "unknown_method", "method_deprecated", "deprecated_endpoint", "missing_scope", "not_allowed_token_type",
		"no_permission", "access_denied", "accesslimited", "enterprise_is_restricted", "team_access_not_granted",
		"feature_not_enabled", "not_enabled":
		return true
	}
	return false
}

// streamContentRefused reports whether Slack refused a streaming call for
// what it carried or where it went (invalid_chunks, invalid_blocks,
// msg_too_long, a channel it may not stream in, …): any answer that is not
// a refusal of the method, a stream that takes no more chunks, a rate
// limit, a server error or a connection failure. It concerns that run
// only: its stream is stopped and it shows a status message instead.
func streamContentRefused(err error) bool {
	if err == nil || transient(err) || streamRefused(err) || streamGone(err) {
		return false
	}
	switch errorCode(err) {
	case "canceled", "transport", "skipped":
		return false
	}
	return true
}

// streamGone reports whether err means the stream takes no more chunks.
func streamGone(err error) bool {
	switch errorCode(err) {
	case "message_not_in_streaming_state", "message_not_found", "cant_update_message":
		return true
	}
	return false
}

// streamStatus shows a run's progress as a streamed plan in its thread:
// the plan's title (the question), one task card per subtask with its
// searches, pages read and their sources, and at the end the outcome and
// the report's summary as the stream's final blocks. Progress snapshots
// are coalesced: a loop appends only the cards that changed, at most once
// per pace interval and within the process's append budget.
type streamStatus struct {
	b        *Bot
	run      placedRun
	interval time.Duration

	*updater
	mu    sync.Mutex
	ts    string // the live stream; "" when none could be started
	view  statusView
	res   *research.Result
	dirty bool

	// sent is what the stream shows already, by card id, and the plan's
	// title; only the loop, and Final after halt, touch them.
	sent      map[string]string
	sentTitle string
	probing   bool // openStatus's first append: a gone stream is its to handle
	resuming  bool // the run resumes (a decision, or another pickup): its stream shows more than the question

	// fallback, once set (under mu), shows the run instead of the stream:
	// Slack refused the stream's content, so the stream was stopped and
	// its message became an edited status message.
	fallback *statusMessage
}

// statuses open, show and end a run's status: a stream in the thread where
// Slack serves the streaming methods and a token is free, a status message
// otherwise (progress.go). It works for the runs (runs.go) with the bot's
// Slack client.
type statuses struct {
	bot      *Bot
	streams  streaming // per workspace: whether Slack serves the streaming methods
	replaced sync.Map  // run id -> ts of the stream started in place of its recorded one
	// creating: run id -> a channel closed once this process's newRun has
	// posted and recorded the run's status (or given up on it).
	creating sync.Map
}

// creatingStatus says that newRun is about to post the status of run id
// and returns the function that says it is done (safe to call twice). A
// message handled twice at once registers once.
func (st *statuses) creatingStatus(id string) (done func()) {
	ch := make(chan struct{})
	if _, loaded := st.creating.LoadOrStore(id, ch); loaded {
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			st.creating.Delete(id)
			close(ch)
		})
	}
}

func (st *statuses) newStreamStatus(r placedRun, ts string, v statusView) *streamStatus {
	return &streamStatus{b: st.bot, run: r, interval: st.bot.slackClient.limiter.full, ts: ts, view: v, sent: map[string]string{},
		updater: newUpdater()}
}

func (s *streamStatus) Progress(p research.Progress) {
	s.mu.Lock()
	if fb := s.fallback; fb != nil {
		s.view.Progress = p
		s.mu.Unlock()
		fb.Progress(p)
		return
	}
	if p.Theme == "" {
		p.Theme = s.view.Progress.Theme // the plan's title stays once planned
	}
	s.view.Progress = p
	s.view.State = research.StateRunning
	s.dirty = true
	s.mu.Unlock()
	s.poke()
}

func (s *streamStatus) setProgress(p research.Progress) {
	s.mu.Lock()
	s.view.Progress = p
	fb := s.fallback
	s.mu.Unlock()
	if fb != nil {
		fb.setProgress(p)
	}
}

// halt stops the stream's loop, and the status message's that replaced
// it, if any.
func (s *streamStatus) halt() {
	s.updater.halt()
	if fb := s.fallbackStatus(); fb != nil {
		fb.halt()
	}
}

func (s *streamStatus) fallbackStatus() *statusMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fallback
}

// fallBack gives up the run's stream after Slack refused its content: the
// stream is stopped (bare: what it was refused stays out) so that it is not
// left open, and the run goes on with an edited status message on the
// stream's message. The workspace keeps streaming for other runs.
func (s *streamStatus) fallBack(ctx context.Context, cause error) *statusMessage {
	if fb := s.fallbackStatus(); fb != nil {
		return fb
	}
	s.b.log.Warn("bot: slack refused this run's stream content; the run shows a status message", "run_id", s.run.ID, "err", cause)
	ts := s.liveTS()
	stopped := true
	if ts != "" {
		err := s.b.statuses.stopStream(ctx, s.run, ts, nil, nil)
		if stopped = err == nil || streamGone(err); !stopped {
			s.b.log.Warn("bot: stop the refused stream; its run's end stops it", "run_id", s.run.ID, "err", err)
		}
	} else {
		ts = s.run.StatusTS
	}
	s.mu.Lock()
	v := s.view
	fb := s.b.statuses.newStatusMessage(s.run.Key.Channel, s.run.Key.ThreadTS, ts, v)
	s.fallback = fb
	if stopped {
		s.ts = ""
	}
	s.mu.Unlock()
	fb.Progress(v.Progress)
	return fb
}

func (s *streamStatus) lastProgress() research.Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view.Progress
}

func (s *streamStatus) setResult(res research.Result) {
	s.mu.Lock()
	s.res = &res
	s.mu.Unlock()
}

func (s *streamStatus) liveTS() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ts
}

// loop appends the newest snapshot's changes, paced: after an append it
// waits the interval, so snapshots arriving meanwhile are coalesced into
// the next one; without an append token it looks again later.
func (s *streamStatus) loop() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(s.b.workCtx)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		s.mu.Lock()
		v := s.view
		s.mu.Unlock()
		if chunks, _ := s.changes(v); len(chunks) == 0 {
			continue // nothing a card shows changed
		}
		for {
			if !s.b.slackClient.appends.tryProgress() {
				if clock.Sleep(ctx, s.b.slackClient.clk, s.b.slackClient.appends.retryIn(s.interval)) != nil {
					return
				}
				continue
			}
			break
		}
		s.mu.Lock()
		v, dirty := s.view, s.dirty
		s.dirty = false
		s.mu.Unlock()
		if dirty {
			if err := s.appendChanges(ctx, v, nil); err != nil {
				if ctx.Err() != nil {
					return
				}
				if streamContentRefused(err) {
					// The same chunks would be refused again, for ever.
					s.fallBack(ctx, err)
					return
				}
				s.b.log.Warn("bot: stream append", "run_id", s.run.ID, "err", err)
				s.mu.Lock()
				s.dirty = true
				s.mu.Unlock()
				s.poke()
			}
		}
		if clock.Sleep(ctx, s.b.slackClient.clk, s.interval) != nil {
			return
		}
	}
}

// appendChanges appends the cards (and title) that changed since the last
// append, then extra; a stream Slack no longer accepts is replaced by a
// fresh one that says the run resumed.
func (s *streamStatus) appendChanges(ctx context.Context, v statusView, extra []slack.StreamChunk) error {
	chunks, commit := s.changes(v)
	chunks = append(chunks, extra...)
	if len(chunks) == 0 {
		return nil
	}
	ts := s.liveTS()
	if ts == "" {
		return nil // nothing to show it on; the final picture is posted
	}
	err := s.b.slackClient.call(ctx, "chat.appendStream", true, func(ctx context.Context) error {
		_, _, err := s.b.slackClient.api.AppendStreamContext(ctx, s.run.Key.Channel, ts, slack.MsgOptionChunks(chunks...))
		return err
	})
	if streamGone(err) && !s.probing {
		return s.restart(ctx, v, extra)
	}
	if err == nil {
		commit()
	}
	return err
}

// restart stops the stream (it may have stopped already) and starts a
// fresh one showing the whole picture and that the run resumed.
func (s *streamStatus) restart(ctx context.Context, v statusView, extra []slack.StreamChunk) error {
	if old := s.liveTS(); old != "" {
		s.b.statuses.stopStreamQuietly(ctx, s.run, old)
	}
	if s.run.StatusTS != "" {
		s.b.statuses.stopStrayStreams(ctx, s.run, s.run.StatusTS)
	}
	clear(s.sent)
	s.sentTitle = ""
	chunks, commit := s.changes(v)
	head := []slack.StreamChunk{slack.NewMarkdownTextChunk(resumedText(v.Lang))}
	if strings.TrimSpace(v.Progress.Theme) == "" {
		head = append(head, slack.NewPlanUpdateChunk(streamTitle(v))) // a fresh stream starts with its title
	}
	chunks = append(head, append(chunks, extra...)...)
	ts, err := s.b.statuses.startStream(ctx, s.run, chunks)
	if err != nil {
		return err
	}
	commit()
	s.mu.Lock()
	s.ts = ts
	s.mu.Unlock()
	// The run's record keeps its first stream: this process remembers the
	// fresh one, so the run's next turn here continues it.
	s.b.statuses.replaced.Store(s.run.ID, ts)
	s.b.log.Info("bot: the run's stream had stopped; started a fresh one", "run_id", s.run.ID, "stream_ts", ts)
	return nil
}

// changes returns the chunks that bring the stream up to v, and a commit
// that records them as shown.
func (s *streamStatus) changes(v statusView) ([]slack.StreamChunk, func()) {
	var chunks []slack.StreamChunk
	title := streamTitle(v)
	// Until the plan has a theme the title is the question, which every
	// stream starts with: only the first append of a new run's stream
	// sends it again (a resumed run's stream may show the theme already).
	if title != s.sentTitle && (strings.TrimSpace(v.Progress.Theme) != "" || s.probing && !s.resuming) {
		chunks = append(chunks, slack.NewPlanUpdateChunk(title))
	}
	shown := map[string]string{}
	for i, st := range v.Progress.Subtasks {
		card := taskCard(i, st, v.Lang)
		key := taskKey(card)
		if s.sent[card.ID] == key {
			continue
		}
		shown[card.ID] = key
		chunks = append(chunks, card)
	}
	return chunks, func() {
		s.sentTitle = title
		for id, k := range shown {
			s.sent[id] = k
		}
	}
}

// Final shows the end of a turn. Waiting leaves the stream open with a
// line saying so (the approval request is its own message; the resumed
// run continues this stream); done, failed and cancelled stop it with the
// outcome (and the report's summary) as final blocks. When there is no
// stream to stop, the final picture is posted as a message of its own, so
// the outcome always reaches the thread.
func (s *streamStatus) Final(ctx context.Context, state research.RunState, note string) error {
	s.halt()
	s.mu.Lock()
	s.view.State, s.view.Note = state, note
	v, res, fb := s.view, s.res, s.fallback
	s.mu.Unlock()
	if fb != nil {
		if ts := s.liveTS(); ts != "" {
			s.b.statuses.stopStreamQuietly(ctx, s.run, ts) // its stop failed when the run fell back
			s.mu.Lock()
			s.ts = ""
			s.mu.Unlock()
		}
		if state != research.StateWaiting {
			s.b.statuses.replaced.Delete(s.run.ID)
		}
		return fb.Final(ctx, state, note)
	}
	v.Now = s.b.slackClient.now()
	v.Progress.Subtasks = settleCards(v.Progress.Subtasks, state)
	if state == research.StateWaiting {
		if s.liveTS() == "" {
			return nil // nothing to say it on; the approval request follows
		}
		err := s.appendChanges(ctx, v, []slack.StreamChunk{slack.NewMarkdownTextChunk(waitingText(v.Lang))})
		if streamContentRefused(err) {
			return s.fallBack(ctx, err).Final(ctx, state, note)
		}
		return err
	}
	text, blocks := streamFinalBlocks(v, res)
	if state == research.StateDone {
		blocks = s.b.ratings.ratingBlocks(blocks, s.run.ID)
	}
	defer s.b.statuses.replaced.Delete(s.run.ID)
	if ts := s.liveTS(); ts != "" {
		chunks, _ := s.changes(v)
		err := s.b.statuses.stopStream(ctx, s.run, ts, chunks, blocks)
		shown := streamGone(err) // stopped already (by Slack, or by a process that died before recording the outcome)
		if streamContentRefused(err) {
			// Slack refused what the stop carried: stop it bare, so the
			// stream is not left open.
			s.b.log.Warn("bot: slack refused the stream's final content; stopping it bare", "run_id", s.run.ID, "err", err)
			if err := s.b.statuses.stopStream(ctx, s.run, ts, nil, nil); err != nil && !streamGone(err) {
				s.b.log.Warn("bot: stop the stream bare", "run_id", s.run.ID, "err", err)
			}
			shown = true
		}
		if shown {
			// The stopped stream's message shows the outcome.
			err = s.b.slackClient.editMessage(ctx, editFinal, s.run.Key.Channel, ts, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
		}
		if err == nil {
			if rec := s.run.StatusTS; rec != "" && rec != ts {
				// The run's recorded message is a stream that was replaced:
				// it shows the outcome too, as where the run is looked up.
				if err := s.b.slackClient.editMessage(ctx, editFinal, s.run.Key.Channel, rec, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)); err != nil {
					s.b.log.Warn("bot: show the outcome on the replaced stream", "run_id", s.run.ID, "err", err)
				}
			}
			return nil
		}
		s.b.log.Warn("bot: stop stream; posting the outcome instead", "run_id", s.run.ID, "err", err)
	}
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionTS(s.run.Key.ThreadTS)}
	_, err := s.b.slackClient.post(ctx, s.run.Key.Channel, true, opts...)
	if refusedContent(err) {
		// The blocks are what Slack refuses: the outcome goes as text.
		_, err = s.b.slackClient.post(ctx, s.run.Key.Channel, true, slack.MsgOptionText(text, false), slack.MsgOptionTS(s.run.Key.ThreadTS))
	}
	if err != nil {
		s.b.log.Error("bot: could not post the run's final message", "run_id", s.run.ID, "err", err)
		return err
	}
	return nil
}

// settleCards leaves no card spinning after a turn ended: a finished run's
// cards are complete, and a failed or cancelled run's running ones are
// errors.
func settleCards(subs []research.Subtask, state research.RunState) []research.Subtask {
	out := slices.Clone(subs)
	for i := range out {
		switch {
		case state == research.StateDone && out[i].State != research.SubtaskFailed:
			out[i].State = research.SubtaskDone
		case (state == research.StateFailed || state == research.StateCancelled) && out[i].State == research.SubtaskRunning:
			out[i].State = research.SubtaskFailed
		}
	}
	return out
}

// streamRecipient addresses a stream in a channel to the requester, as
// Slack requires there (a DM needs none).
func streamRecipient(r placedRun, team string) []slack.MsgOption {
	if strings.HasPrefix(r.Key.Channel, "D") {
		return nil
	}
	return []slack.MsgOption{slack.MsgOptionRecipientUserID(r.Requester), slack.MsgOptionRecipientTeamID(team)}
}

// team is the workspace a run is in.
func (st *statuses) team(r placedRun) string {
	if r.Key.Team != "" {
		return r.Key.Team
	}
	return st.bot.identity.teamID
}

// startStream starts a stream in the run's thread with chunks (a plan of
// task cards) and returns its ts. It is tried once: after a 5xx a second
// stream would be worse than the fallback, and chat.startStream is Tier 2
// (about 20 a minute), so under a burst a run that gets a 429 shows its
// status message at once instead of holding its handler for a minute.
func (st *statuses) startStream(ctx context.Context, r placedRun, chunks []slack.StreamChunk) (string, error) {
	opts := append([]slack.MsgOption{slack.MsgOptionTS(r.Key.ThreadTS), slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModePlan),
		slack.MsgOptionChunks(chunks...)}, streamRecipient(r, st.team(r))...)
	_, ts, err := st.bot.slackClient.api.StartStreamContext(ctx, r.Key.Channel, opts...)
	if err != nil {
		st.bot.metrics.slackErrors.WithLabelValues("chat.startStream", errorCode(err)).Inc()
		return "", fmt.Errorf("chat.startStream: %w", err)
	}
	return ts, nil
}

// stopStream ends a stream with chunks and final blocks.
func (st *statuses) stopStream(ctx context.Context, r placedRun, ts string, chunks []slack.StreamChunk, blocks []slack.Block) error {
	var opts []slack.MsgOption
	if len(chunks) > 0 {
		opts = append(opts, slack.MsgOptionChunks(chunks...))
	}
	if len(blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(blocks...))
	}
	if err := st.bot.slackClient.streamStops.wait(ctx); err != nil {
		return fmt.Errorf("chat.stopStream: %w", err)
	}
	return st.bot.slackClient.call(ctx, "chat.stopStream", true, func(ctx context.Context) error {
		_, _, err := st.bot.slackClient.api.StopStreamContext(ctx, r.Key.Channel, ts, opts...)
		return err
	})
}

// stopStreamQuietly stops a stream that is no longer the run's; one that
// has stopped already is fine.
func (st *statuses) stopStreamQuietly(ctx context.Context, r placedRun, ts string) {
	if err := st.stopStream(ctx, r, ts, nil, nil); err != nil && !streamGone(err) {
		st.bot.log.Warn("bot: stop an old stream", "run_id", r.ID, "ts", ts, "err", err)
	}
}

// strayAfter is the Slack ts from which a run created at created may have
// streams in its thread: a minute earlier, for clocks that differ.
func strayAfter(created time.Time) string {
	t := created.Add(-time.Minute)
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

// maxStrayStops bounds the stops of stray streams when a run's stream is
// replaced (chat.stopStream is Tier 2).
const maxStrayStops = 8

// stopStrayStreams stops the streams an earlier process may have started
// in place of the run's recorded one, or before recording any, and left
// open when it died: the bot's messages in the thread after ts after (the
// recorded one, or strayAfter the run's creation). Only the run in progress
// can have a live stream in its thread, so any still open is this run's;
// a message that is no stream refuses the stop, which is fine.
func (st *statuses) stopStrayStreams(ctx context.Context, r placedRun, after string) {
	var msgs []slack.Message
	err := st.bot.slackClient.call(ctx, "conversations.replies", true, func(ctx context.Context) error {
		var err error
		msgs, _, _, err = st.bot.slackClient.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: r.Key.Channel, Timestamp: r.Key.ThreadTS, Oldest: after, Limit: 200,
		})
		return err
	})
	if err != nil {
		st.bot.log.Warn("bot: read the thread for stray streams", "run_id", r.ID, "err", err)
		return
	}
	stops := 0
	for _, m := range msgs {
		if (m.BotID == "" && m.User != st.bot.identity.botUserID) || m.Timestamp <= after || len(m.Files) > 0 || len(m.Blocks.BlockSet) > 0 && hasApproval(m) {
			continue
		}
		if stops++; stops > maxStrayStops {
			return
		}
		st.stopStreamQuietly(ctx, r, m.Timestamp)
	}
}

// hasApproval reports whether a message is an approval request (never a
// stream).
func hasApproval(m slack.Message) bool {
	for _, bl := range m.Blocks.BlockSet {
		if a, ok := bl.(*slack.ActionBlock); ok && a.BlockID == blockIntrAction {
			return true
		}
	}
	return false
}

// streamOpening is the first picture of a new stream: the plan's title,
// the cards known so far and the Cancel button.
func streamOpening(v statusView, resumed bool) []slack.StreamChunk {
	chunks := []slack.StreamChunk{}
	if resumed {
		chunks = append(chunks, slack.NewMarkdownTextChunk(resumedText(v.Lang)))
	}
	chunks = append(chunks, slack.NewPlanUpdateChunk(streamTitle(v)))
	for i, st := range v.Progress.Subtasks {
		chunks = append(chunks, taskCard(i, st, v.Lang))
	}
	btn := slack.NewButtonBlockElement(actCancelRun, v.RunID, plain(v.Lang.words().Cancel))
	btn.Style = slack.StyleDanger
	return append(chunks, slack.NewBlocksChunk(slack.NewActionBlock("dr_status", btn)))
}

// streamTitle is the plan's title: the research's theme once planned,
// else the question.
func streamTitle(v statusView) string {
	if strings.TrimSpace(v.Progress.Theme) != "" {
		return planTitle(v.Progress.Theme)
	}
	return planTitle(v.Question)
}

// planTitle is a plan's title as plain text.
func planTitle(question string) string {
	t := Truncate(strings.Join(strings.Fields(plainTitle(question)), " "), maxCardTitle)
	if t == "" {
		return "Research"
	}
	return t
}

var cardStatus = map[research.SubtaskState]slack.TaskCardStatus{
	research.SubtaskPending: slack.TaskCardStatusPending,
	research.SubtaskRunning: slack.TaskCardStatusInProgress,
	research.SubtaskDone:    slack.TaskCardStatusComplete,
	research.SubtaskFailed:  slack.TaskCardStatusError,
}

// taskCard renders subtask i as a task card: its title, state, a one-line
// detail and the pages it read. Everything in it came from the model or
// the web and is shown as plain text.
func taskCard(i int, st research.Subtask, l lang) slack.TaskUpdateChunk {
	title := Truncate(strings.Join(strings.Fields(plainTitle(st.Title)), " "), maxCardTitle)
	if title == "" {
		title = fmt.Sprintf("#%d", i+1)
	}
	card := slack.NewTaskUpdateChunk(fmt.Sprintf("task_%d", i+1), title)
	card.Status = cardStatus[st.State]
	if card.Status == "" {
		card.Status = slack.TaskCardStatusPending
	}
	if st.Searches > 0 || len(st.Sources) > 0 {
		card.Details = cardDetails(st.Searches, len(st.Sources), l)
	}
	for _, src := range st.Sources {
		if len(card.Sources) == maxCardSources {
			break
		}
		u, ok := sourceURL(src.URL)
		if !ok {
			continue
		}
		text := cardSourceText(src.Title, u)
		card.Sources = append(card.Sources, slack.NewTaskCardSource(u, text))
	}
	return card
}

// cardSourceText is a card source's link text: the page's title, or the
// link's host when the title shows another address than the link opens (a
// title that is a URL or a host name), or the URL when it has no title.
func cardSourceText(title, u string) string {
	text := Truncate(strings.Join(strings.Fields(plainTitle(title)), " "), maxSourceText)
	switch {
	case text == "":
		return Truncate(plainTitle(u), maxSourceText)
	case links.ShowsOtherAddress(title, u):
		return Truncate(asciiHost(u), maxSourceText)
	}
	return text
}

// asciiHost is a URL's host as people can check it: an internationalised
// name in its ASCII (punycode) form, which no look-alike letters hide in.
func asciiHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return plainTitle(u)
	}
	h := strings.ToLower(p.Hostname())
	if a, err := idna.Lookup.ToASCII(h); err == nil {
		h = a
	}
	return plainTitle(h)
}

// sourceURL returns a source's URL if it is one a card may link: http or
// https with a host, at most maxSourceURL characters.
func sourceURL(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(CleanText(raw)))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	if s := u.String(); utf8.RuneCountInString(s) <= maxSourceURL {
		return s, true
	}
	return "", false
}

func cardDetails(searches, pages int, l lang) string {
	if l == langJA {
		return fmt.Sprintf("検索 %d 回、%d ページを読了", searches, pages)
	}
	return fmt.Sprintf("%d %s, %d %s read", searches, plural(searches, "search", "searches"), pages, plural(pages, "page", "pages"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// taskKey is what a card shows, to tell whether it changed.
func taskKey(c slack.TaskUpdateChunk) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d", c.Title, c.Status, c.Details, len(c.Sources))
}

func waitingText(l lang) string {
	if l == langJA {
		return "⏸️ 確認待ち: 下のメッセージで判断してください。"
	}
	return "⏸️ Waiting for you: please decide in the message below."
}

func resumedText(l lang) string {
	if l == langJA {
		return "▶️ 調査を再開しました。"
	}
	return "▶️ Resumed the research."
}

// streamFinalBlocks are a stream's final blocks: the run's last status
// picture (outcome, plan, subtasks, facts; no buttons once it ended) and,
// when it is done, the report's title and summary. They are also what the
// run's recorded message shows when it is looked up later.
func streamFinalBlocks(v statusView, res *research.Result) (string, []slack.Block) {
	text, blocks := statusBlocks(v)
	if res != nil && v.State == research.StateDone {
		blocks = append(blocks, reportBlocks(*res, v.Requester, v.Lang)...)
	}
	return text, blocks
}

// tryStream starts a run's stream where the workspace serves streaming
// (or has not been tried yet) and returns its ts; an error means the
// caller shows the run with a status message instead. A refusal of the
// method itself is remembered for the workspace.
func (st *statuses) tryStream(ctx context.Context, r placedRun, v statusView, log *slog.Logger, tokenHeld bool) (string, error) {
	team := st.team(r)
	on, known := st.streams.known(team)
	if !known {
		// One start finds out; the others wait for its answer.
		st.streams.probe.Lock()
		defer st.streams.probe.Unlock()
		on, known = st.streams.known(team)
	}
	if known && !on {
		return "", errStreamingOff
	}
	if !tokenHeld && !st.bot.slackClient.streamStarts.tryProgress() {
		return "", errStreamBudget
	}
	ts, err := st.startStream(ctx, r, streamOpening(v, r.Attempt > 1))
	switch {
	case err == nil:
		st.streams.set(team, true)
		return ts, nil
	case streamRefused(err):
		st.streams.set(team, false)
		log.Info("bot: slack refused chat.startStream; this workspace gets an edited status message", "team", team, "err", err)
	default:
		// A refusal of this stream's content, or a passing failure: this
		// run only.
		log.Warn("bot: start stream; posting a status message instead", "err", err)
	}
	return "", err
}

// planStream decides, as a run is created, whether it will be shown as a
// stream: where the workspace may serve streaming and a chat.startStream
// is left this minute (the token is taken for the run's tryStream). The
// choice is stored with the run's place (slackstate.Place.Stream), so a
// process that picks the run up knows a status message from a stream without asking
// Slack — under a burst most runs get status messages, and asking for each
// would spend the chat.appendStream budget on 429s.
func (st *statuses) planStream(team string) bool {
	if on, known := st.streams.known(team); known && !on {
		return false
	}
	return st.bot.slackClient.streamStarts.tryProgress()
}

// unplanStream gives back the chat.startStream token planStream took for
// a run that was not created (the per-user limit, a busy thread, a run
// that exists already): only runs that are accepted spend the budget.
func (st *statuses) unplanStream(r placedRun) {
	if r.Stream {
		st.bot.slackClient.streamStarts.giveBack()
	}
}

// errStreamBudget: this minute's chat.startStream calls are spent.
var errStreamBudget = errors.New("bot: no chat.startStream left this minute; posting a status message")

// errStreamingOff: the workspace does not serve the streaming methods.
var errStreamingOff = errors.New("bot: streaming is off in this workspace")

// openStatus shows a run that this process starts working on: it
// continues the run's recorded stream if Slack still accepts chunks on it,
// or replaces it by a fresh one that says the run resumed; without a
// recorded one it starts one. Where the workspace does not serve
// streaming, the run gets today's edited status message.
func (st *statuses) openStatus(ctx context.Context, r *placedRun, v statusView, log *slog.Logger) runStatus {
	team := st.team(*r)
	if on, known := st.streams.known(team); known && !on {
		return st.messageStatus(ctx, r, v, log)
	}
	if r.StatusTS == "" {
		r.StatusTS = st.creatorsStatus(ctx, *r)
	}
	if r.StatusTS == "" {
		if !r.Stream {
			return st.messageStatus(ctx, r, v, log)
		}
		if r.Attempt > 1 {
			// A process that died between starting the run's stream and
			// recording it left that stream open, unknown to the record.
			st.stopStrayStreams(ctx, *r, strayAfter(r.CreatedAt))
		}
		ts, err := st.tryStream(ctx, *r, v, log, false)
		if err != nil {
			return st.messageStatus(ctx, r, v, log)
		}
		stored := st.bot.recordStatus(ctx, *r, ts, true, log)
		if stored == ts {
			r.StatusTS = ts
			s := st.newStreamStatus(*r, ts, v)
			s.sentTitle = streamTitle(v)
			go s.loop()
			return s
		}
		r.StatusTS = stored
	}
	if !r.Stream {
		return st.messageStatus(ctx, r, v, log)
	}
	live := r.StatusTS
	if ts, ok := st.replaced.Load(r.ID); ok {
		live = ts.(string)
	}
	s := st.newStreamStatus(*r, live, v)
	// The first append says whether the recorded stream still takes chunks.
	s.probing, s.resuming = true, r.Decision != nil || r.Attempt > 1
	var extra []slack.StreamChunk
	if s.resuming {
		// The probe's chunk: a resumed run says so (its title and cards
		// come with its first progress).
		extra = []slack.StreamChunk{slack.NewMarkdownTextChunk(resumedText(v.Lang))}
	}
	err := s.appendChanges(ctx, v, extra)
	s.probing = false
	switch {
	case err == nil:
		st.streams.set(team, true)
	case errorCode(err) == "message_not_found":
		// No stream: the run's status message was posted instead (Slack
		// refused a stream for it, or it is gone and a final is posted).
		return st.messageStatus(ctx, r, v, log)
	case streamGone(err) && st.published(ctx, r.ID):
		// The stream stopped and the report is out: the process before
		// this one died after its last step, most likely between showing
		// the outcome on this stream and recording the run as done. What
		// is left is the final picture, shown by editing the stopped
		// stream's message (an edit shows it once however often it is
		// done); a fresh stream would show the outcome a second time.
		return st.messageStatus(ctx, r, v, log)
	case streamGone(err):
		// The stream stopped: a fresh one says the run resumed.
		if err := s.restart(ctx, v, nil); err != nil {
			log.Warn("bot: replace the run's stopped stream", "err", err)
		}
	case streamRefused(err):
		st.streams.set(team, false)
		log.Info("bot: slack refused chat.appendStream; this workspace gets an edited status message", "team", team, "err", err)
		return st.messageStatus(ctx, r, v, log)
	case streamContentRefused(err):
		// This run's chunks: its stream is stopped, not left open, and
		// its message becomes its status message. Other runs stream.
		log.Warn("bot: slack refused this run's stream content; the run shows a status message", "err", err)
		st.stopStreamQuietly(ctx, *r, live)
		if live != r.StatusTS {
			st.replaced.Delete(r.ID)
		}
		return st.messageStatus(ctx, r, v, log)
	default:
		log.Warn("bot: continue the run's stream", "err", err)
	}
	go s.loop()
	return s
}

// published reports whether the run's report is recorded as posted.
func (st *statuses) published(ctx context.Context, runID string) bool {
	_, err := st.bot.store.Upload(ctx, runID)
	return err == nil
}

// creatorWait is how long a process that picked up a new run waits for
// the stream its creator is starting, before starting one itself.
const creatorWait = time.Second

// creatorsStatus returns the status ts recorded for the run, waiting for
// it when the run is new: its creator (newRun) may be starting its stream
// right now, and a second one would only be stopped again. A creator in
// this process is waited for until it is done; one in another process
// for creatorWait after the run's creation.
func (st *statuses) creatorsStatus(ctx context.Context, r placedRun) string {
	if ch, ok := st.creating.Load(r.ID); ok {
		// The creator is this process: wait for it, however slow Slack is.
		select {
		case <-ch.(chan struct{}):
		case <-ctx.Done():
			return ""
		}
	}
	deadline := r.CreatedAt.Add(creatorWait)
	for {
		if ts, err := st.bot.records.StatusMessage(ctx, r.ID); err == nil && ts != "" {
			return ts
		}
		if r.Attempt > 1 || !st.bot.slackClient.now().Before(deadline) {
			return ""
		}
		if clock.Sleep(ctx, st.bot.slackClient.clk, 50*time.Millisecond) != nil {
			return ""
		}
	}
}

// messageStatus is a run's edited status message, posted if the run has
// none.
func (st *statuses) messageStatus(ctx context.Context, r *placedRun, v statusView, log *slog.Logger) runStatus {
	if r.StatusTS == "" {
		pv := v
		pv.Now = st.bot.slackClient.now()
		text, blocks := statusBlocks(pv)
		// The run's creator may be ahead in the channel's queue with its
		// status message: look again once this post's slot has come.
		posted := func() bool {
			ts, err := st.bot.records.StatusMessage(ctx, r.ID)
			if err == nil && ts != "" {
				r.StatusTS = ts
				return true
			}
			return false
		}
		if ts, skipped, err := st.bot.slackClient.postUnless(ctx, r.Key.Channel, false, posted, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionTS(r.Key.ThreadTS)); err == nil && !skipped {
			r.StatusTS = st.bot.recordStatus(ctx, *r, ts, false, log)
		}
	}
	status := st.newStatusMessage(r.Key.Channel, r.Key.ThreadTS, r.StatusTS, v)
	id, hadTS := r.ID, r.StatusTS != ""
	status.recorded = func(ctx context.Context) string {
		ts, err := st.bot.records.StatusMessage(ctx, id)
		if err != nil {
			return ""
		}
		return ts
	}
	status.posted = func(ctx context.Context, ts string) string {
		// The status message was never posted: the final message takes its
		// place in the store, so the run's outcome can be found. The
		// creator may have recorded its own since (it posted, but recorded
		// late): that one stays recorded.
		if hadTS {
			return ""
		}
		stored, err := st.bot.records.SetStatusMessage(ctx, id, ts)
		if err != nil {
			log.Warn("bot: record final message", "err", err)
			return ""
		}
		return stored
	}
	return status
}

// endWaitingStatus shows a cancelled queued or waiting run, which no one
// is running: its stream is stopped with the outcome (a stream that
// replaced the recorded one too, and the recorded message edited), or its
// status message edited.
func (st *statuses) endWaitingStatus(ctx context.Context, r placedRun, v statusView) {
	if on, known := st.streams.known(st.team(r)); r.Stream && (on || !known) {
		_, blocks := streamFinalBlocks(v, nil)
		live := r.StatusTS
		if ts, ok := st.replaced.LoadAndDelete(r.ID); ok {
			live = ts.(string)
		}
		err := st.stopStream(ctx, r, live, nil, blocks)
		switch {
		case err == nil && live == r.StatusTS:
			return
		case streamGone(err) && live == r.StatusTS:
			// Replaced by a process that is gone: stop what it left open.
			st.stopStrayStreams(ctx, r, r.StatusTS)
		case streamRefused(err):
			st.streams.set(st.team(r), false)
		case streamContentRefused(err):
			st.stopStreamQuietly(ctx, r, live) // bare, so that it is not left open
		}
	}
	s := &statusMessage{b: st.bot, channel: r.Key.Channel, ts: r.StatusTS}
	_ = s.render(ctx, v, editFinal)
}
