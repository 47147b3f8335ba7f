package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Manual is a Clock that moves only when told to. Timers fire when Advance
// or Set reaches their time. Tests learn that a goroutine is parked on the
// clock with WaitForWaiters or WaitForTimer. It is safe for concurrent use.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	pending []*manualTimer // timers that have not fired or been stopped
	watches []watch
}

type manualTimer struct {
	m  *Manual
	at time.Time
	c  chan time.Time // buffered: firing never blocks
}

// watch is a condition on the pending timers that a test waits for.
type watch struct {
	ok   func() bool // called with mu held
	done chan struct{}
}

// NewManual returns a clock showing t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// After returns the channel of a new timer (see NewTimer).
func (m *Manual) After(d time.Duration) <-chan time.Time { return m.NewTimer(d).C() }

// NewTimer returns a timer that fires when the clock reaches Now()+d, or at
// once when d <= 0.
func (m *Manual) NewTimer(d time.Duration) Timer {
	t := &manualTimer{m: m, c: make(chan time.Time, 1)}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startLocked(t, d)
	return t
}

// Sleep is Sleep on this clock, for options that take a sleep function.
func (m *Manual) Sleep(ctx context.Context, d time.Duration) error { return Sleep(ctx, m, d) }

func (m *Manual) startLocked(t *manualTimer, d time.Duration) {
	t.at = m.now.Add(d)
	if d <= 0 {
		t.c <- m.now
		return
	}
	m.pending = append(m.pending, t)
	m.checkLocked()
}

// removeLocked takes t off the pending list and reports whether it was on it.
func (m *Manual) removeLocked(t *manualTimer) bool {
	i := slices.Index(m.pending, t)
	if i < 0 {
		return false
	}
	m.pending = slices.Delete(m.pending, i, i+1)
	return true
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.stopLocked()
}

// stopLocked removes the timer and discards a time that fired but was not
// received, as time.Timer does.
func (t *manualTimer) stopLocked() bool {
	if t.m.removeLocked(t) {
		return true
	}
	select {
	case <-t.c:
		return true
	default:
		return false
	}
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.stopLocked()
	t.m.startLocked(t, d)
	return was
}

// Advance moves the clock forward by d and fires the timers that are due.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(m.now.Add(d))
}

// Set moves the clock to t (never backwards) and fires the timers that are
// due, earliest first.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(t)
}

func (m *Manual) setLocked(t time.Time) {
	if t.After(m.now) {
		m.now = t
	}
	slices.SortStableFunc(m.pending, func(a, b *manualTimer) int { return a.at.Compare(b.at) })
	keep := m.pending[:0]
	for _, tm := range m.pending {
		if tm.at.After(m.now) {
			keep = append(keep, tm)
			continue
		}
		tm.c <- m.now
	}
	clear(m.pending[len(keep):])
	m.pending = keep
	m.checkLocked()
}

// Waiters returns how many timers are pending: neither fired nor stopped.
func (m *Manual) Waiters() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

// Deadlines returns the times the pending timers fire at, earliest first.
func (m *Manual) Deadlines() []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]time.Time, len(m.pending))
	for i, t := range m.pending {
		out[i] = t.at
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// WaitForWaiters returns a channel that is closed once at least n timers
// are pending (a test's sign that its goroutines are parked on the clock).
func (m *Manual) WaitForWaiters(n int) <-chan struct{} {
	return m.when(func() bool { return len(m.pending) >= n })
}

// WaitForTimer returns a channel that is closed once a pending timer is set
// to fire at exactly at.
func (m *Manual) WaitForTimer(at time.Time) <-chan struct{} {
	return m.when(func() bool {
		return slices.ContainsFunc(m.pending, func(t *manualTimer) bool { return t.at.Equal(at) })
	})
}

func (m *Manual) when(ok func() bool) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := watch{ok: ok, done: make(chan struct{})}
	m.watches = append(m.watches, w)
	m.checkLocked()
	return w.done
}

// checkLocked closes the watches whose condition now holds.
func (m *Manual) checkLocked() {
	m.watches = slices.DeleteFunc(m.watches, func(w watch) bool {
		if w.ok() {
			close(w.done)
			return true
		}
		return false
	})
}
