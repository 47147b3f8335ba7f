package clock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"deepresearch/clock"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func TestSleep(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		d       time.Duration
		advance time.Duration // moved once the sleeper is parked; 0: not parked
		want    error
	}{
		{"zero returns at once", context.Background(), 0, 0, nil},
		{"negative returns at once", context.Background(), -time.Second, 0, nil},
		{"canceled before", canceled, time.Hour, 0, context.Canceled},
		{"canceled and zero", canceled, 0, 0, context.Canceled},
		{"full wait", context.Background(), time.Minute, time.Minute, nil},
		{"long advance", context.Background(), time.Minute, time.Hour, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := clock.NewManual(t0)
			errc := make(chan error, 1)
			go func() { errc <- clock.Sleep(tt.ctx, m, tt.d) }()
			if tt.advance > 0 {
				waitClosed(t, m.WaitForWaiters(1))
				m.Advance(tt.d - 1)
				select {
				case err := <-errc:
					t.Fatalf("Sleep returned %v before its time", err)
				case <-time.After(10 * time.Millisecond):
				}
				m.Advance(tt.advance - tt.d + 1)
			}
			select {
			case err := <-errc:
				if !errors.Is(err, tt.want) && err != tt.want {
					t.Errorf("Sleep = %v, want %v", err, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Sleep did not return")
			}
			if n := m.Waiters(); n != 0 {
				t.Errorf("%d timers left pending", n)
			}
		})
	}
}

// A context that ends while Sleep waits wakes it and stops its timer.
func TestSleepCanceledWhileWaiting(t *testing.T) {
	m := clock.NewManual(t0)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- clock.Sleep(ctx, m, time.Hour) }()
	waitClosed(t, m.WaitForWaiters(1))
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep = %v, want context.Canceled", err)
	}
	if n := m.Waiters(); n != 0 {
		t.Errorf("%d timers left pending", n)
	}
}

func TestRealSleep(t *testing.T) {
	start := time.Now()
	if err := (clock.Real{}).Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Errorf("slept %v, want at least 20ms", el)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := clock.Sleep(ctx, clock.Real{}, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Sleep = %v, want DeadlineExceeded", err)
	}
}

func TestRealTimer(t *testing.T) {
	var c clock.Clock = clock.Real{}
	if d := time.Since(c.Now()); d < 0 || d > time.Second {
		t.Errorf("Now is %v away from time.Now", d)
	}
	tm := c.NewTimer(time.Hour)
	if !tm.Stop() {
		t.Error("Stop of a running timer = false")
	}
	tm.Reset(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("reset timer did not fire")
	}
	select {
	case <-c.After(time.Millisecond):
	case <-time.After(5 * time.Second):
		t.Fatal("After did not fire")
	}
}

func waitClosed(t *testing.T, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatal("condition not reached")
	}
}

func TestManualTimers(t *testing.T) {
	type step struct {
		advance time.Duration
		fired   []int // timers (by index) that fire on this step, in order
	}
	tests := []struct {
		name   string
		delays []time.Duration
		stop   []int // timers stopped before the steps
		steps  []step
	}{
		{"fires at its time, not before", []time.Duration{time.Minute},
			nil, []step{{59 * time.Second, nil}, {time.Second, []int{0}}, {time.Hour, nil}}},
		{"all due fire in one advance", []time.Duration{3 * time.Second, time.Second, 2 * time.Second},
			nil, []step{{time.Hour, []int{1, 2, 0}}}},
		{"one at a time", []time.Duration{3 * time.Second, time.Second, 2 * time.Second},
			nil, []step{{time.Second, []int{1}}, {time.Second, []int{2}}, {time.Second, []int{0}}}},
		{"stopped never fires", []time.Duration{time.Second, 2 * time.Second},
			[]int{0}, []step{{time.Hour, []int{1}}}},
		{"zero fires at once", []time.Duration{0, time.Second},
			nil, []step{{0, []int{0}}, {time.Second, []int{1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := clock.NewManual(t0)
			timers := make([]clock.Timer, len(tt.delays))
			for i, d := range tt.delays {
				timers[i] = m.NewTimer(d)
			}
			var want []time.Time
			for _, d := range tt.delays {
				if d > 0 {
					want = append(want, t0.Add(d))
				}
			}
			slices.SortFunc(want, time.Time.Compare)
			if got := m.Deadlines(); !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Errorf("Deadlines = %v, want %v", got, want)
			}
			for _, i := range tt.stop {
				if !timers[i].Stop() {
					t.Errorf("Stop(%d) = false for a pending timer", i)
				}
			}
			var fired []int
			for si, s := range tt.steps {
				m.Advance(s.advance)
				// Timers that fired in one Advance carry the clock's time.
				for i, tm := range timers {
					select {
					case at := <-tm.C():
						if !at.Equal(m.Now()) {
							t.Errorf("step %d: timer %d fired with %v, clock shows %v", si, i, at, m.Now())
						}
						fired = append(fired, i)
					default:
					}
				}
				var want []int
				for _, s := range tt.steps[:si+1] {
					want = append(want, s.fired...)
				}
				if !sameSet(fired, want) {
					t.Fatalf("after step %d fired %v, want %v", si, fired, want)
				}
			}
		})
	}
}

func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[int]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestManualStopAndReset(t *testing.T) {
	m := clock.NewManual(t0)
	tm := m.NewTimer(time.Second)
	if !tm.Stop() {
		t.Error("Stop of a pending timer = false")
	}
	if tm.Stop() {
		t.Error("second Stop = true")
	}
	if tm.Reset(2 * time.Second) {
		t.Error("Reset of a stopped timer = true")
	}
	m.Advance(time.Second)
	if m.Waiters() != 1 {
		t.Fatalf("Waiters = %d after Reset, want 1", m.Waiters())
	}
	m.Advance(time.Second)
	if m.Waiters() != 0 {
		t.Fatalf("Waiters = %d after the reset time, want 0", m.Waiters())
	}
	// Fired but not received: Stop discards the time, as time.Timer does.
	if !tm.Stop() {
		t.Error("Stop of a fired, unreceived timer = false")
	}
	select {
	case at := <-tm.C():
		t.Errorf("received %v after Stop", at)
	default:
	}
	// Reset of a running timer moves it.
	tm = m.NewTimer(time.Second)
	if !tm.Reset(time.Minute) {
		t.Error("Reset of a running timer = false")
	}
	m.Advance(time.Second)
	select {
	case <-tm.C():
		t.Error("fired at its old time")
	default:
	}
	if got := m.Deadlines(); len(got) != 1 || !got[0].Equal(m.Now().Add(time.Minute-time.Second)) {
		t.Errorf("Deadlines = %v", got)
	}
}

func TestManualSetNeverBackwards(t *testing.T) {
	m := clock.NewManual(t0)
	c := m.After(time.Hour)
	m.Set(t0.Add(-time.Hour))
	if !m.Now().Equal(t0) {
		t.Errorf("Now = %v after Set to the past, want %v", m.Now(), t0)
	}
	m.Set(t0.Add(2 * time.Hour))
	select {
	case at := <-c:
		if !at.Equal(t0.Add(2 * time.Hour)) {
			t.Errorf("fired with %v", at)
		}
	default:
		t.Error("After did not fire when Set passed it")
	}
}

func TestManualWaitFor(t *testing.T) {
	m := clock.NewManual(t0)
	two := m.WaitForWaiters(2)
	at := m.WaitForTimer(t0.Add(time.Minute))
	zero := m.WaitForWaiters(0)
	waitClosed(t, zero)
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	m.NewTimer(time.Second)
	if closed(two) || closed(at) {
		t.Fatal("closed with one timer at +1s")
	}
	m.NewTimer(time.Minute)
	if !closed(two) || !closed(at) {
		t.Fatal("not closed with a second timer at +1m")
	}
	// A timer that already fired does not count.
	m.Advance(time.Second)
	if closed(m.WaitForTimer(t0.Add(time.Second))) {
		t.Error("WaitForTimer closed for a timer that fired")
	}
}

// Many goroutines sleep on one clock while a test advances it; run under
// -race.
func TestManualConcurrentSleepers(t *testing.T) {
	const n = 50
	m := clock.NewManual(t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs <- m.Sleep(ctx, time.Duration(i%5+1)*time.Second) })
	}
	waitClosed(t, m.WaitForWaiters(n))
	for range 5 {
		m.Advance(time.Second)
		_ = m.Now()
		_ = m.Deadlines()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Sleep = %v", err)
		}
	}
	if m.Waiters() != 0 {
		t.Errorf("Waiters = %d, want 0", m.Waiters())
	}
}
