package fetch

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"
)

// fakeResolver answers from a script: each host has a list of answers, one
// per lookup; the last answer repeats.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
}

// set scripts host: each argument is one lookup's answer, a comma-free
// list of addresses separated by spaces.
func (r *fakeResolver) set(host string, answers ...string) *fakeResolver {
	r.mu.Lock()
	defer r.mu.Unlock()
	var seq [][]netip.Addr
	for _, a := range answers {
		var ips []netip.Addr
		for _, s := range splitSpaces(a) {
			ips = append(ips, netip.MustParseAddr(s))
		}
		seq = append(seq, ips)
	}
	r.answers[host] = seq
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _ string, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := r.calls[host]
	r.calls[host]++
	if i >= len(seq) {
		i = len(seq) - 1
	}
	return seq[i], nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

func splitSpaces(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// redirectingDial stands in for "the internet": it records the IP the safe
// dialer chose and connects to target (an httptest server) instead.
type redirectingDial struct {
	target string
	mu     sync.Mutex
	dialed []string
}

func (d *redirectingDial) dial(ctx context.Context, network, addr string, _ bool) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", d.target)
}

func (d *redirectingDial) addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// newTestFetcher builds a Fetcher; if dial is non-nil it replaces the
// socket-level dial (after the policy checks).
func newTestFetcher(t *testing.T, opts Options, dial dialFunc) *Fetcher {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	f, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if dial != nil {
		f.dialer.dial = dial
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// hostPort returns "127.0.0.1:port" of a test server.
func hostPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func portOfServer(t *testing.T, srv *httptest.Server) string {
	_, p, _ := net.SplitHostPort(hostPort(t, srv))
	return p
}

// textServer serves body with content type ct on every path except
// /robots.txt (404).
func textServer(t *testing.T, ct, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ct)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}
