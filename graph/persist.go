package graph

import (
	"context"
	"slices"
	"sync"
	"time"
)

// persister moves a run's writes and checkpoints to the Saver from one
// background goroutine, committing whatever has queued up as one batch (group
// commit). When a task's writes and the checkpoint they lead to land in the
// same batch, the writes are stored inline in the checkpoint's delta instead
// of as separate pending writes, so nothing is stored twice.
type persister struct {
	saver  Saver
	thread string
	ns     string
	emit   func(Event)

	ratio, every int

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []pItem
	busy   bool
	closed bool
	err    error
	// held are writes for a checkpoint that is not the thread's head (the
	// first step of a run forked from an earlier checkpoint): the Saver
	// takes them only inline with the checkpoint they lead to, so they wait
	// for it. A flush sends them anyway (draining > 0).
	held     []pItem
	draining int

	// owned by the writer goroutine
	expectHead int64
	sinceSnap  int
	lastSnap   int
	sinceCount int
}

type pItem struct {
	// one of:
	writes *pWrites
	cp     *pCheckpoint
}

type pWrites struct {
	result bool // the task's result (not a memo or interrupt record)
	cp     int64
	task   int
	node   string
	step   int
	ws     []rawWrite
}

type pCheckpoint struct {
	sc       *StoredCheckpoint
	inline   []rawWrite // input or update writes
	loop     bool       // the parent's task writes make up the delta
	snapshot func() ([]byte, error)
	finished bool
	extra    []PendingWrite // records attached to this checkpoint (after-interrupts)
}

func newPersister(s Saver, thread, ns string, head int64, ratio, every int, emit func(Event)) *persister {
	p := &persister{saver: s, thread: thread, ns: ns, emit: emit, expectHead: head, ratio: ratio, every: every}
	p.cond = sync.NewCond(&p.mu)
	go p.loop()
	return p
}

// wake reports whether the writer has something to do (p.mu held).
func (p *persister) wake() bool {
	return p.closed || len(p.queue) > 0 || (p.draining > 0 && len(p.held) > 0)
}

func (p *persister) add(it pItem) {
	p.mu.Lock()
	p.queue = append(p.queue, it)
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *persister) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// flush waits until everything queued is stored, or the writer failed.
func (p *persister) flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draining++
	defer func() { p.draining-- }()
	p.cond.Broadcast()
	for (len(p.queue) > 0 || p.busy || len(p.held) > 0) && p.err == nil {
		p.cond.Wait()
	}
	return p.err
}

func (p *persister) close() error {
	err := p.flush()
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	return err
}

func (p *persister) loop() {
	for {
		p.mu.Lock()
		for !p.wake() {
			p.cond.Wait()
		}
		if p.closed || p.err != nil {
			p.queue, p.held = nil, nil
			p.busy = false
			p.cond.Broadcast()
			p.mu.Unlock()
			return
		}
		items := append(p.held, p.queue...)
		p.queue, p.held = nil, nil
		force := p.draining > 0
		p.busy = true
		p.mu.Unlock()

		if !force && p.holdable(items) {
			p.mu.Lock()
			p.held, p.busy = items, false
			p.cond.Broadcast()
			p.mu.Unlock()
			continue
		}
		err := p.commit(items)

		p.mu.Lock()
		p.busy = false
		if err != nil && p.err == nil {
			p.err = err
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// holdable reports whether items are only writes, some of them for a
// checkpoint other than the head: they must wait for their checkpoint.
func (p *persister) holdable(items []pItem) bool {
	other := false
	for _, it := range items {
		if it.cp != nil {
			return false
		}
		if it.writes.cp != p.expectHead {
			other = true
		}
	}
	return other
}

func sortWrites(ws []rawWrite) {
	slices.SortStableFunc(ws, func(a, b rawWrite) int {
		if a.Task != b.Task {
			return a.Task - b.Task
		}
		return a.Idx - b.Idx
	})
}

// commit stores items as one batch.
func (p *persister) commit(items []pItem) error {
	b := &Batch{ThreadID: p.thread, NS: p.ns, ExpectHead: p.expectHead}
	pending := map[int64][]rawWrite{}
	var saved []*pWrites
	var order []int64
	for _, it := range items {
		if w := it.writes; w != nil {
			if _, ok := pending[w.cp]; !ok {
				order = append(order, w.cp)
			}
			pending[w.cp] = append(pending[w.cp], w.ws...)
			saved = append(saved, w)
			continue
		}
		if err := p.addCheckpoint(b, it.cp, pending); err != nil {
			return err
		}
	}
	for _, cp := range order {
		for _, w := range pending[cp] {
			b.Writes = append(b.Writes, PendingWrite{CheckpointID: cp, Task: w.Task, Idx: w.Idx, Channel: w.Channel, Value: w.Value})
			p.sinceSnap += len(w.Value) + len(w.Channel) + 8
		}
	}
	if len(b.Checkpoints) == 0 && len(b.Writes) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.saver.Commit(ctx, b); err != nil {
		return err
	}
	if n := len(b.Checkpoints); n > 0 {
		p.expectHead = b.Checkpoints[n-1].ID
	}
	p.emitSaved(saved, b.Checkpoints)
	return nil
}

// addCheckpoint adds c to b, with its parent's pending writes inline in its
// delta (taken out of pending) and a snapshot when the deltas since the last
// one have grown too long.
func (p *persister) addCheckpoint(b *Batch, c *pCheckpoint, pending map[int64][]rawWrite) error {
	delta := slices.Clone(c.inline)
	if c.loop {
		if ws, ok := pending[c.sc.ParentID]; ok {
			delta = append(delta, ws...)
			delete(pending, c.sc.ParentID)
		}
	}
	sortWrites(delta)
	c.sc.Delta = encodeWrites(delta)
	if c.sc.ParentID == 0 || c.sc.Snapshot != nil {
		// a chain's root is its own base: the zero state plus its delta
		p.lastSnap, p.sinceSnap, p.sinceCount = len(c.sc.Delta)+len(c.sc.Snapshot), 0, 0
	} else {
		p.sinceSnap += len(c.sc.Delta)
		p.sinceCount++
	}
	if c.snapshot != nil && c.sc.ParentID != 0 && c.sc.Snapshot == nil && p.snapshotDue() {
		snap, err := c.snapshot()
		if err != nil {
			return err
		}
		c.sc.Snapshot = snap
		p.lastSnap, p.sinceSnap, p.sinceCount = len(snap), 0, 0
	}
	b.Checkpoints = append(b.Checkpoints, c.sc)
	b.Writes = append(b.Writes, c.extra...)
	b.Finished = c.finished
	return nil
}

// snapshotDue reports whether the deltas since the last snapshot outweigh
// it (by the ratio, and 4 KiB at least) or are too many.
func (p *persister) snapshotDue() bool {
	return (p.sinceSnap > p.ratio*p.lastSnap && p.sinceSnap > 4096) || p.sinceCount >= p.every
}

// emitSaved reports the stored task results and checkpoints.
func (p *persister) emitSaved(saved []*pWrites, cps []*StoredCheckpoint) {
	if p.emit == nil {
		return
	}
	for _, w := range saved {
		if w.result {
			p.emit(Event{Kind: EventWritesSaved, ThreadID: p.thread, NS: p.ns, CheckpointID: w.cp, Node: w.node, Task: w.task, Step: w.step})
		}
	}
	for _, c := range cps {
		p.emit(Event{Kind: EventCheckpoint, ThreadID: p.thread, NS: p.ns, CheckpointID: c.ID, Step: c.Step})
	}
}
