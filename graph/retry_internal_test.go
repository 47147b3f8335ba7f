package graph

import (
	"testing"
	"time"
)

func TestRetryPolicyBackoff(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name    string
		p       RetryPolicy
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{"defaults", RetryPolicy{}, 1, 0, 500 * ms},
		{"defaults doubling", RetryPolicy{}, 3, 0, 2 * time.Second},
		{"default cap", RetryPolicy{}, 20, 0, 30 * time.Second},
		{"multiplier", RetryPolicy{Initial: time.Second, Multiplier: 1.5}, 3, 0, 2250 * ms},
		{"cap", RetryPolicy{Initial: time.Second, Max: 3 * time.Second}, 4, 0, 3 * time.Second},
		{"rand ignored without jitter", RetryPolicy{Initial: time.Second}, 1, 0.9, time.Second},
		{"jitter adds nothing at rand 0", RetryPolicy{Initial: time.Second, Jitter: true}, 2, 0, 2 * time.Second},
		{"jitter adds up to half", RetryPolicy{Initial: time.Second, Jitter: true}, 2, 0.5, 2500 * ms},
		{"jitter goes past the cap", RetryPolicy{Initial: time.Second, Max: 2 * time.Second, Jitter: true}, 5, 0.5, 2500 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.backoff(tt.attempt, func() float64 { return tt.rnd })
			if d := got - tt.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("backoff(%d) = %v, want %v", tt.attempt, got, tt.want)
			}
		})
	}
}
