package bot_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlstore"
)

// scriptedResearcher asks for plan approval with planText, then finishes
// with result. It counts its calls.
type scriptedResearcher struct {
	planText string
	result   research.Result

	mu    sync.Mutex
	calls []string
}

func (s *scriptedResearcher) count(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c == kind {
			n++
		}
	}
	return n
}

func (s *scriptedResearcher) Start(_ context.Context, req research.StartRequest, _ research.ProgressSink) (research.Outcome, error) {
	s.mu.Lock()
	s.calls = append(s.calls, "start")
	s.mu.Unlock()
	return research.Outcome{Interrupt: &research.Interrupt{ID: "plan-1", Kind: research.InterruptPlan, Text: s.planText}}, nil
}

func (s *scriptedResearcher) Resume(_ context.Context, _, interruptID string, ans research.Answer, _ research.ProgressSink) (research.Outcome, error) {
	s.mu.Lock()
	s.calls = append(s.calls, "resume")
	s.mu.Unlock()
	if interruptID != "plan-1" || ans.Action != research.ActionApprove {
		return research.Outcome{}, fmt.Errorf("unexpected resume %s %s", interruptID, ans.Action)
	}
	r := s.result
	return research.Outcome{Result: &r}, nil
}

func (s *scriptedResearcher) Continue(context.Context, string, research.ProgressSink) (research.Outcome, error) {
	s.mu.Lock()
	s.calls = append(s.calls, "continue")
	s.mu.Unlock()
	return research.Outcome{}, research.ErrNothingToContinue
}

func (s *scriptedResearcher) Cancel(context.Context, string) error { return nil }

// runOn runs a bot with res on store and records against fake; its runs
// ask for the plan's approval.
func runOn(t *testing.T, fake *slackfake.Server, store research.Store, records slackstate.Store, res bot.Researcher, edit ...func(*bot.Options)) *harness {
	t.Helper()
	h := &harness{t: t, fake: fake}
	approvePlan := func(o *bot.Options) { o.RunOptions = research.RunOptions{ApprovePlan: true} }
	h.runOn(res, store, records, append([]func(*bot.Options){approvePlan}, edit...)...)
	return h
}

func waitRun(ctx context.Context, t *testing.T, store research.Store, threadID string, cond func(research.Run) bool) research.Run {
	t.Helper()
	var r research.Run
	for {
		var err error
		r, err = store.LatestRun(ctx, threadID)
		if err == nil && cond(r) {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for run of %s: %v (last %+v)", threadID, ctx.Err(), r)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func openPostgres(t *testing.T) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Options{URL: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestNULTextCompletesOnPostgres: a question, a plan and a report with
// U+0000 (which Postgres refuses in text columns) go through to Done on
// the Postgres store, researched once and the plan shown once.
func TestNULTextCompletesOnPostgres(t *testing.T) {
	pg := openPostgres(t)
	store, records := postgres.NewRuns(pg), postgres.NewSlack(pg)
	fake := slackfake.New(slackfake.WithPingInterval(200 * time.Millisecond))
	t.Cleanup(fake.Close)
	res := &scriptedResearcher{
		planText: "1. search\x00 the web\n2. read \xff pages",
		result:   research.Result{Title: "NUL\x00 report", Summary: "a summary\x00 with NUL", Report: "# Report\x00\nbody \x00 text", Sources: 1},
	}
	h := runOn(t, fake, store, records, res)
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "question with a NUL\x00 inside", "")
	key := slackstate.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}
	r := waitRun(ctx, t, store, key.ThreadID(), func(r research.Run) bool { return r.State == research.StateWaiting })
	if strings.Contains(r.Question, "\x00") || !strings.Contains(r.Question, "question with a NUL") || r.Interrupt == nil || strings.Contains(r.Interrupt.Text, "\x00") {
		t.Fatalf("stored run = %+v", r)
	}
	var plan slackfake.Message
	var val string
	fake.Wait(ctx, func() bool {
		for _, m := range fake.Thread("C1", sent.TS) {
			if v := m.ButtonValue("dr_approve"); v != "" {
				plan, val = m, v
				return true
			}
		}
		return false
	})
	if _, err := fake.SendBlockAction(ctx, slackfake.BlockAction{User: "U1", Channel: "C1", MessageTS: plan.TS, ActionID: "dr_approve", Value: val}); err != nil {
		t.Fatal(err)
	}
	done := waitRun(ctx, t, store, key.ThreadID(), func(r research.Run) bool { return !r.State.Active() })
	if done.State != research.StateDone {
		t.Fatalf("run ended %s: %s", done.State, done.Error)
	}
	if n := res.count("start"); n != 1 {
		t.Errorf("researched %d times", n)
	}
	plans := 0
	for _, m := range fake.Thread("C1", sent.TS) {
		if strings.Contains(string(m.Blocks)+strings.Join(editTexts(m), ""), `"dr_approve"`) {
			plans++
		}
	}
	if plans != 1 {
		t.Errorf("the plan was posted %d times", plans)
	}
}

// TestPermanentStoreErrorFailsTheRunOnce: a store that refuses to record
// the run as waiting (here a real Postgres constraint) fails the run once,
// with a plain message, instead of leaving it running to be picked up,
// researched and shown again after every lease.
func TestPermanentStoreErrorFailsTheRunOnce(t *testing.T) {
	pg := openPostgres(t)
	if _, err := pg.Pool().Exec(context.Background(), `ALTER TABLE bot_runs ADD CONSTRAINT no_poison CHECK (detail NOT LIKE '%POISON%')`); err != nil {
		t.Fatal(err)
	}
	store, records := postgres.NewRuns(pg), postgres.NewSlack(pg)
	fake := slackfake.New(slackfake.WithPingInterval(200 * time.Millisecond))
	t.Cleanup(fake.Close)
	res := &scriptedResearcher{planText: "a POISON plan"}
	h := runOn(t, fake, store, records, res, func(o *bot.Options) { o.Lease = 300 * time.Millisecond; o.HeartbeatEvery = 100 * time.Millisecond })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "poisoned", "")
	key := slackstate.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}
	r := waitRun(ctx, t, store, key.ThreadID(), func(r research.Run) bool { return !r.State.Active() })
	if r.State != research.StateFailed || !strings.Contains(r.Error, "no_poison") {
		t.Fatalf("run = %s %q", r.State, r.Error)
	}
	// Several leases later nothing has run again.
	time.Sleep(1500 * time.Millisecond)
	if n := res.count("start") + res.count("continue"); n != 1 {
		t.Errorf("researcher called %d times, want 1", n)
	}
	var status string
	for _, m := range fake.Thread("C1", sent.TS) {
		if strings.Contains(string(m.Blocks), "Something went wrong") {
			status = string(m.Blocks)
		}
	}
	if status == "" || strings.Contains(status, "no_poison") || strings.Contains(status, "SQLSTATE") || !strings.Contains(status, r.ID) {
		t.Errorf("failed status = %.400s", status)
	}
}

// queuedRun stores a queued run of U1's with id in a thread of C1, with the
// thread's mapping and the run's place, as a process that created it and
// died would leave it; it returns the thread's key.
func queuedRun(ctx context.Context, t *testing.T, fake *slackfake.Server, records slackstate.Store, id string) slackstate.ThreadKey {
	t.Helper()
	key := slackstate.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: "1700000000.000100"}
	if _, err := records.PutThread(ctx, slackstate.Thread{Key: key, ThreadID: key.ThreadID(), Requester: "U1", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := records.CreateRun(ctx, research.Run{ID: id, ThreadID: key.ThreadID(), Requester: "U1", Question: "q", CreatedAt: now, UpdatedAt: now},
		slackstate.Place{RunID: id, Key: key}, 0); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestRunAttemptsAreBounded: a run picked up over and over without
// finishing (its processes die) is failed once it has been picked up more
// than five times, without researching again.
func TestRunAttemptsAreBounded(t *testing.T) {
	fake := slackfake.New(slackfake.WithPingInterval(200 * time.Millisecond))
	t.Cleanup(fake.Close)
	store, records := stores(t)
	ctx := testCtx(t)
	key := queuedRun(ctx, t, fake, records, "rwedged")
	now := time.Now()
	// Five processes took it and died (their leases ran out).
	for i := range 5 {
		if _, err := store.AcquireRun(ctx, "rwedged", fmt.Sprintf("dead-%d", i), now.Add(-time.Hour+time.Duration(i)*time.Minute), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	res := &scriptedResearcher{planText: "plan"}
	runOn(t, fake, store, records, res)
	r := waitRun(ctx, t, store, key.ThreadID(), func(r research.Run) bool { return !r.State.Active() })
	if r.State != research.StateFailed || r.Attempt != 6 || !strings.Contains(r.Error, "picked up") {
		t.Fatalf("run = %s attempt %d %q", r.State, r.Attempt, r.Error)
	}
	if n := len(res.calls); n != 0 {
		t.Errorf("researcher called %d times", n)
	}
}

// flakyWaitStore fails WaitRun a number of times, as a database blip would.
type flakyWaitStore struct {
	*sqlstore.Runs
	mu    sync.Mutex
	fails int
}

func (s *flakyWaitStore) WaitRun(ctx context.Context, id, owner string, intr research.PendingInterrupt, now time.Time) error {
	s.mu.Lock()
	fail := s.fails > 0
	s.fails--
	s.mu.Unlock()
	if fail {
		return errors.New("read tcp 127.0.0.1:5432: connection reset by peer")
	}
	return s.Runs.WaitRun(ctx, id, owner, intr, now)
}

// TestStoreBlipWhileRecordingWaitingIsRetried: one failed write of the
// waiting state (a blip) is tried again; the run waits for approval
// instead of failing.
func TestStoreBlipWhileRecordingWaitingIsRetried(t *testing.T) {
	fake := slackfake.New(slackfake.WithPingInterval(200 * time.Millisecond))
	t.Cleanup(fake.Close)
	runs, records := stores(t)
	store := &flakyWaitStore{Runs: runs, fails: 1}
	res := &scriptedResearcher{planText: "a plan"}
	h := runOn(t, fake, store, records, res)
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "blip", "")
	key := slackstate.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}
	r := waitRun(ctx, t, store, key.ThreadID(), func(r research.Run) bool { return r.State != research.StateQueued && r.State != research.StateRunning })
	if r.State != research.StateWaiting || res.count("start") != 1 {
		t.Fatalf("run = %s (%q), starts %d", r.State, r.Error, res.count("start"))
	}
}

// flakyPlaces is a Slack store whose Place fails for the first fails reads.
type flakyPlaces struct {
	slackstate.Store
	fails atomic.Int32
}

func (f *flakyPlaces) Place(ctx context.Context, runID string) (slackstate.Place, error) {
	if f.fails.Add(-1) >= 0 {
		return slackstate.Place{}, errors.New("database is locked")
	}
	return f.Store.Place(ctx, runID)
}

// answeringResearcher finishes every run at once with its result.
type answeringResearcher struct{ scriptedResearcher }

func (a *answeringResearcher) Start(context.Context, research.StartRequest, research.ProgressSink) (research.Outcome, error) {
	r := a.result
	return research.Outcome{Result: &r}, nil
}

// TestPlaceReadAgainBeforeThePost: a run taken over while its place in
// Slack cannot be read (a store error) researches all the same, and its
// report goes to its thread once the place can be read: the place is read
// again before the post, which is tried again, instead of the report being
// posted nowhere and the run failed.
func TestPlaceReadAgainBeforeThePost(t *testing.T) {
	fake := slackfake.New(slackfake.WithPingInterval(200 * time.Millisecond))
	t.Cleanup(fake.Close)
	store, records := stores(t)
	ctx := testCtx(t)
	key := queuedRun(ctx, t, fake, records, "rplace")
	flaky := &flakyPlaces{Store: records}
	flaky.fails.Store(2) // Open's read and the first post's
	res := &answeringResearcher{scriptedResearcher{result: research.Result{Title: "Findings", Summary: "The answer.", Report: "# Findings\n\nThe answer."}}}
	h := &harness{t: t, fake: fake}
	h.runOn(res, store, flaky)
	r := waitRun(ctx, t, store, key.ThreadID(), func(r research.Run) bool { return !r.State.Active() })
	if r.State != research.StateDone {
		t.Fatalf("run = %s %q", r.State, r.Error)
	}
	var shared []slackfake.File
	for _, f := range fake.Files() {
		if f.Completed {
			shared = append(shared, f)
		}
	}
	if len(shared) != 1 || !slices.Contains(shared[0].Channels, "C1") || shared[0].ThreadTS != key.ThreadTS {
		t.Fatalf("report files shared: %+v", shared)
	}
}
