package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// streamPiece is how many runes of content or arguments one chunk carries.
const streamPiece = 24

// writeStream answers a stream=true request the way OpenAI does: server-sent
// events, one "data: {chunk}" per delta, the usage in a last chunk when
// stream_options.include_usage is set, then "data: [DONE]".
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, req *Request, reply Reply, id int) {
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{s: s, w: w, r: r, reply: reply}
	sw.flush()
	if !s.pause(r, reply.Delay, false) || reply.Hang && !s.pause(r, 0, true) {
		return
	}
	if reply.Malformed {
		_, _ = io.WriteString(w, `data: {"id":"chatcmpl-broken","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+"\n\n")
		return
	}
	resp, err := completion(req, reply, id)
	if err != nil {
		_, _ = io.WriteString(w, "data: "+errorBody(err.Error(), "server_error", "", "")+"\n\n")
		return
	}
	sw.resp = resp
	for _, d := range messageDeltas(resp.Choices[0].Message) {
		if !sw.send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{Delta: d}}}) {
			return
		}
	}
	if !sw.send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{FinishReason: resp.Choices[0].FinishReason}}}) {
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		u := resp.Usage
		if !sw.send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{}, Usage: &u}) {
			return
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	sw.flush()
}

// pause waits d (forever when forever is set) and reports false when the
// client went away first; when the server closes, it drops the connection.
func (s *Server) pause(r *http.Request, d time.Duration, forever bool) bool {
	var c <-chan time.Time
	if !forever {
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		defer t.Stop()
		c = t.C
	}
	select {
	case <-c:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closing:
		panic(http.ErrAbortHandler)
	}
}

// sseWriter sends the chunks of one streamed completion, paced as the
// reply asks.
type sseWriter struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	reply Reply
	resp  openai.ChatCompletionResponse
	sent  int // chunks sent
}

func (sw *sseWriter) flush() {
	if f, ok := sw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// send writes chunk c as the completion's, after the reply's chunk delay
// and the time its tokens take; false when the stream ends here (the
// client went away, or the reply stalls after this many chunks).
func (sw *sseWriter) send(c openai.ChatCompletionStreamResponse) bool {
	if sw.reply.StallAfter > 0 && sw.sent == sw.reply.StallAfter {
		sw.s.pause(sw.r, 0, true)
		return false
	}
	if sw.sent > 0 && !sw.s.pause(sw.r, sw.reply.ChunkDelay, false) {
		return false
	}
	// the chunk's tokens take their time to generate
	if len(c.Choices) > 0 && !sw.s.pause(sw.r, sw.s.generation(chunkTokens(c.Choices[0].Delta)), false) {
		return false
	}
	c.ID, c.Object, c.Created, c.Model = sw.resp.ID, "chat.completion.chunk", sw.resp.Created, sw.resp.Model
	b, _ := json.Marshal(c) // a chunk of plain fields always marshals
	if _, err := fmt.Fprintf(sw.w, "data: %s\n\n", b); err != nil {
		return false
	}
	sw.flush()
	sw.sent++
	return true
}

// messageDeltas are the deltas that stream msg: the role, the reasoning
// and the content in pieces, the refusal, then each tool call's head and
// its arguments in pieces.
func messageDeltas(msg openai.ChatCompletionMessage) []openai.ChatCompletionStreamChoiceDelta {
	ds := []openai.ChatCompletionStreamChoiceDelta{{Role: openai.ChatMessageRoleAssistant}}
	for _, p := range pieces(msg.ReasoningContent) {
		ds = append(ds, openai.ChatCompletionStreamChoiceDelta{ReasoningContent: p})
	}
	for _, p := range pieces(msg.Content) {
		ds = append(ds, openai.ChatCompletionStreamChoiceDelta{Content: p})
	}
	if msg.Refusal != "" {
		ds = append(ds, openai.ChatCompletionStreamChoiceDelta{Refusal: msg.Refusal})
	}
	for i, tc := range msg.ToolCalls {
		idx := i
		head := openai.ToolCall{Index: &idx, ID: tc.ID, Type: tc.Type, Function: openai.FunctionCall{Name: tc.Function.Name}}
		ds = append(ds, openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{head}})
		for _, p := range pieces(tc.Function.Arguments) {
			part := openai.ToolCall{Index: &idx, Function: openai.FunctionCall{Arguments: p}}
			ds = append(ds, openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{part}})
		}
	}
	return ds
}

// chunkTokens is the output tokens a delta carries (characters/4, at least
// one for any text).
func chunkTokens(d openai.ChatCompletionStreamChoiceDelta) int {
	n := utf8.RuneCountInString(d.Content) + utf8.RuneCountInString(d.ReasoningContent) + utf8.RuneCountInString(d.Refusal)
	for _, tc := range d.ToolCalls {
		n += utf8.RuneCountInString(tc.Function.Arguments) + len(tc.Function.Name)
	}
	if n == 0 {
		return 0
	}
	return tokens(n)
}

// pieces splits s into chunks of streamPiece runes.
func pieces(s string) []string {
	var out []string
	rs := []rune(s)
	for len(rs) > 0 {
		n := min(streamPiece, len(rs))
		out = append(out, string(rs[:n]))
		rs = rs[n:]
	}
	return out
}
