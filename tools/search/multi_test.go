package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeProvider returns canned results or an error.
type fakeProvider struct {
	name  string
	res   []Result
	err   error
	panic bool
	start chan<- string // notified when Search starts, if set
	wait  <-chan struct{}
	mu    sync.Mutex
	calls int
	lastQ Query
}

func (f *fakeProvider) Name() string { return f.name }

func (f *fakeProvider) Search(ctx context.Context, q Query) ([]Result, error) {
	f.mu.Lock()
	f.calls++
	f.lastQ = q
	f.mu.Unlock()
	if f.start != nil {
		f.start <- f.name
	}
	if f.wait != nil {
		select {
		case <-f.wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.panic {
		panic("boom")
	}
	if f.err != nil {
		return nil, f.err
	}
	out := make([]Result, len(f.res))
	for i, r := range f.res {
		r.Source = f.name
		out[i] = r
	}
	return out, nil
}

func TestMultiDedupAndOrder(t *testing.T) {
	web := &fakeProvider{name: "tavily", res: []Result{
		{Title: "A", URL: "https://Example.com/a?utm_source=x", Score: 0.9, Snippet: "a from tavily"},
		{Title: "B", URL: "https://b.example/", Score: 0.8},
		{Title: "C", URL: "https://c.example/", Score: 0.7},
	}}
	sx := &fakeProvider{name: "searxng", res: []Result{
		{Title: "C", URL: "https://c.example", Score: 5, Content: "full C"},
		{Title: "A", URL: "https://example.com:443/a/#frag", Score: 4, Published: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)},
		{Title: "bad", URL: "not a url", Score: 3},
		{Title: "D", URL: "https://d.example/", Score: 2},
	}}
	m, err := NewMulti(MultiOptions{Members: []Member{{Provider: web}, {Provider: sx}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.SearchAll(context.Background(), Query{Text: "q", MaxResults: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range resp.Results {
		got = append(got, r.Title+":"+strings.Join(r.Sources, "+"))
	}
	// A: 1/61+1/62, C: 1/63+1/61, B: 1/62, D: 1/63 (the bad URL takes no rank).
	want := []string{"A:tavily+searxng", "C:tavily+searxng", "B:tavily", "D:searxng"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
	a := resp.Results[0]
	if a.Source != "tavily" || a.Snippet != "a from tavily" || a.Published.IsZero() {
		t.Errorf("merged A = %+v (want tavily's copy with searxng's date)", a)
	}
	if c := resp.Results[1]; c.Source != "searxng" || c.Content != "full C" {
		t.Errorf("merged C = %+v (want searxng's copy, rank 1 there)", c)
	}
	if want := 1.0/61 + 1.0/62; fmt.Sprintf("%.6f", a.Score) != fmt.Sprintf("%.6f", want) {
		t.Errorf("A score = %v, want %v", a.Score, want)
	}
	if resp.Err() != nil {
		t.Errorf("Err = %v", resp.Err())
	}
	// MaxResults truncates and is passed down clamped.
	res, err := m.Search(context.Background(), Query{Text: "q", MaxResults: 2})
	if err != nil || len(res) != 2 {
		t.Errorf("Search = %v, %v", res, err)
	}
	if web.lastQ.MaxResults != 2 {
		t.Errorf("provider asked for %d", web.lastQ.MaxResults)
	}
}

func TestMultiWeight(t *testing.T) {
	web := &fakeProvider{name: "web", res: []Result{{Title: "W", URL: "https://w.example/"}}}
	docs := &fakeProvider{name: "docs", res: []Result{{Title: "D", URL: "doc://a.md#c1"}}}
	m, _ := NewMulti(MultiOptions{Members: []Member{{Provider: web}, {Provider: docs, Weight: 2}}})
	res, err := m.Search(context.Background(), Query{Text: "q"})
	if err != nil || len(res) != 2 || res[0].Title != "D" {
		t.Errorf("res = %+v, %v; want the weighted internal doc first", res, err)
	}
}

func TestMultiPartialFailure(t *testing.T) {
	good := &fakeProvider{name: "good", res: []Result{{Title: "G", URL: "https://g.example/"}}}
	bad := &fakeProvider{name: "bad", err: fmt.Errorf("bad: %w", ErrUnauthorized)}
	boom := &fakeProvider{name: "boom", panic: true}
	log, logs := testLogger()
	m, _ := NewMulti(MultiOptions{Members: []Member{{Provider: good}, {Provider: bad}, {Provider: boom}}, Logger: log})
	resp, err := m.SearchAll(context.Background(), Query{Text: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Title != "G" {
		t.Errorf("results = %+v", resp.Results)
	}
	if !errors.Is(resp.Err(), ErrUnauthorized) || !errors.Is(resp.Err(), ErrUnavailable) {
		t.Errorf("Err = %v", resp.Err())
	}
	if resp.Outcomes[1].Provider != "bad" || resp.Outcomes[1].Err == nil || resp.Outcomes[0].Results != 1 {
		t.Errorf("outcomes = %+v", resp.Outcomes)
	}
	if !strings.Contains(logs.String(), "provider failed") {
		t.Error("failure not logged")
	}
	res, err := m.Search(context.Background(), Query{Text: "q"})
	if err != nil || len(res) != 1 {
		t.Errorf("Search = %v, %v", res, err)
	}

	all, _ := NewMulti(MultiOptions{Members: []Member{{Provider: bad}, {Provider: boom}}, Logger: log})
	_, err = all.Search(context.Background(), Query{Text: "q"})
	if !errors.Is(err, ErrAllFailed) || !errors.Is(err, ErrUnauthorized) {
		t.Errorf("all failed: %v", err)
	}
	if _, err := all.Search(context.Background(), Query{}); !errors.Is(err, ErrEmptyQuery) {
		t.Errorf("empty: %v", err)
	}
}

func TestMultiConcurrent(t *testing.T) {
	started := make(chan string, 2)
	release := make(chan struct{})
	a := &fakeProvider{name: "a", start: started, wait: release, res: []Result{{URL: "https://a.example/"}}}
	b := &fakeProvider{name: "b", start: started, wait: release, res: []Result{{URL: "https://b.example/"}}}
	m, _ := NewMulti(MultiOptions{Members: []Member{{Provider: a}, {Provider: b}}})
	done := make(chan error, 1)
	go func() {
		_, err := m.Search(context.Background(), Query{Text: "q"})
		done <- err
	}()
	for range 2 { // both must be running at once before either returns
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("providers not queried concurrently")
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMultiMemberTimeout(t *testing.T) {
	slow := &fakeProvider{name: "slow", wait: make(chan struct{})}
	fast := &fakeProvider{name: "fast", res: []Result{{URL: "https://f.example/"}}}
	m, _ := NewMulti(MultiOptions{Members: []Member{{Provider: slow, Timeout: 20 * time.Millisecond}, {Provider: fast}}})
	resp, err := m.SearchAll(context.Background(), Query{Text: "q"})
	if err != nil || len(resp.Results) != 1 || !errors.Is(resp.Outcomes[0].Err, context.DeadlineExceeded) {
		t.Errorf("resp = %+v, %v", resp, err)
	}
}

func TestMultiRateLimit(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []time.Duration
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sleep := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		now = now.Add(d)
		mu.Unlock()
		return ctx.Err()
	}
	p := &fakeProvider{name: "p", res: []Result{{URL: "https://p.example/"}}}
	free := &fakeProvider{name: "free", res: []Result{{URL: "https://f.example/"}}}
	m, _ := NewMulti(MultiOptions{
		Members: []Member{{Provider: p, Rate: 2, Burst: 2}, {Provider: free}},
		Now:     clock, Sleep: sleep,
	})
	for range 4 {
		if _, err := m.Search(context.Background(), Query{Text: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	// Burst of 2, then one token every 500ms.
	want := []time.Duration{500 * time.Millisecond, 500 * time.Millisecond}
	if !equalDurations(waits, want) {
		t.Errorf("waits = %v, want %v", waits, want)
	}
	if p.calls != 4 || free.calls != 4 {
		t.Errorf("calls p=%d free=%d", p.calls, free.calls)
	}
}

func TestLimiterDeadline(t *testing.T) {
	l := newLimiter(0.1, 1, time.Now, sleepCtx)
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want DeadlineExceeded without sleeping 10s", err)
	}
}

func TestNewMultiErrors(t *testing.T) {
	if _, err := NewMulti(MultiOptions{}); !errors.Is(err, ErrMisconfigured) {
		t.Errorf("no members: %v", err)
	}
	a := &fakeProvider{name: "a"}
	if _, err := NewMulti(MultiOptions{Members: []Member{{Provider: a}, {Provider: a}}}); !errors.Is(err, ErrMisconfigured) {
		t.Errorf("duplicate: %v", err)
	}
}
