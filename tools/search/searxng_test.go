package search

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSearXNGSearch(t *testing.T) {
	fixture := readTestdata(t, "searxng_search.json")
	tests := []struct {
		name      string
		q         Query
		wantQuery map[string]string
		wantURLs  []string
	}{
		{
			name: "basic",
			q:    Query{Text: "AI regulation Japan", MaxResults: 2, Language: "en", Freshness: 20 * Day},
			wantQuery: map[string]string{"q": "AI regulation Japan", "format": "json", "pageno": "1",
				"language": "en", "time_range": "month", "categories": "general", "safesearch": "0"},
			wantURLs: []string{"https://www.example.com/ai-regulation-japan", "https://news.example.net/2025/05/ai-act"},
		},
		{
			name:      "no language no time range",
			q:         Query{Text: "x"},
			wantQuery: map[string]string{"q": "x", "language": "", "time_range": ""},
			wantURLs: []string{"https://www.example.com/ai-regulation-japan", "https://news.example.net/2025/05/ai-act",
				"https://other.example.org/page"},
		},
		{
			name:      "one domain adds site: and filters",
			q:         Query{Text: "AI", Domains: []string{"example.com"}},
			wantQuery: map[string]string{"q": "AI site:example.com"},
			wantURLs:  []string{"https://www.example.com/ai-regulation-japan"},
		},
		{
			name:      "two domains filter only",
			q:         Query{Text: "AI", Domains: []string{"example.com", "example.net"}},
			wantQuery: map[string]string{"q": "AI"},
			wantURLs:  []string{"https://www.example.com/ai-regulation-japan", "https://news.example.net/2025/05/ai-act"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/searx/search" {
					t.Errorf("request %s %s, want GET /searx/search", r.Method, r.URL.Path)
				}
				if r.Header.Get("X-Test") != "yes" {
					t.Error("custom header not sent")
				}
				for k, v := range tt.wantQuery {
					if got := r.URL.Query().Get(k); got != v {
						t.Errorf("query %s = %q, want %q", k, got, v)
					}
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write(fixture)
			}))
			defer srv.Close()
			sx, err := NewSearXNG(SearXNGOptions{BaseURL: srv.URL + "/searx/search/", Header: http.Header{"X-Test": {"yes"}}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := sx.Search(context.Background(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var urls []string
			for _, r := range res {
				urls = append(urls, r.URL)
				if r.Source != "searxng" {
					t.Errorf("Source = %q", r.Source)
				}
			}
			if strings.Join(urls, " ") != strings.Join(tt.wantURLs, " ") {
				t.Errorf("URLs = %v, want %v", urls, tt.wantURLs)
			}
			if res[0].Score != 3.0 || res[0].Title != "AI regulation in Japan: an overview" ||
				!res[0].Published.Equal(time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("first = %+v", res[0])
			}
		})
	}
}

func TestNewSearXNGErrors(t *testing.T) {
	for _, u := range []string{"", "searxng:8080", "ftp://x"} {
		if _, err := NewSearXNG(SearXNGOptions{BaseURL: u}); !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "SEARXNG_URL") {
			t.Errorf("NewSearXNG(%q) = %v", u, err)
		}
	}
}
