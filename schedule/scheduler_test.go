package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/schedule"
	"deepresearch/storage/sqlitetest"
)

// countingRunner records every job it runs.
type countingRunner struct {
	mu   sync.Mutex
	jobs []schedule.Job
	err  error
	hold chan struct{} // when set, Run waits for it (or ctx)
}

func (r *countingRunner) Run(ctx context.Context, job schedule.Job) (*schedule.Digest, error) {
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, job)
	if r.err != nil {
		return nil, r.err
	}
	return &schedule.Digest{Title: job.Due.Format(time.RFC3339), Findings: []string{"f " + job.Due.String()}}, nil
}

func (r *countingRunner) Jobs() []schedule.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]schedule.Job(nil), r.jobs...)
}

var monday9 = time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC) // Monday 09:00 JST

func newSched(t *testing.T, st schedule.Store, clk *clock.Manual, r schedule.Runner) *schedule.Scheduler {
	t.Helper()
	return &schedule.Scheduler{Store: st, Runner: r, Clock: clk, Owner: fmt.Sprintf("p-%p", r), Grace: time.Hour, Lease: 2 * time.Minute}
}

func weekly(t *testing.T, st schedule.Store, created time.Time) schedule.Schedule {
	t.Helper()
	sc := schedule.Schedule{ID: "w", Channel: "C1", Owner: "U1", Topic: "competitor news", Spec: "0 9 * * 1", TZ: "Asia/Tokyo",
		Enabled: true, ActiveSince: created, CreatedAt: created, UpdatedAt: created}
	if err := st.CreateSchedule(context.Background(), sc, 0); err != nil {
		t.Fatal(err)
	}
	return sc
}

func tick(t *testing.T, s *schedule.Scheduler) {
	t.Helper()
	if err := s.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Wait()
}

func firing(t *testing.T, st schedule.Store, id string, due time.Time) schedule.Firing {
	t.Helper()
	f, err := st.GetFiring(context.Background(), id, due)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSchedulerFiresOnceAtDueTime(t *testing.T) {
	st := sqlitetest.Schedules(t)
	weekly(t, st, monday9.Add(-3*24*time.Hour))
	clk := clock.NewManual(monday9.Add(-time.Minute))
	r := &countingRunner{}
	s := newSched(t, st, clk, r)
	tick(t, s)
	if n := len(r.Jobs()); n != 0 {
		t.Fatalf("ran %d jobs before the due time", n)
	}
	clk.Advance(90 * time.Second)
	tick(t, s)
	tick(t, s)
	jobs := r.Jobs()
	if len(jobs) != 1 || !jobs[0].Due.Equal(monday9) || jobs[0].Due.Location().String() != "Asia/Tokyo" || jobs[0].Previous != nil {
		t.Fatalf("jobs = %+v", jobs)
	}
	if f := firing(t, st, "w", monday9); f.State != schedule.FiringDone || f.Digest == nil {
		t.Fatalf("firing = %+v", f)
	}
	// Next week: the runner gets the previous digest.
	clk.Set(monday9.Add(7 * 24 * time.Hour))
	tick(t, s)
	jobs = r.Jobs()
	if len(jobs) != 2 || jobs[1].Previous == nil || !jobs[1].Previous.Due.Equal(monday9) || jobs[1].Previous.Digest == nil {
		t.Fatalf("second job = %+v", jobs[len(jobs)-1])
	}
}

// TestRestartCatchUp: every process was down over a due time. A new
// scheduler runs it once if within the grace window, records it as skipped
// otherwise, and a second restart does neither again.
func TestRestartCatchUp(t *testing.T) {
	t.Run("within grace runs once", func(t *testing.T) {
		st := sqlitetest.Schedules(t)
		weekly(t, st, monday9.Add(-3*24*time.Hour))
		r := &countingRunner{}
		s1 := newSched(t, st, clock.NewManual(monday9.Add(40*time.Minute)), r)
		tick(t, s1)
		s2 := newSched(t, st, clock.NewManual(monday9.Add(50*time.Minute)), r) // another restart
		tick(t, s2)
		if jobs := r.Jobs(); len(jobs) != 1 || !jobs[0].Due.Equal(monday9) {
			t.Fatalf("jobs = %+v", jobs)
		}
		if f := firing(t, st, "w", monday9); f.State != schedule.FiringDone {
			t.Fatalf("firing = %+v", f)
		}
	})
	t.Run("beyond grace is skipped", func(t *testing.T) {
		st := sqlitetest.Schedules(t)
		weekly(t, st, monday9.Add(-3*24*time.Hour))
		r := &countingRunner{}
		clk := clock.NewManual(monday9.Add(3 * time.Hour))
		s := newSched(t, st, clk, r)
		tick(t, s)
		tick(t, s)
		if jobs := r.Jobs(); len(jobs) != 0 {
			t.Fatalf("ran %+v", jobs)
		}
		f := firing(t, st, "w", monday9)
		if f.State != schedule.FiringSkipped || f.Error == "" {
			t.Fatalf("firing = %+v", f)
		}
		// The next due time runs normally.
		clk.Set(monday9.Add(7 * 24 * time.Hour))
		tick(t, s)
		if jobs := r.Jobs(); len(jobs) != 1 {
			t.Fatalf("next week: %d jobs", len(jobs))
		}
	})
	t.Run("several missed: latest within grace runs, the rest skipped", func(t *testing.T) {
		st := sqlitetest.Schedules(t)
		sc := schedule.Schedule{ID: "h", Channel: "C1", Owner: "U1", Topic: "t", Spec: "@hourly", TZ: "UTC", Enabled: true,
			ActiveSince: monday9, CreatedAt: monday9, UpdatedAt: monday9}
		if err := st.CreateSchedule(context.Background(), sc, 0); err != nil {
			t.Fatal(err)
		}
		r := &countingRunner{}
		s := newSched(t, st, clock.NewManual(monday9.Add(5*time.Hour+10*time.Minute)), r)
		tick(t, s)
		if jobs := r.Jobs(); len(jobs) != 1 || !jobs[0].Due.Equal(monday9.Add(5*time.Hour)) {
			t.Fatalf("jobs = %+v", jobs)
		}
		fs, _ := st.ListFirings(context.Background(), "h", 0)
		if len(fs) != 5 {
			t.Fatalf("%d firings recorded, want 5", len(fs))
		}
		for _, f := range fs[1:] {
			if f.State != schedule.FiringSkipped {
				t.Fatalf("older firing %+v", f)
			}
		}
	})
}

func TestPausedDueTimesAreNotCaughtUp(t *testing.T) {
	st := sqlitetest.Schedules(t)
	sc := weekly(t, st, monday9.Add(-3*24*time.Hour))
	sc.Enabled = false
	if err := st.UpdateSchedule(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	r := &countingRunner{}
	clk := clock.NewManual(monday9.Add(10 * time.Minute))
	s := newSched(t, st, clk, r)
	tick(t, s)
	// Resumed after the due time, within what would be the grace window.
	sc.Enabled, sc.ActiveSince = true, clk.Now()
	if err := st.UpdateSchedule(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	tick(t, s)
	if jobs := r.Jobs(); len(jobs) != 0 {
		t.Fatalf("ran a due time from while it was paused: %+v", jobs)
	}
}

func TestTakeOverAfterProcessDied(t *testing.T) {
	st := sqlitetest.Schedules(t)
	weekly(t, st, monday9.Add(-3*24*time.Hour))
	ctx := context.Background()
	// A process claimed the firing and died.
	if _, err := st.ClaimFiring(ctx, schedule.Firing{ScheduleID: "w", Due: monday9, State: schedule.FiringRunning, Owner: "dead",
		LeaseUntil: monday9.Add(2 * time.Minute), Attempts: 1, ClaimedAt: monday9}); err != nil {
		t.Fatal(err)
	}
	r := &countingRunner{}
	clk := clock.NewManual(monday9.Add(time.Minute))
	s := newSched(t, st, clk, r)
	tick(t, s)
	if len(r.Jobs()) != 0 {
		t.Fatal("took over a live lease")
	}
	clk.Advance(5 * time.Minute)
	tick(t, s)
	jobs := r.Jobs()
	if len(jobs) != 1 || jobs[0].Attempt != 2 {
		t.Fatalf("jobs = %+v", jobs)
	}
	if f := firing(t, st, "w", monday9); f.State != schedule.FiringDone || f.Attempts != 2 || f.Digest == nil {
		t.Fatalf("firing = %+v", f)
	}
}

func TestShutdownHandsFiringBack(t *testing.T) {
	st := sqlitetest.Schedules(t)
	weekly(t, st, monday9.Add(-3*24*time.Hour))
	clk := clock.NewManual(monday9)
	r := &countingRunner{hold: make(chan struct{})}
	s := newSched(t, st, clk, r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-clk.WaitForWaiters(2) // the loop and the run's heartbeat wait on the clock
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f := firing(t, st, "w", monday9)
	if f.State != schedule.FiringRunning || !f.LeaseUntil.Before(monday9) {
		t.Fatalf("after shutdown: %+v", f)
	}
	// Another process takes it over at once.
	r2 := &countingRunner{}
	s2 := newSched(t, st, clock.NewManual(monday9.Add(time.Second)), r2)
	tick(t, s2)
	if jobs := r2.Jobs(); len(jobs) != 1 || jobs[0].Attempt != 2 {
		t.Fatalf("take over: %+v", jobs)
	}
}

type notifyRunner struct {
	countingRunner
	ran chan struct{}
}

func (r *notifyRunner) Run(ctx context.Context, job schedule.Job) (*schedule.Digest, error) {
	d, err := r.countingRunner.Run(ctx, job)
	r.ran <- struct{}{}
	return d, err
}

func TestRunLoopWithManualClock(t *testing.T) {
	st := sqlitetest.Schedules(t)
	weekly(t, st, monday9.Add(-3*24*time.Hour))
	clk := clock.NewManual(monday9.Add(-time.Minute))
	r := &notifyRunner{ran: make(chan struct{}, 4)}
	s := newSched(t, st, clk, r)
	s.Interval = 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	for range 2 { // ticks at -1m, -30s: nothing due
		<-clk.WaitForWaiters(1)
		clk.Advance(30 * time.Second)
	}
	select { // the tick at 09:00 runs it
	case <-r.ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not run the due firing")
	}
	s.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if jobs := r.Jobs(); len(jobs) != 1 {
		t.Fatalf("jobs = %d", len(jobs))
	}
	if f := firing(t, st, "w", monday9); f.State != schedule.FiringDone {
		t.Fatalf("firing = %+v", f)
	}
}

func TestFailedRunIsRecorded(t *testing.T) {
	st := sqlitetest.Schedules(t)
	weekly(t, st, monday9.Add(-3*24*time.Hour))
	r := &countingRunner{err: errors.New("LLM down")}
	s := newSched(t, st, clock.NewManual(monday9), r)
	tick(t, s)
	if f := firing(t, st, "w", monday9); f.State != schedule.FiringFailed || f.Error != "LLM down" {
		t.Fatalf("firing = %+v", f)
	}
}

type approvals struct {
	mu   sync.Mutex
	jobs []schedule.Job
}

func (a *approvals) RequestApproval(_ context.Context, job schedule.Job) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.jobs = append(a.jobs, job)
	return nil
}

func TestApprovalFlow(t *testing.T) {
	st := sqlitetest.Schedules(t)
	sc := weekly(t, st, monday9.Add(-3*24*time.Hour))
	sc.Options.Approval = true
	if err := st.UpdateSchedule(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	r := &countingRunner{}
	ap := &approvals{}
	s := newSched(t, st, clock.NewManual(monday9), r)
	s.Approvals = ap
	tick(t, s)
	if len(ap.jobs) != 1 || len(r.Jobs()) != 0 {
		t.Fatalf("approvals %d, runs %d", len(ap.jobs), len(r.Jobs()))
	}
	if f := firing(t, st, "w", monday9); f.State != schedule.FiringWaiting {
		t.Fatalf("firing = %+v", f)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 { // a double click
		wg.Add(1)
		go func() { defer wg.Done(); errs <- s.Approve(ctx, "w", monday9) }()
	}
	wg.Wait()
	s.Wait()
	close(errs)
	var ok, notWaiting int
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, schedule.ErrNotWaiting):
			notWaiting++
		default:
			t.Fatal(err)
		}
	}
	if ok != 1 || notWaiting != 1 || len(r.Jobs()) != 1 {
		t.Fatalf("ok %d, not waiting %d, runs %d", ok, notWaiting, len(r.Jobs()))
	}
	// Declining the next one records it as skipped.
	next := monday9.Add(7 * 24 * time.Hour)
	s2 := newSched(t, st, clock.NewManual(next), r)
	s2.Approvals = ap
	tick(t, s2)
	if err := s2.Decline(ctx, "w", next, "U1"); err != nil {
		t.Fatal(err)
	}
	if f := firing(t, st, "w", next); f.State != schedule.FiringSkipped {
		t.Fatalf("declined firing = %+v", f)
	}
	if err := s2.Approve(ctx, "w", next); !errors.Is(err, schedule.ErrNotWaiting) {
		t.Fatalf("approve after decline: %v", err)
	}
}
