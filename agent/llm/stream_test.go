package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/clock"
)

type noticeLog struct {
	mu sync.Mutex
	n  []Notice
}

func (l *noticeLog) add(n Notice) {
	l.mu.Lock()
	l.n = append(l.n, n)
	l.mu.Unlock()
}

func (l *noticeLog) all() []Notice {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Notice(nil), l.n...)
}

func (l *noticeLog) kinds(k NoticeKind) []Notice {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Notice
	for _, n := range l.n {
		if n.Kind == k {
			out = append(out, n)
		}
	}
	return out
}

// Answers are streamed (stream=true with usage) and put back together:
// content, tool calls split over many chunks, usage from the last chunk.
func TestStreamedAnswers(t *testing.T) {
	long := strings.Repeat("streamed words, ", 20)
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.Text(long),
		llmtest.Calls(llmtest.ToolCall{Name: "search", Args: map[string]any{"queries": []string{strings.Repeat("q", 60), "b"}}},
			llmtest.ToolCall{Name: "visit", Args: map[string]any{"urls": []string{"https://a.example/x"}}}),
		llmtest.JSON(map[string]any{"name": strings.Repeat("n", 50), "n": 7}))
	c, _ := newTestClient(t, srv, nil)
	resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
	if err != nil || resp.Content != long || resp.FinishReason != "stop" {
		t.Fatalf("resp=%+v err=%v", resp, err)
	}
	req := srv.LastRequest()
	if !req.Stream || req.StreamOptions == nil || !req.StreamOptions.IncludeUsage {
		t.Errorf("not streamed with usage: stream=%v options=%+v", req.Stream, req.StreamOptions)
	}
	if want := llmtest.PromptTokens(req); resp.Usage.PromptTokens != want || resp.Usage.CompletionTokens == 0 {
		t.Errorf("usage %+v, want %d prompt tokens", resp.Usage, want)
	}
	resp, err = c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
	if err != nil || len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Name != "search" || resp.ToolCalls[1].Name != "visit" ||
		!strings.Contains(resp.ToolCalls[0].Arguments, strings.Repeat("q", 60)) || resp.ToolCalls[1].ID == "" {
		t.Fatalf("tool calls %+v err=%v", resp.ToolCalls, err)
	}
	var out struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	if _, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &out); err != nil || out.N != 7 || len(out.Name) != 50 {
		t.Fatalf("structured %+v err=%v", out, err)
	}
}

// A stream that never starts, or stops in the middle, is a timeout on the
// first-token or the idle deadline, retried at once — not a wait for a
// two-minute total.
func TestStreamDeadlines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first llmtest.Reply
		what  string
	}{
		{"no first token", llmtest.Hang(), "first token"},
		{"stall mid-stream", llmtest.Stalled(3, llmtest.Text(strings.Repeat("slow ", 40))), "next token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, nil)
			srv.Enqueue(tc.first, llmtest.Text("ok"))
			var log noticeLog
			c, rec := newTestClient(t, srv, func(o *Options) {
				o.FirstTokenTimeout, o.IdleTimeout, o.HedgeAfter, o.OnNotice = 100*time.Millisecond, 100*time.Millisecond, -1, log.add
			})
			resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
			if err != nil || resp.Content != "ok" || resp.Attempts != 2 || srv.Calls() != 2 || len(rec.sleeps()) != 1 {
				t.Fatalf("resp=%+v err=%v calls=%d sleeps=%v", resp, err, srv.Calls(), rec.sleeps())
			}
			retries := log.kinds(NoticeRetry)
			if len(retries) != 1 || !errors.Is(retries[0].Err, ErrTimeout) || !strings.Contains(retries[0].Err.Error(), tc.what) {
				t.Errorf("retry notices %+v", retries)
			}
		})
	}
}

// A call much slower to start than those seen so far is sent again
// alongside; the first answer wins and the slow request is cancelled.
func TestHedgedRequest(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.Text("warm"), llmtest.Delayed(time.Minute, llmtest.Text("slow")), llmtest.Text("hedge"))
	var log noticeLog
	c, rec := newTestClient(t, srv, func(o *Options) { o.HedgeAfter, o.OnNotice = 50*time.Millisecond, log.add })
	if _, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
	if err != nil || resp.Content != "hedge" || resp.Attempts != 1 || len(rec.sleeps()) != 0 {
		t.Fatalf("resp=%+v err=%v sleeps=%v", resp, err, rec.sleeps())
	}
	if srv.Calls() != 3 {
		t.Errorf("%d requests, want 3", srv.Calls())
	}
	if len(log.kinds(NoticeSlow)) == 0 {
		t.Error("no notice while waiting on the slow request")
	}
}

// Retry-After is honoured on streamed requests (go-openai drops the headers
// of a failed stream; the client keeps them).
func TestStreamRetryAfter(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.RateLimited(3*time.Second), llmtest.ServerError(), llmtest.Malformed(), llmtest.Text("ok"))
	c, rec := newTestClient(t, srv, nil)
	resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
	if err != nil || resp.Content != "ok" || resp.Attempts != 4 {
		t.Fatalf("resp=%+v err=%v", resp, err)
	}
	if s := rec.sleeps(); len(s) != 3 || s[0] != 3*time.Second {
		t.Errorf("sleeps %v, want Retry-After 3s first", s)
	}
}

// An endpoint that refuses stream=true is asked again without it, once: the
// client remembers. One that ignores it is read as it answered.
func TestStreamFallback(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Text("plain") }, llmtest.WithoutStreaming())
		c, _ := newTestClient(t, srv, nil)
		for i := range 2 {
			resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
			if err != nil || resp.Content != "plain" {
				t.Fatalf("call %d: resp=%+v err=%v", i, resp, err)
			}
		}
		if srv.Calls() != 3 || srv.LastRequest().Stream {
			t.Errorf("%d requests (want 3), last streamed %v", srv.Calls(), srv.LastRequest().Stream)
		}
	})
	t.Run("ignored", func(t *testing.T) {
		var calls int
		var mu sync.Mutex
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		}))
		t.Cleanup(ts.Close)
		c, err := New(Options{BaseURL: ts.URL + "/v1", Model: "m", Clock: clock.Instant{}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
		if err != nil || resp.Content != "whole" || resp.Usage.PromptTokens != 3 || calls != 1 {
			t.Fatalf("resp=%+v err=%v calls=%d", resp, err, calls)
		}
	})
}

// Deadlines and hedging by model: a reasoning model thinks before its first
// token, so it gets a longer first-token deadline and no hedge until its
// latency is known.
func TestStreamDefaultsByModel(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	for _, tc := range []struct {
		name                 string
		opts                 func(*Options)
		model                string
		seen                 time.Duration
		wantFirst, wantHedge time.Duration
	}{
		{"chat model, cold", nil, "gpt-4o-mini", 0, DefaultFirstTokenTimeout, hedgeInitial},
		{"chat model, warm", nil, "gpt-4o-mini", 900 * time.Millisecond, DefaultFirstTokenTimeout, 1350 * time.Millisecond},
		{"chat model, fast", nil, "gpt-4o-mini", 100 * time.Millisecond, DefaultFirstTokenTimeout, DefaultHedgeAfter},
		{"reasoning model, cold", nil, "o3-mini", 0, reasoningFirstToken, 0},
		{"reasoning model, warm", nil, "o3-mini", 20 * time.Second, reasoningFirstToken, 30 * time.Second},
		{"set first token", func(o *Options) { o.FirstTokenTimeout = 10 * time.Second }, "o3-mini", 0, 10 * time.Second, 0},
		{"total below first token", func(o *Options) { o.Timeout = 3 * time.Second }, "gpt-4o-mini", 0, 3 * time.Second, 0},
		{"no hedging", func(o *Options) { o.HedgeAfter = -1 }, "gpt-4o-mini", time.Second, DefaultFirstTokenTimeout, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestClient(t, srv, tc.opts)
			if tc.seen > 0 {
				c.lat.add(tc.model, tc.seen)
			}
			if got := c.firstTokenTimeout(tc.model); got != tc.wantFirst {
				t.Errorf("first-token deadline %v, want %v", got, tc.wantFirst)
			}
			if got := c.hedgeAfter(tc.model); got != tc.wantHedge {
				t.Errorf("hedge after %v, want %v", got, tc.wantHedge)
			}
		})
	}
}

// A malformed answer is retried at once the first time; an overloaded
// server (503) waits for the backoff (TestPerRequestFailureRetriedAtOnce
// has the other kinds).
func TestMalformedRetriedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  llmtest.Reply
		waited bool
	}{
		{"malformed", llmtest.Malformed(), false},
		{"overloaded", llmtest.Error(503, "overloaded"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, nil)
			srv.Enqueue(tc.first, llmtest.Text("ok"))
			c, rec := newTestClient(t, srv, nil)
			resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
			if err != nil || resp.Content != "ok" {
				t.Fatalf("resp=%+v err=%v", resp, err)
			}
			if s := rec.sleeps(); len(s) != 1 || (s[0] > 0) != tc.waited {
				t.Errorf("sleeps %v, waited want %v", s, tc.waited)
			}
		})
	}
}

// An attempt whose request and hedges all hang gives up one hedge interval
// after the last hedge (a deadline from the latencies seen, not the
// first-token deadline of a minute) and is retried at once.
func TestHangingHedgesGiveUp(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.Hang(), llmtest.Hang(), llmtest.Hang(), llmtest.Text("ok"))
	c, rec := newTestClient(t, srv, func(o *Options) { o.HedgeAfter = 10 * time.Millisecond })
	c.lat.add("test-model", 5*time.Millisecond)
	// the guard is far below the first-token deadline (60s), far above the
	// give-up time (four hedge intervals)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.Chat(ctx, Request{Messages: []Message{User("x")}})
	if err != nil || resp.Content != "ok" {
		t.Fatalf("resp=%+v err=%v", resp, err)
	}
	if srv.Calls() != 4 || resp.Attempts != 2 {
		t.Errorf("calls=%d attempts=%d, want 4 requests in 2 attempts", srv.Calls(), resp.Attempts)
	}
	if s := rec.sleeps(); len(s) != 1 || s[0] != 0 {
		t.Errorf("waits %v, want one retry at once", s)
	}
}
