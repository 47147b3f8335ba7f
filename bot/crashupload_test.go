package bot_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

// errKilled is what a killed process's store calls "return": nothing they
// would have written is written.
var errKilled = errors.New("test: the process was killed")

// killedAt wraps a store for a process that is killed at one step of the
// report upload: from that step on its writes are lost (its heartbeat no
// longer renews the lease, its outcome is never recorded), so the run is
// left to the next process as a crash would leave it. The step blocks
// until the test ends, as a dead process never returns from it.
type killedAt struct {
	research.Store
	step   string // "record", "done" (recording the run as done), or "" (killed by killingTransport)
	killed atomic.Bool
	dead   chan struct{} // closed when the step is reached
	once   sync.Once
	stop   chan struct{}
}

func newKilledAt(t *testing.T, s research.Store, step string) *killedAt {
	k := &killedAt{Store: s, step: step, dead: make(chan struct{}), stop: make(chan struct{})}
	t.Cleanup(func() { close(k.stop) })
	return k
}

func (k *killedAt) die() error {
	k.killed.Store(true)
	k.once.Do(func() { close(k.dead) })
	<-k.stop
	return errKilled
}

func (k *killedAt) RecordUpload(ctx context.Context, u research.Upload) (bool, error) {
	if k.step == "record" {
		return false, k.die()
	}
	return k.Store.RecordUpload(ctx, u)
}

func (k *killedAt) Heartbeat(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	if k.killed.Load() {
		return research.Run{}, errKilled
	}
	return k.Store.Heartbeat(ctx, id, owner, now, lease)
}

func (k *killedAt) FinishRun(ctx context.Context, id, owner string, state research.RunState, errText string, now time.Time) error {
	if k.step == "done" && state == research.StateDone {
		return k.die()
	}
	if k.killed.Load() {
		return errKilled
	}
	return k.Store.FinishRun(ctx, id, owner, state, errText, now)
}

func (k *killedAt) ReleaseRun(ctx context.Context, id, owner string, now time.Time) error {
	if k.killed.Load() {
		return errKilled
	}
	return k.Store.ReleaseRun(ctx, id, owner, now)
}

// fillThread adds n messages of people to a thread (no events).
func fillThread(h *harness, channel, threadTS string, n int) {
	for i := range n {
		h.fake.AddMessage(slackfake.Message{Channel: channel, ThreadTS: threadTS, User: "U2", Text: fmt.Sprintf("chatter %d", i)})
	}
}

// TestReportPostedOnceAfterCrashInLongThread: a process killed after its
// report was shared but before the upload was recorded leaves the report
// in a thread of 250 messages, beyond the first page of
// conversations.replies; the next process finds it there (following the
// cursor) and records it instead of posting it a second time.
func TestReportPostedOnceAfterCrashInLongThread(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	k := newKilledAt(t, h.store, "record")
	release := h.holdRuns()
	a := h.startOn(k, noDraftApproval, func(o *bot.Options) { o.ShutdownTimeout = 200 * time.Millisecond })
	sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
	h.waitState(ctx, "C1", sent.TS, research.StateRunning)
	fillThread(h, "C1", sent.TS, 250)
	release()
	select {
	case <-k.dead:
	case <-ctx.Done():
		t.Fatal("the report was never recorded")
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(h.files("C1", sent.TS)); n != 1 {
		t.Fatalf("%d report files after the crash, want 1", n)
	}

	h.start(noDraftApproval) // the next process
	r := h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if n := len(h.files("C1", sent.TS)); n != 1 {
		t.Errorf("%d report files in the thread after the restart, want 1", n)
	}
	if n := len(h.fake.Files()); n != 1 {
		t.Errorf("%d files in the workspace, want 1", n)
	}
	if u, err := h.store.Upload(ctx, r.ID); err != nil || u.FileID != h.files("C1", sent.TS)[0].ID {
		t.Errorf("recorded upload = %+v, %v; want the file posted before the crash", u, err)
	}
}

// killingTransport is the Web API client of a process that is killed when
// it calls method: the call never reaches Slack, and from then on k's
// writes are lost.
type killingTransport struct {
	k      *killedAt
	method string
}

func (tr killingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/"+tr.method) {
		return nil, tr.k.die()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestCrashBetweenUploadAndShareLeavesNoFile: a process killed after it
// uploaded the report's bytes but before files.completeUploadExternal
// leaves an unshared file in the workspace; the next process deletes it
// (files.delete) and posts the report once, so no file is left orphaned.
func TestCrashBetweenUploadAndShareLeavesNoFile(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	k := newKilledAt(t, h.store, "")
	a := h.startOn(k, noDraftApproval, func(o *bot.Options) {
		o.ShutdownTimeout = 200 * time.Millisecond
		o.HTTPClient = &http.Client{Transport: killingTransport{k: k, method: "files.completeUploadExternal"}}
	})
	sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
	select {
	case <-k.dead:
	case <-ctx.Done():
		t.Fatal("the report was never shared")
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if o := h.fake.Orphans(); len(o) != 1 {
		t.Fatalf("%d unshared files after the crash, want the 1 staged", len(o))
	}

	h.start(noDraftApproval) // the next process
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if n := len(h.files("C1", sent.TS)); n != 1 {
		t.Errorf("%d report files in the thread, want 1", n)
	}
	if o := h.fake.Orphans(); len(o) != 0 {
		t.Errorf("unshared files left after recovery: %+v", o)
	}
	if n := len(h.fake.Files()); n != 1 {
		t.Errorf("%d files in the workspace, want 1", n)
	}
}

// TestOutcomeShownOnceAfterCrashBeforeDone: a process killed after it
// stopped the run's stream with the outcome but before it recorded the run
// as done leaves the next process only the final picture to show; it shows
// it on the stopped stream's message instead of a fresh stream, so the
// thread says "done" once (chaos TestKillSQLite once found two).
func TestOutcomeShownOnceAfterCrashBeforeDone(t *testing.T) {
	h := streaming(t)
	ctx := testCtx(t)
	k := newKilledAt(t, h.store, "done")
	a := h.startOn(k, noDraftApproval, func(o *bot.Options) { o.ShutdownTimeout = 200 * time.Millisecond })
	sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
	select {
	case <-k.dead:
	case <-ctx.Done():
		t.Fatal("the run was never recorded as done")
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	before := threadStreams(h, "C1", sent.TS)
	if len(before) != 1 || before[0].Open || len(before[0].FinalBlocks) == 0 {
		t.Fatalf("streams before the restart = %+v; want one, stopped with the outcome", before)
	}

	h.start(noDraftApproval) // the next process
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if sts := threadStreams(h, "C1", sent.TS); len(sts) != 1 {
		t.Errorf("%d streams in the thread after the restart, want the 1 that shows the outcome", len(sts))
	}
	if n := openStreams(h); n != 0 {
		t.Errorf("%d streams left open", n)
	}
	if n := len(h.files("C1", sent.TS)); n != 1 {
		t.Errorf("%d report files in the thread, want 1", n)
	}
}
