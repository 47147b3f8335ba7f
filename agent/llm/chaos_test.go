package llm

import (
	"context"
	"sync"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
)

// TestChaosAllCallsSucceed runs parallel calls against a server that fails
// 30% of requests in every way it can; retries must absorb all of it and
// the meter must count each successful call once.
func TestChaosAllCallsSucceed(t *testing.T) {
	srv := llmtest.NewServer(t, func(r *llmtest.Request) llmtest.Reply {
		if r.SchemaName() != "" {
			return llmtest.JSON(verdict{Score: 1, Issues: []string{}})
		}
		return llmtest.Text("ok")
	}, llmtest.WithFaults(llmtest.Faults{Rate: 0.3, Seed: 3}))
	meter := NewMeter(0, 0)
	c, rec := newTestClient(t, srv, func(o *Options) {
		o.Timeout = 250 * time.Millisecond
		o.MaxRetries = 12
		o.Meter = meter
	})
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := WithNode(context.Background(), "worker")
			if i%2 == 0 {
				var v verdict
				if _, err := Structured(ctx, c, Request{Messages: []Message{User("x")}}, &v); err != nil {
					t.Errorf("structured %d: %v", i, err)
				}
				return
			}
			if _, err := c.Chat(ctx, Request{Messages: []Message{User("x")}}); err != nil {
				t.Errorf("chat %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	faults := 0
	for _, k := range srv.Faulted() {
		faults += k
	}
	if faults == 0 {
		t.Fatal("no faults injected")
	}
	if got := meter.Total().Calls; got != n {
		t.Errorf("meter calls = %d, want %d", got, n)
	}
	// Every fault costs a call more, and failed attempts are retried after
	// a wait. The counts are not equal on a loaded machine: a slow attempt
	// may be hedged (a call with no wait), or time out though not faulted,
	// and a retry may have waited when a hedge of its call wins (a wait
	// with no call).
	sleeps := len(rec.sleeps())
	if srv.Calls() < n+faults || sleeps == 0 || sleeps > srv.Calls() {
		t.Errorf("server calls=%d faults=%d sleeps=%d", srv.Calls(), faults, sleeps)
	}
}
