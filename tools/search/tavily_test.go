package search

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testTavilyKey = "tvly-test-SECRET-123"

func TestTavilySearch(t *testing.T) {
	fixture := readTestdata(t, "tavily_search.json")
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/search" {
			t.Errorf("request %s %s, want POST /search", r.Method, r.URL.Path)
		}
		if h := r.Header.Get("Authorization"); h != "Bearer "+testTavilyKey {
			t.Errorf("Authorization = %q", h)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("body is not JSON: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(fixture)
	}))
	defer srv.Close()

	log, logs := testLogger()
	tv, err := NewTavily(TavilyOptions{APIKey: testTavilyKey, BaseURL: srv.URL + "/", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tv.Search(context.Background(), Query{
		Text: "  生成AI 規制 日本 2026 ", MaxResults: 50, Freshness: 3 * Day, Domains: []string{"meti.go.jp", "example.org"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"query": "生成AI 規制 日本 2026", "max_results": 20.0, "search_depth": "basic", "topic": "general",
		"include_answer": false, "include_raw_content": false, "time_range": "week",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("body[%q] = %#v, want %#v", k, got[k], v)
		}
	}
	if d, _ := got["include_domains"].([]any); len(d) != 2 {
		t.Errorf("include_domains = %#v", got["include_domains"])
	}
	if _, ok := got["api_key"]; ok {
		t.Error("api_key sent in body; want only the Authorization header")
	}
	if len(res) != 2 {
		t.Fatalf("got %d results, want 2 (the one without URL skipped): %+v", len(res), res)
	}
	if res[0].Title != "GENIAC (Generative AI Accelerator Challenge) | 経済産業省" || res[0].Score != 0.8762 ||
		res[0].Source != "tavily" || !strings.Contains(res[0].Snippet, "GENIAC") {
		t.Errorf("result 0 = %+v", res[0])
	}
	if want := time.Date(2025, 5, 28, 9, 0, 0, 0, time.UTC); !res[1].Published.Equal(want) {
		t.Errorf("Published = %v, want %v", res[1].Published, want)
	}
	if strings.Contains(logs.String(), testTavilyKey) {
		t.Error("API key appears in logs")
	}
}

func TestTavilyRequestOptions(t *testing.T) {
	tests := []struct {
		name string
		opts TavilyOptions
		q    Query
		want map[string]any
	}{
		{"default max", TavilyOptions{}, Query{Text: "go"}, map[string]any{"max_results": 5.0}},
		{"negative max", TavilyOptions{}, Query{Text: "go", MaxResults: -3}, map[string]any{"max_results": 5.0}},
		{"one", TavilyOptions{}, Query{Text: "go", MaxResults: 1}, map[string]any{"max_results": 1.0}},
		{"news days", TavilyOptions{Topic: "news"}, Query{Text: "go", Freshness: 36 * time.Hour},
			map[string]any{"topic": "news", "days": 2.0, "time_range": nil}},
		{"general year", TavilyOptions{}, Query{Text: "go", Freshness: 400 * Day}, map[string]any{"time_range": "year"}},
		{"raw content", TavilyOptions{IncludeRawContent: true, SearchDepth: "advanced"}, Query{Text: "go"},
			map[string]any{"include_raw_content": "markdown", "search_depth": "advanced"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				json.NewDecoder(r.Body).Decode(&got)
				io.WriteString(w, `{"query":"go","results":[{"title":"Go","url":"https://go.dev/","content":"c","score":0.5,"raw_content":"# Go\nfull text"}]}`)
			}))
			defer srv.Close()
			tt.opts.APIKey, tt.opts.BaseURL = testTavilyKey, srv.URL
			tv, err := NewTavily(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tv.Search(context.Background(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("body[%q] = %#v, want %#v", k, got[k], v)
				}
			}
			if len(res) != 1 || res[0].Content != "# Go\nfull text" {
				t.Errorf("results = %+v", res)
			}
		})
	}
}

func TestNewTavilyErrors(t *testing.T) {
	_, err := NewTavily(TavilyOptions{APIKey: " "})
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "TAVILY_API_KEY") {
		t.Errorf("NewTavily without key: %v; want ErrUnauthorized naming TAVILY_API_KEY", err)
	}
	_, err = NewTavily(TavilyOptions{APIKey: "k", BaseURL: "ftp://x"})
	if !errors.Is(err, ErrMisconfigured) {
		t.Errorf("NewTavily with bad base URL: %v", err)
	}
}

func TestTavilyRetries(t *testing.T) {
	ok := step{status: 200, body: `{"results":[{"title":"t","url":"https://a.example/","content":"c","score":0.9}]}`}
	httpDate := time.Now().Add(4 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		steps     []step
		wantCalls int
		wantErr   error
		errHas    string
		wantWaits []time.Duration // nil: do not check exact values
		nWaits    int
	}{
		{name: "429 retry-after then ok", steps: []step{{status: 429, header: map[string]string{"Retry-After": "2"}}, ok},
			wantCalls: 2, wantWaits: []time.Duration{2 * time.Second}, nWaits: 1},
		{name: "429 http-date then ok", steps: []step{{status: 429, header: map[string]string{"Retry-After": httpDate}}, ok},
			wantCalls: 2, nWaits: 1},
		{name: "500 then ok", steps: []step{{status: 500, body: "oops"}, ok},
			wantCalls: 2, wantWaits: []time.Duration{375 * time.Millisecond}, nWaits: 1},
		{name: "502 503 then ok", steps: []step{{status: 502}, {status: 503}, ok},
			wantCalls: 3, wantWaits: []time.Duration{375 * time.Millisecond, 750 * time.Millisecond}, nWaits: 2},
		{name: "503 forever", steps: []step{{status: 503}, {status: 503}, {status: 503}, ok},
			wantCalls: 3, wantErr: ErrUnavailable, nWaits: 2},
		{name: "429 forever", steps: []step{{status: 429}, {status: 429}, {status: 429}},
			wantCalls: 3, wantErr: ErrRateLimited, nWaits: 2},
		{name: "429 wait too long", steps: []step{{status: 429, header: map[string]string{"Retry-After": "3600"}}, ok},
			wantCalls: 1, wantErr: ErrRateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, calls := replay(t, tt.steps...)
			fs := &fakeSleep{}
			log, logs := testLogger()
			tv := newHTTPProvider(t, "tavily", base, testRetry(fs), log)
			res, err := tv.Search(context.Background(), Query{Text: "q"})
			if int(calls.Load()) != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls.Load(), tt.wantCalls)
			}
			if tt.wantErr == nil {
				if err != nil || len(res) != 1 {
					t.Fatalf("Search = %v, %v; want one result", res, err)
				}
			} else if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Errorf("err = %v, want it to mention %q", err, tt.errHas)
			}
			waits := fs.Waits()
			if len(waits) != tt.nWaits {
				t.Errorf("waits = %v, want %d", waits, tt.nWaits)
			}
			if tt.wantWaits != nil && !equalDurations(waits, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", waits, tt.wantWaits)
			}
			if strings.Contains(logs.String(), testTavilyKey) || (err != nil && strings.Contains(err.Error(), testTavilyKey)) {
				t.Error("API key leaked into logs or error")
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTavilyTimeoutRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
		if calls.Add(1) == 1 {
			select { // hang until the client gives up
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		io.WriteString(w, `{"results":[{"title":"t","url":"https://a.example/","content":"c","score":0.9}]}`)
	}))
	defer srv.Close()
	fs := &fakeSleep{}
	tv, err := NewTavily(TavilyOptions{APIKey: testTavilyKey, BaseURL: srv.URL, Timeout: 50 * time.Millisecond, Retry: testRetry(fs)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tv.Search(context.Background(), Query{Text: "q"})
	if err != nil || len(res) != 1 {
		t.Fatalf("Search = %v, %v", res, err)
	}
	if calls.Load() != 2 || len(fs.Waits()) != 1 {
		t.Errorf("calls = %d, waits = %v", calls.Load(), fs.Waits())
	}
}

func TestTavilyContextCanceled(t *testing.T) {
	base, _ := replay(t, step{status: 503})
	ctx, cancel := context.WithCancel(context.Background())
	tv := newHTTPProvider(t, "tavily", base, RetryPolicy{
		Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() },
	}, nil)
	_, err := tv.Search(ctx, Query{Text: "q"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
