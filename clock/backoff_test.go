package clock_test

import (
	"math"
	"testing"
	"time"

	"deepresearch/clock"
)

func fixed(r float64) func() float64 { return func() float64 { return r } }

func TestBackoffDelay(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name    string
		b       clock.Backoff
		attempt int
		want    time.Duration
	}{
		{"zero value waits nothing", clock.Backoff{}, 3, 0},
		{"first retry", clock.Backoff{Initial: 500 * ms}, 1, 500 * ms},
		{"attempt below 1 counts as 1", clock.Backoff{Initial: 500 * ms}, 0, 500 * ms},
		{"doubles by default", clock.Backoff{Initial: 500 * ms}, 4, 4 * time.Second},
		{"factor", clock.Backoff{Initial: 100 * ms, Factor: 3}, 3, 900 * ms},
		{"fractional factor", clock.Backoff{Initial: time.Second, Factor: 1.5}, 3, 2250 * ms},
		{"capped", clock.Backoff{Initial: 500 * ms, Max: 8 * time.Second}, 6, 8 * time.Second},
		{"cap below initial", clock.Backoff{Initial: time.Second, Max: 300 * ms}, 1, 300 * ms},
		{"huge attempt without a cap does not overflow", clock.Backoff{Initial: time.Second}, 10000, math.MaxInt64},
		{"huge attempt with a cap", clock.Backoff{Initial: time.Second, Max: time.Minute}, 1 << 30, time.Minute},
		{"half jitter, rand 0: the floor", clock.Backoff{Initial: time.Second, Jitter: 0.5, Rand: fixed(0)}, 1, 500 * ms},
		{"half jitter, rand 0.5", clock.Backoff{Initial: time.Second, Jitter: 0.5, Rand: fixed(0.5)}, 2, 1500 * ms},
		{"jitter stays under the cap", clock.Backoff{Initial: time.Second, Max: 2 * time.Second, Jitter: 0.5, Rand: fixed(0.999)}, 5, 1999 * ms},
		{"full jitter", clock.Backoff{Initial: time.Second, Jitter: 1, Rand: fixed(0.25)}, 1, 250 * ms},
		{"jitter above 1 is 1", clock.Backoff{Initial: time.Second, Jitter: 7, Rand: fixed(0)}, 1, 0},
		{"negative jitter is none", clock.Backoff{Initial: time.Second, Jitter: -1, Rand: fixed(0)}, 1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Delay(tt.attempt); got != tt.want {
				t.Errorf("Delay(%d) = %v, want %v", tt.attempt, got, tt.want)
			}
		})
	}
}

// The default random source keeps every delay inside its jitter range.
func TestBackoffDefaultRandInRange(t *testing.T) {
	b := clock.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Jitter: 0.5}
	seen := map[time.Duration]bool{}
	for range 200 {
		for attempt := 1; attempt <= 6; attempt++ {
			d := min(100*time.Millisecond<<(attempt-1), time.Second)
			got := b.Delay(attempt)
			if got < d/2 || got > d {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", attempt, got, d/2, d)
			}
			seen[got] = true
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct delays in 1200 draws: jitter is not random", len(seen))
	}
}

func TestBackoffAfter(t *testing.T) {
	b := clock.Backoff{Initial: time.Second, Max: 10 * time.Second}
	tests := []struct {
		name       string
		attempt    int
		serverWait time.Duration
		want       time.Duration
	}{
		{"server did not say", 2, -1, 2 * time.Second},
		{"server asks for longer", 2, 5 * time.Second, 5 * time.Second},
		{"server asks for longer than the cap", 2, time.Minute, time.Minute},
		{"server asks for less", 3, time.Second, 4 * time.Second},
		{"server says now", 1, 0, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := b.After(tt.attempt, tt.serverWait); got != tt.want {
				t.Errorf("After(%d, %v) = %v, want %v", tt.attempt, tt.serverWait, got, tt.want)
			}
		})
	}
}
