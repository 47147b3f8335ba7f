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
	// Every extra call is a retry after a sleep. (A slow machine may also
	// time out an attempt that was not faulted, so >= rather than ==.)
	if srv.Calls() < n+faults || len(rec.sleeps()) != srv.Calls()-n {
		t.Errorf("server calls=%d faults=%d sleeps=%d", srv.Calls(), faults, len(rec.sleeps()))
	}
}
