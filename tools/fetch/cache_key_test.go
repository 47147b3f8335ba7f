package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"deepresearch/tools/urlnorm"
)

// The cache key is the form search merges results by, so a URL cited in
// the form a search result gave finds the page fetched in another spelling.
func TestCacheKeyIsSearchForm(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "page %s", r.URL.Path)
	}))
	defer srv.Close()
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, Cache: NewCache()}, nil)
	ctx := context.Background()
	if _, err := f.Fetch(ctx, srv.URL+"/doc/?b=2&a=1&utm_source=feed#top"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url  string
		same bool
	}{
		{srv.URL + "/doc?a=1&b=2", true},
		{srv.URL + "/doc/?b=2&a=1", true},
		{srv.URL + "/doc?a=1&b=2&fbclid=x", true},
		{srv.URL + "/doc?a=1&b=3", false},
		{srv.URL + "/Doc?a=1&b=2", false},
		{srv.URL + "/doc", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if _, ok := f.Cache().Get(tt.url); ok != tt.same {
				t.Errorf("Get(%q) found = %v, want %v", tt.url, ok, tt.same)
			}
			key, err := NormalizeURL(tt.url)
			want, werr := urlnorm.Normalize(tt.url)
			if err != nil || werr != nil || key != want {
				t.Errorf("NormalizeURL(%q) = %q, %v; urlnorm.Normalize = %q, %v", tt.url, key, err, want, werr)
			}
		})
	}
	// A spelling of the same page is a cache hit, not a second request.
	if _, err := f.Fetch(ctx, srv.URL+"/doc?a=1&b=2"); err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("server hit %d times, want 1", n)
	}
}

// NormalizeURL keeps the fetcher's refusals: a URL it would not fetch has
// no cache key.
func TestNormalizeURLRefuses(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"https://user:pw@example.com/", ErrUserinfo},
		{"file:///etc/passwd", ErrScheme},
		{"doc://reports/a.md", ErrScheme},
		{"http://0x7f.1/", ErrInvalidURL},
		{"http://2130706433/", ErrInvalidURL},
		{"http://[::1%25lo]/", ErrInvalidURL},
		{"http://example.com\\@evil.com/", ErrInvalidURL},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got, err := NormalizeURL(tt.in); !errors.Is(err, tt.want) {
				t.Errorf("NormalizeURL(%q) = %q, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}
