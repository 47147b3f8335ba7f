package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"deepresearch/tracing"
)

// Config is one Invoke.
type Config struct {
	ThreadID string
	// CheckpointID runs from this checkpoint instead of the head: the new
	// checkpoints branch off it (a fork); the head moves to the new branch.
	CheckpointID int64
	// Input starts a new turn: its writes are applied to the state and the
	// graph runs from Start. Without Input, the run continues from where the
	// thread is (after a crash, or after answering interrupts).
	Input []Write
	// Resume answers pending interrupts by ID. The key "" answers the only
	// pending interrupt. Each interrupt is answered once, across processes.
	Resume map[string]any
	// Events receives progress; nil discards it.
	Events func(Event)
	// MaxTasks bounds the tasks this Invoke may run (0: no bound).
	MaxTasks int
	// Meta is stored with every checkpoint of this Invoke (JSON object).
	Meta map[string]string

	ns string // subgraph namespace
}

// Result is where an Invoke stopped.
type Result[S any] struct {
	State        S
	CheckpointID int64
	Step         int
	// Interrupts lists the pauses waiting for answers; empty when the run
	// finished.
	Interrupts []Interrupt
	// Next names the nodes of the step that has not been completed yet (some
	// of its tasks may already have stored results); empty when finished.
	Next []string
}

// Interrupted reports whether the run paused for an answer.
func (r *Result[S]) Interrupted() bool { return len(r.Interrupts) > 0 }

type task[S any] struct {
	idx     int
	node    *node[S]
	spec    taskSpec
	arg     any
	writes  []Write
	raw     []rawWrite // restored from storage
	done    bool
	intr    *interruptErr
	err     error
	resumes map[int]json.RawMessage
	memo    *memoState
}

// cursor is the checkpoint a run stands at.
type cursor[S any] struct {
	id    int64
	step  int
	tasks []*task[S]
	// step-level interrupts: 0 none, else waiting/resolved
	beforeResolved bool
	afterPending   bool
	afterResolved  bool
	afterNodes     []string
	// a task's interrupt records restored from storage: task → index → payload
	taskIntr map[int]map[int]json.RawMessage
}

type run[S any] struct {
	g        *Graph[S]
	cfg      Config
	ns       string
	st       S
	cur      cursor[S]
	lastID   int64
	p        *persister
	emit     func(Event)
	started  int
	tasksRun int
	meta     []byte
	ranBuf   []string
	from     *Chain // the thread as the caller loaded it (InvokeFrom)
	fresh    bool   // the caller found the thread new (NewThread)
}

// special write indexes
const (
	idxStaticIntr   = -9
	idxStaticResume = -999
	taskBefore      = -3
	taskAfter       = -2
	taskInput       = -1
)

func idxIntr(n int) int   { return -10 - n }
func idxResume(n int) int { return -1000 - n }

// Invoke runs the graph on a thread until it finishes, pauses at an
// interrupt, or fails. With a Saver, everything it did is stored when it
// returns, and a failed or killed run continues from where it stopped when
// invoked again without Input.
func (g *Graph[S]) Invoke(ctx context.Context, cfg Config) (*Result[S], error) {
	return g.invoke(ctx, cfg, nil)
}

// InvokeFrom is Invoke on a thread whose head the caller has just read
// with State (head only): the run starts from that snapshot instead of
// loading the thread again, saving a round trip to the Saver. Answers are
// still stored once, as Invoke stores them (an answer another process gave
// since the snapshot is refused the same way); a fork (cfg.CheckpointID)
// loads as Invoke does.
func (g *Graph[S]) InvokeFrom(ctx context.Context, snap *Snapshot[S], cfg Config) (*Result[S], error) {
	if snap == nil || snap.chain == nil && !snap.fresh || snap.thread != cfg.ThreadID || cfg.CheckpointID != 0 {
		return g.Invoke(ctx, cfg)
	}
	return g.invoke(ctx, cfg, snap)
}

// invoke runs from the thread as the caller loaded it (from), or loads it
// (nil).
func (g *Graph[S]) invoke(ctx context.Context, cfg Config, from *Snapshot[S]) (*Result[S], error) {
	r := &run[S]{g: g, cfg: cfg, ns: cfg.ns, emit: cfg.Events}
	if from != nil {
		r.from, r.fresh = from.chain, from.fresh
	}
	if len(cfg.Meta) > 0 {
		m, err := json.Marshal(cfg.Meta)
		if err != nil {
			return nil, err
		}
		r.meta = m
	}
	return r.invokeAndStore(ctx)
}

func (r *run[S]) invokeAndStore(ctx context.Context) (*Result[S], error) {
	res, err := r.invoke(ctx)
	if r.p != nil {
		if cerr := r.p.close(); err == nil && cerr != nil {
			err = fmt.Errorf("graph: store the run: %w", cerr)
			res = nil
		}
	}
	return res, err
}

func (r *run[S]) invoke(ctx context.Context) (*Result[S], error) {
	g := r.g
	fresh := true
	var head int64
	if g.opts.Saver != nil {
		if r.cfg.ThreadID == "" {
			return nil, ErrNoThread
		}
		chain, err := r.load(ctx)
		switch {
		case errors.Is(err, ErrNotFound) && r.cfg.CheckpointID == 0:
		case err != nil:
			return nil, fmt.Errorf("graph: load thread %q: %w", r.cfg.ThreadID, err)
		default:
			if err := r.restore(chain); err != nil {
				return nil, err
			}
			fresh = false
			head = chain.Head
		}
		r.p = newPersister(g.opts.Saver, r.cfg.ThreadID, r.ns, head, g.opts.SnapshotRatio, g.opts.SnapshotEvery, r.emit)
		if !fresh {
			r.p.lastSnap, r.p.sinceSnap, r.p.sinceCount = chainCost(chain)
		}
	}
	if fresh {
		r.cur = cursor[S]{id: 0, step: -2}
	}
	r.started = r.cur.step

	if len(r.cfg.Input) > 0 {
		if err := r.startTurn(r.cfg.Input); err != nil {
			return nil, err
		}
	} else if len(r.cfg.Resume) > 0 {
		if err := r.resume(ctx); err != nil {
			return nil, err
		}
	} else if fresh {
		return nil, errors.New("graph: nothing to run: the thread is new and there is no input")
	}
	return r.loop(ctx)
}

// load reads the thread, or takes the chain the caller loaded (InvokeFrom).
func (r *run[S]) load(ctx context.Context) (*Chain, error) {
	switch {
	case r.fresh:
		return nil, ErrNotFound
	case r.from != nil:
		return r.from, nil
	}
	return r.g.opts.Saver.Load(ctx, r.cfg.ThreadID, r.ns, r.cfg.CheckpointID)
}

func chainCost(c *Chain) (last, since, count int) {
	first := c.Checkpoints[0]
	last = len(first.Snapshot) + len(first.Delta)
	for i, cp := range c.Checkpoints {
		if i > 0 {
			since += len(cp.Delta)
			count++
		}
		for _, w := range cp.Writes {
			since += len(w.Value) + len(w.Channel) + 8
		}
	}
	return last, since, count
}

// restore rebuilds the state and the cursor from a loaded chain.
func (r *run[S]) restore(c *Chain) error {
	cps := c.Checkpoints
	if len(cps) == 0 {
		return ErrNotFound
	}
	if err := r.replay(cps); err != nil {
		return err
	}
	last := cps[len(cps)-1]
	r.lastID = max(c.Head, last.ID)
	specs, err := decodeNext(last.Next)
	if err != nil {
		return err
	}
	cur := cursor[S]{id: last.ID, step: last.Step, taskIntr: map[int]map[int]json.RawMessage{}}
	for i, sp := range specs {
		t, err := r.newTask(i, sp.Node, nil, sp.Arg)
		if err != nil {
			return err
		}
		cur.tasks = append(cur.tasks, t)
	}
	for _, w := range last.Writes {
		cur.restoreWrite(w)
	}
	r.cur = cur
	return nil
}

// replay rebuilds the state from the chain's base and the deltas after it.
func (r *run[S]) replay(cps []*StoredCheckpoint) error {
	first := cps[0]
	if first.Snapshot != nil {
		if err := decodeSnapshot(first.Snapshot, &r.st); err != nil {
			return err
		}
	} else if err := r.applyRaw(nil, first.Delta); err != nil {
		return err
	}
	for i := 1; i < len(cps); i++ {
		var parentWrites []PendingWrite
		if cps[i].Source == "loop" {
			parentWrites = cps[i-1].Writes
		}
		if err := r.applyRaw(parentWrites, cps[i].Delta); err != nil {
			return fmt.Errorf("graph: replay checkpoint %d: %w", cps[i].ID, err)
		}
	}
	return nil
}

// restoreWrite marks a pending write of the cursor's checkpoint: a static
// interrupt or its answer, or a task's result, interrupt, memo or answer.
func (c *cursor[S]) restoreWrite(w PendingWrite) {
	switch {
	case w.Task == taskBefore && w.Idx == idxStaticResume:
		c.beforeResolved = true
	case w.Task == taskAfter && w.Idx == idxStaticIntr:
		c.afterPending = true
		_ = json.Unmarshal(w.Value, &c.afterNodes)
	case w.Task == taskAfter && w.Idx == idxStaticResume:
		c.afterResolved = true
	case w.Task >= 0 && w.Task < len(c.tasks):
		c.restoreTaskWrite(c.tasks[w.Task], w)
	}
}

func (c *cursor[S]) restoreTaskWrite(t *task[S], w PendingWrite) {
	switch {
	case w.Idx >= 0:
		t.done = true
		t.raw = append(t.raw, rawWrite{Task: w.Task, Idx: w.Idx, Channel: w.Channel, Value: w.Value})
	case w.Channel == interruptChannel:
		n := -10 - w.Idx
		if c.taskIntr[w.Task] == nil {
			c.taskIntr[w.Task] = map[int]json.RawMessage{}
		}
		c.taskIntr[w.Task][n] = w.Value
	case w.Channel == memoChannel:
		var rec memoRecord
		if json.Unmarshal(w.Value, &rec) == nil {
			if t.memo == nil {
				t.memo = &memoState{stored: map[string]json.RawMessage{}}
			}
			t.memo.stored[rec.Key] = rec.Value
			if n := memoBase - w.Idx + 1; n > t.memo.next {
				t.memo.next = n
			}
		}
	case w.Channel == resumeChannel:
		if t.resumes == nil {
			t.resumes = map[int]json.RawMessage{}
		}
		t.resumes[-1000-w.Idx] = w.Value
	}
}

// applyRaw applies stored writes (a parent's pending writes and a delta) in
// (task, idx) order.
func (r *run[S]) applyRaw(pending []PendingWrite, delta []byte) error {
	ws, err := decodeWrites(delta)
	if err != nil {
		return err
	}
	for _, w := range pending {
		ws = append(ws, rawWrite{Task: w.Task, Idx: w.Idx, Channel: w.Channel, Value: w.Value})
	}
	sortWrites(ws)
	for i, w := range ws {
		if w.Idx < 0 || w.Channel == gotoChannel || w.Channel == doneChannel {
			continue
		}
		if i > 0 && ws[i-1].Task == w.Task && ws[i-1].Idx == w.Idx {
			continue
		}
		if err := r.applyStored(w.Channel, w.Value); err != nil {
			return err
		}
	}
	return nil
}

// applyStored decodes a stored write to channel and applies it to the state.
func (r *run[S]) applyStored(channel string, value []byte) error {
	ch, ok := r.g.schema.channels[channel]
	if !ok {
		return fmt.Errorf("graph: stored write to unknown channel %q", channel)
	}
	v, err := ch.decode(value)
	if err != nil {
		return err
	}
	return ch.apply(&r.st, v)
}

func (r *run[S]) newTask(idx int, name string, arg any, rawArg []byte) (*task[S], error) {
	n := r.g.nodes[name]
	if n == nil {
		return nil, fmt.Errorf("graph: route to unknown node %q", name)
	}
	t := &task[S]{idx: idx, node: n, spec: taskSpec{Node: name, Arg: rawArg}, arg: arg}
	if rawArg != nil && arg == nil {
		if n.decodeArg == nil {
			return nil, fmt.Errorf("graph: node %q takes no argument", name)
		}
		a, err := n.decodeArg(rawArg)
		if err != nil {
			return nil, err
		}
		t.arg = a
	}
	return t, nil
}

// startTurn resets the PerTurn channels, applies input and makes the input
// checkpoint.
func (r *run[S]) startTurn(input []Write) error {
	input = r.g.schema.newTurn(input)
	for _, w := range input {
		if err := r.g.schema.apply(&r.st, w); err != nil {
			return fmt.Errorf("graph: input: %w", err)
		}
	}
	next, err := r.successors([]string{Start}, nil)
	if err != nil {
		return err
	}
	var inline []rawWrite
	if r.p != nil {
		for i, w := range input {
			raw, err := json.Marshal(w.Value)
			if err != nil {
				return fmt.Errorf("graph: input %q is not serialisable: %w", w.Channel, err)
			}
			inline = append(inline, rawWrite{Task: taskInput, Idx: i, Channel: w.Channel, Value: raw})
		}
	}
	r.newCheckpoint("input", next, inline, false, nil)
	return nil
}

// successors computes the next tasks after the given nodes ran (in order),
// from their static edges, routers (on the current state) and gotos.
func (r *run[S]) successors(ran []string, gotos [][]Route) ([]*task[S], error) {
	n := nextStep[S]{r: r}
	for i, name := range ran {
		for _, to := range r.g.edges[name] {
			if err := n.add(To(to)); err != nil {
				return nil, err
			}
		}
		for _, rt := range r.g.routers[name] {
			if err := n.addAll(rt(r.st)); err != nil {
				return nil, err
			}
		}
		if i < len(gotos) {
			if err := n.addAll(gotos[i]); err != nil {
				return nil, err
			}
		}
	}
	return n.tasks, nil
}

// nextStep collects the tasks of the next step.
type nextStep[S any] struct {
	r     *run[S]
	tasks []*task[S]
	seen  map[string]bool // nodes with a plain task; kept once the step is wide, small ones scan tasks
}

func (n *nextStep[S]) addAll(routes []Route) error {
	for _, rt := range routes {
		if err := n.add(rt); err != nil {
			return err
		}
	}
	return nil
}

// add adds the task rt leads to, unless it leads to End or to a node the
// step already runs (a Send always adds one).
func (n *nextStep[S]) add(rt Route) error {
	if rt.Node == End || !rt.send && n.planned(rt.Node) {
		return nil
	}
	t, err := n.r.routeTask(len(n.tasks), rt)
	if err != nil {
		return err
	}
	n.tasks = append(n.tasks, t)
	return nil
}

// planned reports whether the step already runs node as a plain task; if
// not, node is about to get one.
func (n *nextStep[S]) planned(node string) bool {
	if n.seen == nil && len(n.tasks) > 16 {
		n.seen = make(map[string]bool, len(n.tasks))
		for _, t := range n.tasks {
			if t.spec.Arg == nil && t.arg == nil {
				n.seen[t.node.name] = true
			}
		}
	}
	if n.seen != nil {
		if n.seen[node] {
			return true
		}
		n.seen[node] = true
		return false
	}
	for _, t := range n.tasks {
		if t.node.name == node && t.spec.Arg == nil && t.arg == nil && t.node.decodeArg == nil {
			return true
		}
	}
	return false
}

// routeTask makes the task rt leads to: a Send's task takes its argument
// (stored as JSON with a Saver); a worker only takes Sends.
func (r *run[S]) routeTask(idx int, rt Route) (*task[S], error) {
	var arg any
	if rt.send {
		arg = rt.Arg
	}
	t, err := r.newTask(idx, rt.Node, arg, nil)
	if err != nil {
		return nil, err
	}
	switch {
	case rt.send && t.node.decodeArg == nil:
		return nil, fmt.Errorf("graph: Send to %q, which reads the state (use AddWorker)", rt.Node)
	case rt.send && r.p != nil:
		raw, err := json.Marshal(rt.Arg)
		if err != nil {
			return nil, fmt.Errorf("graph: Send argument for %q is not serialisable: %w", rt.Node, err)
		}
		t.spec.Arg = raw
	case !rt.send && t.node.decodeArg != nil:
		return nil, fmt.Errorf("graph: node %q is a worker and needs Send", rt.Node)
	}
	return t, nil
}

func (r *run[S]) newCheckpoint(source string, next []*task[S], inline []rawWrite, finished bool, extra []PendingWrite) {
	r.lastID++
	parent := r.cur.id
	step := r.cur.step + 1
	r.cur = cursor[S]{id: r.lastID, step: step, tasks: next}
	if r.p != nil {
		specs := make([]taskSpec, len(next))
		for i, t := range next {
			specs[i] = t.spec
		}
		st := r.st
		sc := &StoredCheckpoint{ID: r.lastID, ParentID: parent, Step: step, Source: source, Next: encodeNext(specs), Meta: r.meta}
		r.p.add(pItem{cp: &pCheckpoint{
			sc: sc, inline: inline, loop: source == "loop", finished: finished, extra: extra,
			snapshot: func() ([]byte, error) { return encodeSnapshot(&st) },
		}})
		if r.g.opts.Durability == DurabilitySync {
			// the error, if any, is sticky and stops the loop
			_ = r.p.flush()
		}
	}
	if r.emit != nil && r.p == nil {
		r.emit(Event{Kind: EventCheckpoint, ThreadID: r.cfg.ThreadID, NS: r.ns, CheckpointID: r.lastID, Step: step})
	}
}

func (r *run[S]) interruptID(task string) string {
	id := "c" + strconv.FormatInt(r.cur.id, 10) + "-" + task
	if r.ns != "" {
		return r.ns + "/" + id
	}
	return id
}

// pending lists the cursor's unanswered interrupts.
func (r *run[S]) pending() []Interrupt {
	c := &r.cur
	if c.afterPending && !c.afterResolved {
		return []Interrupt{{ID: r.interruptID("a"), Kind: "after", Nodes: c.afterNodes, CheckpointID: c.id}}
	}
	var out []Interrupt
	if !c.beforeResolved && len(r.g.before) > 0 {
		var names []string
		for _, t := range c.tasks {
			if !t.done && r.g.before[t.node.name] && !slices.Contains(names, t.node.name) {
				names = append(names, t.node.name)
			}
		}
		if len(names) > 0 {
			out = append(out, Interrupt{ID: r.interruptID("b"), Kind: "before", Nodes: names, CheckpointID: c.id})
		}
	}
	for _, t := range c.tasks {
		for n, payload := range c.taskIntr[t.idx] {
			if _, answered := t.resumes[n]; answered || t.done {
				continue
			}
			out = append(out, Interrupt{
				ID: r.interruptID("t" + strconv.Itoa(t.idx) + "-" + strconv.Itoa(n)), Kind: "node",
				Nodes: []string{t.node.name}, Payload: payload, CheckpointID: c.id,
			})
		}
	}
	return out
}

// resume stores the answers (each exactly once) and marks them on the cursor.
func (r *run[S]) resume(ctx context.Context) error {
	if r.p == nil {
		return errors.New("graph: resuming needs a Saver")
	}
	pend := r.pending()
	for key, val := range r.cfg.Resume {
		in, err := answered(pend, key)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(val)
		if err != nil {
			return fmt.Errorf("graph: resume value: %w", err)
		}
		w, mark, err := r.answer(in, raw)
		if err != nil {
			return err
		}
		if err := r.g.opts.Saver.PutResume(ctx, r.cfg.ThreadID, r.ns, r.cur.id, w); err != nil {
			if errors.Is(err, ErrAlreadyResumed) || errors.Is(err, ErrConflict) {
				return fmt.Errorf("graph: interrupt %s: %w", in.ID, ErrAlreadyResumed)
			}
			return fmt.Errorf("graph: store answer to %s: %w", in.ID, err)
		}
		mark()
	}
	return nil
}

// answered finds the pending interrupt key answers ("" answers the only one).
func answered(pend []Interrupt, key string) (*Interrupt, error) {
	var in *Interrupt
	for i := range pend {
		if pend[i].ID == key || (key == "" && len(pend) == 1) {
			in = &pend[i]
		}
	}
	switch {
	case in != nil:
		return in, nil
	case key == "" && len(pend) > 1:
		return nil, fmt.Errorf("graph: %d interrupts are pending; answer each by id", len(pend))
	}
	return nil, fmt.Errorf("%w: %q (already answered, or never asked)", ErrNoInterrupt, key)
}

// answer returns the record that stores raw as the answer to in, and mark,
// which marks it answered on the cursor once it is stored.
func (r *run[S]) answer(in *Interrupt, raw json.RawMessage) (w PendingWrite, mark func(), err error) {
	w = PendingWrite{CheckpointID: r.cur.id, Channel: resumeChannel, Value: raw}
	switch in.Kind {
	case "before":
		w.Task, w.Idx = taskBefore, idxStaticResume
		return w, func() { r.cur.beforeResolved = true }, nil
	case "after":
		w.Task, w.Idx = taskAfter, idxStaticResume
		return w, func() { r.cur.afterResolved = true }, nil
	}
	var ti, n int
	if _, err := fmt.Sscanf(in.ID[len(r.interruptID("")):], "t%d-%d", &ti, &n); err != nil {
		return w, nil, fmt.Errorf("graph: bad interrupt id %q", in.ID)
	}
	w.Task, w.Idx = ti, idxResume(n)
	return w, func() {
		t := r.cur.tasks[ti]
		if t.resumes == nil {
			t.resumes = map[int]json.RawMessage{}
		}
		t.resumes[n] = raw
	}, nil
}

func (r *run[S]) result(intr []Interrupt) *Result[S] {
	res := &Result[S]{State: r.st, CheckpointID: r.cur.id, Step: r.cur.step, Interrupts: intr}
	for _, t := range r.cur.tasks {
		if !slices.Contains(res.Next, t.node.name) {
			res.Next = append(res.Next, t.node.name)
		}
	}
	return res
}

func (r *run[S]) loop(ctx context.Context) (*Result[S], error) {
	for {
		if p := r.pending(); len(p) > 0 {
			return r.interrupted(p)
		}
		if len(r.cur.tasks) == 0 {
			return r.result(nil), nil
		}
		if err := r.mayStep(ctx); err != nil {
			return nil, err
		}
		if err := r.runStep(ctx); err != nil {
			return nil, err
		}
		if err := r.stepDone(); err != nil {
			return nil, err
		}
		if intr := r.pending(); len(intr) > 0 {
			return r.interrupted(intr)
		}
		if err := r.advance(); err != nil {
			return nil, err
		}
	}
}

// mayStep reports why the run must not take another step: the step limit,
// a cancelled ctx, or a failed persister.
func (r *run[S]) mayStep(ctx context.Context) error {
	if r.cur.step-r.started >= r.g.opts.StepLimit {
		return fmt.Errorf("%w: %d supersteps without reaching the end (raise Options.StepLimit if the loop is meant to run longer)", ErrStepLimit, r.g.opts.StepLimit)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.p != nil {
		return r.p.failed()
	}
	return nil
}

// stepDone records the interrupts the step's tasks raised on the cursor and
// returns their errors.
func (r *run[S]) stepDone() error {
	var errs []error
	for _, t := range r.cur.tasks {
		if t.intr != nil {
			if r.cur.taskIntr == nil {
				r.cur.taskIntr = map[int]map[int]json.RawMessage{}
			}
			if r.cur.taskIntr[t.idx] == nil {
				r.cur.taskIntr[t.idx] = map[int]json.RawMessage{}
			}
			r.cur.taskIntr[t.idx][t.intr.index] = t.intr.payload
		}
		if t.err != nil {
			errs = append(errs, t.err)
		}
	}
	return errors.Join(errs...)
}

func (r *run[S]) interrupted(p []Interrupt) (*Result[S], error) {
	if r.p == nil {
		return nil, errors.New("graph: a node interrupted but the graph has no Saver to wait with")
	}
	if r.emit != nil {
		r.emit(Event{Kind: EventInterrupt, ThreadID: r.cfg.ThreadID, NS: r.ns, CheckpointID: r.cur.id, Step: r.cur.step, Interrupts: p})
	}
	return r.result(p), nil
}

// advance applies the step's writes in task order and moves to the next
// checkpoint.
func (r *run[S]) advance() error {
	tasks := r.cur.tasks
	ran := r.ranBuf[:0]
	for _, t := range tasks {
		ran = append(ran, t.node.name)
	}
	r.ranBuf = ran
	var gotos [][]Route
	var after []string
	for i, t := range tasks {
		if r.g.after[t.node.name] && !slices.Contains(after, t.node.name) {
			after = append(after, t.node.name)
		}
		routes, err := r.applyTask(t)
		if err != nil {
			return err
		}
		if len(routes) > 0 {
			if gotos == nil {
				gotos = make([][]Route, len(tasks))
			}
			gotos[i] = routes
		}
	}
	next, err := r.successors(ran, gotos)
	if err != nil {
		return err
	}
	var extra []PendingWrite
	if len(after) > 0 && r.p != nil {
		raw, _ := json.Marshal(after)
		extra = []PendingWrite{{CheckpointID: r.lastID + 1, Task: taskAfter, Idx: idxStaticIntr, Channel: interruptChannel, Value: raw}}
	}
	r.newCheckpoint("loop", next, nil, len(next) == 0 && len(extra) == 0, extra)
	if len(extra) > 0 {
		r.cur.afterPending = true
		r.cur.afterNodes = after
	}
	return nil
}

// applyTask applies a task's writes to the state (those it returned, or
// those restored from storage) and returns its gotos.
func (r *run[S]) applyTask(t *task[S]) ([]Route, error) {
	var gotos []Route
	if t.writes == nil && t.raw != nil {
		for _, w := range t.raw {
			switch w.Channel {
			case gotoChannel:
				rs, err := r.decodeRoutes(w.Value)
				if err != nil {
					return nil, err
				}
				gotos = append(gotos, rs...)
			case doneChannel:
			default:
				if err := r.applyStored(w.Channel, w.Value); err != nil {
					return nil, err
				}
			}
		}
		return gotos, nil
	}
	for _, w := range t.writes {
		if w.Channel == gotoChannel {
			rs, _ := w.Value.([]Route)
			gotos = append(gotos, rs...)
			continue
		}
		if err := r.g.schema.apply(&r.st, w); err != nil {
			return nil, fmt.Errorf("graph: node %q: %w", t.node.name, err)
		}
	}
	return gotos, nil
}

type routeJSON struct {
	Node string          `json:"node"`
	Arg  json.RawMessage `json:"arg,omitempty"`
	Send bool            `json:"send,omitempty"`
}

func (r *run[S]) encodeRoutes(rs []Route) ([]byte, error) {
	out := make([]routeJSON, len(rs))
	for i, rt := range rs {
		out[i] = routeJSON{Node: rt.Node, Send: rt.send}
		if rt.send {
			raw, err := json.Marshal(rt.Arg)
			if err != nil {
				return nil, err
			}
			out[i].Arg = raw
		}
	}
	return json.Marshal(out)
}

func (r *run[S]) decodeRoutes(raw []byte) ([]Route, error) {
	var in []routeJSON
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("graph: decode goto: %w", err)
	}
	out := make([]Route, len(in))
	for i, rj := range in {
		out[i] = Route{Node: rj.Node, send: rj.Send}
		if rj.Send {
			n := r.g.nodes[rj.Node]
			if n == nil || n.decodeArg == nil {
				return nil, fmt.Errorf("graph: goto Send to %q, not a worker", rj.Node)
			}
			a, err := n.decodeArg(rj.Arg)
			if err != nil {
				return nil, err
			}
			out[i].Arg = a
		}
	}
	return out, nil
}

// runStep runs every unfinished task of the cursor.
func (r *run[S]) runStep(ctx context.Context) error {
	var todo []*task[S]
	for _, t := range r.cur.tasks {
		if t.done {
			if r.emit != nil {
				r.emit(Event{Kind: EventTaskRestored, ThreadID: r.cfg.ThreadID, NS: r.ns, CheckpointID: r.cur.id, Step: r.cur.step, Node: t.node.name, Task: t.idx})
			}
			continue
		}
		t.intr, t.err = nil, nil
		todo = append(todo, t)
	}
	if r.cfg.MaxTasks > 0 && r.tasksRun+len(todo) > r.cfg.MaxTasks {
		return fmt.Errorf("%w: %d tasks allowed, %d run, %d more needed", ErrTaskLimit, r.cfg.MaxTasks, r.tasksRun, len(todo))
	}
	r.tasksRun += len(todo)
	st := r.st // the frozen state every task of the step sees
	if len(todo) == 1 {
		r.runTask(ctx, todo[0], &st)
		return nil
	}
	var wg sync.WaitGroup
	var sem chan struct{}
	if m := r.g.opts.MaxConcurrency; m > 0 && m < len(todo) {
		sem = make(chan struct{}, m)
	}
	for _, t := range todo {
		if sem != nil {
			sem <- struct{}{}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			r.runTask(ctx, t, &st)
		}()
	}
	wg.Wait()
	return nil
}

func (r *run[S]) callNode(ctx context.Context, t *task[S], st *S) (ws []Write, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("graph: node %q panicked: %v\n%s", t.node.name, p, debug.Stack())
		}
	}()
	return t.node.run(ctx, st, t.arg)
}

// newTaskCtx is what a task's node finds in its context: events, its
// answers and, with a Saver, its memo records, stored as they are made.
func (r *run[S]) newTaskCtx(t *task[S], base Event) *taskCtx {
	tc := &taskCtx{emit: r.emit, base: base, resumes: t.resumes}
	if r.p == nil {
		return tc
	}
	if t.memo == nil {
		t.memo = &memoState{stored: map[string]json.RawMessage{}}
	}
	cp, step := r.cur.id, r.cur.step
	t.memo.save = func(n int, rec []byte) error {
		r.p.add(pItem{writes: &pWrites{cp: cp, task: t.idx, node: t.node.name, step: step,
			ws: []rawWrite{{Task: t.idx, Idx: memoBase - n, Channel: memoChannel, Value: rec}}}})
		return r.p.flush()
	}
	tc.memo = t.memo
	return tc
}

// callNodeWithEvents is one attempt of a task, between its start and end
// events.
func (r *run[S]) callNodeWithEvents(ctx context.Context, t *task[S], st *S, base Event, attempt int) ([]Write, error) {
	if r.emit == nil {
		return r.callNode(ctx, t, st)
	}
	e := base
	e.Kind, e.Attempt = EventNodeStart, attempt
	r.emit(e)
	start := time.Now()
	ws, err := r.callNode(ctx, t, st)
	e.Kind, e.Duration, e.Err = EventNodeEnd, time.Since(start), err
	r.emit(e)
	return ws, err
}

func (r *run[S]) runTask(ctx context.Context, t *task[S], st *S) {
	base := Event{ThreadID: r.cfg.ThreadID, NS: r.ns, CheckpointID: r.cur.id, Step: r.cur.step, Node: t.node.name, Task: t.idx}
	tc := r.newTaskCtx(t, base)
	tctx := context.WithValue(ctx, taskCtxKey{}, tc)
	if r.g.tracer != nil {
		var span trace.Span
		tctx, span = r.taskSpan(tctx, t)
		defer func() { endTaskSpan(span, t) }()
	}
	pol := t.node.opts.retry
	for attempt := 1; ; attempt++ {
		tc.calls = 0
		ws, err := r.callNodeWithEvents(tctx, t, st, base, attempt)
		if err == nil {
			t.writes = ws
			t.done = true
			r.saveWrites(t, ws)
			return
		}
		var ie *interruptErr
		if errors.As(err, &ie) {
			t.intr = ie
			if r.p != nil {
				r.p.add(pItem{writes: &pWrites{cp: r.cur.id, task: t.idx, node: t.node.name, step: r.cur.step,
					ws: []rawWrite{{Task: t.idx, Idx: idxIntr(ie.index), Channel: interruptChannel, Value: ie.payload}}}})
			}
			return
		}
		if ctx.Err() != nil {
			t.err = ctx.Err()
			return
		}
		if attempt >= pol.MaxAttempts || (pol.RetryIf != nil && !pol.RetryIf(err)) {
			t.err = &NodeError{Node: t.node.name, Task: t.idx, Attempts: attempt, Err: err}
			return
		}
		r.g.log.Warn("node failed; retrying", "node", t.node.name, "attempt", attempt, "err", err)
		if r.g.tracer != nil {
			trace.SpanFromContext(tctx).AddEvent("retry", trace.WithAttributes(tracing.Attempts.Int(attempt), tracing.ErrorKind.String(errorType(err))))
		}
		if serr := r.g.opts.Sleep(ctx, pol.backoff(attempt, r.g.opts.Rand)); serr != nil {
			t.err = serr
			return
		}
	}
}

func (r *run[S]) saveWrites(t *task[S], ws []Write) {
	if r.p == nil {
		return
	}
	raw := make([]rawWrite, 0, len(ws))
	var err error
	for i, w := range ws {
		var v []byte
		if w.Channel == gotoChannel {
			rs, _ := w.Value.([]Route)
			v, err = r.encodeRoutes(rs)
		} else {
			if _, ok := r.g.schema.channels[w.Channel]; !ok {
				err = fmt.Errorf("graph: node %q wrote to undeclared channel %q", t.node.name, w.Channel)
			} else {
				v, err = json.Marshal(w.Value)
			}
		}
		if err != nil {
			t.err = fmt.Errorf("graph: node %q: write %q is not serialisable: %w", t.node.name, w.Channel, err)
			t.done = false
			return
		}
		raw = append(raw, rawWrite{Task: t.idx, Idx: i, Channel: w.Channel, Value: v})
	}
	if len(raw) == 0 {
		raw = append(raw, rawWrite{Task: t.idx, Idx: 0, Channel: doneChannel})
	}
	r.p.add(pItem{writes: &pWrites{result: true, cp: r.cur.id, task: t.idx, node: t.node.name, step: r.cur.step, ws: raw}})
	if r.g.opts.Durability == DurabilitySync {
		if err := r.p.flush(); err != nil {
			t.err = err
			t.done = false
		}
	}
}
