package clock

import (
	"context"
	"sync"
	"time"
)

// Instant is a Clock on which waits take no time: its timers fire as soon
// as they are made, so retry loops run at once. Now is the system clock's.
// Tests use it where the waits themselves do not matter.
type Instant struct{}

// Now returns time.Now().
func (Instant) Now() time.Time { return time.Now() }

// After returns a channel that already holds the time.
func (i Instant) After(d time.Duration) <-chan time.Time { return i.NewTimer(d).C() }

// NewTimer returns a timer that has fired.
func (Instant) NewTimer(time.Duration) Timer {
	t := &instantTimer{c: make(chan time.Time, 1)}
	t.c <- time.Now()
	return t
}

// Sleep is Sleep on this clock, for options that take a sleep function.
func (i Instant) Sleep(ctx context.Context, d time.Duration) error { return Sleep(ctx, i, d) }

type instantTimer struct {
	mu sync.Mutex
	c  chan time.Time // buffered: holds the time until it is received
}

func (t *instantTimer) C() <-chan time.Time { return t.c }

// Stop discards a time not yet received, as Manual's timers do.
func (t *instantTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.c:
		return true
	default:
		return false
	}
}

// Reset fires the timer again at once.
func (t *instantTimer) Reset(time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := false
	select {
	case <-t.c:
		was = true
	default:
	}
	t.c <- time.Now()
	return was
}
