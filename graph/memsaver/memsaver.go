// Package memsaver is the in-memory checkpoint store: the reference
// implementation of graph.Saver, used by tests and by `ask` runs that need no
// persistence. It copies every byte slice it is given or returns.
package memsaver

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"deepresearch/graph"
)

// DefaultMaxRecordBytes bounds one checkpoint field or write value.
const DefaultMaxRecordBytes = 64 << 20

// Store keeps checkpoints in memory. The zero value is not usable; call New.
type Store struct {
	mu       sync.Mutex
	threads  map[string]map[string]*chain // thread → ns → chain
	deleted  map[string]bool
	maxBytes int
	now      func() time.Time
}

type writeKey struct {
	cp        int64
	task, idx int
}

type chain struct {
	head     int64
	cps      map[int64]*graph.StoredCheckpoint
	writes   map[writeKey]graph.PendingWrite
	updated  time.Time
	finished bool
}

// Options configure a Store.
type Options struct {
	MaxRecordBytes int              // 0: DefaultMaxRecordBytes
	Now            func() time.Time // nil: time.Now
}

// New returns an empty store.
func New(opts Options) *Store {
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{
		threads:  map[string]map[string]*chain{},
		deleted:  map[string]bool{},
		maxBytes: opts.MaxRecordBytes,
		now:      opts.Now,
	}
}

var _ graph.Saver = (*Store)(nil)

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

func cloneCP(c *graph.StoredCheckpoint) *graph.StoredCheckpoint {
	d := *c
	d.Snapshot = clone(c.Snapshot)
	d.Delta = clone(c.Delta)
	d.Next = clone(c.Next)
	d.Meta = clone(c.Meta)
	d.Writes = nil
	return &d
}

func (s *Store) chainOf(thread, ns string, create bool) *chain {
	byNS := s.threads[thread]
	if byNS == nil {
		if !create {
			return nil
		}
		byNS = map[string]*chain{}
		s.threads[thread] = byNS
	}
	c := byNS[ns]
	if c == nil && create {
		c = &chain{cps: map[int64]*graph.StoredCheckpoint{}, writes: map[writeKey]graph.PendingWrite{}}
		byNS[ns] = c
	}
	return c
}

// Load implements graph.Saver.
func (s *Store) Load(ctx context.Context, thread, ns string, id int64) (*graph.Chain, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[thread] {
		return nil, graph.ErrThreadDeleted
	}
	c := s.chainOf(thread, ns, false)
	if c == nil || c.head == 0 {
		return nil, graph.ErrNotFound
	}
	if id == 0 {
		id = c.head
	}
	var path []*graph.StoredCheckpoint
	for cur := id; cur != 0; {
		cp, ok := c.cps[cur]
		if !ok {
			if len(path) == 0 {
				return nil, graph.ErrNotFound
			}
			return nil, fmt.Errorf("memsaver: checkpoint %d missing below %d: %w", cur, id, graph.ErrNotFound)
		}
		path = append(path, cp)
		if cp.Snapshot != nil {
			break
		}
		cur = cp.ParentID
	}
	out := &graph.Chain{Head: c.head, Checkpoints: make([]*graph.StoredCheckpoint, len(path))}
	for i, cp := range path {
		d := cloneCP(cp)
		d.Writes = c.writesOf(cp.ID)
		out.Checkpoints[len(path)-1-i] = d
	}
	return out, nil
}

func (c *chain) writesOf(cp int64) []graph.PendingWrite {
	var ws []graph.PendingWrite
	for k, w := range c.writes {
		if k.cp == cp {
			w.Value = clone(w.Value)
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].Task != ws[j].Task {
			return ws[i].Task < ws[j].Task
		}
		return ws[i].Idx < ws[j].Idx
	})
	return ws
}

// Commit implements graph.Saver.
//
// The first checkpoint's parent is 0 or any checkpoint of the chain (a fork
// from an older checkpoint moves the head to a new branch); ExpectHead is
// always the current head. Checks run in this order, and the SQL stores keep
// it: batch shape and size, deleted thread (ErrThreadDeleted), head
// (ErrConflict), parent exists (ErrNotFound), ids free (ErrConflict).
func (s *Store) Commit(ctx context.Context, b *graph.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := graph.CheckBatch(b, s.maxBytes); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[b.ThreadID] {
		return graph.ErrThreadDeleted
	}
	c := s.chainOf(b.ThreadID, b.NS, false)
	var head int64
	if c != nil {
		head = c.head
	}
	if head != b.ExpectHead {
		return fmt.Errorf("head is %d, expected %d: %w", head, b.ExpectHead, graph.ErrConflict)
	}
	now := s.now()
	if len(b.Checkpoints) == 0 {
		return commitWrites(c, head, b.Writes, now)
	}
	if err := c.fits(b.Checkpoints); err != nil {
		return err
	}
	if c == nil {
		c = s.chainOf(b.ThreadID, b.NS, true)
	}
	for _, cp := range b.Checkpoints {
		d := cloneCP(cp)
		d.ThreadID, d.NS = b.ThreadID, b.NS
		if d.CreatedAt.IsZero() {
			d.CreatedAt = now
		}
		c.cps[d.ID] = d
	}
	c.putWrites(b.Writes)
	c.head = b.Checkpoints[len(b.Checkpoints)-1].ID
	c.finished = b.Finished
	c.updated = now
	return nil
}

// commitWrites stores a batch of pending writes alone: each must be for
// the head.
func commitWrites(c *chain, head int64, ws []graph.PendingWrite, now time.Time) error {
	if len(ws) == 0 {
		return nil
	}
	for _, w := range ws {
		if head == 0 || w.CheckpointID != head {
			return fmt.Errorf("write for checkpoint %d, head is %d: %w", w.CheckpointID, head, graph.ErrConflict)
		}
	}
	c.putWrites(ws)
	c.updated = now
	return nil
}

// fits checks that new checkpoints can join the chain (nil: a new chain):
// the first one's parent is in it and their ids are free.
func (c *chain) fits(cps []*graph.StoredCheckpoint) error {
	if p := cps[0].ParentID; p != 0 && (c == nil || c.cps[p] == nil) {
		return fmt.Errorf("memsaver: parent %d of checkpoint %d is not in the chain: %w", p, cps[0].ID, graph.ErrNotFound)
	}
	if c == nil {
		return nil
	}
	for _, cp := range cps {
		if _, dup := c.cps[cp.ID]; dup {
			return fmt.Errorf("memsaver: checkpoint id %d is taken: %w", cp.ID, graph.ErrConflict)
		}
	}
	return nil
}

func (c *chain) putWrites(ws []graph.PendingWrite) {
	for _, w := range ws {
		k := writeKey{w.CheckpointID, w.Task, w.Idx}
		if _, ok := c.writes[k]; ok {
			continue
		}
		w.Value = clone(w.Value)
		c.writes[k] = w
	}
}

// PutResume implements graph.Saver.
func (s *Store) PutResume(ctx context.Context, thread, ns string, cpID int64, w graph.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(w.Value) > s.maxBytes {
		return graph.ErrTooLarge
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[thread] {
		return graph.ErrThreadDeleted
	}
	c := s.chainOf(thread, ns, false)
	if c == nil || c.head != cpID {
		return graph.ErrConflict
	}
	k := writeKey{cpID, w.Task, w.Idx}
	if _, ok := c.writes[k]; ok {
		return graph.ErrAlreadyResumed
	}
	w.CheckpointID = cpID
	w.Value = clone(w.Value)
	c.writes[k] = w
	c.updated = s.now()
	return nil
}

// List implements graph.Saver.
func (s *Store) List(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chainOf(thread, ns, false)
	if c == nil || s.deleted[thread] {
		return nil, nil
	}
	ids := make([]int64, 0, len(c.cps))
	for id := range c.cps {
		if opts.Before == 0 || id < opts.Before {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] > ids[j] })
	var out []graph.CheckpointInfo
	for _, id := range ids {
		cp := c.cps[id]
		if opts.Source != "" && cp.Source != opts.Source {
			continue
		}
		if !graph.MetaMatches(cp.Meta, opts.Meta) {
			continue
		}
		out = append(out, graph.CheckpointInfo{
			ID: cp.ID, ParentID: cp.ParentID, Step: cp.Step, Source: cp.Source,
			Meta: clone(cp.Meta), CreatedAt: cp.CreatedAt, HasSnapshot: cp.Snapshot != nil,
		})
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	return out, nil
}

// DeleteThread implements graph.Saver.
// ForgetThread implements graph.Saver.
func (s *Store) ForgetThread(ctx context.Context, thread string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.threads, thread)
	return nil
}

func (s *Store) DeleteThread(ctx context.Context, thread string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.threads, thread)
	s.deleted[thread] = true
	return nil
}

// PutSnapshot implements graph.Saver.
func (s *Store) PutSnapshot(ctx context.Context, thread, ns string, id int64, snap []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(snap) > s.maxBytes {
		return graph.ErrTooLarge
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chainOf(thread, ns, false)
	if c == nil {
		return graph.ErrNotFound
	}
	cp, ok := c.cps[id]
	if !ok {
		return graph.ErrNotFound
	}
	cp.Snapshot = clone(snap)
	return nil
}

// DeleteBefore implements graph.Saver.
func (s *Store) DeleteBefore(ctx context.Context, thread, ns string, id int64) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chainOf(thread, ns, false)
	if c == nil {
		return 0, nil
	}
	n := 0
	for cid := range c.cps {
		if cid < id {
			delete(c.cps, cid)
			n++
		}
	}
	for k := range c.writes {
		if k.cp < id {
			delete(c.writes, k)
		}
	}
	return n, nil
}

// PruneThreads implements graph.Saver.
func (s *Store) PruneThreads(ctx context.Context, olderThan time.Time, finishedOnly bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for thread, byNS := range s.threads {
		root := byNS[""]
		if root == nil || !root.updated.Before(olderThan) || (finishedOnly && !root.finished) {
			continue
		}
		delete(s.threads, thread)
		n++
	}
	return n, nil
}
