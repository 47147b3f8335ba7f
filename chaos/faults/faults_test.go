package faults

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot/slackfake"
)

func user1(int) string { return "U1" }

// The fault tests below run in parallel with each other (go test starts
// them once the package's sequential tests are done): each has its own
// world, they mostly wait on injected delays, and what they assert is per
// world. TestLoad and TestHostilePages measure the whole process
// (goroutines, peak RSS) and stay sequential.

// TestBaseline: without faults every mention gets its report.
func TestBaseline(t *testing.T) {
	t.Parallel()
	w := newWorld(t, config{})
	ctx := context.Background()
	ms := w.send(ctx, questions(3, 1, user1))
	vs := w.settle(ctx, ms, 60*time.Second)
	counts, sum := tally(t, vs)
	t.Logf("baseline: %s", sum)
	if counts[outReport] != len(ms) {
		t.Errorf("want %d reports: %s", len(ms), sum)
	}
	w.checkNoPings()
}

// n picks the short or the long size.
func n(short, long_ int) int {
	if long() {
		return long_
	}
	return short
}

// requireClear checks that every failed run says so in its thread.
func requireClear(t *testing.T, vs []verdict) {
	t.Helper()
	for i, v := range vs {
		if v.Kind == outFailed && !strings.Contains(v.Reply, "Something went wrong") {
			t.Errorf("mention %d failed without a clear message: %.300q", i, v.Reply)
		}
	}
}

// TestLLMFaults: the LLM endpoint fails 30 % of calls (429 with
// Retry-After, 500, hangs, malformed JSON). Every mention ends with its
// report or a clear failure in the thread, once.
func TestLLMFaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t, config{
		LLMFaults:  &llmtest.Faults{Rate: 0.3, Seed: 42, RetryAfter: 300 * time.Millisecond},
		LLMTimeout: 1500 * time.Millisecond,
	})
	ctx := context.Background()
	start := time.Now()
	ms := w.send(ctx, questions(n(12, 100), 2, user1))
	// Every run needs a final edit within the chat.update budget (50/min),
	// and each injected 429 pauses the budget for its Retry-After.
	vs := w.settle(ctx, ms, 120*time.Second+time.Duration(len(ms))*2*time.Second)
	counts, sum := tally(t, vs)
	requireClear(t, vs)
	f := w.llm.Faulted()
	figure(t, "llm_faults", "runs=%d %s llm_calls=%d faulted_429=%d faulted_500=%d faulted_hang=%d faulted_malformed=%d elapsed=%s",
		len(ms), sum, w.llm.Calls(), f[llmtest.Fault429], f[llmtest.Fault500], f[llmtest.FaultHang], f[llmtest.FaultMalformed], time.Since(start).Round(time.Millisecond))
	if counts[outReport] == 0 {
		t.Errorf("no run finished: %s", sum)
	}
	w.checkNoPings()
}

// TestSlackFaults: the Web API answers 429 (with Retry-After) and 5xx on
// chat.postMessage, chat.update and files.*, and Socket Mode connections
// are told to reconnect or dropped every few seconds.
func TestSlackFaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t, config{})
	w.slack.SetRedelivery(2*time.Second, 3)
	for _, m := range []string{"chat.postMessage", "chat.update", "files.getUploadURLExternal", "files.completeUploadExternal", "files.upload"} {
		w.slack.InjectFault(m, slackfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second, Rate: 0.15})
		w.slack.InjectFault(m, slackfake.Fault{Status: http.StatusInternalServerError, Rate: 0.1})
		w.slack.InjectFault(m, slackfake.Fault{Status: http.StatusServiceUnavailable, Rate: 0.05})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var disconnects, drops atomic.Int64
	go func() {
		tick := time.NewTicker(1500 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if i%2 == 0 {
				disconnects.Add(int64(w.slack.DisconnectAll(slackfake.ReasonRefreshRequested)))
				continue
			}
			for _, c := range w.slack.Connections() {
				if w.slack.DropConnection(c.ID) == nil {
					drops.Add(1)
				}
			}
		}
	}()
	start := time.Now()
	ms := w.send(ctx, questions(n(12, 100), 2, user1))
	// Every run needs a final edit within the chat.update budget (50/min),
	// and each injected 429 pauses the budget for its Retry-After.
	vs := w.settle(ctx, ms, 120*time.Second+time.Duration(len(ms))*2*time.Second)
	cancel()
	counts, sum := tally(t, vs)
	requireClear(t, vs)
	var faulted int
	for _, c := range w.slack.CallLog("") {
		if c.Status != http.StatusOK {
			faulted++
		}
	}
	figure(t, "slack_faults", "runs=%d %s slack_calls=%d slack_faulted=%d disconnects=%d drops=%d connections=%d elapsed=%s",
		len(ms), sum, len(w.slack.CallLog("")), faulted, disconnects.Load(), drops.Load(), w.slack.Calls("apps.connections.open"), time.Since(start).Round(time.Millisecond))
	if counts[outReport] == 0 {
		t.Errorf("no run finished: %s", sum)
	}
	w.checkNoPings()
}

// TestSearchDown: the search provider answers 503 throughout. Each run
// finishes with what it has or ends with a clear message.
func TestSearchDown(t *testing.T) {
	t.Parallel()
	w := newWorld(t, config{})
	w.searchDown.Store(true)
	ctx := context.Background()
	ms := w.send(ctx, questions(n(4, 20), 1, user1))
	vs := w.settle(ctx, ms, 90*time.Second)
	_, sum := tally(t, vs)
	requireClear(t, vs)
	figure(t, "search_down", "runs=%d %s", len(ms), sum)
	for i, v := range vs {
		if v.Kind == outRejected {
			t.Errorf("mention %d: rejected while search was down: %q", i, v.Reply)
		}
	}
	w.checkNoPings()
}

// TestPostgresCut: the connection between the bot and Postgres is cut for
// a few seconds while runs are in flight (through a proxy, the shared
// server stays up), then restored.
func TestPostgresCut(t *testing.T) {
	t.Parallel()
	w := newWorld(t, config{Postgres: true, PGProxy: true, LLMLatency: 400 * time.Millisecond})
	ctx := context.Background()
	start := time.Now()
	ms := w.send(ctx, questions(n(8, 50), 2, user1))
	time.Sleep(1500 * time.Millisecond)
	w.proxy.Cut()
	cutAt := time.Since(start)
	time.Sleep(4 * time.Second)
	w.proxy.Restore()
	vs := w.settle(ctx, ms, 150*time.Second)
	counts, sum := tally(t, vs)
	requireClear(t, vs)
	figure(t, "postgres_cut", "runs=%d %s cut_at=%s cut_for=4s refused_conns=%d proxied_conns=%d warnings=%d errors=%d elapsed=%s",
		len(ms), sum, cutAt.Round(time.Millisecond), w.proxy.Refused(), w.proxy.Accepted(), w.logs.Warns(), len(w.logs.Errors()), time.Since(start).Round(time.Millisecond))
	for _, e := range first(w.logs.Errors(), 5) {
		t.Logf("logged: %.300s", e)
	}
	if counts[outReport] == 0 {
		t.Errorf("no run finished: %s", sum)
	}
	w.checkNoPings()
}
