package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/clock"

	openai "github.com/sashabaranov/go-openai"
)

// sleepRecorder is the test client's clock: its timers fire at once, so
// retries do not wait. It records the retry waits the client announces
// (NoticeRetry; 0 for a retry at once) and the timers it starts.
type sleepRecorder struct {
	now time.Time // the clock's time; zero: time.Now

	mu     sync.Mutex
	waits  []time.Duration
	timers []time.Duration
}

func (s *sleepRecorder) Now() time.Time {
	if s.now.IsZero() {
		return time.Now()
	}
	return s.now
}

func (s *sleepRecorder) After(d time.Duration) <-chan time.Time { return s.NewTimer(d).C() }

func (s *sleepRecorder) NewTimer(d time.Duration) clock.Timer {
	s.mu.Lock()
	s.timers = append(s.timers, d)
	s.mu.Unlock()
	return clock.Instant{}.NewTimer(d)
}

func (s *sleepRecorder) notice(n Notice) {
	if n.Kind == NoticeRetry {
		s.mu.Lock()
		s.waits = append(s.waits, n.Wait)
		s.mu.Unlock()
	}
}

// sleeps returns the retry waits, in order.
func (s *sleepRecorder) sleeps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// checkTimers fails t unless the client waited on its clock for exactly
// the retry waits that are not zero.
func (s *sleepRecorder) checkTimers(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	want := slices.DeleteFunc(slices.Clone(s.waits), func(d time.Duration) bool { return d <= 0 })
	if !slices.Equal(s.timers, want) {
		t.Errorf("timers %v, want the waits that are not zero %v", s.timers, want)
	}
}

func newTestClient(t *testing.T, srv *llmtest.Server, mod func(*Options)) (*Client, *sleepRecorder) {
	t.Helper()
	rec := &sleepRecorder{}
	opts := Options{
		APIKey:  "sk-test",
		BaseURL: srv.URL(),
		Model:   "test-model",
		Clock:   rec,
		Logger:  slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&opts)
	}
	onNotice := opts.OnNotice
	opts.OnNotice = func(n Notice) {
		rec.notice(n)
		if onNotice != nil {
			onNotice(n)
		}
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func TestChatBasic(t *testing.T) {
	srv := llmtest.NewServer(t, func(r *llmtest.Request) llmtest.Reply {
		return llmtest.Text("echo: " + r.LastUser())
	})
	c, _ := newTestClient(t, srv, func(o *Options) {
		o.RoleModels = map[Role]string{RoleWriter: "writer-model"}
	})
	ctx := WithNode(context.Background(), "write")
	resp, err := c.Chat(ctx, Request{Role: RoleWriter, Messages: []Message{System("be brief"), User("hello")}, MaxTokens: 100, Temperature: Temp(0)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "echo: hello" || resp.Model != "writer-model" || resp.FinishReason != "stop" || resp.ID == "" {
		t.Errorf("resp = %+v", resp)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage = %+v", resp.Usage)
	}
	req := srv.LastRequest()
	if req.Model != "writer-model" || req.Role() != "writer" || req.Node() != "write" {
		t.Errorf("request model=%q role=%q node=%q", req.Model, req.Role(), req.Node())
	}
	if req.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("auth header = %q", req.Header.Get("Authorization"))
	}
	//nolint:staticcheck // SA1019: the client sends max_tokens to non-reasoning models on purpose
	if req.MaxTokens != 100 || req.Temperature <= 0 || req.Temperature > 1e-6 {
		t.Errorf("max_tokens=%d temperature=%v (want tiny positive for 0)", req.MaxTokens, req.Temperature) //nolint:staticcheck // SA1019: as above
	}
	// The default role uses the default model.
	if _, err := c.Chat(context.Background(), Request{Role: RolePlanner, Messages: []Message{User("x")}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.LastRequest().Model; got != "test-model" {
		t.Errorf("planner model = %q", got)
	}
}

func TestReasoningModelParams(t *testing.T) {
	srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	c, _ := newTestClient(t, srv, func(o *Options) { o.Model = "o3-mini" })
	if _, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}, MaxTokens: 50, Temperature: Temp(0.3)}); err != nil {
		t.Fatal(err)
	}
	r := srv.LastRequest()
	//nolint:staticcheck // SA1019: checks that reasoning models do not get the old max_tokens
	if r.MaxTokens != 0 || r.MaxCompletionTokens != 50 || r.Temperature != 0 {
		t.Errorf("max_tokens=%d max_completion_tokens=%d temperature=%v", r.MaxTokens, r.MaxCompletionTokens, r.Temperature) //nolint:staticcheck // SA1019: as above
	}
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"description=search terms"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=10"`
}

func TestToolCallingRoundTrip(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(
		llmtest.Calls(llmtest.ToolCall{ID: "call_1", Name: "search", Args: map[string]any{"query": "生成AI 規制", "limit": 3}}),
		llmtest.Text("final answer"),
	)
	c, _ := newTestClient(t, srv, nil)
	tool, err := NewTool[searchArgs]("search", "Search the web")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{User("research")}
	resp, err := c.Chat(context.Background(), Request{Role: RoleResearcher, Messages: msgs, Tools: []Tool{tool}, ToolChoice: ToolChoiceAuto})
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "search" {
		t.Fatalf("resp = %+v", resp)
	}
	var args searchArgs
	if err := resp.ToolCalls[0].Decode(&args); err != nil || args.Query != "生成AI 規制" || args.Limit != 3 {
		t.Fatalf("args = %+v, %v", args, err)
	}
	first := srv.LastRequest()
	if got := first.ToolNames(); len(got) != 1 || got[0] != "search" {
		t.Errorf("tools offered = %v", got)
	}
	if !first.Tools[0].Function.Strict {
		t.Error("tool not strict")
	}
	params, _ := json.Marshal(first.Tools[0].Function.Parameters)
	if !strings.Contains(string(params), `"search terms"`) || !strings.Contains(string(params), `"additionalProperties":false`) {
		t.Errorf("parameters = %s", params)
	}
	if first.ToolChoice != "auto" {
		t.Errorf("tool_choice = %v", first.ToolChoice)
	}

	msgs = append(msgs, resp.Message(), ToolResult(resp.ToolCalls[0].ID, "3 results"))
	resp, err = c.Chat(context.Background(), Request{Role: RoleResearcher, Messages: msgs, Tools: []Tool{tool}, ToolChoice: "search"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "final answer" {
		t.Errorf("content = %q", resp.Content)
	}
	second := srv.LastRequest()
	if got := second.ToolResults()["call_1"]; got != "3 results" {
		t.Errorf("tool result sent = %q", got)
	}
	if am := second.Messages[1]; am.Role != "assistant" || len(am.ToolCalls) != 1 || am.ToolCalls[0].ID != "call_1" {
		t.Errorf("assistant message sent = %+v", am)
	}
	tc, _ := json.Marshal(second.ToolChoice)
	if !strings.Contains(string(tc), `"name":"search"`) {
		t.Errorf("named tool_choice = %s", tc)
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	dateHeader := http.Header{"Retry-After": {now.Add(42 * time.Second).Format(http.TimeFormat)}}
	msHeader := http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}
	tests := []struct {
		name  string
		reply llmtest.Reply
		want  time.Duration
	}{
		{"seconds", llmtest.RateLimited(7 * time.Second), 7 * time.Second},
		{"retry-after-ms wins", llmtest.Reply{Status: 429, Header: msHeader}, 1500 * time.Millisecond},
		{"http date", llmtest.Reply{Status: 429, Header: dateHeader}, 42 * time.Second},
		{"503 with retry-after", llmtest.Reply{Status: 503, Header: http.Header{"Retry-After": {"3"}}}, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, nil)
			srv.Enqueue(tt.reply, llmtest.Text("ok"))
			c, rec := newTestClient(t, srv, func(o *Options) { o.Clock.(*sleepRecorder).now = now })
			resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Attempts != 2 || srv.Calls() != 2 {
				t.Errorf("attempts=%d calls=%d", resp.Attempts, srv.Calls())
			}
			if got := rec.sleeps(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("slept %v, want [%v]", got, tt.want)
			}
			rec.checkTimers(t)
		})
	}
}

func TestRetryAfterTooLongFailsFast(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.RateLimited(time.Hour), llmtest.Text("never"))
	c, rec := newTestClient(t, srv, nil)
	_, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
	if !errors.Is(err, ErrRateLimited) || srv.Calls() != 1 || len(rec.sleeps()) != 0 {
		t.Errorf("err=%v calls=%d sleeps=%v", err, srv.Calls(), rec.sleeps())
	}
}

func TestRetry500ThenSuccess(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.ServerError(), llmtest.ServerError(), llmtest.Text("ok"))
	c, rec := newTestClient(t, srv, func(o *Options) { o.MinBackoff = 100 * time.Millisecond; o.MaxBackoff = time.Second })
	resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
	if err != nil || resp.Content != "ok" || resp.Attempts != 3 {
		t.Fatalf("resp=%+v err=%v", resp, err)
	}
	got := rec.sleeps()
	if len(got) != 2 {
		t.Fatalf("sleeps = %v", got)
	}
	// a 500 backs off from the first retry: exponential backoff with up to
	// 50% jitter subtracted
	for i, base := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		if got[i] < base/2 || got[i] > base {
			t.Errorf("sleep %d = %v, want in [%v, %v]", i, got[i], base/2, base)
		}
	}
}

// A 5xx is not retried at once (the issue's "retry 1 in 0s"): the first
// retry waits the backoff, jittered by the injected source.
func TestServerErrorBacksOffWithJitter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply llmtest.Reply
	}{
		{"500", llmtest.ServerError()},
		{"502", llmtest.Error(502, "bad gateway")},
		{"503", llmtest.Error(503, "overloaded")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, nil)
			srv.Enqueue(tc.reply, tc.reply, llmtest.Text("ok"))
			draws := 0
			c, rec := newTestClient(t, srv, func(o *Options) {
				o.MinBackoff, o.MaxBackoff = 400*time.Millisecond, 10*time.Second
				o.Jitter = func() float64 { draws++; return 0.5 }
			})
			if _, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}}); err != nil {
				t.Fatal(err)
			}
			// jitter 0.5 takes a quarter off: 400ms → 300ms, 800ms → 600ms
			want := []time.Duration{300 * time.Millisecond, 600 * time.Millisecond}
			if got := rec.sleeps(); !slices.Equal(got, want) || draws != 2 {
				t.Errorf("waits %v (jitter drawn %d times), want %v", got, draws, want)
			}
		})
	}
}

// A failure of one request (a malformed body, a request that hung) is
// retried at once the first time a call meets one: a fresh request is as
// likely to succeed now as later. A server error (500, 502, 503) or a server
// asking for room (429) waits, and Retry-After is the whole wait.
func TestPerRequestFailureRetriedAtOnce(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, time.Second
	tests := []struct {
		name    string
		replies []llmtest.Reply
		want    []time.Duration // 0 or an exact Retry-After; -n: backoff number n (jittered)
	}{
		{"500", []llmtest.Reply{llmtest.ServerError()}, []time.Duration{-1}},
		{"502", []llmtest.Reply{llmtest.Error(502, "bad gateway")}, []time.Duration{-1}},
		{"malformed", []llmtest.Reply{llmtest.Malformed()}, []time.Duration{0}},
		{"hang", []llmtest.Reply{llmtest.Hang()}, []time.Duration{0}},
		{"two per-request failures", []llmtest.Reply{llmtest.Malformed(), llmtest.ServerError()}, []time.Duration{0, -1}},
		{"three", []llmtest.Reply{llmtest.ServerError(), llmtest.Hang(), llmtest.ServerError()}, []time.Duration{-1, 0, -2}},
		{"503 waits", []llmtest.Reply{llmtest.Error(503, "overloaded")}, []time.Duration{-1}},
		{"429 then 500", []llmtest.Reply{llmtest.RateLimited(2 * time.Second), llmtest.ServerError()}, []time.Duration{2 * time.Second, -1}},
		{"500 then 429", []llmtest.Reply{llmtest.ServerError(), llmtest.RateLimited(2 * time.Second)}, []time.Duration{-1, 2 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, nil)
			srv.Enqueue(append(tt.replies, llmtest.Text("ok"))...)
			c, rec := newTestClient(t, srv, func(o *Options) {
				o.MinBackoff, o.MaxBackoff = lo, hi
				o.FirstTokenTimeout, o.HedgeAfter = 50*time.Millisecond, -1
			})
			resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
			if err != nil || resp.Content != "ok" {
				t.Fatalf("resp=%+v err=%v", resp, err)
			}
			got := rec.sleeps()
			if len(got) != len(tt.want) {
				t.Fatalf("slept %v, want %d waits", got, len(tt.want))
			}
			for i, w := range tt.want {
				if w >= 0 && got[i] != w {
					t.Errorf("wait %d = %v, want %v", i, got[i], w)
				}
				if w < 0 {
					base := lo << (-w - 1)
					if got[i] < base/2 || got[i] > base {
						t.Errorf("wait %d = %v, want backoff %d in [%v, %v]", i, got[i], -w, base/2, base)
					}
				}
			}
			rec.checkTimers(t)
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.ServerError() })
	c, rec := newTestClient(t, srv, func(o *Options) { o.MaxRetries = 2 })
	_, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
	var e *Error
	if !errors.Is(err, ErrServer) || !errors.As(err, &e) || e.Attempts != 3 || e.Status != 500 {
		t.Fatalf("err = %v", err)
	}
	if srv.Calls() != 3 || len(rec.sleeps()) != 2 {
		t.Errorf("calls=%d sleeps=%v", srv.Calls(), rec.sleeps())
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	tests := []struct {
		name    string
		reply   llmtest.Reply
		want    error
		message string
	}{
		{"400", llmtest.Error(400, "Invalid value for 'messages'"), ErrBadRequest, "Invalid value"},
		{"401", llmtest.Error(401, "Incorrect API key provided"), ErrUnauthorized, "OPENAI_API_KEY"},
		{"403", llmtest.Error(403, "not allowed"), ErrForbidden, "OPENAI_API_KEY"},
		{"404", llmtest.Error(404, "The model does not exist"), ErrModelNotFound, "DEEPRESEARCH_MODEL"},
		{"context length", llmtest.Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`}, ErrContextLength, "context"},
		{"quota 429", llmtest.Reply{Status: 429, Body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`}, ErrRateLimited, "quota"},
		{"vllm style 400", llmtest.Reply{Status: 400, Body: `{"object":"error","message":"bad stop sequence","type":"BadRequestError","code":400}`}, ErrBadRequest, "bad stop sequence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return tt.reply })
			c, rec := newTestClient(t, srv, nil)
			_, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not mention %q", err, tt.message)
			}
			if srv.Calls() != 1 || len(rec.sleeps()) != 0 {
				t.Errorf("calls=%d sleeps=%v: want no retry", srv.Calls(), rec.sleeps())
			}
		})
	}
}

func TestUnauthorizedRealKeyCheck(t *testing.T) {
	srv := llmtest.NewServer(t, nil, llmtest.WithAPIKey("right"))
	c, _ := newTestClient(t, srv, func(o *Options) { o.APIKey = "wrong" })
	_, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "check OPENAI_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error leaks the key: %v", err)
	}
	if err := c.Ping(context.Background()); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Ping err = %v", err)
	}
	good, _ := newTestClient(t, srv, func(o *Options) { o.APIKey = "right" })
	if err := good.Ping(context.Background()); err != nil {
		t.Errorf("Ping with the right key: %v", err)
	}
}

func TestModelNotFoundNamesVariable(t *testing.T) {
	srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Text("ok") }, llmtest.WithModels("test-model"))
	c, _ := newTestClient(t, srv, func(o *Options) { o.RoleModels = map[Role]string{RoleReviewer: "gpt-missing"} })
	_, err := c.Chat(context.Background(), Request{Role: RoleReviewer, Messages: []Message{User("x")}})
	if !errors.Is(err, ErrModelNotFound) || !strings.Contains(err.Error(), "DEEPRESEARCH_MODEL_REVIEWER") || !strings.Contains(err.Error(), "gpt-missing") {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Chat(context.Background(), Request{Role: RolePlanner, Messages: []Message{User("x")}}); err != nil {
		t.Errorf("default model: %v", err)
	}
}

func TestTimeoutMalformedAndConnectionRetries(t *testing.T) {
	t.Run("hang then ok", func(t *testing.T) {
		srv := llmtest.NewServer(t, nil)
		srv.Enqueue(llmtest.Hang(), llmtest.Text("ok"))
		c, rec := newTestClient(t, srv, func(o *Options) { o.Timeout = 300 * time.Millisecond })
		resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
		if err != nil || resp.Content != "ok" || len(rec.sleeps()) != 1 {
			t.Fatalf("resp=%+v err=%v sleeps=%v", resp, err, rec.sleeps())
		}
	})
	t.Run("always hangs", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Hang() })
		c, _ := newTestClient(t, srv, func(o *Options) { o.Timeout = 20 * time.Millisecond; o.MaxRetries = 1 })
		_, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
		if !errors.Is(err, ErrTimeout) || srv.Calls() != 2 {
			t.Fatalf("err=%v calls=%d", err, srv.Calls())
		}
	})
	t.Run("malformed then ok", func(t *testing.T) {
		srv := llmtest.NewServer(t, nil)
		srv.Enqueue(llmtest.Malformed(), llmtest.Reply{Body: `{"id":"x","choices":[]}`}, llmtest.Text("ok"))
		c, _ := newTestClient(t, srv, nil)
		resp, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
		if err != nil || resp.Content != "ok" || resp.Attempts != 3 {
			t.Fatalf("resp=%+v err=%v", resp, err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := llmtest.New(nil)
		c, rec := newTestClient(t, srv, func(o *Options) { o.MaxRetries = 2 })
		srv.Close()
		_, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}})
		if !errors.Is(err, ErrConnection) || len(rec.sleeps()) != 2 || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
			t.Fatalf("err=%v sleeps=%v", err, rec.sleeps())
		}
	})
	t.Run("cancel while waiting", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.ServerError() })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clk := clock.NewManual(time.Now()) // never advanced
		c, _ := newTestClient(t, srv, func(o *Options) { o.Clock = clk })
		go func() {
			select {
			case <-clk.WaitForWaiters(1):
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err := c.Chat(ctx, Request{Messages: []Message{User("x")}})
		// the first 500 waits, and is cancelled
		if !errors.Is(err, context.Canceled) || srv.Calls() != 1 {
			t.Fatalf("err=%v calls=%d", err, srv.Calls())
		}
	})
}

type verdict struct {
	Score   int      `json:"score" jsonschema:"minimum=0,maximum=100"`
	Pass    bool     `json:"pass"`
	Issues  []string `json:"issues"`
	Comment *string  `json:"comment,omitempty"`
}

func TestStructuredRoundTrip(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.On(llmtest.Match{Schema: "verdict"}, llmtest.JSON(map[string]any{"score": 87, "pass": true, "issues": []string{"cite more"}, "comment": nil}))
	c, _ := newTestClient(t, srv, func(o *Options) {
		o.Prices = map[string]Price{"test": {Prompt: 1, Completion: 2}}
	})
	var v verdict
	resp, err := Structured(context.Background(), c, Request{Role: RoleReviewer, Messages: []Message{System("review"), User("draft")}}, &v)
	if err != nil {
		t.Fatal(err)
	}
	if v.Score != 87 || !v.Pass || len(v.Issues) != 1 || v.Comment != nil {
		t.Errorf("v = %+v", v)
	}
	if resp.Cost <= 0 || resp.Usage.TotalTokens == 0 {
		t.Errorf("resp = %+v", resp)
	}
	r := srv.LastRequest()
	if r.FormatType() != "json_schema" || !r.ResponseFormat.JSONSchema.Strict {
		t.Fatalf("response_format = %+v", r.ResponseFormat)
	}
	want, _ := SchemaFor[verdict]()
	wantJSON, _ := json.Marshal(want)
	if string(r.Schema()) != string(wantJSON) {
		t.Errorf("schema sent:\n%s\nwant:\n%s", r.Schema(), wantJSON)
	}
	if c.JSONMode() != JSONModeSchema {
		t.Errorf("mode = %s", c.JSONMode())
	}
}

func TestStructuredTolerantReply(t *testing.T) {
	srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply {
		return llmtest.Text("<think>score it</think>\nHere it is:\n```json\n{\"score\": 50, \"pass\": false, \"issues\": [],}\n```")
	})
	c, _ := newTestClient(t, srv, nil)
	var v verdict
	if _, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &v); err != nil {
		t.Fatal(err)
	}
	if v.Score != 50 || srv.Calls() != 1 {
		t.Errorf("v=%+v calls=%d", v, srv.Calls())
	}
}

func TestStructuredRepairOnce(t *testing.T) {
	t.Run("repaired", func(t *testing.T) {
		srv := llmtest.NewServer(t, nil)
		srv.Enqueue(llmtest.Text(`{"score": 10, "pass": yes}`), llmtest.JSON(verdict{Score: 10, Issues: []string{}}))
		c, _ := newTestClient(t, srv, nil)
		m := NewMeter(0, 0)
		var v verdict
		resp, err := Structured(WithMeter(context.Background(), m), c, Request{Messages: []Message{User("x")}}, &v)
		if err != nil {
			t.Fatal(err)
		}
		if v.Score != 10 || srv.Calls() != 2 {
			t.Fatalf("v=%+v calls=%d", v, srv.Calls())
		}
		if m.Total().Calls != 2 || resp.Usage.TotalTokens != m.Total().TotalTokens {
			t.Errorf("usage resp=%+v meter=%+v", resp.Usage, m.Total())
		}
		second := srv.LastRequest()
		n := len(second.Messages)
		if n != 3 || second.Messages[1].Role != "assistant" || second.Messages[1].Content != `{"score": 10, "pass": yes}` ||
			!strings.Contains(second.Messages[2].Content, "could not be parsed") {
			t.Errorf("repair messages = %+v", second.Messages)
		}
	})
	t.Run("gives up after one repair", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Text("I refuse to write JSON") })
		c, _ := newTestClient(t, srv, nil)
		var v verdict
		_, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &v)
		if !errors.Is(err, ErrInvalidJSON) || srv.Calls() != 2 {
			t.Fatalf("err=%v calls=%d", err, srv.Calls())
		}
	})
	t.Run("refusal", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Reply{Refusal: "I can't help with that"} })
		c, _ := newTestClient(t, srv, nil)
		var v verdict
		_, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &v)
		if !errors.Is(err, ErrRefused) || srv.Calls() != 1 {
			t.Fatalf("err=%v calls=%d", err, srv.Calls())
		}
	})
}

func TestStructuredFallback(t *testing.T) {
	t.Run("json_schema rejected → json_object, remembered", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.JSON(verdict{Score: 1, Issues: []string{}}) },
			llmtest.WithoutJSONSchema())
		c, rec := newTestClient(t, srv, nil)
		var v verdict
		if _, err := Structured(context.Background(), c, Request{Messages: []Message{System("You review."), User("x")}}, &v); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || reqs[0].FormatType() != "json_schema" || reqs[1].FormatType() != "json_object" {
			t.Fatalf("formats: %d requests", len(reqs))
		}
		if sys := reqs[1].System(); !strings.HasPrefix(sys, "You review.") || !strings.Contains(sys, `"score"`) || !strings.Contains(sys, "JSON") {
			t.Errorf("schema not in system prompt: %q", sys)
		}
		if len(rec.sleeps()) != 0 {
			t.Errorf("fallback slept: %v", rec.sleeps())
		}
		if c.JSONMode() != JSONModeObject {
			t.Errorf("mode = %s", c.JSONMode())
		}
		// The next call goes straight to json_object.
		if _, err := Structured(context.Background(), c, Request{Messages: []Message{User("y")}}, &v); err != nil {
			t.Fatal(err)
		}
		if srv.Calls() != 3 || srv.LastRequest().FormatType() != "json_object" {
			t.Errorf("calls=%d format=%s", srv.Calls(), srv.LastRequest().FormatType())
		}
		if srv.LastRequest().Messages[0].Role != "system" {
			t.Error("instruction not added as a system message")
		}
	})
	t.Run("no response_format at all → prompt", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.JSON(verdict{Score: 2, Issues: []string{}}) },
			llmtest.WithoutResponseFormat())
		c, _ := newTestClient(t, srv, nil)
		var v verdict
		if _, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &v); err != nil {
			t.Fatal(err)
		}
		if v.Score != 2 || srv.Calls() != 3 || srv.LastRequest().FormatType() != "" || c.JSONMode() != JSONModePrompt {
			t.Errorf("v=%+v calls=%d mode=%s", v, srv.Calls(), c.JSONMode())
		}
	})
	t.Run("other 400 is not a fallback", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Error(400, "messages must not be empty") })
		c, _ := newTestClient(t, srv, nil)
		var v verdict
		_, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &v)
		if !errors.Is(err, ErrBadRequest) || srv.Calls() != 1 || c.JSONMode() != JSONModeSchema {
			t.Errorf("err=%v calls=%d mode=%s", err, srv.Calls(), c.JSONMode())
		}
	})
}

func TestStructuredRejectsNonObject(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	c, _ := newTestClient(t, srv, nil)
	var out []string
	if _, err := Structured(context.Background(), c, Request{Messages: []Message{User("x")}}, &out); !errors.Is(err, ErrSchema) {
		t.Errorf("err = %v", err)
	}
}

func TestUsagePerNodeAndRun(t *testing.T) {
	srv := llmtest.NewServer(t, func(r *llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "ok", Usage: usageFor(r)}
	})
	meter := NewMeter(0, 0)
	c, _ := newTestClient(t, srv, func(o *Options) {
		o.Meter = meter
		o.RoleModels = map[Role]string{RoleWriter: "gpt-4o-2024-08-06"}
		o.Prices = map[string]Price{"gpt-4o": {Prompt: 2.5, Completion: 10}, "test-model": {Prompt: 1, Completion: 1}}
	})
	calls := []struct {
		node string
		role Role
	}{{"plan", RolePlanner}, {"plan", RolePlanner}, {"research[0]", RoleResearcher}, {"research[1]", RoleResearcher}, {"write", RoleWriter}}
	var wg sync.WaitGroup
	for _, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Chat(WithNode(context.Background(), call.node), Request{Role: call.role, Messages: []Message{User("q")}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// usageFor gives 100 prompt + 10 completion tokens for every call.
	tot := meter.Total()
	if tot.Calls != 5 || tot.PromptTokens != 500 || tot.CompletionTokens != 50 || tot.TotalTokens != 550 || meter.Used() != 550 {
		t.Errorf("total = %+v used=%d", tot, meter.Used())
	}
	if p := meter.Node("plan"); p.Calls != 2 || p.TotalTokens != 220 {
		t.Errorf("plan = %+v", p)
	}
	if len(meter.ByNode()) != 4 {
		t.Errorf("nodes = %v", meter.ByNode())
	}
	w := meter.Node("write")
	wantCost := (100*2.5 + 10*10) / 1e6
	if w.Calls != 1 || fmt.Sprintf("%.9f", w.Cost) != fmt.Sprintf("%.9f", wantCost) {
		t.Errorf("write = %+v, want cost %v", w, wantCost)
	}
	if m := meter.ByModel()["gpt-4o-2024-08-06"]; m.Calls != 1 {
		t.Errorf("by model = %+v", meter.ByModel())
	}
	recs := meter.Records()
	if len(recs) != 5 {
		t.Fatalf("records = %d", len(recs))
	}
	for _, r := range recs {
		if r.Node == "" || r.Role == "" || r.Model == "" || r.PromptTokens != 100 {
			t.Errorf("record = %+v", r)
		}
	}
	// A context meter takes precedence over Options.Meter.
	own := NewMeter(0, 0)
	if _, err := c.Chat(WithMeter(context.Background(), own), Request{Messages: []Message{User("q")}}); err != nil {
		t.Fatal(err)
	}
	if own.Total().Calls != 1 || meter.Total().Calls != 5 {
		t.Errorf("context meter calls=%d options meter calls=%d", own.Total().Calls, meter.Total().Calls)
	}
}

func usageFor(*llmtest.Request) *openaiUsage {
	return &openaiUsage{PromptTokens: 100, CompletionTokens: 10}
}

func TestBudget(t *testing.T) {
	srv := llmtest.NewServer(t, func(r *llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "ok", Usage: &openaiUsage{PromptTokens: 300, CompletionTokens: 100}}
	})
	c, _ := newTestClient(t, srv, nil)
	meter := NewMeter(1000, 0.15) // 850 for ordinary calls, 150 reserved
	ctx := WithMeter(WithNode(context.Background(), "research"), meter)
	small := Request{Messages: []Message{User("q")}, MaxTokens: 50}
	for i := range 2 {
		if _, err := c.Chat(ctx, small); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if meter.Used() != 800 || meter.Remaining() != 50 || meter.RemainingFinal() != 200 {
		t.Fatalf("used=%d remaining=%d final=%d", meter.Used(), meter.Remaining(), meter.RemainingFinal())
	}
	_, err := c.Chat(ctx, small)
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("err = %v", err)
	}
	if srv.Calls() != 2 {
		t.Errorf("refused call reached the server: calls=%d", srv.Calls())
	}
	if meter.MustFinalize() {
		t.Error("MustFinalize with 50 ordinary tokens left")
	}
	// The final answer may spend the reserve.
	final := small
	final.Final = true
	if _, err := c.Chat(ctx, final); err != nil {
		t.Fatalf("final answer: %v", err)
	}
	if !meter.MustFinalize() || meter.Remaining() != 0 {
		t.Errorf("after final: remaining=%d", meter.Remaining())
	}
	if _, err := c.Chat(ctx, final); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("second final over budget: %v", err)
	}
	// The default meter: a million tokens, 15% kept for the final answer.
	d := NewDefaultMeter()
	if d.Budget() != 1_000_000 || d.Reserve() != 150_000 || d.Remaining() != 850_000 {
		t.Errorf("default meter budget=%d reserve=%d", d.Budget(), d.Reserve())
	}
}

func TestBudgetConcurrentInFlight(t *testing.T) {
	m := NewMeter(1000, 0)
	rel, err := m.acquire(600, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.acquire(600, false); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("second in-flight call admitted: %v", err)
	}
	rel(&Record{PromptTokens: 100})
	if _, err := m.acquire(600, false); err != nil {
		t.Errorf("after release: %v", err)
	}
}

func TestAzure(t *testing.T) {
	srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Text("ok") }, llmtest.WithAPIKey("az-key"))
	c, err := New(Options{
		APIKey: "az-key", BaseURL: srv.RootURL(), Provider: ProviderAzure, AzureAPIVersion: "2024-10-21",
		Model: "gpt-4o", AzureDeployments: map[string]string{"gpt-4o": "prod-4o"},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}}); err != nil {
		t.Fatal(err)
	}
	r := srv.LastRequest()
	if r.Deployment != "prod-4o" || r.Query != "api-version=2024-10-21" || r.Header.Get("api-key") != "az-key" || r.Header.Get("Authorization") != "" {
		t.Errorf("deployment=%q query=%q headers=%v", r.Deployment, r.Query, r.Header)
	}
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want error
	}{
		{"no model", Options{APIKey: "k"}, ErrConfig},
		{"no key for openai", Options{Model: "m"}, ErrMissingAPIKey},
		{"no key for azure", Options{Model: "m", BaseURL: "https://x.openai.azure.com"}, ErrMissingAPIKey},
		{"bad url", Options{Model: "m", BaseURL: "localhost:11434"}, ErrConfig},
		{"bad json mode", Options{Model: "m", APIKey: "k", JSONMode: "yaml"}, ErrConfig},
	}
	for _, tt := range tests {
		if _, err := New(tt.opts); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	// Ollama without a key, path /v1 appended.
	srv := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	c, err := New(Options{BaseURL: srv.RootURL(), Model: "llama3.1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}}); err != nil {
		t.Fatal(err)
	}
	if r := srv.LastRequest(); r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "" {
		t.Errorf("path=%q auth=%q", r.Path, r.Header.Get("Authorization"))
	}
}

type openaiUsage = openai.Usage
