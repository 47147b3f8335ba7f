package fetch

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
)

// The bomb fixtures in testdata are 100 MiB of zeros compressed with gzip,
// zlib ("deflate" as RFC 9110 defines it), raw DEFLATE (what some servers
// send as "deflate") and brotli; each file is 172 bytes to 100 KB. They were
// written once by compressing 100 x 1 MiB zero chunks with the standard
// library writers at level 9 and brotli.NewWriterLevel(w, 11), because
// compressing 100 MB under -race takes most of a minute.
var bombFiles = map[string]struct{ file, header string }{
	"gzip":        {"testdata/bomb.gz", "gzip"},
	"zlib":        {"testdata/bomb.zlib", "deflate"},
	"raw-deflate": {"testdata/bomb.deflate", "deflate"},
	"br":          {"testdata/bomb.br", "br"},
}

func TestBombFixture(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 100 MB")
	}
	f, err := os.Open(bombFiles["gzip"].file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil || n != 100<<20 {
		t.Fatalf("fixture decodes to %d bytes (%v), want 100 MiB", n, err)
	}
}

func TestDecompressionBomb(t *testing.T) {
	for name, bf := range bombFiles {
		t.Run(name, func(t *testing.T) {
			payload, err := os.ReadFile(bf.file)
			if err != nil {
				t.Fatal(err)
			}
			var sent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Content-Encoding", bf.header)
				n, _ := w.Write(payload)
				sent.Add(int64(n))
			}))
			defer srv.Close()
			// Default cap (10 MiB): refused.
			f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true}, nil)
			_, err = f.Fetch(context.Background(), srv.URL+"/")
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge (compressed %d bytes)", err, len(payload))
			}
			// Truncating mode: exactly the cap is kept.
			const limit = 1 << 20
			ft := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, MaxBytes: limit, TruncateOversize: true}, nil)
			res, err := ft.Fetch(context.Background(), srv.URL+"/")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Text) != limit || !res.Truncated {
				t.Fatalf("truncated to %d bytes (Truncated=%v), want %d", len(res.Text), res.Truncated, limit)
			}
		})
	}
}

func TestContentEncodingRoundTrip(t *testing.T) {
	want := strings.Repeat("compressed text ", 100)
	var gz, zl, br bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(want))
	w.Close()
	z := zlib.NewWriter(&zl)
	z.Write([]byte(want))
	z.Close()
	b := brotli.NewWriter(&br)
	b.Write([]byte(want))
	b.Close()
	bodies := map[string][]byte{"gzip": gz.Bytes(), "deflate": zl.Bytes(), "br": br.Bytes(), "identity": []byte(want), "compress": []byte(want)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc := strings.TrimPrefix(r.URL.Path, "/")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Encoding", enc)
		w.Write(bodies[enc])
	}))
	defer srv.Close()
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true}, nil)
	for enc := range bodies {
		res, err := f.Fetch(context.Background(), srv.URL+"/"+enc)
		if enc == "compress" {
			if !errors.Is(err, ErrEncoding) {
				t.Errorf("compress: err = %v, want ErrEncoding", err)
			}
			continue
		}
		if err != nil || res.Text != want {
			t.Errorf("%s: err=%v res=%+v", enc, err, res)
		}
	}
}

func TestSizeLimits(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length
		}
		io.WriteString(w, big)
	}))
	defer srv.Close()
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, MaxBytes: 1 << 20}, nil)
	for _, p := range []string{"/length", "/chunked"} {
		if _, err := f.Fetch(context.Background(), srv.URL+p); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: err = %v, want ErrTooLarge", p, err)
		}
	}
	f2 := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, MaxBytes: 4 << 20}, nil)
	if res, err := f2.Fetch(context.Background(), srv.URL+"/length"); err != nil || len(res.Text) != len(big) {
		t.Errorf("under the cap: %v", err)
	}
}

func TestContentTypes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<p>hi</p>")
		case "/json":
			w.Header().Set("Content-Type", "application/ld+json")
			io.WriteString(w, `{"a":"日本"}`)
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
			io.WriteString(w, "%PDF-1.4 fake")
		case "/octet-pdf":
			w.Header().Set("Content-Type", "application/octet-stream")
			io.WriteString(w, "%PDF-1.7 fake")
		case "/none-html":
			w.Header()["Content-Type"] = nil
			io.WriteString(w, "<!DOCTYPE html><html><body>x</body></html>")
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			io.WriteString(w, "\x89PNG")
		case "/octet-bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2, 3, 0xff, 0xfe, 0})
		case "/zip":
			w.Header().Set("Content-Type", "application/zip")
			io.WriteString(w, "PK")
		case "/404":
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var extracted atomic.Int32
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true,
		ExtractPDF: func(ctx context.Context, b []byte) (string, error) {
			extracted.Add(1)
			return "pdf text", nil
		}}, nil)
	tests := []struct {
		path    string
		kind    Kind
		wantErr error
	}{
		{"/html", KindHTML, nil}, {"/json", KindJSON, nil}, {"/pdf", KindPDF, nil}, {"/octet-pdf", KindPDF, nil},
		{"/none-html", KindHTML, nil}, {"/png", "", ErrContentType}, {"/octet-bin", "", ErrContentType},
		{"/zip", "", ErrContentType}, {"/404", "", ErrStatus},
	}
	for _, tt := range tests {
		res, err := f.Fetch(context.Background(), srv.URL+tt.path)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s: err = %v, want %v", tt.path, err, tt.wantErr)
			}
			continue
		}
		if err != nil || res.Kind != tt.kind {
			t.Errorf("%s: err=%v res=%+v", tt.path, err, res)
			continue
		}
		if tt.kind == KindPDF && (res.Text != "pdf text" || len(res.Raw) == 0) {
			t.Errorf("%s: PDF text %q raw %d", tt.path, res.Text, len(res.Raw))
		}
	}
	var se *StatusError
	_, err := f.Fetch(context.Background(), srv.URL+"/404")
	if !errors.As(err, &se) || se.Code != 404 {
		t.Errorf("404: %v", err)
	}
	if extracted.Load() != 2 {
		t.Errorf("ExtractPDF called %d times", extracted.Load())
	}
}

func TestRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		switch r.URL.Path {
		case "/loop/a":
			http.Redirect(w, r, "/loop/b", http.StatusMovedPermanently)
		case "/loop/b":
			http.Redirect(w, r, "/loop/a", http.StatusTemporaryRedirect)
		case "/self":
			http.Redirect(w, r, "/self#x", http.StatusFound)
		case "/final":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "final")
		case "/no-location":
			w.WriteHeader(http.StatusFound)
		default:
			if _, err := fmt.Sscanf(r.URL.Path, "/chain/%d", &n); err == nil {
				if n == 0 {
					http.Redirect(w, r, "/final", http.StatusSeeOther)
				} else {
					http.Redirect(w, r, fmt.Sprintf("/chain/%d", n-1), http.StatusPermanentRedirect)
				}
				return
			}
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true}, nil)
	ctx := context.Background()
	if _, err := f.Fetch(ctx, srv.URL+"/loop/a"); !errors.Is(err, ErrRedirectLoop) {
		t.Errorf("loop: %v", err)
	}
	if _, err := f.Fetch(ctx, srv.URL+"/self"); !errors.Is(err, ErrRedirectLoop) {
		t.Errorf("self: %v", err)
	}
	// /chain/4 → 3 → 2 → 1 → 0 → /final: five redirects, the default limit.
	res, err := f.Fetch(ctx, srv.URL+"/chain/4")
	if err != nil {
		t.Fatalf("5 redirects: %v", err)
	}
	if res.FinalURL != srv.URL+"/final" || len(res.Redirects) != 5 || res.Text != "final" {
		t.Errorf("got final=%s chain=%v", res.FinalURL, res.Redirects)
	}
	if _, err := f.Fetch(ctx, srv.URL+"/chain/5"); !errors.Is(err, ErrTooManyRedirects) {
		t.Errorf("6 redirects: %v", err)
	}
	f0 := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, MaxRedirects: -1}, nil)
	if _, err := f0.Fetch(ctx, srv.URL+"/chain/0"); !errors.Is(err, ErrTooManyRedirects) {
		t.Errorf("redirects disabled: %v", err)
	}
	if _, err := f.Fetch(ctx, srv.URL+"/no-location"); !errors.Is(err, ErrStatus) {
		t.Errorf("3xx without Location: %v", err)
	}
}

func TestCache(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/page", http.StatusFound)
			return
		}
		hits.Add(1)
		time.Sleep(20 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Set-Cookie", "x=y")
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		fmt.Fprintf(w, "<p>page %s</p>", r.URL.Query().Get("v"))
	}))
	defer srv.Close()
	base := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true}, nil)
	run := base.WithCache(NewCache())
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := run.Fetch(ctx, srv.URL+"/page?v=1"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	res, err := run.Fetch(ctx, strings.Replace(srv.URL, "http://", "HTTP://", 1)+"/page?v=1#section")
	if err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("server hit %d times, want 1", n)
	}
	got, ok := run.Cache().Get(srv.URL + "/page?v=1")
	if !ok || got != res || got.Text != "<p>page 1</p>" {
		t.Fatalf("cache Get = %v %v", got, ok)
	}
	if got.Header.Get("Set-Cookie") != "" || got.Header.Get("Last-Modified") == "" {
		t.Fatalf("header subset = %v", got.Header)
	}
	// A different query is a different page; the final URL of a redirect is
	// cached too.
	run.Fetch(ctx, srv.URL+"/page?v=2")
	if _, err := run.Fetch(ctx, srv.URL+"/moved"); err != nil {
		t.Fatal(err)
	}
	if _, ok := run.Cache().Get(srv.URL + "/page"); !ok {
		t.Fatal("final URL not cached")
	}
	if n := hits.Load(); n != 3 {
		t.Fatalf("server hit %d times, want 3", n)
	}
	// Another run has its own cache; the base fetcher has none.
	base.WithCache(NewCache()).Fetch(ctx, srv.URL+"/page?v=1")
	base.Fetch(ctx, srv.URL+"/page?v=1")
	if n := hits.Load(); n != 5 {
		t.Fatalf("server hit %d times, want 5", n)
	}
	if len(run.Cache().Results()) != 3 {
		t.Fatalf("Results = %d", len(run.Cache().Results()))
	}
}

func TestPerHostConcurrency(t *testing.T) {
	var cur, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		cur.Add(-1)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, PerHostConcurrency: 2}, nil)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := f.Fetch(context.Background(), fmt.Sprintf("%s/%d", srv.URL, i)); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrency %d, want 2", p)
	}
	if len(f.hosts.m) != 0 {
		t.Fatalf("host limiter leaked %d entries", len(f.hosts.m))
	}
}

func TestTimeouts(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/slow-body" {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, Timeout: 300 * time.Millisecond, HeaderTimeout: 100 * time.Millisecond}, nil)
	start := time.Now()
	if _, err := f.Fetch(context.Background(), srv.URL+"/slow-header"); err == nil {
		t.Error("slow header: no error")
	}
	if _, err := f.Fetch(context.Background(), srv.URL+"/slow-body"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow body: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeouts took %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Fetch(ctx, srv.URL+"/x"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestUserAgentAndHeaders(t *testing.T) {
	var ua, ae atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua.Store(r.UserAgent())
		ae.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true, UserAgent: "deepresearch/1.2.3 (+https://example.org/dr)"}, nil)
	if _, err := f.Fetch(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if ua.Load() != "deepresearch/1.2.3 (+https://example.org/dr)" || ae.Load() != "gzip, deflate, br" {
		t.Fatalf("UA %q, Accept-Encoding %q", ua.Load(), ae.Load())
	}
	if _, err := New(Options{Allow: "10.0.0.0/99"}); err == nil {
		t.Fatal("bad allow-list accepted")
	}
}
