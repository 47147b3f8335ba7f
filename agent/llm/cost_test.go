package llm

import (
	"context"
	"errors"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
)

// Every request that reached the server is counted and its tokens billed:
// failed and retried attempts, hedges that lost, a call cancelled in flight
// (the prompt estimated when no usage came back). Before, only the answered
// request was counted ("7786 tokens in 8 calls" for 17 requests sent).
func TestEveryRequestIsCounted(t *testing.T) {
	tests := []struct {
		name         string
		replies      []llmtest.Reply
		hedge        bool
		cancel       bool
		wantRequests int
		wantWasted   int // requests whose prompt is wasted
		wantCalls    int // answered calls in the meter
	}{
		{"clean", []llmtest.Reply{llmtest.Text("ok")}, false, false, 1, 0, 1},
		{"two 500s then an answer", []llmtest.Reply{llmtest.ServerError(), llmtest.Error(502, "bad gateway"), llmtest.Text("ok")}, false, false, 3, 2, 1},
		{"malformed then an answer", []llmtest.Reply{llmtest.Malformed(), llmtest.Text("ok")}, false, false, 2, 1, 1},
		{"a hedge wins, the hung request is cancelled", []llmtest.Reply{llmtest.Hang(), llmtest.Text("ok")}, true, false, 2, 1, 1},
		{"cancelled in flight", []llmtest.Reply{llmtest.Hang()}, false, true, 1, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, nil)
			srv.Enqueue(tt.replies...)
			c, _ := newTestClient(t, srv, func(o *Options) {
				o.HedgeAfter = -1
				if tt.hedge {
					o.HedgeAfter = 10 * time.Millisecond
				}
			})
			if tt.hedge {
				c.lat.add("test-model", 5*time.Millisecond)
			}
			m := NewMeter(0, 0)
			ctx, cancel := context.WithCancel(WithMeter(context.Background(), m))
			defer cancel()
			if tt.cancel {
				go func() {
					for srv.Calls() == 0 {
						time.Sleep(time.Millisecond)
					}
					cancel()
				}()
			}
			req := Request{Messages: []Message{User("a question of some length for the estimate")}}
			resp, err := c.Chat(ctx, req)
			if tt.cancel != (err != nil) {
				t.Fatalf("err = %v", err)
			}
			if tt.cancel && !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want cancelled", err)
			}
			if resp.Requests != tt.wantRequests || srv.Calls() != tt.wantRequests {
				t.Errorf("requests = %d (server saw %d), want %d", resp.Requests, srv.Calls(), tt.wantRequests)
			}
			est := estimateTokens(c.buildRequest("test-model", req))
			if resp.Wasted.PromptTokens != tt.wantWasted*est {
				t.Errorf("wasted = %+v, want %d prompts of ~%d tokens", resp.Wasted, tt.wantWasted, est)
			}
			tot := m.Total()
			if tot.Requests != tt.wantRequests || tot.Calls != tt.wantCalls || tot.WastedTokens != resp.Wasted.TotalTokens ||
				tot.TotalTokens != resp.Billed().TotalTokens {
				t.Errorf("meter = %+v, response billed %+v (requests %d)", tot, resp.Billed(), resp.Requests)
			}
		})
	}
}

// A structured call sums what each of its requests cost, the cut-off reply
// asked again included.
func TestStructuredCountsEveryRequest(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.ServerError(), llmtest.Reply{Content: `{"score": 1`, FinishReason: "length"},
		llmtest.JSON(verdict{Score: 2, Issues: []string{}}))
	c, _ := newTestClient(t, srv, nil)
	m := NewMeter(0, 0)
	var v verdict
	resp, err := Structured(WithMeter(context.Background(), m), c, Request{Messages: []Message{User("x")}}, &v)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Requests != 3 || resp.Wasted.PromptTokens == 0 {
		t.Errorf("requests %d wasted %+v, want 3 requests, one wasted", resp.Requests, resp.Wasted)
	}
	if tot := m.Total(); tot.Requests != 3 || tot.TotalTokens != resp.Billed().TotalTokens {
		t.Errorf("meter %+v, billed %+v", tot, resp.Billed())
	}
}
