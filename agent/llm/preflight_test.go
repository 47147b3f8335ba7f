package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
)

func TestCheck(t *testing.T) {
	srv := llmtest.NewServer(t, nil, llmtest.WithAPIKey("right"), llmtest.WithModels("m-one", "m-two"))
	open := llmtest.NewServer(t, nil) // lists one model, serves any
	closed := llmtest.ClosedURL(t)
	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr error
		has     []string // every one in the error's single line
	}{
		{"ok", Options{APIKey: "right", BaseURL: srv.URL(), Model: "m-one"}, nil, nil},
		{"role model ok", Options{APIKey: "right", BaseURL: srv.URL(), Model: "m-one", RoleModels: map[Role]string{RoleWriter: "m-two"}}, nil, nil},
		{"unlisted but retrievable", Options{BaseURL: open.URL(), Model: "anything"}, nil, nil},
		{"wrong key", Options{APIKey: "wrong", BaseURL: srv.URL(), Model: "m-one"}, ErrUnauthorized, []string{"OPENAI_API_KEY", "HTTP 401"}},
		{"unknown model", Options{APIKey: "right", BaseURL: srv.URL(), Model: "m-three"}, ErrModelNotFound, []string{"DEEPRESEARCH_MODEL", `"m-three"`, "m-one, m-two"}},
		{"unknown role model", Options{APIKey: "right", BaseURL: srv.URL(), Model: "m-one", RoleModels: map[Role]string{RoleReviewer: "nope"}}, ErrModelNotFound, []string{"DEEPRESEARCH_MODEL_REVIEWER", `"nope"`}},
		{"does not answer", Options{BaseURL: closed, Model: "m-one"}, ErrConnection, []string{"OPENAI_BASE_URL", closed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Logger = slog.New(slog.DiscardHandler)
			c, err := New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Check(context.Background())
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, s := range tc.has {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q lacks %q", msg, s)
				}
			}
			if strings.Contains(msg, "wrong") {
				t.Errorf("error leaks the key: %q", msg)
			}
		})
	}
	if srv.Calls()+open.Calls() != 0 {
		t.Errorf("Check made %d chat calls; want none (listing is free)", srv.Calls()+open.Calls())
	}
}

func TestPickModel(t *testing.T) {
	one := llmtest.NewServer(t, nil, llmtest.WithModels("qwen2.5:14b"))
	two := llmtest.NewServer(t, nil, llmtest.WithModels("a", "b"))
	keyed := llmtest.NewServer(t, nil, llmtest.WithAPIKey("right"), llmtest.WithModels("a"))
	ctx := context.Background()

	o, picked, err := PickModel(ctx, Options{BaseURL: one.URL()})
	if err != nil || o.Model != "qwen2.5:14b" || !picked {
		t.Fatalf("one model: %+v picked=%v err=%v", o, picked, err)
	}
	o, picked, err = PickModel(ctx, Options{BaseURL: two.URL(), Model: "b"})
	if err != nil || o.Model != "b" || picked {
		t.Fatalf("set model kept: %+v picked=%v err=%v", o, picked, err)
	}
	_, _, err = PickModel(ctx, Options{BaseURL: two.URL()})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "DEEPRESEARCH_MODEL") || !strings.Contains(err.Error(), "a, b") {
		t.Fatalf("two models: err = %v, want one naming DEEPRESEARCH_MODEL and listing a, b", err)
	}
	_, _, err = PickModel(ctx, Options{BaseURL: keyed.URL(), APIKey: "wrong"})
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("wrong key: err = %v", err)
	}
	_, _, err = PickModel(ctx, Options{BaseURL: llmtest.ClosedURL(t)})
	if !errors.Is(err, ErrConnection) || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Fatalf("closed port: err = %v", err)
	}
}

func TestNoticeRetryAndFailure(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.ServerError(), llmtest.ServerError(), llmtest.Text("ok"))
	rec := &noticeLog{}
	c, _ := newTestClient(t, srv, func(o *Options) { o.OnNotice = rec.add })
	ctx := WithNode(context.Background(), "planner")
	if _, err := c.Chat(ctx, Request{Role: RolePlanner, Messages: []Message{User("x")}}); err != nil {
		t.Fatal(err)
	}
	got := rec.all()
	if len(got) != 2 {
		t.Fatalf("notices = %+v, want two retries", got)
	}
	for i, n := range got {
		if n.Kind != NoticeRetry || n.Retry != i+1 || n.Node != "planner" || n.Model != "test-model" || !errors.Is(n.Err, ErrServer) {
			t.Errorf("notice %d = %+v", i, n)
		}
	}
	// a call that gives up says so once, with the classified error
	srv.Enqueue(llmtest.Error(401, "bad key"))
	rec2 := &noticeLog{}
	c2, _ := newTestClient(t, srv, func(o *Options) { o.OnNotice = rec2.add })
	if _, err := c2.Chat(ctx, Request{Messages: []Message{User("x")}}); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v", err)
	}
	if got := rec2.all(); len(got) != 1 || got[0].Kind != NoticeFailed || !errors.Is(got[0].Err, ErrUnauthorized) {
		t.Fatalf("notices = %+v, want one failure", got)
	}
}

func TestNoticeSlow(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.Reply{Delay: time.Hour})
	slow := make(chan Notice, 8)
	c, _ := newTestClient(t, srv, func(o *Options) {
		o.SlowAfter = 10 * time.Millisecond
		o.MaxRetries = -1
		o.OnNotice = func(n Notice) {
			if n.Kind == NoticeSlow {
				select {
				case slow <- n:
				default:
				}
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat(ctx, Request{Messages: []Message{User("x")}})
		done <- err
	}()
	n := <-slow // the attempt has not answered: a notice arrives while it waits
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if n.Attempt != 1 || n.Wait < 10*time.Millisecond {
		t.Errorf("slow notice = %+v", n)
	}
}

// A key that may chat but not list models (403 on GET /models, as OpenAI
// answers a project key without the model-read scope) passes Check through
// one tiny chat call per model; a model the server refuses still fails.
func TestCheckKeyWithoutModelRead(t *testing.T) {
	fake := llmtest.NewServer(t, func(*llmtest.Request) llmtest.Reply { return llmtest.Text("OK") }, llmtest.WithModels("m-one"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/models") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":{"message":"You have insufficient permissions for this operation. Missing scopes: api.model.read.","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		model   string
		wantErr error
	}{{"m-one", nil}, {"m-two", ErrModelNotFound}} {
		c, err := New(Options{APIKey: "k", BaseURL: srv.URL + "/v1", Model: tc.model, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Check(context.Background())
		if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Errorf("model %s: Check = %v, want %v", tc.model, err, tc.wantErr)
		}
		if tc.wantErr != nil && !strings.Contains(fmt.Sprint(err), "DEEPRESEARCH_MODEL") {
			t.Errorf("model %s: error does not name DEEPRESEARCH_MODEL: %v", tc.model, err)
		}
	}
	if r := fake.LastRequest(); r == nil || r.MaxTokens != 1 { //nolint:staticcheck // SA1019: the probe sends max_tokens (a non-reasoning model)
		t.Errorf("probe request = %+v, want one token", r)
	}
}

// A server that accepts connections but never answers is reported when the
// check's time is up, naming OPENAI_BASE_URL.
func TestCheckSilentServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL + "/v1", Model: "m", Timeout: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Check(context.Background())
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "OPENAI_BASE_URL") || !strings.Contains(err.Error(), "within 100ms") {
		t.Fatalf("err = %v, want a timeout naming OPENAI_BASE_URL after 100ms", err)
	}
}

// BenchmarkCheck measures the preflight against the in-process fake: one
// listing, models found in it.
func BenchmarkCheck(b *testing.B) {
	srv := llmtest.NewServer(b, nil, llmtest.WithModels("m-one", "m-two"))
	c, err := New(Options{BaseURL: srv.URL(), Model: "m-one", RoleModels: map[Role]string{RoleWriter: "m-two"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := c.Check(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// A key refused everywhere (403 on the listing and on chat) fails Check,
// naming OPENAI_API_KEY.
func TestCheckForbiddenKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"error":{"message":"Project does not have access to this resource.","type":"invalid_request_error","param":null,"code":null}}`)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{APIKey: "k", BaseURL: srv.URL + "/v1", Model: "m", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(context.Background()); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("Check = %v, want ErrForbidden naming OPENAI_API_KEY", err)
	}
}
