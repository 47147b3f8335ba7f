package llm

import (
	"context"
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
