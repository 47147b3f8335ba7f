// Package graph is a durable graph runtime in the style of Pregel (and of
// LangGraph): nodes run in supersteps, the tasks of a step run in parallel on
// a frozen copy of the state, and their writes are applied through per-channel
// reducers in a fixed order once every task of the step has finished.
//
// With a Saver, every finished task's writes are stored as it finishes and a
// checkpoint is stored per superstep (as a delta, with snapshots now and
// then), so a run survives the process: it can be resumed from any process,
// paused at interrupts for a person's answer, inspected and forked.
//
// The package knows nothing of LLMs, Slack or SQL.
package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"deepresearch/clock"
	"deepresearch/tracing"
)

// Start and End are the virtual entry and exit of every graph.
const (
	Start = "__start__"
	End   = "__end__"
)

// NodeFunc is a node that reads the state. It must treat the state (and any
// slice or map inside it) as read-only and return its changes as writes.
type NodeFunc[S any] func(ctx context.Context, s S) ([]Write, error)

// Route is where a conditional edge, a router or Goto sends control: a node
// that reads the state (To) or a task with its own argument (Send).
type Route struct {
	Node string
	Arg  any
	send bool
}

// To routes to a node that reads the state. Several To routes to the same
// node in one step run it once.
func To(node string) Route { return Route{Node: node} }

// Send routes to a worker node with its own argument; every Send is a task of
// its own (map-reduce fan-out).
func Send(node string, arg any) Route { return Route{Node: node, Arg: arg, send: true} }

// Router picks the next nodes from the state after a step (a conditional edge).
type Router[S any] func(s S) []Route

const (
	gotoChannel      = "__goto__"
	doneChannel      = "__done__"
	interruptChannel = "__interrupt__"
	resumeChannel    = "__resume__"
)

// Goto is a write that routes control from inside a node, in addition to the
// node's edges.
func Goto(routes ...Route) Write { return Write{Channel: gotoChannel, Value: routes} }

// RetryPolicy retries a failing node. Interrupts and context cancellation are
// never retried.
type RetryPolicy struct {
	MaxAttempts int           // total attempts; <= 1 means no retry
	Initial     time.Duration // first backoff (default 500ms)
	Max         time.Duration // cap (default 30s)
	Multiplier  float64       // default 2
	Jitter      bool          // add up to 50% random jitter
	// RetryIf decides whether err is worth another attempt (nil: every error).
	RetryIf func(err error) bool
}

func (p RetryPolicy) backoff(attempt int, rnd func() float64) time.Duration {
	b := clock.Backoff{Initial: p.Initial, Max: p.Max, Factor: p.Multiplier}
	if b.Initial <= 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if p.Jitter {
		// Up to half again on top of the delay (the cap included) is a
		// delay half as long again of which a third is random.
		b.Initial, b.Max = b.Initial*3/2, b.Max*3/2
		b.Jitter, b.Rand = 1.0/3, rnd
	}
	return b.Delay(attempt)
}

// NodeOption configures one node.
type NodeOption func(*nodeOpts)

type nodeOpts struct {
	retry RetryPolicy
}

// WithRetry sets the node's retry policy.
func WithRetry(p RetryPolicy) NodeOption { return func(o *nodeOpts) { o.retry = p } }

type node[S any] struct {
	name      string
	run       func(ctx context.Context, s *S, arg any) ([]Write, error)
	decodeArg func([]byte) (any, error) // nil: the node reads the state
	opts      nodeOpts
}

// Builder assembles a graph. Its methods record mistakes and Compile reports
// them all at once.
type Builder[S any] struct {
	schema  *Schema[S]
	nodes   map[string]*node[S]
	edges   map[string][]string
	routers map[string][]Router[S]
	errs    []error
}

// New starts a graph over the state type S.
func New[S any](schema *Schema[S]) *Builder[S] {
	return &Builder[S]{
		schema:  schema,
		nodes:   map[string]*node[S]{},
		edges:   map[string][]string{},
		routers: map[string][]Router[S]{},
	}
}

func (b *Builder[S]) addNode(n *node[S], opts []NodeOption) {
	for _, o := range opts {
		o(&n.opts)
	}
	switch {
	case n.name == "" || n.name == Start || n.name == End:
		b.errs = append(b.errs, fmt.Errorf("graph: invalid node name %q", n.name))
	case b.nodes[n.name] != nil:
		b.errs = append(b.errs, fmt.Errorf("graph: node %q added twice", n.name))
	case b.schema.channels[n.name] != nil:
		b.errs = append(b.errs, fmt.Errorf("graph: node %q has the name of a channel", n.name))
	default:
		b.nodes[n.name] = n
	}
}

// AddNode adds a node that reads the state.
func (b *Builder[S]) AddNode(name string, fn NodeFunc[S], opts ...NodeOption) *Builder[S] {
	b.addNode(&node[S]{name: name, run: func(ctx context.Context, s *S, _ any) ([]Write, error) {
		return fn(ctx, *s)
	}}, opts)
	return b
}

// AddWorker adds a node that receives only the argument of a Send (the state
// is not passed). A is stored as JSON in checkpoints, so it must round-trip.
func AddWorker[S, A any](b *Builder[S], name string, fn func(ctx context.Context, arg A) ([]Write, error), opts ...NodeOption) {
	b.addNode(&node[S]{
		name: name,
		run: func(ctx context.Context, _ *S, arg any) ([]Write, error) {
			a, ok := arg.(A)
			if !ok {
				return nil, fmt.Errorf("graph: worker %q wants %T, got %T", name, *new(A), arg)
			}
			return fn(ctx, a)
		},
		decodeArg: func(raw []byte) (any, error) {
			var a A
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, fmt.Errorf("graph: decode argument of %q: %w", name, err)
			}
			return a, nil
		},
	}, opts)
}

// AddEdge adds a static edge. from may be Start; to may be End.
func (b *Builder[S]) AddEdge(from, to string) *Builder[S] {
	b.edges[from] = append(b.edges[from], to)
	return b
}

// AddConditionalEdges routes from a node with a router evaluated on the state
// after the node's step.
func (b *Builder[S]) AddConditionalEdges(from string, r Router[S]) *Builder[S] {
	b.routers[from] = append(b.routers[from], r)
	return b
}

// Durability says when writes reach the Saver.
type Durability int

const (
	// DurabilityAsync stores writes and checkpoints from a background writer
	// that batches whatever is queued into one transaction; Invoke returns
	// only after everything is stored. A task's writes are queued the moment
	// it finishes, so a crash loses at most the last few milliseconds.
	DurabilityAsync Durability = iota
	// DurabilitySync stores each task's writes before the step can end and
	// each checkpoint before the next step starts.
	DurabilitySync
)

func (d Durability) String() string {
	if d == DurabilitySync {
		return "sync"
	}
	return "async"
}

// Options configure a compiled graph.
type Options struct {
	Saver           Saver    // nil: no persistence (no resume, no interrupts across calls)
	InterruptBefore []string // pause before these nodes run
	InterruptAfter  []string // pause after these nodes ran
	StepLimit       int      // supersteps per Invoke; default 10,000
	Durability      Durability
	// MaxConcurrency caps the tasks of one step that run at once (0: no cap).
	MaxConcurrency int
	// SnapshotRatio: a full snapshot is stored once the deltas stored since
	// the last one exceed SnapshotRatio × its size (default 8), or after
	// SnapshotEvery checkpoints (default 256). Load cost stays O(state).
	SnapshotRatio int
	SnapshotEvery int
	Logger        *slog.Logger
	// Sleep waits between retries (default: a timer that honours ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0,1) for retry jitter (default math/rand).
	Rand func() float64
	// TracerProvider, when it records (tracing.Active), gives every task a
	// span named after its node, child of the span in the Invoke context;
	// a failed attempt that is retried is an event on it. nil: no spans.
	TracerProvider trace.TracerProvider
}

// DefaultStepLimit is the default number of supersteps one Invoke may run.
const DefaultStepLimit = 10000

// Graph is a compiled, immutable graph; it is safe for concurrent Invokes on
// different threads.
type Graph[S any] struct {
	schema  *Schema[S]
	nodes   map[string]*node[S]
	edges   map[string][]string
	routers map[string][]Router[S]
	before  map[string]bool
	after   map[string]bool
	opts    Options
	log     *slog.Logger
	tracer  trace.Tracer // nil: no spans
}

// Compile checks the graph and freezes it.
func (b *Builder[S]) Compile(opts Options) (*Graph[S], error) {
	errs := b.check()
	set := func(names []string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			if b.nodes[n] == nil {
				errs = append(errs, fmt.Errorf("graph: interrupt on unknown node %q", n))
			}
			m[n] = true
		}
		return m
	}
	g := &Graph[S]{
		schema:  b.schema,
		nodes:   b.nodes,
		edges:   b.edges,
		routers: b.routers,
		before:  set(opts.InterruptBefore),
		after:   set(opts.InterruptAfter),
		opts:    opts.withDefaults(),
		log:     opts.Logger,
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if tracing.Active(opts.TracerProvider) {
		g.tracer = opts.TracerProvider.Tracer("deepresearch/graph")
	}
	return g, nil
}

// check reports the builder's errors and every edge from or to a node that
// does not exist.
func (b *Builder[S]) check() []error {
	errs := slices.Clone(b.errs)
	known := func(n string) bool { return n == End || b.nodes[n] != nil }
	if len(b.edges[Start]) == 0 && len(b.routers[Start]) == 0 {
		errs = append(errs, errors.New("graph: no edge from Start"))
	}
	for from, tos := range b.edges {
		if from != Start && b.nodes[from] == nil {
			errs = append(errs, fmt.Errorf("graph: edge from unknown node %q", from))
		}
		for _, to := range tos {
			if !known(to) {
				errs = append(errs, fmt.Errorf("graph: edge %q → unknown node %q", from, to))
			}
		}
	}
	for from := range b.routers {
		if from != Start && b.nodes[from] == nil {
			errs = append(errs, fmt.Errorf("graph: conditional edges from unknown node %q", from))
		}
	}
	return errs
}

// withDefaults fills in the options left zero.
func (o Options) withDefaults() Options {
	if o.StepLimit <= 0 {
		o.StepLimit = DefaultStepLimit
	}
	if o.SnapshotRatio <= 0 {
		o.SnapshotRatio = 8
	}
	if o.SnapshotEvery <= 0 {
		o.SnapshotEvery = 256
	}
	if o.Sleep == nil {
		o.Sleep = clock.Real{}.Sleep
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	return o
}

// Errors of a run.
var (
	ErrStepLimit     = errors.New("graph: step limit reached")
	ErrTaskLimit     = errors.New("graph: task budget exhausted")
	ErrNoThread      = errors.New("graph: a Saver needs a thread id")
	ErrNoInterrupt   = errors.New("graph: no pending interrupt with that id")
	ErrPendingResume = errors.New("graph: the thread is waiting at an interrupt; resume it or start a new input")
)

// NodeError is a node's failure after its retries.
type NodeError struct {
	Node     string
	Task     int
	Attempts int
	Err      error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph: node %q failed after %d attempt(s): %v", e.Node, e.Attempts, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }
