package search

import (
	"context"
	"sync"
	"time"
)

// limiter is a token bucket: it holds up to burst tokens, refilled at rate
// tokens per second. Wait reserves a token and sleeps until it is due, so
// concurrent callers queue up fairly.
type limiter struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
}

func newLimiter(rate float64, burst int, now func() time.Time, sleep func(context.Context, time.Duration) error) *limiter {
	if burst < 1 {
		burst = 1
	}
	return &limiter{rate: rate, burst: float64(burst), tokens: float64(burst), now: now, sleep: sleep}
}

// reserve takes one token and returns how long to wait before using it.
func (l *limiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	l.tokens--
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens / l.rate * float64(time.Second))
}

// cancel gives back a token whose wait was abandoned.
func (l *limiter) cancel() {
	l.mu.Lock()
	l.tokens = min(l.burst, l.tokens+1)
	l.mu.Unlock()
}

// Wait blocks until a token is available or ctx ends.
func (l *limiter) Wait(ctx context.Context) error {
	if l == nil || l.rate <= 0 {
		return ctx.Err()
	}
	d := l.reserve()
	if d == 0 {
		return ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok && l.now().Add(d).After(dl) {
		l.cancel()
		return context.DeadlineExceeded
	}
	if err := l.sleep(ctx, d); err != nil {
		l.cancel()
		return err
	}
	return nil
}
