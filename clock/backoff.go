package clock

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff computes the waits between retries: Initial, growing by Factor
// per retry up to Max, with part of each wait drawn at random so that
// clients that failed together do not retry together. The zero value waits
// nothing.
type Backoff struct {
	Initial time.Duration // the wait before the first retry
	Max     time.Duration // the cap, jitter included; <= 0: no cap
	Factor  float64       // growth per retry; <= 0: 2
	// Jitter is the random share of each wait, in [0, 1]: a wait d
	// becomes a uniform draw from [d·(1−Jitter), d). 0 is no jitter; 0.5
	// keeps at least half of every wait.
	Jitter float64
	// Rand returns a number in [0, 1); nil: math/rand/v2.Float64.
	Rand func() float64
}

// Delay returns the wait before retry number attempt (1-based; values
// below 1 count as 1): Initial·Factor^(attempt−1), capped at Max, minus its
// jitter.
func (b Backoff) Delay(attempt int) time.Duration {
	if b.Initial <= 0 {
		return 0
	}
	f := b.Factor
	if f <= 0 {
		f = 2
	}
	d := float64(b.Initial) * math.Pow(f, float64(max(attempt, 1)-1))
	if b.Max > 0 && (d > float64(b.Max) || math.IsNaN(d)) {
		d = float64(b.Max)
	}
	if j := min(max(b.Jitter, 0), 1); j > 0 {
		rnd := b.Rand
		if rnd == nil {
			rnd = rand.Float64
		}
		d -= d * j * (1 - rnd())
	}
	if d >= math.MaxInt64 || math.IsNaN(d) { // float64(MaxInt64) is 2^63, one past it
		return math.MaxInt64
	}
	return time.Duration(d)
}

// After returns the wait before retry number attempt when the server asked
// to wait serverWait (from Retry-After; negative when it did not say): the
// larger of the two, so a server's longer wait is honoured and a shorter one
// does not make the client retry faster than its backoff.
func (b Backoff) After(attempt int, serverWait time.Duration) time.Duration {
	return max(b.Delay(attempt), serverWait)
}
