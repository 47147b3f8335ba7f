// Package memstore is the in-memory checkpoint store: the reference
// implementation of graph.Saver, used by tests and by `ask` runs that need no
// persistence. It copies every byte slice it is given or returns.
package memstore

import (
	"context"
	"encoding/json"
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

func (s *Store) checkSize(b *graph.Batch) error {
	for _, c := range b.Checkpoints {
		for _, f := range [][]byte{c.Snapshot, c.Delta, c.Next, c.Meta} {
			if len(f) > s.maxBytes {
				return fmt.Errorf("checkpoint %d: %d bytes > %d: %w", c.ID, len(f), s.maxBytes, graph.ErrTooLarge)
			}
		}
	}
	for _, w := range b.Writes {
		if len(w.Value) > s.maxBytes {
			return fmt.Errorf("write %s: %d bytes > %d: %w", w.Channel, len(w.Value), s.maxBytes, graph.ErrTooLarge)
		}
	}
	return nil
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
			return nil, fmt.Errorf("memstore: checkpoint %d missing below %d: %w", cur, id, graph.ErrNotFound)
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
func (s *Store) Commit(ctx context.Context, b *graph.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkSize(b); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[b.ThreadID] {
		return graph.ErrThreadDeleted
	}
	c := s.chainOf(b.ThreadID, b.NS, true)
	if c.head != b.ExpectHead {
		return fmt.Errorf("head is %d, expected %d: %w", c.head, b.ExpectHead, graph.ErrConflict)
	}
	parent := b.ExpectHead
	for _, cp := range b.Checkpoints {
		if cp.ParentID != parent {
			return fmt.Errorf("memstore: checkpoint %d has parent %d, want %d", cp.ID, cp.ParentID, parent)
		}
		if _, dup := c.cps[cp.ID]; dup || cp.ID <= 0 {
			return fmt.Errorf("memstore: checkpoint id %d is taken: %w", cp.ID, graph.ErrConflict)
		}
		parent = cp.ID
	}
	if len(b.Checkpoints) == 0 {
		for _, w := range b.Writes {
			if w.CheckpointID != c.head {
				return fmt.Errorf("write for checkpoint %d, head is %d: %w", w.CheckpointID, c.head, graph.ErrConflict)
			}
		}
	}
	now := s.now()
	for _, cp := range b.Checkpoints {
		d := cloneCP(cp)
		d.ThreadID, d.NS = b.ThreadID, b.NS
		if d.CreatedAt.IsZero() {
			d.CreatedAt = now
		}
		c.cps[d.ID] = d
	}
	for _, w := range b.Writes {
		k := writeKey{w.CheckpointID, w.Task, w.Idx}
		if _, ok := c.writes[k]; ok {
			continue
		}
		w.Value = clone(w.Value)
		c.writes[k] = w
	}
	if len(b.Checkpoints) > 0 {
		c.head = parent
		c.finished = b.Finished
	}
	c.updated = now
	return nil
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
		if !MetaMatches(cp.Meta, opts.Meta) {
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

// MetaMatches reports whether the JSON object meta has every pair of want.
// Stores that filter metadata in Go share it.
func MetaMatches(meta []byte, want map[string]string) bool {
	if len(want) == 0 {
		return true
	}
	var m map[string]any
	if json.Unmarshal(meta, &m) != nil {
		return false
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			return false
		}
		switch g := got.(type) {
		case string:
			if g != v {
				return false
			}
		default:
			if fmt.Sprint(g) != v {
				return false
			}
		}
	}
	return true
}

// DeleteThread implements graph.Saver.
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
