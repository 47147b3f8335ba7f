package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Reply scripts one answer of the fake server. The zero Reply is an empty
// assistant message.
type Reply struct {
	// Content is the assistant message text.
	Content string
	// JSON, when non-nil, is marshalled into Content (a string or
	// json.RawMessage is used verbatim).
	JSON any
	// ToolCalls asks the client to call tools; finish_reason becomes
	// "tool_calls".
	ToolCalls []ToolCall
	// Refusal fills message.refusal (structured outputs refusals).
	Refusal string
	// Reasoning fills message.reasoning_content.
	Reasoning string
	// FinishReason overrides the default ("stop" or "tool_calls").
	FinishReason string
	// Model overrides the model echoed back (default: the requested one).
	Model string
	// Usage overrides the crude token count (characters/4).
	Usage *openai.Usage

	// Status, when not 0 or 200, sends an error response. Body is sent as
	// is; an empty Body becomes an OpenAI-style error with Message.
	Status  int
	Message string
	Body    string
	// Header is added to the response (e.g. Retry-After), error or not.
	Header http.Header

	// Delay waits before answering; the wait ends early (and nothing is
	// sent) when the client gives up or the server closes.
	Delay time.Duration
	// Hang never answers: the handler blocks until the client gives up or
	// the server closes (then the connection is dropped).
	Hang bool
	// Malformed sends a 200 with a truncated JSON body (a stream: a
	// truncated event).
	Malformed bool

	// Streaming (requests with stream=true): the headers go out at once,
	// Delay and Hang hold the first chunk, ChunkDelay spaces the chunks, and
	// StallAfter > 0 stops after that many chunks without ending the stream
	// (until the client gives up), like a server that stalls mid-answer.
	ChunkDelay time.Duration
	StallAfter int
}

// ToolCall is a scripted tool call. Args may be a string (sent verbatim) or
// any value (marshalled to JSON).
type ToolCall struct {
	ID   string
	Name string
	Args any
}

// Text replies with content.
func Text(s string) Reply { return Reply{Content: s} }

// JSON replies with v marshalled as the content.
func JSON(v any) Reply { return Reply{JSON: v} }

// Call replies with one tool call.
func Call(name string, args any) Reply {
	return Reply{ToolCalls: []ToolCall{{Name: name, Args: args}}}
}

// Calls replies with several tool calls.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Error replies with an HTTP error status and an OpenAI-style error body.
func Error(status int, message string) Reply { return Reply{Status: status, Message: message} }

// RateLimited replies 429 with Retry-After in whole seconds (rounded up;
// also retry-after-ms when d is not whole seconds).
func RateLimited(d time.Duration) Reply {
	h := http.Header{}
	secs := int64((d + time.Second - 1) / time.Second)
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	if d%time.Second != 0 {
		h.Set("retry-after-ms", strconv.FormatInt(d.Milliseconds(), 10))
	}
	return Reply{Status: http.StatusTooManyRequests, Message: "Rate limit reached (llmtest)", Header: h}
}

// ServerError replies 500.
func ServerError() Reply {
	return Reply{Status: http.StatusInternalServerError, Message: "The server had an error while processing your request (llmtest)"}
}

// Malformed replies 200 with a broken body.
func Malformed() Reply { return Reply{Malformed: true} }

// Hang never replies.
func Hang() Reply { return Reply{Hang: true} }

// Stalled returns r streamed up to n chunks, then stalled.
func Stalled(n int, r Reply) Reply {
	r.StallAfter = n
	return r
}

// Delayed returns r answered after d.
func Delayed(d time.Duration, r Reply) Reply {
	r.Delay = d
	return r
}

func (r Reply) content() (string, error) {
	if r.JSON == nil {
		return r.Content, nil
	}
	switch v := r.JSON.(type) {
	case string:
		return v, nil
	case json.RawMessage:
		return string(v), nil
	case []byte:
		return string(v), nil
	}
	b, err := json.Marshal(r.JSON)
	if err != nil {
		return "", fmt.Errorf("llmtest: marshal Reply.JSON: %w", err)
	}
	return string(b), nil
}

func (tc ToolCall) args() (string, error) {
	switch v := tc.Args.(type) {
	case nil:
		return "{}", nil
	case string:
		return v, nil
	case json.RawMessage:
		return string(v), nil
	}
	b, err := json.Marshal(tc.Args)
	if err != nil {
		return "", fmt.Errorf("llmtest: marshal tool call %s args: %w", tc.Name, err)
	}
	return string(b), nil
}
