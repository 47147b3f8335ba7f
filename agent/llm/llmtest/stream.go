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
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	flush()
	// wait reports false when the client went away or the server closes.
	wait := func(d time.Duration, forever bool) bool {
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
	if !wait(reply.Delay, false) || reply.Hang && !wait(0, true) {
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
	sent := 0
	send := func(c openai.ChatCompletionStreamResponse) bool {
		if reply.StallAfter > 0 && sent == reply.StallAfter {
			wait(0, true)
			return false
		}
		if sent > 0 && !wait(reply.ChunkDelay, false) {
			return false
		}
		// the chunk's tokens take their time to generate
		if len(c.Choices) > 0 && !wait(s.generation(chunkTokens(c.Choices[0].Delta)), false) {
			return false
		}
		c.ID, c.Object, c.Created, c.Model = resp.ID, "chat.completion.chunk", resp.Created, resp.Model
		b, _ := json.Marshal(c)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		flush()
		sent++
		return true
	}
	delta := func(d openai.ChatCompletionStreamChoiceDelta) bool {
		return send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{Delta: d}}})
	}
	msg := resp.Choices[0].Message
	if !delta(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant}) {
		return
	}
	for _, p := range pieces(msg.ReasoningContent) {
		if !delta(openai.ChatCompletionStreamChoiceDelta{ReasoningContent: p}) {
			return
		}
	}
	for _, p := range pieces(msg.Content) {
		if !delta(openai.ChatCompletionStreamChoiceDelta{Content: p}) {
			return
		}
	}
	if msg.Refusal != "" && !delta(openai.ChatCompletionStreamChoiceDelta{Refusal: msg.Refusal}) {
		return
	}
	for i, tc := range msg.ToolCalls {
		idx := i
		head := openai.ToolCall{Index: &idx, ID: tc.ID, Type: tc.Type, Function: openai.FunctionCall{Name: tc.Function.Name}}
		if !delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{head}}) {
			return
		}
		for _, p := range pieces(tc.Function.Arguments) {
			part := openai.ToolCall{Index: &idx, Function: openai.FunctionCall{Arguments: p}}
			if !delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{part}}) {
				return
			}
		}
	}
	if !send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{FinishReason: resp.Choices[0].FinishReason}}}) {
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		u := resp.Usage
		if !send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{}, Usage: &u}) {
			return
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	flush()
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
