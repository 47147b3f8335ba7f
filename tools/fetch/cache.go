package fetch

import (
	"context"
	"sync"
)

// Cache holds the pages fetched during one research run, keyed by
// normalised URL (see NormalizeURL). Each entry is the exact decoded text the
// agent read, so a citation check can compare a quote against it. Fetching a
// URL that is already cached returns the cached Result; concurrent fetches of
// one URL share a single request. Only successful fetches are cached. A Cache
// is safe for concurrent use; the zero value is not usable, call NewCache.
type Cache struct {
	mu       sync.Mutex
	pages    map[string]*Result
	inflight map[string]*cacheCall
}

type cacheCall struct {
	done chan struct{}
	res  *Result
	err  error
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{pages: make(map[string]*Result), inflight: make(map[string]*cacheCall)}
}

// Get returns the cached page for rawURL (requested or final URL). The
// Result is shared: treat it as read-only.
func (c *Cache) Get(rawURL string) (*Result, bool) {
	key, err := NormalizeURL(rawURL)
	if err != nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.pages[key]
	return r, ok
}

// Len returns the number of cached URLs (requested and final URLs count
// separately when they differ).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pages)
}

// Results returns the distinct cached pages in no particular order.
func (c *Cache) Results() []*Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[*Result]bool, len(c.pages))
	out := make([]*Result, 0, len(c.pages))
	for _, r := range c.pages {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// do returns the cached result for key or runs fn once for all concurrent
// callers. A waiter whose own context ends stops waiting.
func (c *Cache) do(ctx context.Context, key string, fn func() (*Result, error)) (*Result, bool, error) {
	c.mu.Lock()
	if r, ok := c.pages[key]; ok {
		c.mu.Unlock()
		return r, true, nil
	}
	if call, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.res, true, call.err
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	call := &cacheCall{done: make(chan struct{})}
	c.inflight[key] = call
	c.mu.Unlock()

	call.res, call.err = fn()

	c.mu.Lock()
	delete(c.inflight, key)
	if call.err == nil {
		c.pages[key] = call.res
		if final, err := NormalizeURL(call.res.FinalURL); err == nil {
			if _, ok := c.pages[final]; !ok {
				c.pages[final] = call.res
			}
		}
	}
	c.mu.Unlock()
	close(call.done)
	return call.res, false, call.err
}
