package research_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/research"
)

// blipStore fails Heartbeat while stalled, as a database that does not
// answer for a while would: the lease of a run lapses under the process
// that works on it.
type blipStore struct {
	research.Store
	stalled atomic.Bool
}

func (s *blipStore) Heartbeat(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	if s.stalled.Load() {
		return research.Run{}, errors.New("read tcp 127.0.0.1:5432: connection reset by peer")
	}
	return s.Store.Heartbeat(ctx, id, owner, now, lease)
}

// gatedResearcher counts its calls and holds Start until released.
type gatedResearcher struct {
	mu      sync.Mutex
	calls   int
	started chan struct{}
	release chan struct{}
}

func (g *gatedResearcher) call() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	return g.calls
}

func (g *gatedResearcher) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func (g *gatedResearcher) Start(ctx context.Context, _ research.StartRequest, _ research.ProgressSink) (research.Outcome, error) {
	if g.call() == 1 {
		close(g.started)
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return research.Outcome{}, ctx.Err()
	}
	return research.Outcome{Result: &research.Result{Title: "t", Report: "# Report"}}, nil
}

func (g *gatedResearcher) Continue(context.Context, string, research.ProgressSink) (research.Outcome, error) {
	g.call()
	return research.Outcome{Result: &research.Result{Title: "t", Report: "# Report, again"}}, nil
}

func (g *gatedResearcher) Resume(context.Context, string, string, research.Answer, research.ProgressSink) (research.Outcome, error) {
	g.call()
	return research.Outcome{}, errors.New("no interrupt was shown")
}

func (*gatedResearcher) Cancel(context.Context, string) error { return nil }

// TestServiceKeepsOneTurnOfARunWhoseLeaseLapsed: the store stalls while
// a run is researched, so its lease lapses and the process's own recovery
// acquires it again. The run is still researched once: the second turn
// waits for the first, which ends the run, and then has nothing to do.
func TestServiceKeepsOneTurnOfARunWhoseLeaseLapsed(t *testing.T) {
	ctx := testCtx(t)
	store := &blipStore{Store: openRuns(t)}
	store.stalled.Store(true)
	res := &gatedResearcher{started: make(chan struct{}), release: make(chan struct{})}
	f := &face{}
	svc := research.NewService(store, res, f, research.ServiceOptions{Owner: "p1", Kinds: []string{"ask"},
		Lease: 200 * time.Millisecond, HeartbeatEvery: 20 * time.Millisecond})
	t.Cleanup(func() { svc.Shutdown(10 * time.Second) })
	if err := svc.Create(ctx, newRunRecord("ask:r1", "t1"), 0); err != nil {
		t.Fatal(err)
	}
	svc.TryStart(ctx, "ask:r1")
	select {
	case <-res.started:
	case <-ctx.Done():
		t.Fatal("the run was not started")
	}
	// The heartbeats fail: once the lease lapsed, recovery takes the run
	// again (its second pickup).
	for {
		svc.Recover(ctx)
		r, err := store.Run(ctx, "ask:r1")
		if err != nil {
			t.Fatal(err)
		}
		if r.Attempt == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the lapsed lease was not taken again: %+v", r)
		case <-time.After(20 * time.Millisecond):
		}
	}
	store.stalled.Store(false)
	close(res.release)
	if !svc.Shutdown(10 * time.Second) {
		t.Fatal("the service did not stop")
	}
	r, err := store.Run(ctx, "ask:r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != research.StateDone {
		t.Errorf("run %s (%s), want done", r.State, r.Error)
	}
	if n := res.count(); n != 1 {
		t.Errorf("researcher called %d times, want once", n)
	}
	if len(f.published) != 1 {
		t.Errorf("published %d times, want once", len(f.published))
	}
}
