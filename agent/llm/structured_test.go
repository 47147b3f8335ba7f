package llm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"deepresearch/agent/llm/llmtest"
)

func TestInvalidSchemaFallsBackOnlyForThisCall(t *testing.T) {
	srv := llmtest.NewServer(t, func(r *llmtest.Request) llmtest.Reply {
		if r.SchemaName() == "verdict" {
			return llmtest.Reply{Status: 400, Body: `{"error":{"message":"Invalid schema for response_format 'verdict': In context=(), 'minimum' is not permitted.","type":"invalid_request_error","param":"response_format","code":null}}`}
		}
		return llmtest.JSON(verdict{Score: 3, Issues: []string{}})
	})
	c, _ := newTestClient(t, srv, nil)
	var v verdict
	if _, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &v); err != nil {
		t.Fatal(err)
	}
	if v.Score != 3 || srv.Calls() != 2 || srv.LastRequest().FormatType() != "json_object" {
		t.Fatalf("v=%+v calls=%d", v, srv.Calls())
	}
	if c.JSONMode() != JSONModeSchema {
		t.Errorf("mode remembered as %s; an invalid schema must not downgrade the client", c.JSONMode())
	}
}

func TestChatJSONHandMadeSchema(t *testing.T) {
	srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Text(`{"ok": true}`) })
	c, _ := newTestClient(t, srv, nil)
	schema := &Schema{Type: []string{"object"}, Properties: []Property{{Name: "ok", Schema: &Schema{Type: []string{"boolean"}}}},
		Required: []string{"ok"}, AdditionalProperties: false}
	var out map[string]bool
	if _, err := c.ChatJSON(context.Background(), Request{Messages: []Message{User("x")}}, schema, &out); err != nil {
		t.Fatal(err)
	}
	if !out["ok"] || srv.LastRequest().SchemaName() != "response" {
		t.Errorf("out=%v name=%q", out, srv.LastRequest().SchemaName())
	}
}

func TestResponseWithoutUsageIsEstimated(t *testing.T) {
	srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Body: `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"","function_call":{"name":"f","arguments":"{\"a\":1}"}},"finish_reason":"function_call"}]}`}
	})
	m := NewMeter(0, 0)
	c, _ := newTestClient(t, srv, func(o *Options) { o.Meter = m })
	resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("12345678")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || m.Used() != resp.Usage.TotalTokens {
		t.Errorf("usage = %+v, meter used %d", resp.Usage, m.Used())
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "f" {
		t.Errorf("legacy function_call not mapped: %+v", resp.ToolCalls)
	}
}

// A structured reply cut off mid-JSON, or stopped at the length limit, is an
// invalid reply: the request is made again (without the fragment) within
// the retry budget, and never decoded as the whole.
func TestStructuredCutOffReplyAskedAgain(t *testing.T) {
	whole := llmtest.JSON(verdict{Score: 7, Pass: true, Issues: []string{"a", "b"}})
	// parses (the first inner value would do), but the model stopped at max tokens
	atLength := llmtest.Reply{Content: `{"score": 5, "pass": false, "issues": []}`, FinishReason: "length"}
	// the issue's shape: a complete inner value, then the cut
	cutOff := llmtest.Text(`{"score": 9, "pass": true, "issues": ["one"], "comment": "x", "more": [{"score": 1}, {"sc`)
	tests := []struct {
		name      string
		replies   []llmtest.Reply
		retries   int
		wantCalls int
		wantErr   bool
	}{
		{"length then whole", []llmtest.Reply{atLength, whole}, 0, 2, false},
		{"cut off then whole", []llmtest.Reply{cutOff, whole}, 0, 2, false},
		{"cut off three times, then whole", []llmtest.Reply{cutOff, atLength, cutOff, whole}, 3, 4, false},
		{"cut off past the budget", []llmtest.Reply{atLength, atLength, atLength}, 2, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, nil)
			srv.Enqueue(tt.replies...)
			c, _ := newTestClient(t, srv, func(o *Options) { o.MaxRetries = tt.retries })
			var v verdict
			_, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &v)
			if srv.Calls() != tt.wantCalls {
				t.Errorf("calls = %d, want %d", srv.Calls(), tt.wantCalls)
			}
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidJSON) || !errors.Is(err, ErrCutOff) {
					t.Fatalf("err = %v, want ErrInvalidJSON and ErrCutOff", err)
				}
				if v.Score != 0 {
					t.Errorf("a fragment was decoded: %+v", v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Score != 7 || len(v.Issues) != 2 {
				t.Errorf("v = %+v, want the whole reply", v)
			}
			// asked again from the original messages, without the fragment
			last := srv.LastRequest()
			if n := len(last.Messages); n != 2 || last.Messages[0].Content != "x" || !strings.Contains(last.Messages[1].Content, "cut off") {
				t.Errorf("the request asked again = %+v", last.Messages)
			}
		})
	}
}
