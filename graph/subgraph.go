package graph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// ErrSubgraphInterrupt is returned when a subgraph pauses: pauses for a
// person belong in the top-level graph.
var ErrSubgraphInterrupt = errors.New("graph: a subgraph paused; put interrupts in the top-level graph")

// AddSubgraph adds a node that runs sub, a graph with its own state type, as
// one task. With a Saver, the subgraph keeps its own checkpoints in a
// namespace derived from the task, so a crash in the middle of a long
// subgraph resumes inside it instead of starting it over. in builds the
// subgraph's input from the parent state; out turns its final state into the
// parent's writes. sub must use the same Saver as the parent (or none).
func AddSubgraph[S, T any](b *Builder[S], name string, sub *Graph[T], in func(S) []Write, out func(T) []Write, opts ...NodeOption) {
	b.AddNode(name, func(ctx context.Context, s S) ([]Write, error) {
		return runSub(ctx, name, sub, in(s), out)
	}, opts...)
}

// AddSubgraphWorker is AddSubgraph for Send: each task gets its argument and
// runs its own instance of sub (researchers fanned out in parallel).
func AddSubgraphWorker[S, T, A any](b *Builder[S], name string, sub *Graph[T], in func(A) []Write, out func(T) []Write, opts ...NodeOption) {
	AddWorker(b, name, func(ctx context.Context, arg A) ([]Write, error) {
		return runSub(ctx, name, sub, in(arg), out)
	}, opts...)
}

func runSub[T any](ctx context.Context, name string, sub *Graph[T], input []Write, out func(T) []Write) ([]Write, error) {
	tc, _ := ctx.Value(taskCtxKey{}).(*taskCtx)
	if tc == nil {
		return nil, errors.New("graph: subgraph node called outside a run")
	}
	b := tc.base
	cfg := Config{ThreadID: b.ThreadID, Events: tc.emit}
	cfg.ns = b.NS + "/" + name + ":" + strconv.FormatInt(b.CheckpointID, 10) + "." + strconv.Itoa(b.Task)
	if sub.opts.Saver != nil {
		snap, err := sub.stateNS(ctx, b.ThreadID, cfg.ns)
		switch {
		case errors.Is(err, ErrNotFound):
			cfg.Input = input
		case err != nil:
			return nil, err
		case len(snap.Next) == 0 && len(snap.Interrupts) == 0:
			return out(snap.State), nil // finished before a crash
		}
	} else {
		cfg.Input = input
	}
	res, err := sub.Invoke(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("subgraph %s: %w", name, err)
	}
	if res.Interrupted() {
		return nil, ErrSubgraphInterrupt
	}
	return out(res.State), nil
}

func (g *Graph[S]) stateNS(ctx context.Context, thread, ns string) (*Snapshot[S], error) {
	chain, err := g.opts.Saver.Load(ctx, thread, ns, 0)
	if err != nil {
		return nil, err
	}
	r := &run[S]{g: g, cfg: Config{ThreadID: thread}, ns: ns}
	if err := r.restore(chain); err != nil {
		return nil, err
	}
	res := r.result(r.pending())
	return &Snapshot[S]{State: res.State, CheckpointID: res.CheckpointID, Next: res.Next, Interrupts: res.Interrupts}, nil
}
