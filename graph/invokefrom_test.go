package graph_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"deepresearch/graph"
	"deepresearch/graph/memsaver"
)

// loadCounter is a Saver that counts Loads.
type loadCounter struct {
	graph.Saver
	loads atomic.Int64
}

func (c *loadCounter) Load(ctx context.Context, thread, ns string, id int64) (*graph.Chain, error) {
	c.loads.Add(1)
	return c.Saver.Load(ctx, thread, ns, id)
}

// A new turn started from the head the caller just read loads the thread
// once in all, and ends where Invoke would.
func TestInvokeFromLoadsOnce(t *testing.T) {
	ctx := context.Background()
	saver := &loadCounter{Saver: memsaver.New(memsaver.Options{})}
	cs := newChainSchema()
	g := buildChain(t, 3, graph.Options{Saver: saver}, nil)
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "t", Input: []graph.Write{cs.count.Set(0)}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		cfg       graph.Config
		wantLoads int64
	}{
		{"new turn", graph.Config{ThreadID: "t", Input: []graph.Write{cs.count.Set(100)}}, 1},
		{"another thread's snapshot", graph.Config{ThreadID: "other", Input: []graph.Write{cs.count.Set(100)}}, 2},
		{"fork", graph.Config{ThreadID: "t", CheckpointID: 1, Input: []graph.Write{cs.count.Set(100)}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saver.loads.Store(0)
			snap, err := g.State(ctx, "t", 0)
			if err != nil {
				t.Fatal(err)
			}
			res, err := g.InvokeFrom(ctx, snap, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := saver.loads.Load(); got != tc.wantLoads {
				t.Errorf("loads = %d, want %d", got, tc.wantLoads)
			}
			if res.State.Count != 103 || !slices.Equal(res.State.Log[len(res.State.Log)-3:], wantLog(3)) {
				t.Errorf("state = %+v", res.State)
			}
		})
	}
	// A snapshot of an earlier checkpoint is no head: it loads.
	saver.loads.Store(0)
	snap, err := g.State(ctx, "t", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.InvokeFrom(ctx, snap, graph.Config{ThreadID: "t", Input: []graph.Write{cs.count.Set(0)}}); err != nil {
		t.Fatal(err)
	}
	if got := saver.loads.Load(); got != 2 {
		t.Errorf("from an old checkpoint: loads = %d, want 2", got)
	}
}

// An answer given from a snapshot is stored once: a second answer from the
// same (now stale) snapshot is refused, as one through Invoke would be.
func TestInvokeFromResumesOnce(t *testing.T) {
	ctx := context.Background()
	saver := &loadCounter{Saver: memsaver.New(memsaver.Options{})}
	g := buildDraft(t, saver, true)
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "d", Input: []graph.Write{{Channel: "topic", Value: "x"}}}); err != nil {
		t.Fatal(err)
	}
	snap, err := g.State(ctx, "d", 0)
	if err != nil || len(snap.Interrupts) != 1 {
		t.Fatalf("state: %+v, %v", snap, err)
	}
	saver.loads.Store(0)
	res, err := g.InvokeFrom(ctx, snap, graph.Config{ThreadID: "d", Resume: map[string]any{"": "ok-by-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Final != "draft:x:ok-by-alice" {
		t.Fatalf("final = %q", res.State.Final)
	}
	if n := saver.loads.Load(); n != 0 {
		t.Errorf("resume from a snapshot loaded %d times, want 0", n)
	}
	if _, err := g.InvokeFrom(ctx, snap, graph.Config{ThreadID: "d", Resume: map[string]any{"": "ok-by-bob"}}); err == nil {
		t.Fatal("a second answer from the stale snapshot was accepted")
	}
	if st, err := g.State(ctx, "d", 0); err != nil || st.State.Final != "draft:x:ok-by-alice" {
		t.Fatalf("after the refused answer: %+v, %v", st, err)
	}
}

// A thread State found new starts without another look; had another writer
// created it meanwhile, the stale "new" snapshot's run is refused.
func TestInvokeFromNewThread(t *testing.T) {
	ctx := context.Background()
	saver := &loadCounter{Saver: memsaver.New(memsaver.Options{})}
	cs := newChainSchema()
	g := buildChain(t, 2, graph.Options{Saver: saver}, nil)
	res, err := g.InvokeFrom(ctx, graph.NewThread[chainState]("n"), graph.Config{ThreadID: "n", Input: []graph.Write{cs.count.Set(0)}})
	if err != nil || res.State.Count != 2 {
		t.Fatalf("new thread: %+v, %v", res, err)
	}
	if n := saver.loads.Load(); n != 0 {
		t.Errorf("a new thread was loaded %d times, want 0", n)
	}
	if _, err := g.InvokeFrom(ctx, graph.NewThread[chainState]("n"), graph.Config{ThreadID: "n", Input: []graph.Write{cs.count.Set(10)}}); err == nil {
		t.Fatal("a run from a stale new-thread snapshot was stored over the thread")
	}
	if st, err := g.State(ctx, "n", 0); err != nil || st.State.Count != 2 {
		t.Fatalf("after the refused run: %+v, %v", st, err)
	}
}
