package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestRobotsParse(t *testing.T) {
	const txt = "\ufeff# comment\n" +
		"Disallow: /ignored-before-any-group\n" +
		"User-agent: *\n" +
		"Disallow: /private\n" +
		"Allow: /private/public\n" +
		"Disallow: /*.pdf$\n" +
		"Disallow: /search*q=\n" +
		"Sitemap: https://example.com/sitemap.xml\n" +
		"\n" +
		"User-agent: DeepResearch/2.0\r\n" +
		"User-agent: otherbot\r\n" +
		"Disallow: /no-dr   # trailing comment\r\n" +
		"Allow: /no-dr/ok$\r\n" +
		"Disallow: /%7Etilde\r\n" +
		"Disallow: /日本\r\n" +
		"Allow: /tie\r\n" +
		"Disallow: /tie\r\n" +
		"\r\n" +
		"user-agent: deepresearch\r\n" +
		"disallow: /merged\r"
	r := ParseRobots([]byte(txt))
	tests := []struct {
		agent, path string
		want        bool
	}{
		{"somebot", "/", true},
		{"somebot", "/private", false},
		{"somebot", "/private/x", false},
		{"somebot", "/private/public/x", true},
		{"somebot", "/doc.pdf", false},
		{"somebot", "/doc.pdf?x=1", true},
		{"somebot", "/a/b/doc.pdf", false},
		{"somebot", "/search?a=1&q=2", false},
		{"somebot", "/ignored-before-any-group", true},
		{"somebot", "/robots.txt", true},
		// deepresearch has its own (merged) groups, so * rules do not apply
		{"deepresearch", "/private", true},
		{"DeepResearch", "/no-dr", false},
		{"deepresearch", "/no-dr/ok", true},
		{"deepresearch", "/no-dr/ok/more", false},
		{"deepresearch", "/~tilde", false},
		{"deepresearch", "/%7etilde", false},
		{"deepresearch", "/%E6%97%A5%E6%9C%AC/page", false},
		{"deepresearch", "/tie", true}, // equal length: Allow wins
		{"deepresearch", "/merged/x", false},
		{"otherbot", "/merged/x", true},
		{"otherbot", "/no-dr", false},
	}
	for _, tt := range tests {
		if got := r.Allowed(tt.agent, tt.path); got != tt.want {
			t.Errorf("Allowed(%q, %q) = %v, want %v", tt.agent, tt.path, got, tt.want)
		}
	}
	// Edge cases.
	for _, c := range []struct {
		txt, path string
		want      bool
	}{
		{"", "/x", true},
		{"User-agent: *\nDisallow:\n", "/x", true},
		{"User-agent: *\nDisallow: /\n", "/x", false},
		{"User-agent: *\nDisallow: /\nAllow: /$\n", "/", true},
		{"User-agent: *\nDisallow: /\nAllow: /$\n", "/x", false},
		{"User-agent: *\nDisallow: *\n", "/anything", false},
		{"User-agent: *\nDisallow: /a**b\n", "/a/x/b", false},
		{"User-agent: *\nDisallow: /a$b\n", "/a$b", false},
		{"User-agent: *\nDisallow: /a$b\n", "/a", true},
		{"User-agent: other\nDisallow: /\n", "/x", true},
		{"User-agent: *\nDisallow: /fish*.php\n", "/fishheads/catfish.php?p=1", false},
		{"User-agent: *\nDisallow: /fish*.php\n", "/Fish.PHP", true},
		{"User-agent: *\r\rDisallow: /cr-only\r", "/cr-only", false},
	} {
		if got := ParseRobots([]byte(c.txt)).Allowed("deepresearch", c.path); got != c.want {
			t.Errorf("%q: Allowed(%q) = %v, want %v", c.txt, c.path, got, c.want)
		}
	}
}

func TestRobotsFetch(t *testing.T) {
	var robotsHits atomic.Int32
	var status atomic.Int32
	status.Store(200)
	var uaSeen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			robotsHits.Add(1)
			uaSeen.Store(r.UserAgent())
			if s := int(status.Load()); s != 200 {
				w.WriteHeader(s)
				return
			}
			w.Write([]byte("User-agent: deepresearch\nDisallow: /private\n"))
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	opts := Options{Allow: hostPort(t, srv), Now: func() time.Time { return time.Unix(0, clock.Load()) }}
	f := newTestFetcher(t, opts, nil)
	ctx := context.Background()
	if _, err := f.Fetch(ctx, srv.URL+"/public"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(ctx, srv.URL+"/private/x"); !errors.Is(err, ErrRobots) {
		t.Fatalf("private: %v", err)
	}
	if _, err := f.Fetch(ctx, srv.URL+"/public2"); err != nil {
		t.Fatal(err)
	}
	if n := robotsHits.Load(); n != 1 {
		t.Fatalf("robots.txt fetched %d times, want 1", n)
	}
	if ua, _ := uaSeen.Load().(string); ua != DefaultUserAgent {
		t.Fatalf("robots UA %q", ua)
	}
	// IgnoreRobots skips it.
	fi := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true}, nil)
	if _, err := fi.Fetch(ctx, srv.URL+"/private/x"); err != nil {
		t.Fatalf("IgnoreRobots: %v", err)
	}
	// 5xx: disallow for now, cached for a minute, then retried.
	status.Store(503)
	f5 := newTestFetcher(t, opts, nil)
	if _, err := f5.Fetch(ctx, srv.URL+"/public"); !errors.Is(err, ErrRobots) {
		t.Fatalf("503 robots: %v", err)
	}
	before := robotsHits.Load()
	f5.Fetch(ctx, srv.URL+"/public")
	if robotsHits.Load() != before {
		t.Fatal("failed robots.txt retried within a minute")
	}
	status.Store(404)
	clock.Add(int64(2 * time.Minute))
	if _, err := f5.Fetch(ctx, srv.URL+"/private/x"); err != nil {
		t.Fatalf("404 robots means allow: %v", err)
	}
	// After 24 h the cached robots.txt is refreshed.
	status.Store(200)
	before = robotsHits.Load()
	clock.Add(int64(25 * time.Hour))
	if _, err := f5.Fetch(ctx, srv.URL+"/private/x"); !errors.Is(err, ErrRobots) {
		t.Fatalf("after refresh: %v", err)
	}
	if robotsHits.Load() != before+1 {
		t.Fatal("robots.txt not refreshed after 24h")
	}
}

// TestRobotsUnreachable: a robots.txt that cannot be fetched (connection
// refused) disallows for now.
func TestRobotsUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := hostPort(t, srv)
	srv.Close()
	f := newTestFetcher(t, Options{Allow: addr}, nil)
	if _, err := f.Fetch(context.Background(), "http://"+addr+"/x"); !errors.Is(err, ErrRobots) {
		t.Fatalf("err = %v, want ErrRobots", err)
	}
}

func FuzzRobots(f *testing.F) {
	f.Add([]byte("User-agent: *\nDisallow: /a*b$\nAllow: /a\n"), "/a/x/b")
	f.Add([]byte("user-agent: deepresearch\r\ndisallow: /\r\n"), "/")
	f.Add([]byte("User-agent: *\nDisallow: ****$$$\n"), "/%zz%7e")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		r := ParseRobots(data)
		a := r.Allowed("deepresearch", path)
		if a != r.Allowed("DeepResearch/1.0", path) {
			t.Fatal("agent matching is case- or version-sensitive")
		}
		if !r.Allowed("deepresearch", "/robots.txt") {
			t.Fatal("robots.txt disallowed")
		}
	})
}
