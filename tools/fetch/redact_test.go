package fetch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Secrets in page URLs (signed links, tokens in the query) are masked in the fetcher's log records and in its errors,
// which the agent logs.
func TestURLSecretsNotLogged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a":
			http.Redirect(w, r, "/b?X-Amz-Signature=SECRET2&page=1", http.StatusFound)
		case "/b":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "hello")
		default:
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n"))
		}
	}))
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, Cache: NewCache(),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, nil)
	ctx := context.Background()
	for range 2 { // the second is a cache hit
		if _, err := f.Fetch(ctx, srv.URL+"/a?access_token=SECRET1"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.Fetch(ctx, srv.URL+"/img?api_key=SECRET4")
	if err == nil {
		t.Fatal("an image was fetched as a page")
	}
	for _, s := range []string{logs.String(), err.Error()} {
		for _, secret := range []string{"SECRET1", "SECRET2", "SECRET4"} {
			if strings.Contains(s, secret) {
				t.Errorf("%s appears in %q", secret, s)
			}
		}
	}
	for _, s := range []string{"fetch: redirect", "fetch: done", "fetch: cache hit", "access_token=***"} {
		if !strings.Contains(logs.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, logs.String())
		}
	}
}
