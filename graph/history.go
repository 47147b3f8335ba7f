package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Snapshot is the state of a thread at one checkpoint.
type Snapshot[S any] struct {
	State        S
	CheckpointID int64
	Step         int
	Next         []string    // nodes of the step not completed yet; empty when the run finished
	Interrupts   []Interrupt // unanswered

	thread string
	chain  *Chain // the head as loaded, for InvokeFrom (State of the head only)
	fresh  bool   // the thread had no checkpoint when loaded (NewThread)
}

// NewThread is the snapshot of a thread that State found without
// checkpoints (ErrNotFound), for InvokeFrom: the new turn starts without
// looking again. Should another writer create the thread meanwhile, the
// run's first commit is refused, as for any stale head.
func NewThread[S any](thread string) *Snapshot[S] {
	return &Snapshot[S]{thread: thread, fresh: true}
}

func (g *Graph[S]) load(ctx context.Context, thread, ns string, id int64) (*run[S], *Chain, error) {
	if g.opts.Saver == nil {
		return nil, nil, errors.New("graph: state history needs a Saver")
	}
	chain, err := g.opts.Saver.Load(ctx, thread, ns, id)
	if err != nil {
		return nil, nil, fmt.Errorf("graph: load thread %q: %w", thread, err)
	}
	r := &run[S]{g: g, cfg: Config{ThreadID: thread}, ns: ns}
	if err := r.restore(chain); err != nil {
		return nil, nil, err
	}
	return r, chain, nil
}

// State returns the thread's state at checkpoint id (0: the head).
func (g *Graph[S]) State(ctx context.Context, thread string, id int64) (*Snapshot[S], error) {
	r, chain, err := g.load(ctx, thread, "", id)
	if err != nil {
		return nil, err
	}
	res := r.result(r.pending())
	snap := &Snapshot[S]{State: res.State, CheckpointID: res.CheckpointID, Step: res.Step, Next: res.Next, Interrupts: res.Interrupts}
	if id == 0 {
		snap.thread, snap.chain = thread, chain
	}
	return snap, nil
}

// History lists the thread's checkpoints, newest first.
func (g *Graph[S]) History(ctx context.Context, thread string, opts ListOptions) ([]CheckpointInfo, error) {
	if g.opts.Saver == nil {
		return nil, errors.New("graph: state history needs a Saver")
	}
	return g.opts.Saver.List(ctx, thread, "", opts)
}

// UpdateState applies writes to the thread's head as if node asNode had made
// them ("" keeps the head's pending tasks), storing an "update" checkpoint.
// Pending interrupts of the head are dropped along with its tasks when asNode
// is set.
func (g *Graph[S]) UpdateState(ctx context.Context, thread string, writes []Write, asNode string) (*Snapshot[S], error) {
	r, chain, err := g.load(ctx, thread, "", 0)
	if err != nil {
		return nil, err
	}
	for _, w := range writes {
		if err := g.schema.apply(&r.st, w); err != nil {
			return nil, err
		}
	}
	next := r.cur.tasks
	if asNode != "" {
		if g.nodes[asNode] == nil {
			return nil, fmt.Errorf("graph: UpdateState as unknown node %q", asNode)
		}
		if next, err = r.successors([]string{asNode}, nil); err != nil {
			return nil, err
		}
	} else {
		// keep the tasks, but they run afresh from the new checkpoint
		for i, t := range next {
			next[i] = &task[S]{idx: i, node: t.node, spec: t.spec, arg: t.arg}
		}
	}
	inline := make([]rawWrite, 0, len(writes))
	for i, w := range writes {
		raw, err := json.Marshal(w.Value)
		if err != nil {
			return nil, err
		}
		inline = append(inline, rawWrite{Task: taskInput, Idx: i, Channel: w.Channel, Value: raw})
	}
	r.p = newPersister(g.opts.Saver, thread, "", chain.Head, g.opts.SnapshotRatio, g.opts.SnapshotEvery, nil)
	r.p.lastSnap, r.p.sinceSnap, r.p.sinceCount = chainCost(chain)
	r.newCheckpoint("update", next, inline, len(next) == 0, nil)
	if err := r.p.close(); err != nil {
		return nil, err
	}
	res := r.result(nil)
	return &Snapshot[S]{State: res.State, CheckpointID: res.CheckpointID, Step: res.Step, Next: res.Next}, nil
}

// Prune keeps the newest keep checkpoints of the thread's root namespace and
// drops older ones, storing a snapshot where a kept checkpoint would lose its
// base. It returns how many checkpoints were dropped.
func (g *Graph[S]) Prune(ctx context.Context, thread string, keep int) (int, error) {
	if g.opts.Saver == nil {
		return 0, errors.New("graph: pruning needs a Saver")
	}
	if keep < 1 {
		keep = 1
	}
	infos, err := g.opts.Saver.List(ctx, thread, "", ListOptions{})
	if err != nil {
		return 0, err
	}
	if len(infos) <= keep {
		return 0, nil
	}
	cut := infos[keep-1].ID
	for _, info := range infos[:keep] {
		if info.HasSnapshot || (info.ParentID != 0 && info.ParentID >= cut && info.ID != cut) {
			continue
		}
		if info.ParentID == 0 {
			continue
		}
		r, _, err := g.load(ctx, thread, "", info.ID)
		if err != nil {
			return 0, err
		}
		snap, err := encodeSnapshot(&r.st)
		if err != nil {
			return 0, err
		}
		if err := g.opts.Saver.PutSnapshot(ctx, thread, "", info.ID, snap); err != nil {
			return 0, err
		}
	}
	return g.opts.Saver.DeleteBefore(ctx, thread, "", cut)
}

// DeleteThread deletes every checkpoint of the thread for good: later writes
// from other processes are refused rather than bringing it back.
func (g *Graph[S]) DeleteThread(ctx context.Context, thread string) error {
	if g.opts.Saver == nil {
		return errors.New("graph: deleting threads needs a Saver")
	}
	return g.opts.Saver.DeleteThread(ctx, thread)
}

// ForgetThread deletes every checkpoint of the thread, leaving no tombstone:
// the thread may run again, from the start.
func (g *Graph[S]) ForgetThread(ctx context.Context, thread string) error {
	if g.opts.Saver == nil {
		return errors.New("graph: forgetting threads needs a Saver")
	}
	return g.opts.Saver.ForgetThread(ctx, thread)
}
