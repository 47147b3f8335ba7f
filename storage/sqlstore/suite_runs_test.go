// The conformance suites of the stores (files suite_*_test.go), run on
// both engines by the Test functions of engines_test.go: Runs checks
// research.Store, Schedules schedule.Store, Jobs jobs.Queue, and so on.
// Their open function must return an empty store for each subtest (a fresh
// database or schema); the suites run subtests sequentially, and some
// subtests call the store from many goroutines to check the
// compare-and-set rules.

package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/slackstate"
)

// Runs runs the conformance suite.
func Runs(t *testing.T, newStore func(t *testing.T) research.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, research.Store)
	}{
		{"CreateRunRules", testCreateRunRules},
		{"AcquireAndLease", testAcquireAndLease},
		{"AcquireConcurrent", testAcquireConcurrent},
		{"AcquireRuns", testAcquireRuns},
		{"HeldRuns", testHeldRuns},
		{"WaitDecideResume", testWaitDecide},
		{"DecideConcurrent", testDecideConcurrent},
		{"DecideCancel", testDecideCancel},
		{"RequestCancel", testRequestCancel},
		{"FinishAndRelease", testFinishAndRelease},
		{"Uploads", testUploads},
		{"StagedUploads", testStagedUploads},
		{"ListRuns", testListRuns},
		{"RoundTrip", testRoundTrip},
		{"RoundTripAll", testRoundTripAll},
		{"HostileText", testHostileText},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

// t0 is the suite's clock origin; millisecond precision is enough.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func key(ts string) slackstate.ThreadKey {
	return slackstate.ThreadKey{Team: "T1", Channel: "C1", ThreadTS: ts}
}

// testHeldRuns: HeldRuns counts the runs held under a live lease, by the
// owner and in all; queued, waiting, finished and expired runs do not count.
func testHeldRuns(t *testing.T, s research.Store) {
	c := ctx(t)
	for i, owner := range []string{"A", "A", "B", "", "", "expired", "done"} {
		id := fmt.Sprintf("h%d", i)
		create(t, s, newRun(id, fmt.Sprintf("%d.0", 10+i), fmt.Sprintf("U%d", i)))
		switch owner {
		case "": // queued
		case "expired":
			_, err := s.AcquireRun(c, id, "B", at(0), 5*time.Second)
			must(t, err)
		case "done":
			_, err := s.AcquireRun(c, id, "A", at(0), time.Minute)
			must(t, err)
			must(t, s.FinishRun(c, id, "A", research.StateDone, "", at(1)))
		default:
			_, err := s.AcquireRun(c, id, owner, at(0), time.Minute)
			must(t, err)
		}
	}
	for _, tc := range []struct {
		owner     string
		mine, all int
	}{{"A", 2, 3}, {"B", 1, 3}, {"C", 0, 3}} {
		mine, all, err := s.HeldRuns(c, tc.owner, at(10))
		must(t, err)
		if mine != tc.mine || all != tc.all {
			t.Errorf("HeldRuns(%s) = %d of %d, want %d of %d", tc.owner, mine, all, tc.mine, tc.all)
		}
	}
}

func newRun(id, thread, user string) research.Run {
	k := key(thread)
	return research.Run{ID: id, ThreadID: k.ThreadID(), Requester: user, Question: "q " + id,
		Options: research.RunOptions{ApproveDraft: true, Depth: "deep"}, CreatedAt: at(0), UpdatedAt: at(0)}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func create(t *testing.T, s research.Store, r research.Run) research.Run {
	t.Helper()
	must(t, s.CreateRun(ctx(t), r, 0))
	got, err := s.Run(ctx(t), r.ID)
	must(t, err)
	return got
}

func testCreateRunRules(t *testing.T, s research.Store) {
	c := ctx(t)
	r := create(t, s, newRun("r1", "1.0", "U1"))
	if r.State != research.StateQueued || r.Attempt != 0 || r.Owner != "" {
		t.Errorf("new run = %+v", r)
	}
	wantErr(t, s.CreateRun(c, newRun("r1", "9.0", "U9"), 0), research.ErrConflict)
	// The same run again (one message handled twice): a conflict, not a
	// busy thread, although its thread has an active run.
	wantErr(t, s.CreateRun(c, newRun("r1", "1.0", "U1"), 1), research.ErrConflict)
	wantErr(t, s.CreateRun(c, newRun("r2", "1.0", "U2"), 0), research.ErrThreadBusy)
	must(t, s.CreateRun(c, newRun("r3", "2.0", "U1"), 2))
	wantErr(t, s.CreateRun(c, newRun("r4", "3.0", "U1"), 2), research.ErrUserLimit)
	must(t, s.CreateRun(c, newRun("r5", "3.0", "U1"), 0)) // no limit
	// A finished run frees its thread and its user's slot.
	_, err := s.AcquireRun(c, "r1", "A", at(1), time.Minute)
	must(t, err)
	must(t, s.FinishRun(c, "r1", "A", research.StateDone, "", at(2)))
	must(t, s.CreateRun(c, newRun("r6", "1.0", "U2"), 1))
	_, err = s.Run(c, "nope")
	wantErr(t, err, research.ErrNotFound)
}

func testAcquireAndLease(t *testing.T, s research.Store) {
	c := ctx(t)
	create(t, s, newRun("r1", "1.0", "U1"))
	r, err := s.AcquireRun(c, "r1", "A", at(0), 10*time.Second)
	must(t, err)
	if r.State != research.StateRunning || r.Owner != "A" || r.Attempt != 1 || !r.LeaseUntil.Equal(at(10)) {
		t.Fatalf("acquired = %+v", r)
	}
	_, err = s.AcquireRun(c, "r1", "B", at(5), 10*time.Second)
	wantErr(t, err, research.ErrNotAcquired)
	r, err = s.Heartbeat(c, "r1", "A", at(8), 10*time.Second)
	must(t, err)
	if !r.LeaseUntil.Equal(at(18)) {
		t.Errorf("lease after heartbeat = %v", r.LeaseUntil)
	}
	_, err = s.Heartbeat(c, "r1", "B", at(8), 10*time.Second)
	wantErr(t, err, research.ErrLeaseLost)
	_, err = s.AcquireRun(c, "r1", "B", at(17), 10*time.Second)
	wantErr(t, err, research.ErrNotAcquired)
	// The lease expires: B takes over, A is fenced off.
	r, err = s.AcquireRun(c, "r1", "B", at(19), 10*time.Second)
	must(t, err)
	if r.Owner != "B" || r.Attempt != 2 {
		t.Fatalf("takeover = %+v", r)
	}
	_, err = s.Heartbeat(c, "r1", "A", at(20), 10*time.Second)
	wantErr(t, err, research.ErrLeaseLost)
	wantErr(t, s.FinishRun(c, "r1", "A", research.StateDone, "", at(20)), research.ErrLeaseLost)
	wantErr(t, s.WaitRun(c, "r1", "A", research.PendingInterrupt{ID: "i"}, at(20)), research.ErrLeaseLost)
	wantErr(t, s.ReleaseRun(c, "r1", "A", at(20)), research.ErrLeaseLost)
	_, err = s.AcquireRun(c, "nope", "A", at(0), time.Second)
	if !errors.Is(err, research.ErrNotFound) && !errors.Is(err, research.ErrNotAcquired) {
		t.Errorf("acquire unknown run: %v", err)
	}
}

func testAcquireConcurrent(t *testing.T, s research.Store) {
	c := ctx(t)
	create(t, s, newRun("r1", "1.0", "U1"))
	wins := race(12, func(i int) int {
		_, err := s.AcquireRun(c, "r1", fmt.Sprintf("P%d", i), at(0), time.Minute)
		return wonUnless(t, err, research.ErrNotAcquired)
	})
	if wins != 1 {
		t.Fatalf("%d owners, want 1", wins)
	}
}

func testAcquireRuns(t *testing.T, s research.Store) {
	c := ctx(t)
	for i := range 5 {
		r := newRun(fmt.Sprintf("r%d", i), fmt.Sprintf("%d.0", i), fmt.Sprintf("U%d", i))
		r.CreatedAt = at(float64(i))
		create(t, s, r)
	}
	// r0 is held with a live lease, r1 is waiting: neither is acquirable.
	_, err := s.AcquireRun(c, "r0", "A", at(10), time.Minute)
	must(t, err)
	_, err = s.AcquireRun(c, "r1", "A", at(10), time.Minute)
	must(t, err)
	must(t, s.WaitRun(c, "r1", "A", research.PendingInterrupt{ID: "i1", Kind: research.InterruptDraft}, at(10)))

	// Several processes race for the rest: each run goes to exactly one.
	got := claimRace(t, 4, 2, func(owner string, limit int) ([]research.Run, error) {
		return s.AcquireRuns(c, "", owner, at(11), time.Minute, limit)
	}, func(r research.Run) string { return r.ID }, func(owner string, r research.Run) bool {
		return r.State == research.StateRunning && r.Owner == owner && r.Attempt == 1
	})
	if len(got) != 3 || got["r0"] != "" || got["r1"] != "" {
		t.Fatalf("acquired %v, want r2, r3, r4", got)
	}
	// After r0's lease expires it is acquirable again.
	runs, err := s.AcquireRuns(c, "", "Z", at(200), time.Minute, 0)
	must(t, err)
	ids := map[string]bool{}
	for _, r := range runs {
		ids[r.ID] = true
	}
	if !ids["r0"] || ids["r1"] {
		t.Errorf("after expiry acquired %v", ids)
	}

	// Each kind of run is acquired by its own kind only: an `ask` run
	// ("ask:…") is no conversation's ("" kind), and the other way round.
	ask := newRun("ask:a1", "9.0", "U9")
	ask.ThreadID = "cli-a1"
	ask.CreatedAt = at(9)
	create(t, s, ask)
	runs, err = s.AcquireRuns(c, "", "Y", at(300), time.Minute, 0)
	must(t, err)
	for _, r := range runs {
		if r.ID == "ask:a1" {
			t.Errorf("the conversations' AcquireRuns took the ask run")
		}
	}
	runs, err = s.AcquireRuns(c, "ask", "Y", at(300), time.Minute, 0)
	must(t, err)
	if len(runs) != 1 || runs[0].ID != "ask:a1" {
		t.Errorf("AcquireRuns of kind ask: %v, want ask:a1 alone", runs)
	}
}

func testWaitDecide(t *testing.T, s research.Store) {
	c := ctx(t)
	create(t, s, newRun("r1", "1.0", "U1"))
	_, err := s.AcquireRun(c, "r1", "A", at(0), time.Minute)
	must(t, err)
	d := research.Decision{InterruptID: "i1", Action: research.ActionApprove, By: "U1", At: at(2)}
	_, err = s.Decide(c, "r1", d)
	wantErr(t, err, research.ErrNotWaiting)
	pi := research.PendingInterrupt{ID: "i1", Kind: research.InterruptDraft, Text: "draft", MessageID: "5.0"}
	must(t, s.WaitRun(c, "r1", "A", pi, at(1)))
	r, err := s.Run(c, "r1")
	must(t, err)
	if r.State != research.StateWaiting || r.Owner != "" || r.Interrupt == nil || *r.Interrupt != pi || r.Decision != nil {
		t.Fatalf("waiting run = %+v", r)
	}
	if _, err := s.AcquireRun(c, "r1", "B", at(100), time.Minute); !errors.Is(err, research.ErrNotAcquired) {
		t.Fatalf("a waiting run was acquired: %v", err)
	}
	_, err = s.Decide(c, "r1", research.Decision{InterruptID: "other", Action: research.ActionApprove, By: "U1", At: at(2)})
	wantErr(t, err, research.ErrNotWaiting)
	d.Text = "ok"
	r, err = s.Decide(c, "r1", d)
	must(t, err)
	if r.State != research.StateQueued || r.Decision == nil || *r.Decision != d || r.Attempt != 0 {
		t.Fatalf("decided run = %+v", r)
	}
	r2, err := s.Decide(c, "r1", research.Decision{InterruptID: "i1", Action: research.ActionRevise, By: "U2", At: at(3)})
	wantErr(t, err, research.ErrAlreadyDecided)
	if r2.Decision == nil || r2.Decision.By != "U1" {
		t.Errorf("second decision sees %+v", r2.Decision)
	}
	r, err = s.AcquireRun(c, "r1", "B", at(4), time.Minute)
	must(t, err)
	if r.Attempt != 1 || r.Decision == nil || r.Interrupt == nil || r.Interrupt.ID != "i1" {
		t.Errorf("resumed run = %+v", r)
	}
	// A new interrupt clears the old decision.
	must(t, s.WaitRun(c, "r1", "B", research.PendingInterrupt{ID: "i2", Kind: research.InterruptPlan}, at(5)))
	r, _ = s.Run(c, "r1")
	if r.Decision != nil || r.Interrupt.ID != "i2" {
		t.Errorf("after second wait = %+v", r)
	}
}

// waitingRun creates run r1, which A acquires at 0 and pauses at 1 on
// interrupt i1 of kind.
func waitingRun(t *testing.T, s research.Store, kind research.InterruptKind) {
	t.Helper()
	c := ctx(t)
	create(t, s, newRun("r1", "1.0", "U1"))
	_, err := s.AcquireRun(c, "r1", "A", at(0), time.Minute)
	must(t, err)
	must(t, s.WaitRun(c, "r1", "A", research.PendingInterrupt{ID: "i1", Kind: kind}, at(1)))
}

func testDecideConcurrent(t *testing.T, s research.Store) {
	c := ctx(t)
	waitingRun(t, s, research.InterruptDraft)
	wins := race(12, func(i int) int {
		_, err := s.Decide(c, "r1", research.Decision{InterruptID: "i1", Action: research.ActionApprove, By: fmt.Sprintf("U%d", i), At: at(2)})
		return wonUnless(t, err, research.ErrAlreadyDecided, research.ErrNotWaiting)
	})
	if wins != 1 {
		t.Fatalf("%d decisions applied, want 1", wins)
	}
}

func testDecideCancel(t *testing.T, s research.Store) {
	c := ctx(t)
	waitingRun(t, s, research.InterruptPlan)
	r, err := s.Decide(c, "r1", research.Decision{InterruptID: "i1", Action: research.ActionCancel, By: "U1", At: at(2)})
	must(t, err)
	if r.State != research.StateCancelled || r.FinishedAt.IsZero() {
		t.Fatalf("cancel decision = %+v", r)
	}
	runs, err := s.AcquireRuns(c, "", "B", at(3), time.Minute, 0)
	must(t, err)
	if len(runs) != 0 {
		t.Errorf("a cancelled run was acquired")
	}
}

func testRequestCancel(t *testing.T, s research.Store) {
	c := ctx(t)
	// Queued: cancelled at once.
	create(t, s, newRun("q", "1.0", "U1"))
	r, now, err := s.RequestCancel(c, "q", "U1", at(1))
	must(t, err)
	if !now || r.State != research.StateCancelled || r.CancelRequestedBy != "U1" {
		t.Fatalf("cancel queued = %+v %v", r, now)
	}
	_, _, err = s.RequestCancel(c, "q", "U1", at(2))
	wantErr(t, err, research.ErrFinished)

	// Running: flagged; the owner sees it in Heartbeat and finishes it.
	create(t, s, newRun("r", "2.0", "U1"))
	_, err = s.AcquireRun(c, "r", "A", at(0), time.Minute)
	must(t, err)
	r, now, err = s.RequestCancel(c, "r", "U2", at(1))
	must(t, err)
	if now || r.State != research.StateRunning || r.CancelRequestedBy != "U2" {
		t.Fatalf("cancel running = %+v %v", r, now)
	}
	hb, err := s.Heartbeat(c, "r", "A", at(2), time.Minute)
	must(t, err)
	if hb.CancelRequestedBy != "U2" {
		t.Errorf("heartbeat does not carry the cancel: %+v", hb)
	}
	must(t, s.FinishRun(c, "r", "A", research.StateCancelled, "", at(3)))

	// Waiting: cancelled at once; a later decision is refused.
	create(t, s, newRun("w", "3.0", "U1"))
	_, err = s.AcquireRun(c, "w", "A", at(0), time.Minute)
	must(t, err)
	must(t, s.WaitRun(c, "w", "A", research.PendingInterrupt{ID: "i"}, at(1)))
	_, now, err = s.RequestCancel(c, "w", "U1", at(2))
	must(t, err)
	if !now {
		t.Error("waiting run not cancelled at once")
	}
	_, err = s.Decide(c, "w", research.Decision{InterruptID: "i", Action: research.ActionApprove, By: "U1", At: at(3)})
	wantErr(t, err, research.ErrNotWaiting)
}

func testFinishAndRelease(t *testing.T, s research.Store) {
	c := ctx(t)
	create(t, s, newRun("r1", "1.0", "U1"))
	_, err := s.AcquireRun(c, "r1", "A", at(0), time.Minute)
	must(t, err)
	must(t, s.ReleaseRun(c, "r1", "A", at(1)))
	r, _ := s.Run(c, "r1")
	if r.State != research.StateQueued || r.Owner != "" {
		t.Fatalf("released = %+v", r)
	}
	r, err = s.AcquireRun(c, "r1", "B", at(2), time.Minute) // at once, no lease expiry needed
	must(t, err)
	if r.Attempt != 2 {
		t.Errorf("attempt after release = %d, want 2", r.Attempt)
	}
	// Clean hand-backs (rolling restarts) do not pile up toward the bound
	// on pickups: each takes back the pickup it ends.
	for i := range 4 {
		must(t, s.ReleaseRun(c, "r1", "B", at(2)))
		r, err = s.AcquireRun(c, "r1", "B", at(2), time.Minute)
		must(t, err)
		if r.Attempt != 2 {
			t.Fatalf("attempt after %d more releases = %d, want 2", i+1, r.Attempt)
		}
	}
	if err := s.FinishRun(c, "r1", "B", research.StateRunning, "", at(3)); err == nil {
		t.Error("FinishRun accepted an active state")
	}
	must(t, s.FinishRun(c, "r1", "B", research.StateFailed, "boom", at(3)))
	r, _ = s.Run(c, "r1")
	if r.State != research.StateFailed || r.Error != "boom" || !r.FinishedAt.Equal(at(3)) || r.Owner != "" {
		t.Errorf("failed run = %+v", r)
	}
	wantErr(t, s.FinishRun(c, "r1", "B", research.StateDone, "", at(4)), research.ErrLeaseLost)
}

func testUploads(t *testing.T, s research.Store) {
	c := ctx(t)
	_, err := s.Upload(c, "r1")
	wantErr(t, err, research.ErrNotFound)
	u := research.Upload{RunID: "r1", FileID: "F1", MessageID: "1.5", At: at(1)}
	wins := race(8, func(i int) int {
		v := u
		if i > 0 {
			v.FileID = fmt.Sprintf("F%d", i+1)
		}
		return won(t)(s.RecordUpload(c, v))
	})
	if wins != 1 {
		t.Fatalf("%d uploads recorded, want 1", wins)
	}
	got, err := s.Upload(c, "r1")
	must(t, err)
	if got.RunID != "r1" || got.FileID == "" {
		t.Errorf("upload = %+v", got)
	}
}

// testStagedUploads: staged report files are kept per run, oldest first,
// once each, until unstaged; unstaging an unknown file is no error.
func testStagedUploads(t *testing.T, s research.Store) {
	c := ctx(t)
	if got, err := s.StagedUploads(c, "r1"); err != nil || len(got) != 0 {
		t.Fatalf("staged of a run with none = %v, %v", got, err)
	}
	must(t, s.StageUpload(c, "r1", "F2", at(1)))
	must(t, s.StageUpload(c, "r1", "F1", at(2)))
	must(t, s.StageUpload(c, "r1", "F2", at(3))) // again: no change
	must(t, s.StageUpload(c, "r2", "F9", at(1)))
	got, err := s.StagedUploads(c, "r1")
	must(t, err)
	if fmt.Sprint(got) != "[F2 F1]" {
		t.Fatalf("staged = %v, want [F2 F1]", got)
	}
	must(t, s.UnstageUpload(c, "r1", "F2"))
	must(t, s.UnstageUpload(c, "r1", "F404"))
	if got, err := s.StagedUploads(c, "r1"); err != nil || fmt.Sprint(got) != "[F1]" {
		t.Fatalf("staged after unstaging F2 = %v, %v", got, err)
	}
	if got, err := s.StagedUploads(c, "r2"); err != nil || fmt.Sprint(got) != "[F9]" {
		t.Fatalf("another run's staged = %v, %v", got, err)
	}
}

func testListRuns(t *testing.T, s research.Store) {
	c := ctx(t)
	for i, u := range []string{"U1", "U2", "U1", "U1"} {
		r := newRun(fmt.Sprintf("r%d", i), fmt.Sprintf("%d.0", i), u)
		r.CreatedAt = at(float64(i))
		create(t, s, r)
	}
	_, err := s.AcquireRun(c, "r2", "A", at(5), time.Minute)
	must(t, err)
	must(t, s.FinishRun(c, "r2", "A", research.StateDone, "", at(6)))
	ids := func(rs []research.Run) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	all, err := s.ListRuns(c, research.RunFilter{Requester: "U1"})
	must(t, err)
	if got := fmt.Sprint(ids(all)); got != "[r3 r2 r0]" {
		t.Errorf("U1's runs = %s, want newest first [r3 r2 r0]", got)
	}
	lim, _ := s.ListRuns(c, research.RunFilter{Requester: "U1", Limit: 2})
	if got := fmt.Sprint(ids(lim)); got != "[r3 r2]" {
		t.Errorf("limited = %s", got)
	}
	active, _ := s.ListRuns(c, research.RunFilter{States: []research.RunState{research.StateQueued, research.StateRunning, research.StateWaiting}})
	if got := fmt.Sprint(ids(active)); got != "[r3 r1 r0]" {
		t.Errorf("active = %s", got)
	}
	latest, err := s.LatestRun(c, key("1.0").ThreadID())
	must(t, err)
	if latest.ID != "r1" {
		t.Errorf("latest = %s", latest.ID)
	}
	_, err = s.LatestRun(c, "nope")
	wantErr(t, err, research.ErrNotFound)
}

// testRoundTrip checks that every field survives storage.
func testRoundTrip(t *testing.T, s research.Store) {
	c := ctx(t)
	r := newRun("r1", "1.0", "U1")
	r.Question = "2026年の国内生成AI規制 <!here> & \"quotes\""
	r.FollowUp = true
	r.Locale = "ja-JP"
	r.Options = research.RunOptions{ApprovePlan: true, ApproveDraft: true, Depth: "deep", Language: "ja"}
	r.CreatedAt = at(0.123)
	r.UpdatedAt = at(0.123)
	got := create(t, s, r)
	if got.Question != r.Question || !got.FollowUp || got.Locale != "ja-JP" || got.Options != r.Options ||
		got.ThreadID != r.ThreadID || got.Requester != "U1" || !got.CreatedAt.Equal(r.CreatedAt) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
	_, err := s.AcquireRun(c, "r1", "A", at(1), time.Minute)
	must(t, err)
	pi := research.PendingInterrupt{ID: "i1", Kind: research.InterruptQuestion, Text: "which period?", MessageID: "2.0"}
	must(t, s.WaitRun(c, "r1", "A", pi, at(2)))
	d := research.Decision{InterruptID: "i1", Action: research.ActionAnswer, Text: "2025–2026", By: "U1", At: at(3.5)}
	_, err = s.Decide(c, "r1", d)
	must(t, err)
	got, _ = s.Run(c, "r1")
	if got.Interrupt == nil || *got.Interrupt != pi || got.Decision == nil || got.Decision.Text != d.Text ||
		!got.Decision.At.Equal(d.At) || got.Decision.Action != d.Action || got.Decision.By != "U1" || got.Locale != "ja-JP" {
		t.Errorf("interrupt/decision round trip: %+v %+v", got.Interrupt, got.Decision)
	}
}

// claimRace has procs processes, P0 and on, each claim up to limit items at
// once, and returns which process took each key. The test fails when a key is
// taken twice, a claim returns more than limit, or ok rejects a taken item.
func claimRace[T any](t *testing.T, procs, limit int, claim func(owner string, limit int) ([]T, error), key func(T) string, ok func(owner string, v T) bool) map[string]string {
	t.Helper()
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			owner := fmt.Sprintf("P%d", p)
			vs, err := claim(owner, limit)
			if err != nil {
				t.Error(err)
				return
			}
			if len(vs) > limit {
				t.Errorf("limit %d, got %d", limit, len(vs))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range vs {
				k := key(v)
				if prev, taken := got[k]; taken {
					t.Errorf("%s taken by %s and %s", k, prev, owner)
				}
				got[k] = owner
				if !ok(owner, v) {
					t.Errorf("%s taken by %s as %+v", k, owner, v)
				}
			}
		})
	}
	wg.Wait()
	return got
}
