// Package clock tells the time and waits: a Clock interface with a real, a
// manual and an instant implementation, Sleep that honours a context, and
// Backoff, the delays between retries.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers. Real is the system clock; tests
// use Manual so that nothing sleeps.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	// The wait cannot be cancelled; use NewTimer for one that can.
	After(d time.Duration) <-chan time.Time
	// NewTimer returns a timer that fires once d has passed (at once when
	// d <= 0).
	NewTimer(d time.Duration) Timer
}

// Timer is a single-shot timer of a Clock.
type Timer interface {
	// C receives the time once, when the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it did so:
	// false when the time was already received or the timer was stopped.
	// No value is received from C after Stop returns.
	Stop() bool
	// Reset stops the timer and starts it again to fire after d; it
	// reports whether the timer was running.
	Reset(d time.Duration) bool
}

// Sleep waits d on clk, or until ctx ends, and then returns ctx's error
// (nil when the full wait passed). A d <= 0 returns at once.
func Sleep(ctx context.Context, clk Clock, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// Real is the system clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After is time.After.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// Sleep is Sleep on the system clock, for options that take a sleep
// function.
func (r Real) Sleep(ctx context.Context, d time.Duration) error { return Sleep(ctx, r, d) }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Stop() bool                 { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
