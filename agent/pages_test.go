package agent

import (
	"context"
	"errors"
	"sync"
	"testing"

	"deepresearch/agent/llm"
)

// noLLM is a model the page tests never call.
type noLLM struct{}

func (noLLM) Chat(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("no model")
}

func (noLLM) ChatJSON(context.Context, llm.Request, *llm.Schema, any) (llm.Response, error) {
	return llm.Response{}, errors.New("no model")
}

// gateFetcher counts fetches per URL; a fetch of a held URL says so on
// entered and waits for release (or its context).
type gateFetcher struct {
	mu       sync.Mutex
	n        map[string]int
	fail     map[string]bool
	redirect map[string]string // URL → where it redirects
	held     string
	entered  chan struct{}
	release  chan struct{}
}

func (f *gateFetcher) Fetch(ctx context.Context, u string) (Page, error) {
	f.mu.Lock()
	f.n[u]++
	first := f.n[u] == 1
	f.mu.Unlock()
	if u == f.held && first {
		close(f.entered)
		select {
		case <-f.release:
		case <-ctx.Done():
			return Page{}, ctx.Err()
		}
	}
	if f.fail[u] {
		return Page{}, errors.New("404")
	}
	if to, ok := f.redirect[u]; ok {
		return Page{URL: u, FinalURL: to, Text: "text of " + to}, nil
	}
	return Page{URL: u, Text: "text of " + u}, nil
}

func (f *gateFetcher) count(u string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[u]
}

func TestReadPage(t *testing.T) {
	const u, bad = "https://a.example/p", "https://a.example/missing"
	setup := func(t *testing.T) (*Agent, *gateFetcher, context.Context) {
		f := &gateFetcher{n: map[string]int{}, fail: map[string]bool{bad: true}, held: u,
			entered: make(chan struct{}), release: make(chan struct{})}
		a, err := New(Deps{LLM: noLLM{}, Fetch: f}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := a.withRunLimits(t.Context())
		t.Cleanup(stop)
		return a, f, ctx
	}

	t.Run("askers of a page in flight share its fetch", func(t *testing.T) {
		a, f, ctx := setup(t)
		var wg sync.WaitGroup
		got := make([]Page, 5)
		errs := make([]error, 5)
		wg.Go(func() { got[0], errs[0] = a.readPage(ctx, u) })
		<-f.entered // the first asker is reading the page
		for i := 1; i < len(got); i++ {
			wg.Go(func() { got[i], errs[i] = a.readPage(ctx, u) })
		}
		close(f.release)
		wg.Wait()
		for i := range got {
			if errs[i] != nil || got[i].Text != "text of "+u {
				t.Errorf("asker %d: %+v, %v", i, got[i], errs[i])
			}
		}
		if _, err := a.readPage(ctx, u); err != nil {
			t.Fatal(err)
		}
		if n := f.count(u); n != 1 {
			t.Errorf("%d fetches, want 1", n)
		}
	})

	t.Run("a page read through a redirect is not read again under its URL", func(t *testing.T) {
		a, f, ctx := setup(t)
		const link, target = "https://a.example/go/1", "https://a.example/q"
		f.redirect = map[string]string{link: target}
		for _, x := range []string{link, target} {
			if pg, err := a.readPage(ctx, x); err != nil || pg.Text != "text of "+target {
				t.Fatalf("%s: %+v, %v", x, pg, err)
			}
		}
		if n := f.count(target); n != 0 {
			t.Errorf("the target was fetched %d times after the link led to it", n)
		}
	})

	t.Run("a failed read is tried again by the next asker", func(t *testing.T) {
		a, f, ctx := setup(t)
		for range 2 {
			if _, err := a.readPage(ctx, bad); err == nil {
				t.Fatal("a missing page was read")
			}
		}
		if n := f.count(bad); n != 2 {
			t.Errorf("%d fetches, want 2", n)
		}
	})

	t.Run("a reader called off leaves the page to the others", func(t *testing.T) {
		a, f, ctx := setup(t)
		rctx, cancel := context.WithCancel(ctx)
		first := make(chan error, 1)
		go func() {
			_, err := a.readPage(rctx, u)
			first <- err
		}()
		<-f.entered
		waiter := make(chan error, 1)
		go func() {
			_, err := a.readPage(ctx, u)
			waiter <- err
		}()
		cancel()
		if err := <-first; !errors.Is(err, context.Canceled) {
			t.Errorf("the reader called off: %v", err)
		}
		if err := <-waiter; err != nil {
			t.Errorf("the other asker: %v", err)
		}
	})
}
