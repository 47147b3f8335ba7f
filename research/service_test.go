package research_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/storage"
)

// face is a Presenter that counts what it was asked to show and publish.
type face struct {
	mu        sync.Mutex
	published []research.Result
	found     *research.Upload // Published's answer
	ended     []research.RunState
	failed    []error
}

func (f *face) Open(context.Context, research.Run) research.View { return &faceView{f: f} }

type faceView struct{ f *face }

func (*faceView) Show(context.Context, research.Run)                {}
func (*faceView) Progress(research.Progress)                        {}
func (*faceView) Alive(context.Context)                             {}
func (*faceView) Turned(research.Outcome)                           {}
func (*faceView) Finished(context.Context, research.Result, string) {}
func (*faceView) Cancelled(context.Context, string)                 {}
func (*faceView) Halt()                                             {}
func (*faceView) Discard(context.Context, string) bool              { return true }

func (v *faceView) Paused(_ context.Context, in research.Interrupt) research.PendingInterrupt {
	return research.PendingInterrupt{ID: in.ID, Kind: in.Kind, Text: in.Text}
}

func (v *faceView) Failed(_ context.Context, cause error) {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	v.f.failed = append(v.f.failed, cause)
}

func (v *faceView) Ended(_ context.Context, s research.RunState) {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	v.f.ended = append(v.f.ended, s)
}

func (v *faceView) Published(context.Context, research.Result, research.Staging) (research.Upload, bool) {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	if v.f.found == nil {
		return research.Upload{}, false
	}
	return *v.f.found, true
}

func (v *faceView) Publish(_ context.Context, res research.Result, _ research.Staging) (research.Upload, error) {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	v.f.published = append(v.f.published, res)
	return research.Upload{FileID: "F1"}, nil
}

func openRuns(t *testing.T) research.Store {
	t.Helper()
	db, err := storage.Open(testCtx(t), storage.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db.Runs()
}

func newRunRecord(id, thread string) research.Run {
	now := time.Now()
	return research.Run{ID: id, ThreadID: thread, Requester: "U1", Question: "What does the EU AI Act require?",
		CreatedAt: now, UpdatedAt: now}
}

// TestServiceTakesOverAStoppedRun: a run stopped in the writer (its
// process shutting down) is handed back; another process's Service takes
// it over, continues from the checkpoint without planning again, and
// publishes the report once.
func TestServiceTakesOverAStoppedRun(t *testing.T) {
	w := newWorld(t)
	ctx := testCtx(t)
	store := openRuns(t)
	f := &face{}
	res1, _ := w.researcher()
	svc1 := research.NewService(store, res1, f, research.ServiceOptions{Owner: "p1", Lease: time.Second})
	if err := svc1.Create(ctx, newRunRecord("ask:r1", "t1"), 0); err != nil {
		t.Fatal(err)
	}
	w.stopInWriter(ctx, func(ctx context.Context) error {
		r, err := svc1.Work(ctx, "ask:r1")
		if err == nil && r.State == research.StateQueued {
			return context.Canceled // handed back
		}
		return errors.Join(err, errors.New("the stopped run was not handed back: "+string(r.State)))
	})
	plans := w.brain.Count("planner")
	if plans == 0 {
		t.Fatal("no plan before the stop")
	}

	res2, _ := w.researcher()
	svc2 := research.NewService(store, res2, f, research.ServiceOptions{Owner: "p2", Lease: time.Second})
	r, err := svc2.Work(ctx, "ask:r1")
	if err != nil || r.State != research.StateDone || r.Attempt != 2 {
		t.Fatalf("after the takeover: %+v, %v (failed: %v)", r, err, f.failed)
	}
	if n := w.brain.Count("planner"); n != plans {
		t.Errorf("planned %d times after the takeover, want none again", n-plans)
	}
	if len(f.published) != 1 {
		t.Errorf("published %d times, want once", len(f.published))
	}
	if u, err := store.Upload(ctx, "ask:r1"); err != nil || u.FileID != "F1" {
		t.Errorf("upload %+v, %v", u, err)
	}
	// Worked on again (its finish never recorded, say), the run is not
	// published twice: the upload is recorded.
	if _, err := svc2.Work(ctx, "ask:r1"); !errors.Is(err, research.ErrNotAcquired) {
		t.Errorf("a done run was acquired again: %v", err)
	}
}

// TestServiceFindsAPublishedReport: a report the face finds published (a
// process died between publishing and recording) is recorded, not
// published again.
func TestServiceFindsAPublishedReport(t *testing.T) {
	w := newWorld(t)
	ctx := testCtx(t)
	store := openRuns(t)
	f := &face{found: &research.Upload{FileID: "F0", MessageID: "1.5"}}
	res, _ := w.researcher()
	svc := research.NewService(store, res, f, research.ServiceOptions{Owner: "p1"})
	if err := svc.Create(ctx, newRunRecord("r2", "t2"), 0); err != nil {
		t.Fatal(err)
	}
	r, err := svc.Work(ctx, "r2")
	if err != nil || r.State != research.StateDone {
		t.Fatalf("%+v, %v", r, err)
	}
	if len(f.published) != 0 {
		t.Errorf("published %d times, want none (found)", len(f.published))
	}
	if u, err := store.Upload(ctx, "r2"); err != nil || u.FileID != "F0" || u.MessageID != "1.5" {
		t.Errorf("upload %+v, %v", u, err)
	}
	if len(f.ended) != 1 || f.ended[0] != research.StateDone {
		t.Errorf("ended %v", f.ended)
	}
}
