// Package savertest is the conformance suite every graph.Saver runs (memory,
// SQLite, Postgres), in the manner of go-cloud's drivertest: one set of
// behaviours, asserted the same way against every store, with memsaver as the
// reference. A store's test calls Run with a Harness that opens fresh stores.
package savertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/graph"
)

// Options are what the suite needs to control in a store under test.
type Options struct {
	MaxRecordBytes int              // 0: the store's default
	Now            func() time.Time // nil: time.Now
}

// Harness opens stores for the suite.
type Harness struct {
	// New opens an isolated, empty store (its own database, file or schema),
	// closed by the harness in t.Cleanup.
	New func(t *testing.T, o Options) graph.Saver
	// Pair opens two independent handles on one fresh, empty database:
	// separate pools or connections, as two processes would have. A store
	// that cannot have two handles (memory) returns the same one twice.
	// If a handle has a Close method, the suite may call it early (a killed
	// process); the harness's cleanup must tolerate that.
	Pair func(t *testing.T, o Options) (a, b graph.Saver)
}

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"LoadMissing", testLoadMissing},
		{"RoundTrip", testRoundTrip},
		{"LoadFromNearestSnapshot", testLoadFromNearestSnapshot},
		{"DeepChain", testDeepChain},
		{"List", testList},
		{"PendingWrites", testPendingWrites},
		{"WritesOnly", testWritesOnly},
		{"Namespaces", testNamespaces},
		{"CompareAndSet", testCompareAndSet},
		{"InvalidBatch", testInvalidBatch},
		{"Forks", testForks},
		{"DeleteThread", testDeleteThread},
		{"ForgetThread", testForgetThread},
		{"DeletedNotResurrected", testDeletedNotResurrected},
		{"DeleteRacesCommits", testDeleteRacesCommits},
		{"ConcurrentWriters", testConcurrentWriters},
		{"PutResume", testPutResume},
		{"PutResumeRace", testPutResumeRace},
		{"KilledProcess", testKilledProcess},
		{"SizeLimit", testSizeLimit},
		{"Retention", testRetention},
		{"PruneThreads", testPruneThreads},
		{"CanceledContext", testCanceledContext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

// ---- helpers ----

// Clock is a settable clock for Options.Now.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

// mkcp returns a checkpoint with recognisable contents.
func mkcp(id, parent int64) *graph.StoredCheckpoint {
	return &graph.StoredCheckpoint{
		ID:       id,
		ParentID: parent,
		Step:     int(id) - 1,
		Source:   "loop",
		Delta:    []byte(fmt.Sprintf("delta-%d", id)),
		Next:     []byte(fmt.Sprintf("next-%d", id)),
		Meta:     []byte(fmt.Sprintf(`{"step":%d,"source":"loop"}`, id-1)),
	}
}

func snap(c *graph.StoredCheckpoint) *graph.StoredCheckpoint {
	c.Snapshot = []byte(fmt.Sprintf("snapshot-%d", c.ID))
	return c
}

func wr(cp int64, task, idx int, ch, val string) graph.PendingWrite {
	return graph.PendingWrite{CheckpointID: cp, Task: task, Idx: idx, Channel: ch, Value: []byte(val)}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustCommit(t *testing.T, s graph.Saver, b *graph.Batch) {
	t.Helper()
	if err := s.Commit(ctxT(t), b); err != nil {
		t.Fatalf("Commit(thread %q ns %q expect %d): %v", b.ThreadID, b.NS, b.ExpectHead, err)
	}
}

// linear commits checkpoints first..last of thread/ns one per Commit, each the
// child of the one before; every snapEvery-th (starting at first) has a
// snapshot. It returns the new head.
func linear(t *testing.T, s graph.Saver, thread, ns string, head, first, last int64, snapEvery int64) int64 {
	t.Helper()
	return chain(t, s, thread, ns, head, first, last, func(c *graph.StoredCheckpoint) {
		if snapEvery > 0 && (c.ID-first)%snapEvery == 0 {
			snap(c)
		}
	})
}

// chain is linear with each checkpoint shaped by shape before it is committed.
func chain(t *testing.T, s graph.Saver, thread, ns string, head, first, last int64, shape func(c *graph.StoredCheckpoint)) int64 {
	t.Helper()
	for id := first; id <= last; id++ {
		c := mkcp(id, head)
		shape(c)
		mustCommit(t, s, &graph.Batch{ThreadID: thread, NS: ns, ExpectHead: head, Checkpoints: []*graph.StoredCheckpoint{c}})
		head = id
	}
	return head
}

func ids(ch *graph.Chain) []int64 {
	var out []int64
	for _, c := range ch.Checkpoints {
		out = append(out, c.ID)
	}
	return out
}

func infoIDs(infos []graph.CheckpointInfo) []int64 {
	var out []int64
	for _, c := range infos {
		out = append(out, c.ID)
	}
	return out
}

func rng(from, to int64) []int64 {
	var out []int64
	if from <= to {
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
	} else {
		for i := from; i >= to; i-- {
			out = append(out, i)
		}
	}
	return out
}

func eqIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func load(t *testing.T, s graph.Saver, thread, ns string, id int64) *graph.Chain {
	t.Helper()
	ch, err := s.Load(ctxT(t), thread, ns, id)
	if err != nil {
		t.Fatalf("Load(%q, %q, %d): %v", thread, ns, id, err)
	}
	return ch
}

func wantLoad(t *testing.T, s graph.Saver, thread, ns string, id, head int64, want []int64) *graph.Chain {
	t.Helper()
	ch := load(t, s, thread, ns, id)
	if ch.Head != head || !eqIDs(ids(ch), want) {
		t.Fatalf("Load(%q, %q, %d) = head %d chain %v, want head %d chain %v", thread, ns, id, ch.Head, ids(ch), head, want)
	}
	return ch
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func list(t *testing.T, s graph.Saver, thread, ns string, o graph.ListOptions) []int64 {
	t.Helper()
	infos, err := s.List(ctxT(t), thread, ns, o)
	if err != nil {
		t.Fatalf("List(%q, %q, %+v): %v", thread, ns, o, err)
	}
	return infoIDs(infos)
}

func writesString(ws []graph.PendingWrite) string {
	var b bytes.Buffer
	for _, w := range ws {
		fmt.Fprintf(&b, "[%d %d/%d %s=%s]", w.CheckpointID, w.Task, w.Idx, w.Channel, w.Value)
	}
	return b.String()
}

func closeHandle(t *testing.T, s graph.Saver) {
	t.Helper()
	switch c := s.(type) {
	case io.Closer:
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	case interface{ Close() }:
		c.Close()
	}
}

// ---- tests ----

func testLoadMissing(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	_, err := s.Load(ctx, "nobody", "", 0)
	wantErr(t, "Load of a missing thread", err, graph.ErrNotFound)
	_, err = s.Load(ctx, "nobody", "", 7)
	wantErr(t, "Load(id) of a missing thread", err, graph.ErrNotFound)
	if got := list(t, s, "nobody", "", graph.ListOptions{}); len(got) != 0 {
		t.Fatalf("List of a missing thread = %v", got)
	}
	linear(t, s, "th", "", 0, 1, 3, 1)
	_, err = s.Load(ctx, "th", "", 99)
	wantErr(t, "Load of a missing checkpoint", err, graph.ErrNotFound)
	_, err = s.Load(ctx, "th", "other-ns", 0)
	wantErr(t, "Load of a missing namespace", err, graph.ErrNotFound)
}

func testRoundTrip(t *testing.T, h Harness) {
	clk := NewClock(t0)
	s := h.New(t, Options{Now: clk.Now})
	given := time.Date(2025, 5, 6, 7, 8, 9, 987654321, time.UTC)
	c1 := &graph.StoredCheckpoint{ID: 10, Step: -1, Source: "input", Snapshot: []byte("full state"),
		Delta: []byte{0, 1, 2, 255}, Next: []byte("tasks"), Meta: []byte(`{"source":"input","step":-1}`), CreatedAt: given}
	c2 := &graph.StoredCheckpoint{ID: 20, ParentID: 10, Step: 0, Source: "loop", Delta: []byte("d2")}
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 0, Checkpoints: []*graph.StoredCheckpoint{c1},
		Writes: []graph.PendingWrite{wr(10, 0, 0, "a", "x")}})
	clk.Advance(time.Second)
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 10, Checkpoints: []*graph.StoredCheckpoint{c2}})

	ch := wantLoad(t, s, "th", "", 0, 20, []int64{10, 20})
	got1, got2 := ch.Checkpoints[0], ch.Checkpoints[1]
	check := func(name string, got, want *graph.StoredCheckpoint, created time.Time) {
		t.Helper()
		if !sameCheckpoint(got, want, "th", "", created) {
			t.Errorf("%s = %+v, want %+v created %v", name, got, want, created)
		}
	}
	check("checkpoint 10", got1, c1, given)
	check("checkpoint 20", got2, c2, t0.Add(time.Second))
	if writesString(got1.Writes) != "[10 0/0 a=x]" || len(got2.Writes) != 0 {
		t.Errorf("writes = %s / %s", writesString(got1.Writes), writesString(got2.Writes))
	}
	// Loading the older checkpoint reports the current head.
	wantLoad(t, s, "th", "", 10, 20, []int64{10})

	// The store keeps its own copies: mutating what was given or returned
	// changes nothing stored.
	c1.Snapshot[0] = 'X'
	got1.Delta[0] = 9
	again := wantLoad(t, s, "th", "", 10, 20, []int64{10})
	if string(again.Checkpoints[0].Snapshot) != "full state" || again.Checkpoints[0].Delta[0] != 0 {
		t.Errorf("stored bytes changed through an alias: %+v", again.Checkpoints[0])
	}

	infos, err := s.List(ctxT(t), "th", "", graph.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []graph.CheckpointInfo{
		{ID: 20, ParentID: 10, Step: 0, Source: "loop", CreatedAt: t0.Add(time.Second)},
		{ID: 10, ParentID: 0, Step: -1, Source: "input", HasSnapshot: true, Meta: []byte(`{"source":"input","step":-1}`), CreatedAt: given},
	}
	if len(infos) != len(want) {
		t.Fatalf("List = %+v", infos)
	}
	for i, w := range want {
		if !sameInfo(infos[i], w) {
			t.Errorf("List[%d] = %+v, want %+v", i, infos[i], w)
		}
	}
}

// sameCheckpoint reports whether got is want as stored on thread/ns, made
// at created.
func sameCheckpoint(got, want *graph.StoredCheckpoint, thread, ns string, created time.Time) bool {
	return got.ThreadID == thread && got.NS == ns && got.ID == want.ID && got.ParentID == want.ParentID &&
		got.Step == want.Step && got.Source == want.Source &&
		bytes.Equal(got.Snapshot, want.Snapshot) && bytes.Equal(got.Delta, want.Delta) &&
		bytes.Equal(got.Next, want.Next) && bytes.Equal(got.Meta, want.Meta) && got.CreatedAt.Equal(created)
}

// sameInfo compares list entries (empty and nil Meta alike).
func sameInfo(got, want graph.CheckpointInfo) bool {
	return got.ID == want.ID && got.ParentID == want.ParentID && got.Step == want.Step && got.Source == want.Source &&
		got.HasSnapshot == want.HasSnapshot && bytes.Equal(got.Meta, want.Meta) && got.CreatedAt.Equal(want.CreatedAt)
}

func testLoadFromNearestSnapshot(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	// 1(S) 2 3 4(S) 5 6
	chain(t, s, "th", "", 0, 1, 6, func(c *graph.StoredCheckpoint) {
		if c.ID == 1 || c.ID == 4 {
			snap(c)
		}
	})
	// A chain without any snapshot walks back to its root.
	linear(t, s, "nosnap", "", 0, 1, 4, 0)
	tests := []struct {
		thread string
		id     int64
		want   []int64
	}{
		{"th", 0, []int64{4, 5, 6}},
		{"th", 6, []int64{4, 5, 6}},
		{"th", 5, []int64{4, 5}},
		{"th", 4, []int64{4}},
		{"th", 3, []int64{1, 2, 3}},
		{"th", 1, []int64{1}},
		{"nosnap", 0, []int64{1, 2, 3, 4}},
		{"nosnap", 2, []int64{1, 2}},
	}
	for _, tc := range tests {
		ch := load(t, s, tc.thread, "", tc.id)
		if !eqIDs(ids(ch), tc.want) {
			t.Errorf("Load(%s, %d) = %v, want %v", tc.thread, tc.id, ids(ch), tc.want)
		}
		if tc.thread == "th" && ch.Checkpoints[0].Snapshot == nil {
			t.Errorf("Load(%s, %d) starts without a snapshot", tc.thread, tc.id)
		}
	}
}

func testDeepChain(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	// 500 checkpoints in batches of 25, a snapshot every 50 (ids 1, 51, …, 451),
	// and one pending write per checkpoint.
	var head int64
	for first := int64(1); first <= 500; first += 25 {
		b := &graph.Batch{ThreadID: "deep", ExpectHead: head}
		parent := head
		for id := first; id < first+25; id++ {
			c := mkcp(id, parent)
			if (id-1)%50 == 0 {
				snap(c)
			}
			b.Checkpoints = append(b.Checkpoints, c)
			b.Writes = append(b.Writes, wr(id, 0, 0, "c", fmt.Sprint(id)))
			parent = id
		}
		mustCommit(t, s, b)
		head = parent
	}
	tests := []struct {
		id       int64
		from, to int64
	}{
		{0, 451, 500}, {500, 451, 500}, {451, 451, 451}, {450, 401, 450}, {275, 251, 275}, {51, 51, 51}, {50, 1, 50}, {1, 1, 1},
	}
	for _, tc := range tests {
		ch := wantLoad(t, s, "deep", "", tc.id, 500, rng(tc.from, tc.to))
		if string(ch.Checkpoints[0].Snapshot) != fmt.Sprintf("snapshot-%d", tc.from) {
			t.Errorf("Load(%d) starts with snapshot %q", tc.id, ch.Checkpoints[0].Snapshot)
		}
		for _, c := range ch.Checkpoints[1:] {
			if c.Snapshot != nil {
				t.Errorf("Load(%d): checkpoint %d after the first has a snapshot", tc.id, c.ID)
			}
		}
		for _, c := range ch.Checkpoints {
			if want := fmt.Sprintf("[%d 0/0 c=%d]", c.ID, c.ID); writesString(c.Writes) != want {
				t.Errorf("Load(%d): writes of %d = %s, want %s", tc.id, c.ID, writesString(c.Writes), want)
			}
		}
	}
	if n := len(list(t, s, "deep", "", graph.ListOptions{})); n != 500 {
		t.Errorf("List has %d checkpoints, want 500", n)
	}
}

func testList(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	// 1..10; even ids are "loop", odd "update"; meta has step, kind, a number and a bool.
	chain(t, s, "th", "", 0, 1, 10, func(c *graph.StoredCheckpoint) {
		id := c.ID
		if id%2 == 1 {
			c.Source = "update"
		}
		kind := "odd"
		if id%2 == 0 {
			kind = "even"
		}
		c.Meta = []byte(fmt.Sprintf(`{"step":%d,"kind":%q,"big":%v,"writes":{"n":1}}`, id-1, kind, id > 5))
		if id == 1 {
			snap(c)
		}
	})
	linear(t, s, "other", "", 0, 1, 3, 1)
	tests := []struct {
		name string
		o    graph.ListOptions
		want []int64
	}{
		{"all", graph.ListOptions{}, rng(10, 1)},
		{"limit", graph.ListOptions{Limit: 3}, []int64{10, 9, 8}},
		{"limit larger than the chain", graph.ListOptions{Limit: 50}, rng(10, 1)},
		{"before", graph.ListOptions{Before: 4}, []int64{3, 2, 1}},
		{"before the first", graph.ListOptions{Before: 1}, nil},
		{"before and limit", graph.ListOptions{Before: 8, Limit: 2}, []int64{7, 6}},
		{"source", graph.ListOptions{Source: "loop"}, []int64{10, 8, 6, 4, 2}},
		{"unknown source", graph.ListOptions{Source: "fork"}, nil},
		{"meta string", graph.ListOptions{Meta: map[string]string{"kind": "odd"}}, []int64{9, 7, 5, 3, 1}},
		{"meta number", graph.ListOptions{Meta: map[string]string{"step": "4"}}, []int64{5}},
		{"meta bool", graph.ListOptions{Meta: map[string]string{"big": "true"}}, rng(10, 6)},
		{"meta two keys", graph.ListOptions{Meta: map[string]string{"big": "false", "kind": "even"}}, []int64{4, 2}},
		{"meta missing key", graph.ListOptions{Meta: map[string]string{"nope": "x"}}, nil},
		{"meta wrong value", graph.ListOptions{Meta: map[string]string{"kind": "neither"}}, nil},
		{"meta and limit", graph.ListOptions{Meta: map[string]string{"kind": "even"}, Limit: 2}, []int64{10, 8}},
		{"meta, source, before and limit", graph.ListOptions{Meta: map[string]string{"big": "true"}, Source: "update", Before: 9, Limit: 5}, []int64{7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(t, s, "th", "", tc.o); !eqIDs(got, tc.want) {
				t.Errorf("List(%+v) = %v, want %v", tc.o, got, tc.want)
			}
		})
	}
}

func testPendingWrites(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	// Writes arrive out of order, across batches, with repeats; Load sorts
	// them by (task, idx) and keeps the first value of a repeated key.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", Checkpoints: []*graph.StoredCheckpoint{snap(mkcp(1, 0))},
		Writes: []graph.PendingWrite{wr(1, 2, 0, "c", "2/0"), wr(1, 0, 1, "b", "0/1"), wr(1, 0, 1, "b", "dup in batch")}})
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 1,
		Writes: []graph.PendingWrite{wr(1, 0, 0, "a", "0/0"), wr(1, -1, -3, "__error__", "boom"), wr(1, 2, 0, "c", "re-put")}})
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 1,
		Writes: []graph.PendingWrite{wr(1, 0, 0, "a", "re-put again"), wr(1, 1, -1, "__interrupt__", "ask"), wr(1, 1, 0, "empty", "")}})
	want := "[1 -1/-3 __error__=boom][1 0/0 a=0/0][1 0/1 b=0/1][1 1/-1 __interrupt__=ask][1 1/0 empty=][1 2/0 c=2/0]"
	ch := wantLoad(t, s, "th", "", 0, 1, []int64{1})
	if got := writesString(ch.Checkpoints[0].Writes); got != want {
		t.Fatalf("writes = %s\nwant     %s", got, want)
	}
	// The next commit brings the parent's remaining writes and its own
	// checkpoint in one batch; writes of the new checkpoint may come along.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 1, Checkpoints: []*graph.StoredCheckpoint{mkcp(2, 1)},
		Writes: []graph.PendingWrite{wr(1, 3, 0, "d", "3/0"), wr(2, 0, 0, "e", "next")}})
	ch = wantLoad(t, s, "th", "", 0, 2, []int64{1, 2})
	if got := writesString(ch.Checkpoints[0].Writes); got != want+"[1 3/0 d=3/0]" {
		t.Errorf("writes of 1 = %s", got)
	}
	if got := writesString(ch.Checkpoints[1].Writes); got != "[2 0/0 e=next]" {
		t.Errorf("writes of 2 = %s", got)
	}
	// Writes of one thread are invisible in another.
	linear(t, s, "other", "", 0, 1, 1, 1)
	if ws := load(t, s, "other", "", 0).Checkpoints[0].Writes; len(ws) != 0 {
		t.Errorf("other thread sees writes %s", writesString(ws))
	}
	_ = ctx
}

func testWritesOnly(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	linear(t, s, "th", "", 0, 1, 2, 100)
	tests := []struct {
		name string
		b    graph.Batch
		want error
	}{
		{"on the head", graph.Batch{ThreadID: "th", ExpectHead: 2, Writes: []graph.PendingWrite{wr(2, 0, 0, "a", "ok")}}, nil},
		{"for an older checkpoint", graph.Batch{ThreadID: "th", ExpectHead: 2, Writes: []graph.PendingWrite{wr(1, 0, 0, "a", "x")}}, graph.ErrConflict},
		{"one of several not on the head", graph.Batch{ThreadID: "th", ExpectHead: 2, Writes: []graph.PendingWrite{wr(2, 5, 0, "a", "x"), wr(1, 5, 0, "a", "x")}}, graph.ErrConflict},
		{"stale expected head", graph.Batch{ThreadID: "th", ExpectHead: 1, Writes: []graph.PendingWrite{wr(1, 0, 0, "a", "x")}}, graph.ErrConflict},
		{"new thread", graph.Batch{ThreadID: "new", Writes: []graph.PendingWrite{wr(0, 0, 0, "a", "x")}}, graph.ErrConflict},
		{"empty batch on the head", graph.Batch{ThreadID: "th", ExpectHead: 2}, nil},
		{"empty batch on a stale head", graph.Batch{ThreadID: "th", ExpectHead: 1}, graph.ErrConflict},
		{"empty batch on a new thread", graph.Batch{ThreadID: "new2"}, nil},
	}
	for _, tc := range tests {
		b := tc.b
		err := s.Commit(ctx, &b)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	ch := wantLoad(t, s, "th", "", 0, 2, []int64{1, 2})
	if got := writesString(ch.Checkpoints[1].Writes); got != "[2 0/0 a=ok]" {
		t.Errorf("writes of 2 = %s", got)
	}
	if ws := ch.Checkpoints[0].Writes; len(ws) != 0 {
		t.Errorf("writes of 1 = %s", writesString(ws))
	}
	for _, th := range []string{"new", "new2"} {
		_, err := s.Load(ctx, th, "", 0)
		wantErr(t, "Load after a failed or empty batch", err, graph.ErrNotFound)
	}
}

func testNamespaces(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	// The same ids in three namespaces of one thread and in another thread.
	for _, ns := range []string{"", "sub", "sub|inner"} {
		var head int64
		for id := int64(1); id <= 3; id++ {
			c := snap(mkcp(id, head))
			c.Delta = []byte(ns + fmt.Sprint(id))
			mustCommit(t, s, &graph.Batch{ThreadID: "th", NS: ns, ExpectHead: head, Checkpoints: []*graph.StoredCheckpoint{c},
				Writes: []graph.PendingWrite{wr(id, 0, 0, "ns", ns)}})
			head = id
		}
	}
	linear(t, s, "th2", "sub", 0, 1, 5, 1)
	for _, ns := range []string{"", "sub", "sub|inner"} {
		ch := wantLoad(t, s, "th", ns, 0, 3, []int64{3})
		c := ch.Checkpoints[0]
		if c.NS != ns || string(c.Delta) != ns+"3" || writesString(c.Writes) != "[3 0/0 ns="+ns+"]" {
			t.Errorf("ns %q: got ns %q delta %q writes %s", ns, c.NS, c.Delta, writesString(c.Writes))
		}
		if got := list(t, s, "th", ns, graph.ListOptions{}); !eqIDs(got, []int64{3, 2, 1}) {
			t.Errorf("List ns %q = %v", ns, got)
		}
	}
	// A head move in one namespace does not move another's.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", NS: "sub", ExpectHead: 3, Checkpoints: []*graph.StoredCheckpoint{mkcp(4, 3)}})
	wantLoad(t, s, "th", "", 0, 3, []int64{3})
	err := s.Commit(ctx, &graph.Batch{ThreadID: "th", NS: "", ExpectHead: 4, Checkpoints: []*graph.StoredCheckpoint{mkcp(5, 4)}})
	wantErr(t, "commit on the root with the subgraph's head", err, graph.ErrConflict)

	if err := s.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "sub", "sub|inner"} {
		_, err := s.Load(ctx, "th", ns, 0)
		wantErr(t, "Load of a deleted thread", err, graph.ErrThreadDeleted)
		if got := list(t, s, "th", ns, graph.ListOptions{}); len(got) != 0 {
			t.Errorf("List of deleted ns %q = %v", ns, got)
		}
	}
	wantLoad(t, s, "th2", "sub", 0, 5, []int64{5})
}

func testCompareAndSet(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	linear(t, s, "th", "", 0, 1, 3, 1)
	tests := []struct {
		name string
		b    graph.Batch
		want error
	}{
		{"stale head", graph.Batch{ExpectHead: 2, Checkpoints: []*graph.StoredCheckpoint{mkcp(4, 2)}}, graph.ErrConflict},
		{"new-chain head on an existing chain", graph.Batch{ExpectHead: 0, Checkpoints: []*graph.StoredCheckpoint{mkcp(4, 0)}}, graph.ErrConflict},
		{"future head", graph.Batch{ExpectHead: 9, Checkpoints: []*graph.StoredCheckpoint{mkcp(10, 9)}}, graph.ErrConflict},
		{"id taken", graph.Batch{ExpectHead: 3, Checkpoints: []*graph.StoredCheckpoint{mkcp(2, 3)}}, graph.ErrConflict},
		{"id taken later in the batch", graph.Batch{ExpectHead: 3, Checkpoints: []*graph.StoredCheckpoint{mkcp(7, 3), mkcp(1, 7)}}, graph.ErrConflict},
		{"missing parent", graph.Batch{ExpectHead: 3, Checkpoints: []*graph.StoredCheckpoint{mkcp(8, 6)}}, graph.ErrNotFound},
	}
	for _, tc := range tests {
		b := tc.b
		b.ThreadID = "th"
		b.Writes = []graph.PendingWrite{wr(3, 9, 9, "leak", "x")}
		b.Finished = true
		if err := s.Commit(ctx, &b); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	// Nothing of the failed batches was stored.
	ch := wantLoad(t, s, "th", "", 0, 3, []int64{3})
	if len(ch.Checkpoints[0].Writes) != 0 {
		t.Errorf("a failed batch left writes: %s", writesString(ch.Checkpoints[0].Writes))
	}
	if got := list(t, s, "th", "", graph.ListOptions{}); !eqIDs(got, []int64{3, 2, 1}) {
		t.Errorf("List = %v", got)
	}
	// A failed batch on a new thread creates nothing.
	err := s.Commit(ctx, &graph.Batch{ThreadID: "new", ExpectHead: 0, Checkpoints: []*graph.StoredCheckpoint{mkcp(2, 1)}})
	wantErr(t, "new chain with a missing parent", err, graph.ErrNotFound)
	_, err = s.Load(ctx, "new", "", 0)
	wantErr(t, "Load after a failed first commit", err, graph.ErrNotFound)
	// A multi-checkpoint batch moves the head to its last checkpoint.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 3, Checkpoints: []*graph.StoredCheckpoint{mkcp(4, 3), mkcp(5, 4), mkcp(6, 5)}})
	wantLoad(t, s, "th", "", 0, 6, []int64{3, 4, 5, 6})
	// A new root (parent 0) on an existing chain is allowed.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 6, Checkpoints: []*graph.StoredCheckpoint{snap(mkcp(7, 0))}})
	wantLoad(t, s, "th", "", 0, 7, []int64{7})
}

func testInvalidBatch(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	linear(t, s, "th", "", 0, 1, 1, 1)
	tests := []struct {
		name string
		cps  []*graph.StoredCheckpoint
	}{
		{"zero id", []*graph.StoredCheckpoint{mkcp(0, 1)}},
		{"negative id", []*graph.StoredCheckpoint{mkcp(-2, 1)}},
		{"id twice", []*graph.StoredCheckpoint{mkcp(2, 1), mkcp(2, 2)}},
		{"broken chain in the batch", []*graph.StoredCheckpoint{mkcp(2, 1), mkcp(3, 1)}},
	}
	for _, tc := range tests {
		err := s.Commit(ctx, &graph.Batch{ThreadID: "th", ExpectHead: 1, Checkpoints: tc.cps})
		if err == nil {
			t.Errorf("%s: Commit succeeded", tc.name)
		}
	}
	wantLoad(t, s, "th", "", 0, 1, []int64{1})
	if got := list(t, s, "th", "", graph.ListOptions{}); !eqIDs(got, []int64{1}) {
		t.Errorf("List = %v", got)
	}
}

func testForks(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	// 1(S) → 2 → 3, with writes on 1 and 2.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", Checkpoints: []*graph.StoredCheckpoint{snap(mkcp(1, 0)), mkcp(2, 1), mkcp(3, 2)},
		Writes: []graph.PendingWrite{wr(1, 0, 0, "w", "1"), wr(2, 0, 0, "w", "2")}})
	// Fork A from 1: head 3 → 4 (parent 1).
	a := mkcp(4, 1)
	a.Source = "fork"
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 3, Checkpoints: []*graph.StoredCheckpoint{a, mkcp(5, 4)},
		Writes: []graph.PendingWrite{wr(4, 0, 0, "w", "A")}})
	// Fork B, a sibling from 1 too: head 5 → 6 (parent 1).
	b := mkcp(6, 1)
	b.Source = "fork"
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 5, Checkpoints: []*graph.StoredCheckpoint{b},
		Writes: []graph.PendingWrite{wr(6, 0, 0, "w", "B")}})
	// A fork needs the current head as ExpectHead even when its parent is old.
	err := s.Commit(ctx, &graph.Batch{ThreadID: "th", ExpectHead: 1, Checkpoints: []*graph.StoredCheckpoint{mkcp(7, 1)}})
	wantErr(t, "fork with a stale head", err, graph.ErrConflict)
	err = s.Commit(ctx, &graph.Batch{ThreadID: "th", ExpectHead: 6, Checkpoints: []*graph.StoredCheckpoint{mkcp(7, 42)}})
	wantErr(t, "fork from a missing checkpoint", err, graph.ErrNotFound)

	tests := []struct {
		id     int64
		chain  []int64
		writes []string
	}{
		{0, []int64{1, 6}, []string{"[1 0/0 w=1]", "[6 0/0 w=B]"}},
		{6, []int64{1, 6}, []string{"[1 0/0 w=1]", "[6 0/0 w=B]"}},
		{5, []int64{1, 4, 5}, []string{"[1 0/0 w=1]", "[4 0/0 w=A]", ""}},
		{3, []int64{1, 2, 3}, []string{"[1 0/0 w=1]", "[2 0/0 w=2]", ""}},
	}
	for _, tc := range tests {
		ch := wantLoad(t, s, "th", "", tc.id, 6, tc.chain)
		for i, c := range ch.Checkpoints {
			if got := writesString(c.Writes); got != tc.writes[i] {
				t.Errorf("Load(%d): writes of %d = %s, want %s", tc.id, c.ID, got, tc.writes[i])
			}
		}
	}
	if got := list(t, s, "th", "", graph.ListOptions{}); !eqIDs(got, rng(6, 1)) {
		t.Errorf("List = %v", got)
	}
	if got := list(t, s, "th", "", graph.ListOptions{Source: "fork"}); !eqIDs(got, []int64{6, 4}) {
		t.Errorf("List(fork) = %v", got)
	}
	// Writes go only to the head: the abandoned branch's checkpoint refuses them.
	err = s.Commit(ctx, &graph.Batch{ThreadID: "th", ExpectHead: 6, Writes: []graph.PendingWrite{wr(5, 0, 0, "w", "late")}})
	wantErr(t, "writes to an abandoned branch", err, graph.ErrConflict)
	// Continuing the new branch works as usual.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 6, Checkpoints: []*graph.StoredCheckpoint{mkcp(7, 6)}})
	wantLoad(t, s, "th", "", 0, 7, []int64{1, 6, 7})
}

func testDeleteThread(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	linear(t, s, "th", "", 0, 1, 3, 1)
	linear(t, s, "th", "sub", 0, 1, 2, 1)
	linear(t, s, "keep", "", 0, 1, 2, 100)
	if err := s.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, "th"); err != nil {
		t.Fatalf("second DeleteThread: %v", err)
	}
	if err := s.DeleteThread(ctx, "never-existed"); err != nil {
		t.Fatalf("DeleteThread of an unknown thread: %v", err)
	}
	checkDeleted(t, s, "th", 3)
	checkDeleted(t, s, "never-existed", 0)
	wantLoad(t, s, "keep", "", 0, 2, []int64{1, 2})
	// Retention calls on a deleted thread find nothing.
	err := s.PutSnapshot(ctx, "th", "", 3, []byte("s"))
	wantErr(t, "PutSnapshot on a deleted thread", err, graph.ErrNotFound)
	if n, err := s.DeleteBefore(ctx, "th", "", 10); err != nil || n != 0 {
		t.Errorf("DeleteBefore on a deleted thread = %d, %v", n, err)
	}
}

// testForgetThread: a forgotten thread loses every namespace, checkpoints
// and writes, and may start again from nothing (no tombstone); other
// threads keep theirs.
func testForgetThread(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	linear(t, s, "th", "", 0, 1, 3, 1)
	linear(t, s, "th", "sub", 0, 1, 2, 1)
	mustCommit(t, s, &graph.Batch{ThreadID: "th", NS: "", ExpectHead: 3, Writes: []graph.PendingWrite{wr(3, 0, 0, "ch", "secret")}})
	linear(t, s, "keep", "", 0, 1, 2, 100)
	if err := s.ForgetThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgetThread(ctx, "never-existed"); err != nil {
		t.Fatalf("ForgetThread of an unknown thread: %v", err)
	}
	for _, ns := range []string{"", "sub"} {
		_, err := s.Load(ctx, "th", ns, 0)
		wantErr(t, "Load of a forgotten thread", err, graph.ErrNotFound)
		if got := list(t, s, "th", ns, graph.ListOptions{}); len(got) != 0 {
			t.Errorf("List of forgotten ns %q = %v", ns, got)
		}
	}
	wantLoad(t, s, "keep", "", 0, 2, []int64{1, 2})
	// The thread starts again from nothing.
	linear(t, s, "th", "", 0, 1, 2, 1)
	wantLoad(t, s, "th", "", 0, 2, []int64{2})
}

// checkDeleted asserts that every way of writing to thread is refused with
// ErrThreadDeleted and that nothing of it can be read.
func checkDeleted(t *testing.T, s graph.Saver, thread string, oldHead int64) {
	t.Helper()
	ctx := ctxT(t)
	for _, ns := range []string{"", "sub", "fresh-ns"} {
		_, err := s.Load(ctx, thread, ns, 0)
		wantErr(t, "Load", err, graph.ErrThreadDeleted)
		if got := list(t, s, thread, ns, graph.ListOptions{}); len(got) != 0 {
			t.Errorf("List(%q, %q) = %v after delete", thread, ns, got)
		}
		for _, b := range []graph.Batch{
			{ExpectHead: oldHead, Checkpoints: []*graph.StoredCheckpoint{mkcp(oldHead+1, oldHead)}},
			{ExpectHead: 0, Checkpoints: []*graph.StoredCheckpoint{snap(mkcp(100, 0))}},
			{ExpectHead: oldHead, Writes: []graph.PendingWrite{wr(oldHead, 0, 0, "late", "x")}},
		} {
			b.ThreadID, b.NS = thread, ns
			wantErr(t, fmt.Sprintf("late Commit(ns %q, expect %d, %d cps)", ns, b.ExpectHead, len(b.Checkpoints)),
				s.Commit(ctx, &b), graph.ErrThreadDeleted)
		}
		wantErr(t, "late PutResume", s.PutResume(ctx, thread, ns, oldHead, wr(0, 0, -2, "__resume__", "yes")), graph.ErrThreadDeleted)
	}
}

func testDeletedNotResurrected(t *testing.T, h Harness) {
	a, b := h.Pair(t, Options{})
	ctx := ctxT(t)
	head := linear(t, b, "th", "", 0, 1, 5, 2)
	linear(t, b, "th", "sub", 0, 1, 1, 1)
	// Handle a deletes; b, which last saw head 5, comes back late.
	if err := a.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	checkDeleted(t, b, "th", head)
	checkDeleted(t, a, "th", head)
	// A pruned thread is gone without a tombstone, but a deleted one is
	// never pruned back to life.
	if _, err := a.PruneThreads(ctx, time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	checkDeleted(t, b, "th", head)
}

func testDeleteRacesCommits(t *testing.T, h Harness) {
	a, b := h.Pair(t, Options{})
	ctx := ctxT(t)
	const writers = 4
	for i := 0; i < writers; i++ {
		linear(t, b, "th", fmt.Sprintf("ns%d", i), 0, 1, 1, 1)
	}
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		namespaces  []string // every namespace a writer tried to create
		deletedSeen atomic.Int32
		committed   atomic.Int32
	)
	start := make(chan struct{})
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			ns := fmt.Sprintf("ns%d", i)
			head := int64(1)
			// Keep committing, on an existing namespace and on new ones,
			// until the delete is seen.
			for k := 0; k < 200; k++ {
				id := head + 1
				err := b.Commit(ctx, &graph.Batch{ThreadID: "th", NS: ns, ExpectHead: head, Checkpoints: []*graph.StoredCheckpoint{mkcp(id, head)},
					Writes: []graph.PendingWrite{wr(head, 0, 0, "w", "x")}})
				if err == nil {
					head = id
					committed.Add(1)
					fresh := fmt.Sprintf("new-%d-%d", i, k)
					mu.Lock()
					namespaces = append(namespaces, fresh)
					mu.Unlock()
					err = b.Commit(ctx, &graph.Batch{ThreadID: "th", NS: fresh, Checkpoints: []*graph.StoredCheckpoint{snap(mkcp(1, 0))}})
				}
				if errors.Is(err, graph.ErrThreadDeleted) {
					deletedSeen.Add(1)
					return
				}
				if err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
			}
		}(i)
	}
	close(start)
	time.Sleep(5 * time.Millisecond)
	if err := a.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d commits before the delete; %d writers saw it", committed.Load(), deletedSeen.Load())
	checkDeleted(t, a, "th", 1)
	checkDeleted(t, b, "th", 1)
	for _, ns := range namespaces {
		for _, s := range []graph.Saver{a, b} {
			if got := list(t, s, "th", ns, graph.ListOptions{}); len(got) != 0 {
				t.Fatalf("namespace %s, created during the delete, survived: %v", ns, got)
			}
		}
	}
}

func testConcurrentWriters(t *testing.T, h Harness) {
	a, b := h.Pair(t, Options{})
	ctx := ctxT(t)
	mustCommit(t, a, &graph.Batch{ThreadID: "th", Checkpoints: []*graph.StoredCheckpoint{snap(mkcp(1, 0))}})
	const (
		goroutines = 8
		target     = 40 // successful commits in all
	)
	var (
		nextID    atomic.Int64
		successes atomic.Int64
		conflicts atomic.Int64
		mu        sync.Mutex
		winners   = map[int64][]int64{} // expected head → ids committed on it
	)
	nextID.Store(1)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < goroutines; g++ {
		s := a
		if g%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for successes.Load() < target {
				ch, err := s.Load(ctx, "th", "", 0)
				if err != nil {
					t.Errorf("Load: %v", err)
					return
				}
				head := ch.Head
				id := nextID.Add(1)
				err = s.Commit(ctx, &graph.Batch{ThreadID: "th", ExpectHead: head,
					Checkpoints: []*graph.StoredCheckpoint{mkcp(id, head)},
					Writes:      []graph.PendingWrite{wr(id, 0, 0, "by", fmt.Sprint(id))}})
				switch {
				case err == nil:
					successes.Add(1)
					mu.Lock()
					winners[head] = append(winners[head], id)
					mu.Unlock()
				case errors.Is(err, graph.ErrConflict):
					conflicts.Add(1)
				default:
					t.Errorf("Commit: %v", err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	for head, ws := range winners {
		if len(ws) != 1 {
			t.Errorf("%d commits won on head %d: %v", len(ws), head, ws)
		}
	}
	// The stored history is one straight line: every checkpoint but the
	// first has a distinct parent, and walking back from the head visits
	// all of them.
	straightChain(t, b, a, "th", int(successes.Load()))
	t.Logf("%d commits, %d conflicts", successes.Load(), conflicts.Load())
}

// straightChain checks that thread, listed through ls and loaded through ld,
// holds one checkpoint per winning commit and one to start from, in a straight
// line: no checkpoint has two children, and walking back from the head visits
// them all.
func straightChain(t *testing.T, ls, ld graph.Saver, thread string, won int) {
	t.Helper()
	infos, err := ls.List(ctxT(t), thread, "", graph.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != won+1 {
		t.Fatalf("%d checkpoints stored, %d commits won", len(infos), won)
	}
	parentOf := map[int64]int64{}
	children := map[int64]int{}
	for _, in := range infos {
		parentOf[in.ID] = in.ParentID
		children[in.ParentID]++
	}
	for p, n := range children {
		if n > 1 {
			t.Errorf("checkpoint %d has %d children: the chain forked", p, n)
		}
	}
	n := 0
	for cur := load(t, ld, thread, "", 0).Head; cur != 0; cur = parentOf[cur] {
		n++
	}
	if n != len(infos) {
		t.Errorf("walk from the head visits %d of %d checkpoints", n, len(infos))
	}
}

func testPutResume(t *testing.T, h Harness) {
	clk := NewClock(t0)
	s := h.New(t, Options{Now: clk.Now})
	ctx := ctxT(t)
	linear(t, s, "th", "", 0, 1, 2, 100)
	resume := wr(999, 0, -4, "__resume__", "approve") // CheckpointID is set by the store
	tests := []struct {
		name   string
		thread string
		cp     int64
		w      graph.PendingWrite
		want   error
	}{
		{"unknown thread", "nobody", 2, resume, graph.ErrConflict},
		{"not the head", "th", 1, resume, graph.ErrConflict},
		{"unknown checkpoint", "th", 7, resume, graph.ErrConflict},
		{"first", "th", 2, resume, nil},
		{"second", "th", 2, wr(2, 0, -4, "__resume__", "reject"), graph.ErrAlreadyResumed},
		{"another interrupt", "th", 2, wr(2, 1, -4, "__resume__", "other"), nil},
	}
	for _, tc := range tests {
		err := s.PutResume(ctx, tc.thread, "", tc.cp, tc.w)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	// A resume keyed like an ordinary write already stored is refused too.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 2, Writes: []graph.PendingWrite{wr(2, 3, 0, "out", "done")}})
	wantErr(t, "resume over a write", s.PutResume(ctx, "th", "", 2, wr(2, 3, 0, "__resume__", "x")), graph.ErrAlreadyResumed)

	ch := wantLoad(t, s, "th", "", 0, 2, []int64{1, 2})
	if got := writesString(ch.Checkpoints[1].Writes); got != "[2 0/-4 __resume__=approve][2 1/-4 __resume__=other][2 3/0 out=done]" {
		t.Errorf("writes = %s", got)
	}
	// Once the head moves on, resuming the old checkpoint is a conflict.
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 2, Checkpoints: []*graph.StoredCheckpoint{mkcp(3, 2)}})
	wantErr(t, "resume after the head moved", s.PutResume(ctx, "th", "", 2, wr(2, 2, -4, "__resume__", "late")), graph.ErrConflict)
	// In a namespace it is addressed by namespace.
	linear(t, s, "th", "sub", 0, 1, 1, 1)
	if err := s.PutResume(ctx, "th", "sub", 1, resume); err != nil {
		t.Fatalf("resume in a namespace: %v", err)
	}
	wantErr(t, "resume in the wrong namespace", s.PutResume(ctx, "th", "", 1, resume), graph.ErrConflict)
}

func testPutResumeRace(t *testing.T, h Harness) {
	a, b := h.Pair(t, Options{})
	ctx := ctxT(t)
	linear(t, a, "th", "", 0, 1, 3, 1)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			errs[i] = s.PutResume(ctx, "th", "", 3, wr(3, 0, -4, "__resume__", fmt.Sprint(i)))
		}(i)
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("both %d and %d resumed", winner, i)
			}
			winner = i
		case !errors.Is(err, graph.ErrAlreadyResumed):
			t.Errorf("resume %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no resume succeeded")
	}
	ch := load(t, b, "th", "", 0)
	if got, want := writesString(ch.Checkpoints[len(ch.Checkpoints)-1].Writes), fmt.Sprintf("[3 0/-4 __resume__=%d]", winner); got != want {
		t.Errorf("stored resume = %s, want %s", got, want)
	}
}

func testKilledProcess(t *testing.T, h Harness) {
	a, b := h.Pair(t, Options{})
	linear(t, a, "th", "", 0, 1, 2, 100)
	// Process a finishes two of three tasks of step 2, saves their writes and
	// dies without another call.
	mustCommit(t, a, &graph.Batch{ThreadID: "th", ExpectHead: 2, Writes: []graph.PendingWrite{wr(2, 0, 0, "x", "task0")}})
	mustCommit(t, a, &graph.Batch{ThreadID: "th", ExpectHead: 2, Writes: []graph.PendingWrite{wr(2, 2, 0, "x", "task2"), wr(2, 2, 1, "y", "task2b")}})
	if a != b {
		closeHandle(t, a)
	}
	// Process b picks the thread up and sees exactly what a saved.
	ch := wantLoad(t, b, "th", "", 0, 2, []int64{1, 2})
	if got := writesString(ch.Checkpoints[1].Writes); got != "[2 0/0 x=task0][2 2/0 x=task2][2 2/1 y=task2b]" {
		t.Fatalf("writes seen by the second process = %s", got)
	}
	// It finishes task 1 and moves on.
	mustCommit(t, b, &graph.Batch{ThreadID: "th", ExpectHead: 2, Checkpoints: []*graph.StoredCheckpoint{mkcp(3, 2)},
		Writes: []graph.PendingWrite{wr(2, 1, 0, "x", "task1")}})
	wantLoad(t, b, "th", "", 0, 3, []int64{1, 2, 3})
}

func testSizeLimit(t *testing.T, h Harness) {
	const limit = 1000
	s := h.New(t, Options{MaxRecordBytes: limit})
	ctx := ctxT(t)
	big := bytes.Repeat([]byte("x"), limit+1)
	exact := bytes.Repeat([]byte("y"), limit)
	linear(t, s, "th", "", 0, 1, 1, 1)
	with := func(f func(*graph.StoredCheckpoint)) []*graph.StoredCheckpoint {
		c := mkcp(2, 1)
		f(c)
		return []*graph.StoredCheckpoint{c}
	}
	tests := []struct {
		name string
		b    graph.Batch
	}{
		{"snapshot", graph.Batch{Checkpoints: with(func(c *graph.StoredCheckpoint) { c.Snapshot = big })}},
		{"delta", graph.Batch{Checkpoints: with(func(c *graph.StoredCheckpoint) { c.Delta = big })}},
		{"next", graph.Batch{Checkpoints: with(func(c *graph.StoredCheckpoint) { c.Next = big })}},
		{"meta", graph.Batch{Checkpoints: with(func(c *graph.StoredCheckpoint) { c.Meta = big })}},
		{"write with a checkpoint", graph.Batch{Checkpoints: with(func(*graph.StoredCheckpoint) {}),
			Writes: []graph.PendingWrite{wr(1, 0, 0, "ok", "small"), {CheckpointID: 1, Task: 1, Channel: "big", Value: big}}}},
		{"write only", graph.Batch{Writes: []graph.PendingWrite{wr(1, 0, 0, "ok", "small"), {CheckpointID: 1, Task: 1, Channel: "big", Value: big}}}},
	}
	for _, tc := range tests {
		b := tc.b
		b.ThreadID, b.ExpectHead = "th", 1
		wantErr(t, tc.name, s.Commit(ctx, &b), graph.ErrTooLarge)
	}
	wantErr(t, "first commit", s.Commit(ctx, &graph.Batch{ThreadID: "new",
		Checkpoints: []*graph.StoredCheckpoint{{ID: 1, Snapshot: big}}}), graph.ErrTooLarge)
	wantErr(t, "PutResume", s.PutResume(ctx, "th", "", 1, graph.PendingWrite{Task: 0, Idx: -4, Value: big}), graph.ErrTooLarge)
	wantErr(t, "PutSnapshot", s.PutSnapshot(ctx, "th", "", 1, big), graph.ErrTooLarge)

	// Nothing of it was stored.
	ch := wantLoad(t, s, "th", "", 0, 1, []int64{1})
	if len(ch.Checkpoints[0].Writes) != 0 || string(ch.Checkpoints[0].Snapshot) != "snapshot-1" {
		t.Errorf("after refused writes: %+v writes %s", ch.Checkpoints[0], writesString(ch.Checkpoints[0].Writes))
	}
	_, err := s.Load(ctx, "new", "", 0)
	wantErr(t, "Load of a refused first commit", err, graph.ErrNotFound)

	// Exactly the limit is fine.
	c := mkcp(2, 1)
	c.Snapshot, c.Delta, c.Next, c.Meta = exact, exact, exact, []byte(`{"a":"`+string(exact[:limit-8])+`"}`)
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 1, Checkpoints: []*graph.StoredCheckpoint{c},
		Writes: []graph.PendingWrite{{CheckpointID: 2, Channel: "v", Value: exact}}})
	if err := s.PutResume(ctx, "th", "", 2, graph.PendingWrite{Task: 1, Idx: -4, Value: exact}); err != nil {
		t.Fatal(err)
	}
	ch = wantLoad(t, s, "th", "", 0, 2, []int64{2})
	got := ch.Checkpoints[0]
	if !bytes.Equal(got.Snapshot, exact) || !bytes.Equal(got.Delta, exact) || len(got.Writes) != 2 ||
		!bytes.Equal(got.Writes[0].Value, exact) || !bytes.Equal(got.Writes[1].Value, exact) {
		t.Errorf("records at the limit did not round-trip")
	}
}

func testRetention(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	ctx := ctxT(t)
	// 1(S) … 10, with a side branch 11 from 3, a write on every checkpoint,
	// and the head back on the main line at 12 (parent 10).
	var head int64
	b := &graph.Batch{ThreadID: "th"}
	for id := int64(1); id <= 10; id++ {
		c := mkcp(id, head)
		if id == 1 {
			snap(c)
		}
		b.Checkpoints = append(b.Checkpoints, c)
		b.Writes = append(b.Writes, wr(id, 0, 0, "w", fmt.Sprint(id)))
		head = id
	}
	mustCommit(t, s, b)
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 10, Checkpoints: []*graph.StoredCheckpoint{mkcp(11, 3)},
		Writes: []graph.PendingWrite{wr(11, 0, 0, "w", "11")}})
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 11, Checkpoints: []*graph.StoredCheckpoint{mkcp(12, 10)}})
	linear(t, s, "th", "sub", 0, 1, 10, 1)

	wantErr(t, "PutSnapshot of a missing checkpoint", s.PutSnapshot(ctx, "th", "", 99, []byte("s")), graph.ErrNotFound)
	wantErr(t, "PutSnapshot of a missing thread", s.PutSnapshot(ctx, "nobody", "", 1, []byte("s")), graph.ErrNotFound)
	mustSnapshot(t, s, "th", 7, []byte("state at 7"))
	wantLoad(t, s, "th", "", 0, 12, []int64{7, 8, 9, 10, 12})
	wantDeleted(t, s, "th", 7, 6)
	ch := wantLoad(t, s, "th", "", 0, 12, []int64{7, 8, 9, 10, 12})
	if string(ch.Checkpoints[0].Snapshot) != "state at 7" || writesString(ch.Checkpoints[0].Writes) != "[7 0/0 w=7]" {
		t.Errorf("after DeleteBefore: %q %s", ch.Checkpoints[0].Snapshot, writesString(ch.Checkpoints[0].Writes))
	}
	for _, id := range []int64{1, 6} {
		_, err := s.Load(ctx, "th", "", id)
		wantErr(t, fmt.Sprintf("Load(%d) after DeleteBefore", id), err, graph.ErrNotFound)
	}
	// The side branch lost its ancestors.
	_, err := s.Load(ctx, "th", "", 11)
	wantErr(t, "Load of an orphaned branch", err, graph.ErrNotFound)
	if got := list(t, s, "th", "", graph.ListOptions{}); !eqIDs(got, []int64{12, 11, 10, 9, 8, 7}) {
		t.Errorf("List = %v", got)
	}
	// Other namespaces are untouched; the chain goes on.
	wantLoad(t, s, "th", "sub", 0, 10, []int64{10})
	if got := list(t, s, "th", "sub", graph.ListOptions{}); len(got) != 10 {
		t.Errorf("List(sub) = %v", got)
	}
	mustCommit(t, s, &graph.Batch{ThreadID: "th", ExpectHead: 12, Checkpoints: []*graph.StoredCheckpoint{mkcp(13, 12)}})
	wantLoad(t, s, "th", "", 0, 13, []int64{7, 8, 9, 10, 12, 13})
	// A snapshot can be replaced and dropped again (nil).
	mustSnapshot(t, s, "th", 12, []byte("state at 12"))
	wantLoad(t, s, "th", "", 0, 13, []int64{12, 13})
	mustSnapshot(t, s, "th", 12, nil)
	wantLoad(t, s, "th", "", 0, 13, []int64{7, 8, 9, 10, 12, 13})
	wantDeleted(t, s, "nobody", 5, 0) // a missing thread
	wantDeleted(t, s, "th", 7, 0)     // again
}

// mustSnapshot stores snap as checkpoint id's snapshot (root namespace).
func mustSnapshot(t *testing.T, s graph.Saver, thread string, id int64, snap []byte) {
	t.Helper()
	if err := s.PutSnapshot(ctxT(t), thread, "", id, snap); err != nil {
		t.Fatalf("PutSnapshot(%s, %d): %v", thread, id, err)
	}
}

// wantDeleted runs DeleteBefore(id) on thread's root namespace and wants n
// checkpoints deleted.
func wantDeleted(t *testing.T, s graph.Saver, thread string, id int64, want int) {
	t.Helper()
	if n, err := s.DeleteBefore(ctxT(t), thread, "", id); err != nil || n != want {
		t.Fatalf("DeleteBefore(%s, %d) = %d, %v; want %d", thread, id, n, err, want)
	}
}

func testPruneThreads(t *testing.T, h Harness) {
	clk := NewClock(t0)
	a, b := h.Pair(t, Options{Now: clk.Now})
	ctx := ctxT(t)
	finish := func(s graph.Saver, thread, ns string, head, id int64, finished bool) {
		t.Helper()
		mustCommit(t, s, &graph.Batch{ThreadID: thread, NS: ns, ExpectHead: head, Checkpoints: []*graph.StoredCheckpoint{snap(mkcp(id, head))}, Finished: finished})
	}
	// At t0: old-done (finished), old-open (not finished), old-sub (only a
	// subgraph namespace), old-reopened (finished, then continued unfinished).
	finish(a, "old-done", "", 0, 1, true)
	finish(a, "old-done", "sub", 0, 1, false)
	finish(a, "old-open", "", 0, 1, false)
	finish(a, "old-sub", "sub", 0, 1, true)
	finish(a, "old-reopened", "", 0, 1, true)
	finish(a, "old-reopened", "", 1, 2, false)
	clk.Advance(2 * time.Hour)
	// At t0+2h: new-done (finished) and old-active (not finished).
	finish(b, "new-done", "", 0, 1, true)
	finish(b, "old-active", "", 0, 1, false)
	cut := t0.Add(time.Hour)
	clk.Advance(time.Hour)

	wantPruned(t, b, cut, true, 1, "old-done")
	for _, ns := range []string{"", "sub"} {
		_, err := a.Load(ctx, "old-done", ns, 0)
		wantErr(t, "Load of a pruned thread ns "+ns, err, graph.ErrNotFound)
	}
	wantLoad(t, a, "old-open", "", 0, 1, []int64{1})
	wantLoad(t, a, "old-reopened", "", 0, 2, []int64{2})

	wantPruned(t, a, cut, false, 2, "old-open, old-reopened")
	for _, th := range []string{"old-open", "old-reopened"} {
		_, err := b.Load(ctx, th, "", 0)
		wantErr(t, "Load of pruned "+th, err, graph.ErrNotFound)
	}
	// Threads without a root namespace and recent ones stay.
	wantLoad(t, b, "old-sub", "sub", 0, 1, []int64{1})
	wantLoad(t, b, "new-done", "", 0, 1, []int64{1})
	wantLoad(t, b, "old-active", "", 0, 1, []int64{1})
	wantPruned(t, a, cut, false, 0, "again")
	// A pruned thread id can start afresh (no tombstone).
	finish(b, "old-done", "", 0, 1, false)
	wantLoad(t, a, "old-done", "", 0, 1, []int64{1})

	// Writes and resumes count as activity.
	finish(a, "idle", "", 0, 1, false)
	clk.Advance(2 * time.Hour)
	mustCommit(t, a, &graph.Batch{ThreadID: "idle", ExpectHead: 1, Writes: []graph.PendingWrite{wr(1, 0, 0, "w", "x")}})
	wantPruned(t, a, clk.Now().Add(-time.Hour), false, 3, "new-done, old-active, old-done")
	wantLoad(t, b, "idle", "", 0, 1, []int64{1})
	clk.Advance(2 * time.Hour)
	if err := b.PutResume(ctx, "idle", "", 1, wr(1, 1, -4, "__resume__", "y")); err != nil {
		t.Fatal(err)
	}
	wantPruned(t, a, clk.Now().Add(-time.Hour), false, 0, "after a resume")
	wantPruned(t, a, clk.Now().Add(time.Second), false, 1, "idle; old-sub has no root namespace")
	_, err := b.Load(ctx, "idle", "", 0)
	wantErr(t, "Load of pruned idle", err, graph.ErrNotFound)
	wantLoad(t, b, "old-sub", "sub", 0, 1, []int64{1})
}

// wantPruned runs PruneThreads(cut, finished) and wants n threads pruned
// (which: the ones meant).
func wantPruned(t *testing.T, s graph.Saver, cut time.Time, finished bool, want int, which string) {
	t.Helper()
	if n, err := s.PruneThreads(ctxT(t), cut, finished); err != nil || n != want {
		t.Fatalf("PruneThreads(%v, finished=%v) = %d, %v; want %d (%s)", cut, finished, n, err, want, which)
	}
}

func testCanceledContext(t *testing.T, h Harness) {
	s := h.New(t, Options{})
	linear(t, s, "th", "", 0, 1, 1, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	checks := map[string]error{
		"Load":         func() error { _, err := s.Load(ctx, "th", "", 0); return err }(),
		"Commit":       s.Commit(ctx, &graph.Batch{ThreadID: "th", ExpectHead: 1, Checkpoints: []*graph.StoredCheckpoint{mkcp(2, 1)}}),
		"PutResume":    s.PutResume(ctx, "th", "", 1, wr(1, 0, -4, "r", "x")),
		"List":         func() error { _, err := s.List(ctx, "th", "", graph.ListOptions{}); return err }(),
		"DeleteThread": s.DeleteThread(ctx, "th"),
		"PutSnapshot":  s.PutSnapshot(ctx, "th", "", 1, []byte("s")),
		"DeleteBefore": func() error { _, err := s.DeleteBefore(ctx, "th", "", 1); return err }(),
		"PruneThreads": func() error { _, err := s.PruneThreads(ctx, time.Now().Add(time.Hour), false); return err }(),
	}
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v", name, err)
		}
	}
	ch := wantLoad(t, s, "th", "", 0, 1, []int64{1})
	if len(ch.Checkpoints[0].Writes) != 0 {
		t.Errorf("canceled calls left writes")
	}
}
