package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func client(s *Server) *openai.Client {
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = s.URL()
	return openai.NewClientWithConfig(cfg)
}

func chat(ctx context.Context, s *Server, system, user string) (openai.ChatCompletionResponse, error) {
	return client(s).CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: "m",
		Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: system},
			{Role: "user", Content: user},
		},
	})
}

func TestWireProtocol(t *testing.T) {
	s := NewServer(t, func(r *Request) Reply {
		if len(r.Tools) > 0 {
			return Calls(ToolCall{Name: "search", Args: map[string]string{"q": "x"}}, ToolCall{ID: "mine", Name: "visit", Args: `{"url":"u"}`})
		}
		return Text("hello " + r.LastUser())
	})
	resp, err := chat(context.Background(), s, "sys", "world")
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.Message.Content != "hello world" || ch.FinishReason != "stop" || resp.Model != "m" || !strings.HasPrefix(resp.ID, "chatcmpl-") {
		t.Errorf("resp = %+v", resp)
	}
	// "sys"+"world" = 8 chars → 2 tokens + 4 per message; completion "hello world" → 3.
	if resp.Usage.PromptTokens != 10 || resp.Usage.CompletionTokens != 3 || resp.Usage.TotalTokens != 13 {
		t.Errorf("usage = %+v", resp.Usage)
	}

	resp, err = client(s).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model:    "m",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "go"}},
		Tools:    []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "search", Parameters: map[string]any{"type": "object"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tcs := resp.Choices[0].Message.ToolCalls
	if resp.Choices[0].FinishReason != "tool_calls" || len(tcs) != 2 || tcs[0].Function.Arguments != `{"q":"x"}` || tcs[1].ID != "mine" || tcs[0].ID == "" {
		t.Errorf("tool calls = %+v", tcs)
	}
	if got := s.LastRequest().ToolNames(); len(got) != 1 || got[0] != "search" {
		t.Errorf("recorded tools = %v", got)
	}
	// The un-versioned path works too.
	res, err := http.Post(s.RootURL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("/chat/completions status %d", res.StatusCode)
	}
}

func TestPrecedenceQueueRulesResponder(t *testing.T) {
	s := NewServer(t, func(*Request) Reply { return Text("responder") })
	s.On(Match{System: "planner"}, Text("plan-1"), Text("plan-2"))
	s.On(Match{Func: func(r *Request) bool { return strings.Contains(r.LastUser(), "write") }}, Text("writer"))
	s.Enqueue(Text("queued"))
	steps := []struct{ system, user, want string }{
		{"You are the planner", "x", "queued"}, // the queue comes first
		{"You are the planner", "x", "plan-1"},
		{"You are the planner", "x", "plan-2"},
		{"You are the planner", "x", "plan-2"}, // the last reply repeats
		{"other", "please write", "writer"},
		{"other", "x", "responder"},
	}
	for i, st := range steps {
		resp, err := chat(context.Background(), s, st.system, st.user)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != st.want {
			t.Errorf("step %d: got %q, want %q", i, got, st.want)
		}
	}
	if s.Calls() != len(steps) || s.Pending() != 0 {
		t.Errorf("calls=%d pending=%d", s.Calls(), s.Pending())
	}
}

func TestMatchFields(t *testing.T) {
	r := &Request{Header: http.Header{}}
	r.Model = "gpt"
	r.Header.Set("X-Deepresearch-Role", "writer")
	r.Header.Set("X-Deepresearch-Node", "write")
	r.Messages = []openai.ChatCompletionMessage{{Role: "system", Content: "sys text"}, {Role: "user", Content: "first"}, {Role: "user", Content: "last"}}
	r.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: "json_schema", JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "Plan"}}
	r.Tools = []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "search"}}}
	tests := []struct {
		m    Match
		want bool
	}{
		{Match{}, true},
		{Match{System: "sys"}, true},
		{Match{System: "nope"}, false},
		{Match{User: "last"}, true},
		{Match{User: "first"}, false},
		{Match{Text: "first"}, true},
		{Match{Role: "writer", Node: "write", Model: "gpt", Schema: "Plan", Tool: "search"}, true},
		{Match{Role: "planner"}, false},
		{Match{Schema: "Other"}, false},
		{Match{Tool: "visit"}, false},
	}
	for i, tt := range tests {
		if got := tt.m.matches(r); got != tt.want {
			t.Errorf("%d: %+v matches = %v", i, tt.m, got)
		}
	}
}

func TestUnscripted(t *testing.T) {
	s := NewServer(t, nil)
	_, err := chat(context.Background(), s, "You are the reviewer", "x")
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || !strings.Contains(apiErr.Message, "no reply scripted") || !strings.Contains(apiErr.Message, "reviewer") {
		t.Fatalf("err = %v", err)
	}
	if s.Unscripted() != 1 {
		t.Errorf("unscripted = %d", s.Unscripted())
	}
}

func TestErrorReplies(t *testing.T) {
	s := NewServer(t, nil)
	s.Enqueue(RateLimited(1500*time.Millisecond), Error(503, "overloaded"), Malformed())
	c := client(s)
	req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}}

	resp, err := c.CreateChatCompletion(context.Background(), req)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 429 {
		t.Fatalf("err = %v", err)
	}
	if resp.Header().Get("Retry-After") != "2" || resp.Header().Get("retry-after-ms") != "1500" {
		t.Errorf("headers = %v", resp.Header())
	}
	if _, err := c.CreateChatCompletion(context.Background(), req); !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 503 || apiErr.Message != "overloaded" {
		t.Errorf("err = %v", err)
	}
	if _, err := c.CreateChatCompletion(context.Background(), req); err == nil {
		t.Error("malformed body parsed")
	}
}

func TestHangAndDelayHonourCancellation(t *testing.T) {
	s := New(nil)
	s.Enqueue(Hang(), Delayed(time.Hour, Text("late")), Delayed(10*time.Millisecond, Text("soon")))
	for _, name := range []string{"hang", "delay"} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, err := chat(ctx, s, "s", "u")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Errorf("%s: err=%v after %v", name, err, time.Since(start))
		}
	}
	resp, err := chat(context.Background(), s, "s", "u")
	if err != nil || resp.Choices[0].Message.Content != "soon" {
		t.Errorf("delayed: %v %v", resp, err)
	}
	// Close releases a request that is still hanging.
	s.Enqueue(Hang())
	done := make(chan error, 1)
	go func() { _, err := chat(context.Background(), s, "s", "u"); done <- err }()
	for s.Calls() < 4 {
		time.Sleep(time.Millisecond)
	}
	s.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("hanging request succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the hanging request")
	}
}

// TestFaultRateSeeded checks the injected share with a fixed seed. Calls
// are sequential, so the outcome is exact.
func TestFaultRateSeeded(t *testing.T) {
	run := func() (failed int, faulted map[Fault]int) {
		s := NewServer(t, func(*Request) Reply { return Text("ok") },
			WithFaults(Faults{Rate: 0.3, Seed: 7, Kinds: []Fault{Fault429, Fault500, FaultMalformed}}))
		for range 200 {
			res, err := http.Post(s.URL()+"/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || !strings.HasSuffix(strings.TrimSpace(string(body)), "}") {
				failed++
			}
			if res.StatusCode == 429 && res.Header.Get("Retry-After") != "1" {
				t.Errorf("429 without Retry-After: %v", res.Header)
			}
		}
		return failed, s.Faulted()
	}
	failed, faulted := run()
	const want = 66 // for seed 7, rate 0.3, 200 calls (33%)
	if failed < 40 || failed > 80 {
		t.Errorf("failed = %d of 200, not roughly 30%%", failed)
	}
	if failed != want {
		t.Errorf("failed = %d, want %d for the fixed seed", failed, want)
	}
	sum := 0
	for _, n := range faulted {
		sum += n
	}
	if sum != failed || len(faulted) != 3 {
		t.Errorf("faulted = %v (sum %d), failed %d", faulted, sum, failed)
	}
	again, faulted2 := run()
	if again != failed || faulted2[Fault429] != faulted[Fault429] {
		t.Errorf("not reproducible: %d/%v vs %d/%v", again, faulted2, failed, faulted)
	}
}

func TestConcurrentRecording(t *testing.T) {
	s := NewServer(t, func(r *Request) Reply { return Text(r.LastUser()) })
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := chat(context.Background(), s, "s", "u"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	reqs := s.Requests()
	calls := make([]int, 0, len(reqs))
	for _, r := range reqs {
		calls = append(calls, r.Call)
	}
	sort.Ints(calls)
	for i, c := range calls {
		if c != i+1 {
			t.Fatalf("call indexes = %v", calls)
		}
	}
	if s.Calls() != 40 {
		t.Errorf("calls = %d", s.Calls())
	}
}

func TestModelsAndAuth(t *testing.T) {
	s := NewServer(t, func(*Request) Reply { return Text("ok") }, WithModels("a", "b"), WithAPIKey("secret"))
	cfg := openai.DefaultConfig("secret")
	cfg.BaseURL = s.URL()
	c := openai.NewClientWithConfig(cfg)
	list, err := c.ListModels(context.Background())
	if err != nil || len(list.Models) != 2 || list.Models[0].ID != "a" {
		t.Fatalf("models = %+v, %v", list, err)
	}
	_, err = c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "zzz", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: %v", err)
	}
	bad := openai.DefaultConfig("wrong")
	bad.BaseURL = s.URL()
	_, err = openai.NewClientWithConfig(bad).ListModels(context.Background())
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 401 {
		t.Errorf("bad key: %v", err)
	}
}

func TestJSONReplyAndSchemaRecorded(t *testing.T) {
	s := NewServer(t, nil)
	s.On(Match{Schema: "Plan"}, JSON(map[string]any{"goal": "g"}))
	c := client(s)
	resp, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model:    "m",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}},
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: "json_schema", JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
			Name: "Plan", Strict: true, Schema: jsonRaw(`{"type":"object","properties":{"goal":{"type":"string"}}}`),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != `{"goal":"g"}` {
		t.Errorf("content = %q", resp.Choices[0].Message.Content)
	}
	r := s.LastRequest()
	if r.SchemaName() != "Plan" || !strings.Contains(string(r.Schema()), `"goal"`) || r.FormatType() != "json_schema" {
		t.Errorf("schema = %s", r.Schema())
	}
}

type jsonRaw string

func (j jsonRaw) MarshalJSON() ([]byte, error) { return []byte(j), nil }

func TestRejectedFormatKeepsQueue(t *testing.T) {
	s := NewServer(t, nil, WithoutJSONSchema())
	s.Enqueue(JSON(map[string]int{"a": 1}))
	c := client(s)
	req := openai.ChatCompletionRequest{
		Model:    "m",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}},
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: "json_schema", JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
			Name: "A", Schema: jsonRaw(`{"type":"object"}`),
		}},
	}
	_, err := c.CreateChatCompletion(context.Background(), req)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || !strings.Contains(apiErr.Message, "response_format") {
		t.Fatalf("err = %v", err)
	}
	if s.Pending() != 1 {
		t.Fatalf("rejected request consumed the queued reply")
	}
	req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: "json_object"}
	resp, err := c.CreateChatCompletion(context.Background(), req)
	if err != nil || resp.Choices[0].Message.Content != `{"a":1}` {
		t.Fatalf("resp=%v err=%v", resp, err)
	}
}

// The fake answers auth and model errors with the bodies OpenAI sends, so
// clients are tested against what they will meet.
func TestErrorBodiesLikeOpenAI(t *testing.T) {
	s := NewServer(t, func(*Request) Reply { return Text("ok") }, WithModels("gpt-real"), WithAPIKey("sk-right-key-0000"))
	type apiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	do := func(method, path, key, body string) (int, apiError) {
		t.Helper()
		req, _ := http.NewRequest(method, s.RootURL()+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Error apiError `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, v.Error
	}
	str := func(p *string) string {
		if p == nil {
			return "<null>"
		}
		return *p
	}
	chat := `{"model":"gpt-nope","messages":[{"role":"user","content":"x"}]}`
	for _, tc := range []struct {
		name, method, path, key, body string
		status                        int
		code, param, msgPrefix        string
	}{
		{"no key", "GET", "/v1/models", "", "", 401, "<null>", "<null>", "You didn't provide an API key."},
		{"wrong key", "GET", "/v1/models", "sk-wrong-key-7f3a", "", 401, "invalid_api_key", "<null>", "Incorrect API key provided: sk-********7f3a."},
		{"unknown model by id", "GET", "/v1/models/gpt-nope", "sk-right-key-0000", "", 404, "model_not_found", "model", "The model 'gpt-nope' does not exist"},
		{"chat with unknown model", "POST", "/v1/chat/completions", "sk-right-key-0000", chat, 404, "model_not_found", "<null>", "The model `gpt-nope` does not exist or you do not have access to it."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, e := do(tc.method, tc.path, tc.key, tc.body)
			if status != tc.status || str(e.Code) != tc.code || str(e.Param) != tc.param || e.Type != "invalid_request_error" || !strings.HasPrefix(e.Message, tc.msgPrefix) {
				t.Errorf("got %d %+v (code %s, param %s), want %d code %s param %s message %q…", status, e, str(e.Code), str(e.Param), tc.status, tc.code, tc.param, tc.msgPrefix)
			}
			if strings.Contains(e.Message, "wrong-key") {
				t.Errorf("the key is echoed unmasked: %q", e.Message)
			}
		})
	}
}

// With a generation rate the fake takes time per output token, streamed or
// not: 400 characters are 100 tokens, 100 ms at 1000 tokens a second.
func TestTokensPerSecond(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := NewServer(t, func(*Request) Reply { return Text(strings.Repeat("abcd", 100)) }, WithTokensPerSecond(1000))
			cfg := openai.DefaultConfig("k")
			cfg.BaseURL = srv.URL()
			c := openai.NewClientWithConfig(cfg)
			req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}}
			if stream {
				st, err := c.CreateChatCompletionStream(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				for {
					if _, err := st.Recv(); err != nil {
						break
					}
				}
				st.Close()
			} else if _, err := c.CreateChatCompletion(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got, want := srv.GenerationTime(), 100*time.Millisecond; got != want {
				t.Errorf("generation time %v, want %v", got, want)
			}
		})
	}
}

// TestClosedURLStaysClosed: the port of ClosedURL refuses connections, and
// no listener can take it while the test runs.
func TestClosedURLStaysClosed(t *testing.T) {
	u, err := url.Parse(ClosedURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if ln, err := net.Listen("tcp", u.Host); err == nil {
		ln.Close()
		t.Fatalf("a listener took %s", u.Host)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err == nil {
		conn.Close()
		t.Fatalf("%s accepted a connection", u.Host)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s: %v, want connection refused", u.Host, err)
	}
}
