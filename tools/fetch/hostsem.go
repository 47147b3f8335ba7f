package fetch

import (
	"context"
	"sync"
)

// hostLimiter bounds concurrent requests per host. Entries are reference
// counted and removed when idle so a long-lived Fetcher does not grow.
type hostLimiter struct {
	n  int
	mu sync.Mutex
	m  map[string]*hostSem
}

type hostSem struct {
	ch   chan struct{}
	refs int
}

func newHostLimiter(n int) *hostLimiter {
	return &hostLimiter{n: n, m: make(map[string]*hostSem)}
}

// acquire blocks until a slot for host is free or ctx ends. The returned
// release must be called exactly once.
func (l *hostLimiter) acquire(ctx context.Context, host string) (func(), error) {
	l.mu.Lock()
	s := l.m[host]
	if s == nil {
		s = &hostSem{ch: make(chan struct{}, l.n)}
		l.m[host] = s
	}
	s.refs++
	l.mu.Unlock()

	unref := func() {
		l.mu.Lock()
		s.refs--
		if s.refs == 0 {
			delete(l.m, host)
		}
		l.mu.Unlock()
	}
	select {
	case s.ch <- struct{}{}:
	case <-ctx.Done():
		unref()
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.ch
			unref()
		})
	}, nil
}
