package schedule_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/research"
	"deepresearch/schedule"
)

var monday9 = time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC) // Monday 09:00 JST

func weekly(t *testing.T, st schedule.Store, created time.Time) schedule.Schedule {
	t.Helper()
	sc := schedule.Schedule{ID: "w", Channel: "C1", Owner: "U1", Topic: "competitor news", Spec: "0 9 * * 1", TZ: "Asia/Tokyo",
		Enabled: true, ActiveSince: created, CreatedAt: created, UpdatedAt: created}
	if err := st.CreateSchedule(context.Background(), sc, 0); err != nil {
		t.Fatal(err)
	}
	return sc
}

func firing(t *testing.T, st schedule.Store, id string, due time.Time) schedule.Firing {
	t.Helper()
	f, err := st.GetFiring(context.Background(), id, due)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// results are n research results, each with a finding of its own.
func results(n int) []research.Result {
	var out []research.Result
	for i := range n {
		out = append(out, research.Result{Title: "News", WriterSummary: "- finding " + string(rune('A'+i)), Report: "# News\n\nBody."})
	}
	return out
}

func TestSchedulerFiresOnceAtDueTime(t *testing.T) {
	clk := clock.NewManual(monday9.Add(-time.Minute))
	res, poster := &fakeResearcher{results: results(2)}, &fakePoster{}
	w := newWorld(t, clk, res, poster)
	weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	p := w.proc(t, "p1")
	w.tick(t, p)
	if n := len(res.Reqs()); n != 0 {
		t.Fatalf("ran %d researches before the due time", n)
	}
	clk.Advance(90 * time.Second)
	w.tick(t, p)
	w.tick(t, p)
	reqs := res.Reqs()
	if len(reqs) != 1 || reqs[0].Question != "competitor news" || reqs[0].Options.Digest == nil || !reqs[0].Options.Digest.Due.Equal(monday9) {
		t.Fatalf("researches = %+v", reqs)
	}
	msgs := poster.Messages()
	if len(msgs) != 1 || !msgs[0].Due.Equal(monday9) || msgs[0].Due.Location().String() != "Asia/Tokyo" || !msgs[0].WhatsNew.First() {
		t.Fatalf("messages = %+v", msgs)
	}
	if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringDone || f.Digest == nil || f.Digest.MessageTS == "" {
		t.Fatalf("firing = %+v", f)
	}
	// Next week: the digest is compared with the previous one.
	clk.Set(monday9.Add(7 * 24 * time.Hour))
	w.tick(t, p)
	msgs = poster.Messages()
	if len(msgs) != 2 || !msgs[1].WhatsNew.Since.Equal(monday9) {
		t.Fatalf("second message = %+v", msgs[len(msgs)-1])
	}
}

// TestRestartCatchUp: every process was down over a due time. A new
// scheduler runs it once if within the grace window, records it as skipped
// otherwise, and a second restart does neither again.
func TestRestartCatchUp(t *testing.T) {
	t.Run("within grace runs once", func(t *testing.T) {
		clk := clock.NewManual(monday9.Add(40 * time.Minute))
		res := &fakeResearcher{results: results(2)}
		w := newWorld(t, clk, res, &fakePoster{})
		weekly(t, w.st, monday9.Add(-3*24*time.Hour))
		w.tick(t, w.proc(t, "p1"))
		clk.Advance(10 * time.Minute)
		w.tick(t, w.proc(t, "p2")) // another restart
		if reqs := res.Reqs(); len(reqs) != 1 {
			t.Fatalf("researches = %+v", reqs)
		}
		if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringDone {
			t.Fatalf("firing = %+v", f)
		}
	})
	t.Run("beyond grace is skipped", func(t *testing.T) {
		clk := clock.NewManual(monday9.Add(3 * time.Hour))
		res := &fakeResearcher{results: results(2)}
		w := newWorld(t, clk, res, &fakePoster{})
		weekly(t, w.st, monday9.Add(-3*24*time.Hour))
		p := w.proc(t, "p1")
		w.tick(t, p)
		w.tick(t, p)
		if reqs := res.Reqs(); len(reqs) != 0 {
			t.Fatalf("ran %+v", reqs)
		}
		f := firing(t, w.st, "w", monday9)
		if f.State != schedule.FiringSkipped || f.Error == "" {
			t.Fatalf("firing = %+v", f)
		}
		// The next due time runs normally.
		clk.Set(monday9.Add(7 * 24 * time.Hour))
		w.tick(t, p)
		if reqs := res.Reqs(); len(reqs) != 1 {
			t.Fatalf("next week: %d researches", len(reqs))
		}
	})
	t.Run("several missed: latest within grace runs, the rest skipped", func(t *testing.T) {
		clk := clock.NewManual(monday9.Add(5*time.Hour + 10*time.Minute))
		res := &fakeResearcher{results: results(1)}
		w := newWorld(t, clk, res, &fakePoster{})
		sc := schedule.Schedule{ID: "h", Channel: "C1", Owner: "U1", Topic: "t", Spec: "@hourly", TZ: "UTC", Enabled: true,
			ActiveSince: monday9, CreatedAt: monday9, UpdatedAt: monday9}
		if err := w.st.CreateSchedule(context.Background(), sc, 0); err != nil {
			t.Fatal(err)
		}
		w.tick(t, w.proc(t, "p1"))
		if reqs := res.Reqs(); len(reqs) != 1 || !reqs[0].Options.Digest.Due.Equal(monday9.Add(5*time.Hour)) {
			t.Fatalf("researches = %+v", reqs)
		}
		fs, _ := w.st.ListFirings(context.Background(), "h", 0)
		if len(fs) != 5 || fs[0].State != schedule.FiringDone {
			t.Fatalf("%d firings recorded, want 5: %+v", len(fs), fs)
		}
		for _, f := range fs[1:] {
			if f.State != schedule.FiringSkipped {
				t.Fatalf("older firing %+v", f)
			}
		}
	})
}

func TestPausedDueTimesAreNotCaughtUp(t *testing.T) {
	clk := clock.NewManual(monday9.Add(10 * time.Minute))
	res := &fakeResearcher{results: results(1)}
	w := newWorld(t, clk, res, &fakePoster{})
	sc := weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	sc.Enabled = false
	if err := w.st.UpdateSchedule(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	p := w.proc(t, "p1")
	w.tick(t, p)
	// Resumed after the due time, within what would be the grace window.
	sc.Enabled, sc.ActiveSince = true, clk.Now()
	if err := w.st.UpdateSchedule(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	w.tick(t, p)
	if reqs := res.Reqs(); len(reqs) != 0 {
		t.Fatalf("ran a due time from while it was paused: %+v", reqs)
	}
}

// TestDigestTakenOverAfterCrash: the process working on a digest run dies
// (its lease runs out) — mid-research, or after posting the summary message
// but before sharing the report. Another process takes the run over: the
// model calls that finished are not made again, and the digest is posted
// once, its report once, the dead process's staged file deleted.
func TestDigestTakenOverAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name      string
		midUpload bool
	}{{"mid-research", false}, {"between message and report", true}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(monday9)
			res := &fakeResearcher{results: results(1), steps: 3}
			poster := &fakePoster{unblock: make(chan struct{})}
			stop := make(chan struct{}) // the dead process never comes back: its shutdown ends it
			defer close(poster.unblock)
			reached := make(chan struct{})
			if tc.midUpload {
				poster.dieInUpload = reached
			} else {
				res.holdAt, res.hold, res.reached = 3, stop, make(chan struct{}, 1)
				go func() { <-res.reached; close(reached) }()
			}
			w := newWorld(t, clk, res, poster)
			weekly(t, w.st, monday9.Add(-3*24*time.Hour))
			// The first process has no heartbeat to speak of: once it stops
			// at the crash point, nothing renews its lease.
			dead := w.proc(t, "dead", func(o *research.ServiceOptions) { o.HeartbeatEvery = time.Hour })
			if err := dead.sched.Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-reached:
			case <-time.After(20 * time.Second):
				t.Fatal("the first process never reached the crash point")
			}
			res.mu.Lock()
			res.hold = nil
			res.mu.Unlock()
			id := schedule.RunID("w", monday9)
			if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringRunning || f.Owner != "dead" {
				t.Fatalf("firing of the dead process = %+v", f)
			}
			// Another process: nothing to take over while the lease holds.
			next := w.proc(t, "next")
			next.svc.Recover(context.Background())
			if r, _ := w.runs.Run(context.Background(), id); r.Owner != "dead" {
				t.Fatalf("taken over under a live lease: %+v", r)
			}
			clk.Advance(2 * time.Minute)
			w.settle(t, next)
			r, err := w.runs.Run(context.Background(), id)
			if err != nil || r.State != research.StateDone || r.Attempt != 2 || r.Owner != "" {
				t.Fatalf("run = %+v, %v", r, err)
			}
			calls := res.Calls()
			want := []string{r.ThreadID + "#1", r.ThreadID + "#2", r.ThreadID + "#3"}
			if !slices.Equal(calls, want) {
				t.Errorf("model calls %v, want each once: %v", calls, want)
			}
			if msgs := poster.Messages(); len(msgs) != 1 {
				t.Errorf("%d digest messages, want 1", len(msgs))
			}
			poster.mu.Lock()
			files, threads, deleted := len(poster.files), slices.Clone(poster.threads), slices.Clone(poster.deleted)
			poster.mu.Unlock()
			if files != 1 || len(threads) != 1 || threads[0] != "1700000000.000001" {
				t.Errorf("reports shared %d in threads %v, want one in the message's", files, threads)
			}
			if tc.midUpload && !slices.Equal(deleted, []string{"F1"}) {
				t.Errorf("deleted %v, want the dead process's staged F1", deleted)
			}
			if staged, _ := w.runs.StagedUploads(context.Background(), id); len(staged) != 0 {
				t.Errorf("staged files left: %v", staged)
			}
			if u, err := w.runs.Upload(context.Background(), id); err != nil || u.MessageID != "1700000000.000001" {
				t.Errorf("upload record = %+v, %v", u, err)
			}
			f := firing(t, w.st, "w", monday9)
			if f.State != schedule.FiringDone || f.Attempts != 2 || f.Digest == nil || f.Digest.MessageTS != "1700000000.000001" {
				t.Fatalf("firing = %+v", f)
			}
		})
	}
}

func TestShutdownHandsFiringBack(t *testing.T) {
	clk := clock.NewManual(monday9)
	stop := make(chan struct{})
	defer close(stop)
	res := &fakeResearcher{results: results(1), holdAt: 1, hold: stop, reached: make(chan struct{}, 1)}
	w := newWorld(t, clk, res, &fakePoster{})
	weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	p1 := w.proc(t, "p1")
	if err := p1.sched.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-res.reached
	if !p1.svc.Shutdown(10 * time.Second) {
		t.Fatal("the run did not stop at shutdown")
	}
	r, err := w.runs.Run(context.Background(), schedule.RunID("w", monday9))
	if err != nil || r.State != research.StateQueued {
		t.Fatalf("after shutdown: %+v, %v", r, err)
	}
	// Another process takes it over at once.
	res.mu.Lock()
	res.hold = nil
	res.mu.Unlock()
	w.settle(t, w.proc(t, "p2"))
	if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringDone || f.Owner != "" {
		t.Fatalf("firing = %+v", f)
	}
}

func TestRunLoopWithManualClock(t *testing.T) {
	clk := clock.NewManual(monday9.Add(-time.Minute))
	res := &fakeResearcher{results: results(1)}
	w := newWorld(t, clk, res, &fakePoster{})
	weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	p := w.proc(t, "p1")
	p.sched.Interval = 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- p.sched.Run(ctx) }()
	for range 2 { // ticks at -1m, -30s: nothing due
		<-clk.WaitForWaiters(1)
		clk.Advance(30 * time.Second)
	}
	<-clk.WaitForWaiters(1) // the tick at 09:00 created the run
	w.settle(t, p)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if reqs := res.Reqs(); len(reqs) != 1 {
		t.Fatalf("researches = %d", len(reqs))
	}
	if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringDone {
		t.Fatalf("firing = %+v", f)
	}
}

func TestFailedRunIsRecorded(t *testing.T) {
	clk := clock.NewManual(monday9)
	w := newWorld(t, clk, &fakeResearcher{err: errors.New("LLM down")}, &fakePoster{})
	weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	w.tick(t, w.proc(t, "p1"))
	if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringFailed || !strings.Contains(f.Error, "LLM down") {
		t.Fatalf("firing = %+v", f)
	}
}

func TestApprovalFlow(t *testing.T) {
	clk := clock.NewManual(monday9)
	res, poster := &fakeResearcher{results: results(2)}, &fakePoster{}
	w := newWorld(t, clk, res, poster)
	sc := weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	sc.Options.Approval = true
	if err := w.st.UpdateSchedule(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	p := w.proc(t, "p1")
	w.tick(t, p)
	if len(poster.Approvals()) != 1 || len(res.Reqs()) != 0 {
		t.Fatalf("approvals %d, researches %d", len(poster.Approvals()), len(res.Reqs()))
	}
	if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringWaiting {
		t.Fatalf("firing = %+v", f)
	}
	ctx := context.Background()
	m := &schedule.Manager{Store: w.st, Scheduler: p.sched, Decider: w.runs, Clock: clk}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 { // a double click
		wg.Add(1)
		go func() { defer wg.Done(); errs <- m.Approve(ctx, "w", monday9, "U1") }()
	}
	wg.Wait()
	close(errs)
	w.settle(t, p)
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
	if ok != 1 || notWaiting != 1 || len(res.Reqs()) != 1 || len(poster.Messages()) != 1 {
		t.Fatalf("ok %d, not waiting %d, researches %d, digests %d", ok, notWaiting, len(res.Reqs()), len(poster.Messages()))
	}
	if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringDone {
		t.Fatalf("approved firing = %+v", f)
	}
	// Declining the next one records it as skipped.
	next := monday9.Add(7 * 24 * time.Hour)
	clk.Set(next)
	w.tick(t, p)
	if err := m.Decline(ctx, "w", next, "U1"); err != nil {
		t.Fatal(err)
	}
	if f := firing(t, w.st, "w", next); f.State != schedule.FiringSkipped || f.Error != "declined by U1" {
		t.Fatalf("declined firing = %+v", f)
	}
	if err := m.Approve(ctx, "w", next, "U1"); !errors.Is(err, schedule.ErrNotWaiting) {
		t.Fatalf("approve after decline: %v", err)
	}
	if err := m.Approve(ctx, "w", next.Add(time.Hour), "U1"); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("approve of no firing: %v", err)
	}
	if len(res.Reqs()) != 1 {
		t.Fatalf("researches %d after a decline", len(res.Reqs()))
	}
}

// diesBeforeRecord is the store of the digests' summary messages in a
// process that dies right after posting one: its SetStatusMessage records
// nothing, tells reached and waits for ctx or unblock (publication's ctx
// is not cancelled: the process never comes back).
type diesBeforeRecord struct {
	schedule.StatusMessages
	reached, unblock chan struct{}
}

func (d diesBeforeRecord) SetStatusMessage(ctx context.Context, runID, ts string) (string, error) {
	close(d.reached)
	select {
	case <-ctx.Done():
	case <-d.unblock:
	}
	return "", errors.New("the process died")
}

// TestDigestMessageFoundAfterCrash: the process working on a digest posts
// its summary message and dies before recording it. The process that takes
// the run over finds the message (FindDigest) instead of posting a second
// one, and shares the report in its thread.
func TestDigestMessageFoundAfterCrash(t *testing.T) {
	clk := clock.NewManual(monday9)
	res := &fakeResearcher{results: results(1)}
	poster := &fakePoster{}
	w := newWorld(t, clk, res, poster)
	reached, unblock, stopClock := make(chan struct{}), make(chan struct{}), make(chan struct{})
	w.status = map[string]schedule.StatusMessages{"dead": diesBeforeRecord{StatusMessages: w.slack, reached: reached, unblock: unblock}}
	weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	t.Cleanup(func() { close(stopClock) }) // after the processes' Shutdown
	dead := w.proc(t, "dead", func(o *research.ServiceOptions) { o.HeartbeatEvery = time.Hour })
	if err := dead.sched.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the first process never posted the digest message")
	}
	next := w.proc(t, "next")
	// Before the processes' Shutdown: the dead one, still in its
	// publication, is let go, and the clock moves on so that its rounds
	// of publication (on the clock) and its Shutdown end.
	t.Cleanup(func() {
		close(unblock)
		go func() {
			for {
				select {
				case <-stopClock:
					return
				case <-time.After(time.Millisecond):
					clk.Advance(time.Millisecond)
				}
			}
		}()
	})
	clk.Advance(2 * time.Minute) // the dead process's lease runs out
	w.settle(t, next)

	id := schedule.RunID("w", monday9)
	if r, err := w.runs.Run(context.Background(), id); err != nil || r.State != research.StateDone || r.Attempt != 2 {
		t.Fatalf("run = %+v, %v", r, err)
	}
	if msgs := poster.Messages(); len(msgs) != 1 || msgs[0].RunID != id {
		t.Fatalf("digest messages %+v, want one of run %s", msgs, id)
	}
	poster.mu.Lock()
	files, threads := len(poster.files), slices.Clone(poster.threads)
	poster.mu.Unlock()
	if files != 1 || !slices.Equal(threads, []string{digestTS(1)}) {
		t.Errorf("reports shared %d in threads %v, want one in the message's", files, threads)
	}
	if ts, err := w.slack.StatusMessage(context.Background(), id); err != nil || ts != digestTS(1) {
		t.Errorf("recorded digest message %q, %v", ts, err)
	}
	if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringDone || f.Digest == nil || f.Digest.MessageTS != digestTS(1) {
		t.Fatalf("firing = %+v", f)
	}
}
