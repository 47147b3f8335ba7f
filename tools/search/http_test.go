package search

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// step is one answer of a replay server.
type step struct {
	status int
	header map[string]string
	body   string
}

// replay serves steps in order, repeating the last, and counts the calls.
func replay(t *testing.T, steps ...step) (string, *atomic.Int32) {
	t.Helper()
	calls := &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1)) - 1
		s := steps[min(n, len(steps)-1)]
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(s.status)
		io.WriteString(w, s.body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

// httpProviders are the providers built on httpDoer.
var httpProviders = []string{"tavily", "searxng", "azure-search"}

// newHTTPProvider builds the named provider against base.
func newHTTPProvider(t *testing.T, name, base string, retry RetryPolicy, log *slog.Logger) Provider {
	t.Helper()
	var p Provider
	var err error
	switch name {
	case "tavily":
		p, err = NewTavily(TavilyOptions{APIKey: testTavilyKey, BaseURL: base, Retry: retry, Logger: log})
	case "searxng":
		p, err = NewSearXNG(SearXNGOptions{BaseURL: base, Retry: retry, Logger: log})
	case "azure-search":
		p, err = NewAzureSearch(AzureSearchOptions{Endpoint: base, Index: "nope", APIKey: "k", Retry: retry, Logger: log})
	default:
		t.Fatalf("unknown provider %q", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStatusErrors(t *testing.T) {
	tests := []struct {
		provider  string
		name      string
		status    int
		body      string
		wantErr   error
		errHas    string
		wantCalls int32
	}{
		{"tavily", "401", 401, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`, ErrUnauthorized, "TAVILY_API_KEY", 1},
		{"tavily", "403", 403, `{"detail":{"error":"Forbidden"}}`, ErrUnauthorized, "TAVILY_API_KEY", 1},
		{"tavily", "400", 400, `{"detail":{"error":"Query is too long. Max query length is 400 characters."}}`, ErrBadRequest, "Query is too long", 1},
		{"tavily", "432 quota", 432, `{"detail":{"error":"This request exceeds your plan's set usage limit."}}`, ErrQuotaExceeded, "usage limit", 1},
		{"searxng", "json disabled", 403, "<html>403 Forbidden</html>", ErrMisconfigured, "formats: [html, json]", 1},
		{"searxng", "not found", 404, "not found", ErrBadRequest, "404", 1},
		{"searxng", "limiter", 429, "Too Many Requests", ErrRateLimited, "429", 3},
		{"searxng", "down", 502, "bad gateway", ErrUnavailable, "502", 3},
		{"azure-search", "bad key", 403, ``, ErrUnauthorized, "AZURE_SEARCH_KEY", 1},
		{"azure-search", "no index", 404, `{"error":{"code":"","message":"The index 'nope' for service 'contoso' was not found."}}`, ErrMisconfigured, "AZURE_SEARCH_INDEX", 1},
		{"azure-search", "bad query", 400, `{"error":{"code":"InvalidRequestParameter","message":"Invalid expression: Could not find a property named 'x'"}}`, ErrBadRequest, "Could not find a property", 1},
		{"azure-search", "throttled", 503, `{"error":{"code":"","message":"throttled"}}`, ErrUnavailable, "503", 3},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.name, func(t *testing.T) {
			base, calls := replay(t, step{status: tt.status, body: tt.body})
			fs := &fakeSleep{}
			p := newHTTPProvider(t, tt.provider, base, testRetry(fs), nil)
			_, err := p.Search(context.Background(), Query{Text: "q"})
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("err = %v, want %v mentioning %q", err, tt.wantErr, tt.errHas)
			}
			if calls.Load() != tt.wantCalls || len(fs.Waits()) != int(tt.wantCalls)-1 {
				t.Errorf("calls = %d, waits = %v; want %d calls", calls.Load(), fs.Waits(), tt.wantCalls)
			}
		})
	}
}

func TestMalformedAnswers(t *testing.T) {
	bodies := map[string][]string{
		"tavily":       {`{"results":"oops"}`, `{"results":[{"title":1}]}`},
		"searxng":      {`{"results":"oops"}`, `{"results":[{"url":2}]}`},
		"azure-search": {`{"value":"oops"}`, `{"value":[1]}`},
	}
	for _, name := range httpProviders {
		for _, body := range append([]string{`{not json`, `<html><body>Gateway login</body></html>`, ``}, bodies[name]...) {
			t.Run(name+"/"+body, func(t *testing.T) {
				base, _ := replay(t, step{status: 200, body: body})
				log, logs := testLogger()
				p := newHTTPProvider(t, name, base, RetryPolicy{}, log)
				res, err := p.Search(context.Background(), Query{Text: "q"})
				if err != nil || res == nil || len(res) != 0 {
					t.Fatalf("Search = %#v, %v; want empty non-nil slice and no error", res, err)
				}
				if !strings.Contains(logs.String(), "malformed") {
					t.Errorf("no log about the malformed answer: %s", logs.String())
				}
			})
		}
	}
}

func TestEmptyQuery(t *testing.T) {
	for _, name := range httpProviders {
		t.Run(name, func(t *testing.T) {
			base, calls := replay(t, step{status: 200})
			p := newHTTPProvider(t, name, base, RetryPolicy{}, nil)
			for _, q := range []string{"", "   ", "\n\t"} {
				if _, err := p.Search(context.Background(), Query{Text: q}); !errors.Is(err, ErrEmptyQuery) {
					t.Errorf("Search(%q) error = %v, want ErrEmptyQuery", q, err)
				}
			}
			if calls.Load() != 0 {
				t.Errorf("%d HTTP calls for empty queries", calls.Load())
			}
		})
	}
}
