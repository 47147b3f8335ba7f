// Package agent is the deep research agent: one graph (on package graph)
// with a coordinator that answers small talk and asks one clarifying
// question when needed, a planner, a supervisor that fans out researchers
// (each a durable subgraph looping select → execute → answer → reflect), a
// writer whose footnotes are checked against the pages actually read, and a
// reviewer whose feedback loops back to research or writing — under a token
// and a wall-clock budget, with optional approvals by a person.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"deepresearch/agent/citation"
	"deepresearch/agent/llm"
	"deepresearch/graph"
	"deepresearch/graph/memsaver"
	"deepresearch/tracing"
)

// Deps are the agent's collaborators. LLM is required; without Search the
// agent writes from the model's knowledge alone (and says so).
type Deps struct {
	LLM    LLM
	Search Searcher
	Fetch  Fetcher // nil: only search results that carry full text count as read
	Coder  Coder   // nil: no coding action
	// Saver stores the graph's checkpoints (nil: in memory, lost with the
	// process).
	Saver graph.Saver
	Notes NoteStore // nil: in memory
	// Logger defaults to slog.Default(); Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time

	// Workspace searches a requester's own workspace for requests that
	// bring access to it (Request.Workspace); nil: never.
	Workspace WorkspaceSearcher

	// Tools are external sources (MCP servers) the researchers may call
	// next to web search; nil: none.
	Tools ToolSource

	// Reports searches the team's finished reports that a run's audience
	// may see, next to every web search; nil: never.
	Reports PastReports
}

// Options tune the agent. Zero values take the defaults; the per-run limits
// (subtasks, rounds, tries, reviews) default by Request.Depth.
type Options struct {
	// TokenBudget per turn (default 1,000,000); ReserveFraction of it is
	// kept for the final report (default 0.15). A negative budget disables it.
	TokenBudget     int
	ReserveFraction float64
	// TimeBudget is the wall-clock budget of a turn (default 15 minutes).
	TimeBudget time.Duration

	MaxSubtasks   int // researchers per round
	MaxRounds     int // research rounds
	MaxTries      int // select → execute → answer → reflect loops per researcher
	MaxReviews    int // review rounds
	MaxIterations int // supervisor visits before the turn ends with its best draft
	// MinSources is the number of sources read below which the supervisor
	// sends the researchers out again while rounds are left (default 5).
	MinSources int
	// MaxQueries per step (default 3), MaxURLs read per step (default 5),
	// ResultsPerQuery asked of the search provider (default 5).
	MaxQueries      int
	MaxURLs         int
	ResultsPerQuery int
	// PageChars caps the text kept per page (default 40,000 characters);
	// ExcerptChars the part shown to the model (default 4,000).
	PageChars    int
	ExcerptChars int
	// MaxEvidence caps the evidence given to the writer (default 60).
	MaxEvidence int
	// TeamSize is the researchers per subtask of a run whose request names
	// none (default 1; see Request.TeamSize).
	TeamSize int
	// CitationMode drops (default) or flags footnotes that fail the check.
	CitationMode citation.Mode
	// MaxConcurrency caps the graph tasks of one step (0: no cap).
	MaxConcurrency int
	// RunModelCalls caps the model calls one run has in flight (default
	// DefaultRunModelCalls), ProcessModelCalls those of every run of this
	// Agent (default DefaultProcessModelCalls), HostFetches the pages one
	// run reads at once from one host (default DefaultHostFetches). A
	// negative value removes the cap.
	RunModelCalls     int
	ProcessModelCalls int
	HostFetches       int
	Durability        graph.Durability

	// TracerProvider traces each turn (see trace.go and package tracing);
	// nil or a no-op provider: no spans at all. TraceContent records
	// prompts, completions and search queries on the spans.
	TracerProvider trace.TracerProvider
	TraceContent   bool
}

type limits struct {
	subtasks, rounds, tries, reviews, iterations int
}

func (a *core) limits(d Depth) limits {
	l := limits{subtasks: 4, rounds: 2, tries: 3, reviews: 2}
	switch d {
	case DepthQuick:
		l = limits{subtasks: 2, rounds: 1, tries: 1, reviews: 1}
	case DepthDeep:
		l = limits{subtasks: 6, rounds: 3, tries: 3, reviews: 3}
	}
	o := a.opts
	for _, p := range []struct {
		dst *int
		v   int
	}{
		{&l.subtasks, o.MaxSubtasks}, {&l.rounds, o.MaxRounds}, {&l.tries, o.MaxTries}, {&l.reviews, o.MaxReviews},
	} {
		if p.v > 0 {
			*p.dst = p.v
		}
	}
	l.iterations = l.rounds + l.reviews + 3
	if o.MaxIterations > 0 {
		l.iterations = o.MaxIterations
	}
	return l
}

// Agent runs research threads. It is safe for concurrent use: one Agent
// serves every thread of a process. It holds the public API (Start,
// Resume, Continue, Cancel, Get, ForgetWorkspace), the graphs and the
// calls working on threads; the graphs' nodes are on the role types.
type Agent struct {
	*core
	g   *graph.Graph[State]
	sub *graph.Graph[rState]

	mu    sync.Mutex
	calls map[string]*call // by thread: the call working on it in this process

	planning    *planning
	writing     *writing
	researching *researching
}

// core is what every node of the graphs shares: the collaborators, the
// options and schemas, the model call limits, tracing, reading pages and
// the workspace credentials.
type core struct {
	llm    LLM
	search Searcher
	fetch  Fetcher
	coder  Coder
	notes  NoteStore
	log    *slog.Logger
	now    func() time.Time
	opts   Options
	sc     *schema
	rsc    *rSchema
	// modelCalls is the process-wide model call limit.
	modelCalls slots

	// workspace searches the requester's workspace (nil: no such search).
	workspace WorkspaceSearcher
	// tools are the external sources (nil: none).
	tools ToolSource
	past  PastReports

	tr           trace.Tracer // nil: tracing is off
	traceContent bool
	// tokens holds each thread's workspace credential for its turn, in
	// memory only (thread id -> string).
	tokens sync.Map
}

// planning holds the main graph's nodes up to the research: the
// coordinator, the planner, the plan's approval and the supervisor.
type planning struct{ *core }

// writing holds the main graph's nodes from the draft on: the writer, the
// reviewer, the draft's approval and finalize.
type writing struct{ *core }

// researching holds the nodes of the research subgraph (select, execute,
// answer, reflect).
type researching struct{ *core }

// Errors.
var (
	ErrEmptyQuestion = errors.New("agent: the question is empty")
	ErrNoThread      = errors.New("agent: a thread id is required")
	ErrWaiting       = errors.New("agent: the thread is waiting for an answer; resume it first")
	ErrUnknownThread = errors.New("agent: no such thread")
	// ErrNothingToContinue is Continue's answer when the thread has no
	// unfinished turn.
	ErrNothingToContinue = errors.New("agent: nothing to continue on the thread")
	// ErrBusy refuses a call on a thread that another call of this Agent
	// is working on.
	ErrBusy = errors.New("agent: the thread already has a call running in this process")
	// ErrCancelled is the cause given to the context of a call stopped by
	// Cancel; the call's error wraps it.
	ErrCancelled = errors.New("agent: the thread was cancelled")
)

// New builds an agent.
func New(d Deps, o Options) (*Agent, error) {
	if d.LLM == nil {
		return nil, errors.New("agent: Deps.LLM is required")
	}
	d = d.withDefaults()
	o = o.withDefaults()
	c := &core{llm: d.LLM, search: d.Search, fetch: d.Fetch, workspace: d.Workspace, tools: d.Tools, past: d.Reports, coder: d.Coder, notes: d.Notes,
		log: d.Logger, now: d.Now, opts: o, sc: newSchema(), rsc: newRSchema(), modelCalls: newSlots(o.ProcessModelCalls)}
	a := &Agent{core: c, calls: map[string]*call{}, planning: &planning{c}, writing: &writing{c}, researching: &researching{c}}
	gopts := graph.Options{Saver: d.Saver, MaxConcurrency: o.MaxConcurrency, Durability: o.Durability, Logger: d.Logger}
	if tracing.Active(o.TracerProvider) {
		a.tr, a.traceContent = o.TracerProvider.Tracer("deepresearch/agent"), o.TraceContent
		gopts.TracerProvider = o.TracerProvider
		if a.search != nil {
			a.search = tracedSearcher{next: a.search, tr: a.tr, content: o.TraceContent}
		}
	}
	sub, err := a.researching.buildResearcher(gopts)
	if err != nil {
		return nil, err
	}
	a.sub = sub
	if a.g, err = a.build(gopts); err != nil {
		return nil, err
	}
	return a, nil
}

// withDefaults fills the dependencies left nil: an in-memory saver and
// notes, slog's default logger, time.Now.
func (d Deps) withDefaults() Deps {
	if d.Saver == nil {
		d.Saver = memsaver.New(memsaver.Options{})
	}
	if d.Notes == nil {
		d.Notes = NewMemNotes()
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// withDefaults fills the budgets and limits left zero (or negative, for
// the per-step limits and the time budget).
func (o Options) withDefaults() Options {
	if o.TokenBudget == 0 {
		o.TokenBudget = llm.DefaultBudget
	}
	if o.ReserveFraction == 0 {
		o.ReserveFraction = llm.DefaultReserveFraction
	}
	if o.TimeBudget <= 0 {
		o.TimeBudget = 15 * time.Minute
	}
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.MinSources, 5)
	def(&o.MaxQueries, 3)
	def(&o.MaxURLs, 5)
	def(&o.ResultsPerQuery, 5)
	def(&o.PageChars, 40000)
	def(&o.ExcerptChars, 4000)
	def(&o.MaxEvidence, 60)
	for _, p := range []struct {
		v   *int
		def int
	}{{&o.RunModelCalls, DefaultRunModelCalls}, {&o.ProcessModelCalls, DefaultProcessModelCalls}, {&o.HostFetches, DefaultHostFetches}} {
		if *p.v == 0 {
			*p.v = p.def
		}
	}
	return o
}

// Node names of the main graph.
const (
	nCoordinator  = "coordinator"
	nClarify      = "clarify"
	nPlanner      = "planner"
	nApprovePlan  = "approve_plan"
	nSupervisor   = "supervisor"
	nResearcher   = "researcher"
	nWriter       = "writer"
	nReviewer     = "reviewer"
	nApproveDraft = "approve_draft"
	nFinalize     = "finalize"
	// nRoute names the model calls that decide a route (no node of its own:
	// the supervisor and the reviewer ask them).
	nRoute = "route"
)

func (a *Agent) build(opts graph.Options) (*graph.Graph[State], error) {
	sc := a.sc
	b := graph.New(sc.s)
	b.AddNode(nCoordinator, a.planning.coordinator)
	b.AddNode(nClarify, a.planning.clarify)
	b.AddNode(nPlanner, a.planning.planner)
	b.AddNode(nApprovePlan, a.planning.approvePlan)
	b.AddNode(nSupervisor, a.planning.supervisor)
	graph.AddSubgraphWorker(b, nResearcher, a.sub,
		func(t researchTask) []graph.Write { return []graph.Write{a.rsc.task.Set(t)} },
		a.researching.researchOut)
	b.AddNode(nWriter, a.writing.writer)
	b.AddNode(nReviewer, a.writing.reviewer)
	b.AddNode(nApproveDraft, a.writing.approveDraft)
	b.AddNode(nFinalize, a.writing.finalize)

	b.AddEdge(graph.Start, nCoordinator)
	b.AddConditionalEdges(nCoordinator, to(afterCoordinator))
	b.AddConditionalEdges(nClarify, to(afterClarify))
	b.AddConditionalEdges(nPlanner, to(afterPlanner))
	b.AddConditionalEdges(nApprovePlan, to(afterApprovePlan))
	b.AddConditionalEdges(nSupervisor, a.planning.routeSupervisor)
	b.AddEdge(nResearcher, nSupervisor)
	b.AddEdge(nWriter, nReviewer)
	b.AddConditionalEdges(nReviewer, to(afterReviewer))
	b.AddConditionalEdges(nApproveDraft, to(afterApproveDraft))
	b.AddEdge(nFinalize, graph.End)
	return b.Compile(opts)
}

// to routes to the one node next picks.
func to(next func(State) string) graph.Router[State] {
	return func(s State) []graph.Route { return []graph.Route{graph.To(next(s))} }
}

func afterCoordinator(s State) string {
	switch s.Intent {
	case IntentChat:
		return graph.End
	case IntentClarify:
		return nClarify
	case IntentRewrite:
		return nWriter
	}
	return nPlanner
}

func afterClarify(s State) string {
	if s.Next == NextCancel {
		return nFinalize
	}
	return nPlanner
}

func afterPlanner(s State) string {
	if s.Req.ApprovePlan {
		return nApprovePlan
	}
	return nSupervisor
}

func afterApprovePlan(s State) string {
	switch s.Next {
	case NextReplan:
		return nPlanner
	case NextCancel:
		return nFinalize
	}
	return nSupervisor
}

// revise is the node a draft goes back to for more work, or "" when it
// stands.
func revise(s State) string {
	switch s.Next {
	case NextWrite:
		return nWriter
	case NextResearch:
		return nSupervisor
	}
	return ""
}

func afterReviewer(s State) string {
	if next := revise(s); next != "" {
		return next
	}
	if s.Req.ApproveDraft {
		return nApproveDraft
	}
	return nFinalize
}

func afterApproveDraft(s State) string {
	if next := revise(s); next != "" {
		return next
	}
	return nFinalize
}

// Start runs a new question on a thread: the first one, or a follow-up on a
// thread that has finished its last turn. events (may be nil) receives
// progress; calls to it are serialised.
//
// A Request.Tag makes Start idempotent: when the thread's current turn has
// the same tag and has finished (done or replied), Start returns that turn
// without researching again; when it waits at an interrupt, Start returns
// the interrupt (instead of ErrWaiting) for the caller to show again.
func (a *Agent) Start(ctx context.Context, threadID string, req Request, events func(Event)) (*Result, error) {
	req.Question = strings.TrimSpace(req.Question)
	if req.Question == "" {
		return nil, ErrEmptyQuestion
	}
	if threadID == "" {
		return nil, ErrNoThread
	}
	res, err := a.runCall(ctx, threadID, func(ctx context.Context) (*Result, error) {
		return a.start(ctx, threadID, req, events)
	})
	a.forgetToken(threadID, res, err)
	return res, err
}

func (a *Agent) start(ctx context.Context, threadID string, req Request, events func(Event)) (*Result, error) {
	var prev State
	snap, err := a.g.State(ctx, threadID, 0)
	switch {
	case err == nil:
		prev = snap.State
		if req.Tag != "" && prev.Req.Tag == req.Tag {
			// the same request again (its caller lost the answer): the
			// turn it started is the answer
			if cur := a.result(threadID, prev, snap.Interrupts); len(cur.Interrupts) > 0 || finished(cur.Status) {
				a.log.Info("agent: start repeats the thread's current turn; returning it",
					"thread_id", threadID, "tag", req.Tag, "status", cur.Status)
				cur.Repeated = true
				return cur, nil
			}
		}
		if len(snap.Interrupts) > 0 {
			return nil, ErrWaiting
		}
	case errors.Is(err, graph.ErrNotFound):
		snap = graph.NewThread[State](threadID) // the graph need not look again
	default:
		return nil, fmt.Errorf("agent: load thread %s: %w", threadID, err)
	}
	a.keepToken(threadID, &req) // the state keeps the access, not the credential
	lang := req.Language
	if lang == "" {
		lang = DetectLanguage(req.Question)
	}
	treq := req
	treq.Language = lang
	ctx, end := a.traceTurn(ctx, callStart, threadID, prev, treq)
	in := a.sc.turnInput(prev, req, lang, a.now().Add(a.opts.TimeBudget), tracing.TraceParent(ctx))
	res, err := a.invoke(ctx, threadID, graph.Config{Input: in}, snap, 0, events)
	end(res, err)
	return res, err
}

// finished reports whether a turn with this status has ended with something
// to show.
func finished(s Status) bool { return s == StatusDone || s == StatusReplied }

// Resume answers pending interrupts (by Interrupt.ID; the key "" answers the
// only one) and runs on. It works from any process that shares the Saver;
// an interrupt is answered once. When the thread waits for nothing and its
// turn has ended (the interrupt was answered and the turn ran to its end,
// perhaps in another process), Resume returns that turn instead of failing.
func (a *Agent) Resume(ctx context.Context, threadID string, answers map[string]Answer, events func(Event)) (*Result, error) {
	if threadID == "" {
		return nil, ErrNoThread
	}
	if len(answers) == 0 {
		return nil, errors.New("agent: no answers to resume with")
	}
	res, err := a.runCall(ctx, threadID, func(ctx context.Context) (*Result, error) {
		return a.resume(ctx, threadID, answers, events)
	})
	a.forgetToken(threadID, res, err)
	return res, err
}

func (a *Agent) resume(ctx context.Context, threadID string, answers map[string]Answer, events func(Event)) (res *Result, err error) {
	snap, err := a.load(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if len(snap.Interrupts) == 0 {
		if cur := a.result(threadID, snap.State, nil); ended(cur.Status) {
			a.log.Info("agent: nothing waits for an answer and the turn has ended; returning it",
				"thread_id", threadID, "status", cur.Status)
			cur.Repeated = true
			return cur, nil
		}
	}
	rs := make(map[string]any, len(answers))
	for id, ans := range answers {
		rs[id] = ans
	}
	ctx, end := a.traceTurn(ctx, callResume, threadID, snap.State, snap.State.Req)
	defer func() { end(res, err) }()
	res, err = a.invoke(ctx, threadID, graph.Config{Resume: rs}, snap, turnUsage(snap.State), events)
	if errors.Is(err, graph.ErrAlreadyResumed) || errors.Is(err, graph.ErrNoInterrupt) && pending(snap, answers) {
		// Answered by another process since the load above: if that turn
		// has ended, it is the answer. (The one case that loads twice.)
		if snap, lerr := a.g.State(ctx, threadID, 0); lerr == nil && len(snap.Interrupts) == 0 {
			if cur := a.result(threadID, snap.State, nil); ended(cur.Status) {
				cur.Repeated = true
				return cur, nil
			}
		}
	}
	return res, err
}

// pending reports whether every interrupt answers names was pending in snap.
func pending(snap *graph.Snapshot[State], answers map[string]Answer) bool {
	for id := range answers {
		if id != "" && !slices.ContainsFunc(snap.Interrupts, func(in graph.Interrupt) bool { return in.ID == id }) {
			return false
		}
	}
	return true
}

// ended reports whether a turn with this status is over: finished or
// cancelled.
func ended(s Status) bool { return finished(s) || s == StatusCancelled }

// Continue runs a thread on from its last checkpoint, after a crash or a
// cancelled context. Work that finished before is not done again. It
// returns ErrNothingToContinue when the thread has no unfinished turn: it is
// unknown, its turn has ended (done, replied or cancelled), or it waits for
// an answer (Resume it).
func (a *Agent) Continue(ctx context.Context, threadID string, events func(Event)) (*Result, error) {
	if threadID == "" {
		return nil, ErrNoThread
	}
	res, err := a.runCall(ctx, threadID, func(ctx context.Context) (*Result, error) {
		return a.cont(ctx, threadID, events)
	})
	a.forgetToken(threadID, res, err)
	return res, err
}

func (a *Agent) cont(ctx context.Context, threadID string, events func(Event)) (*Result, error) {
	snap, err := a.load(ctx, threadID)
	if errors.Is(err, ErrUnknownThread) {
		return nil, fmt.Errorf("%w: %w", ErrNothingToContinue, err)
	}
	if err != nil {
		return nil, err
	}
	switch cur := a.result(threadID, snap.State, snap.Interrupts); {
	case len(snap.Interrupts) > 0:
		return nil, fmt.Errorf("%w: thread %s waits for an answer", ErrNothingToContinue, threadID)
	case cur.Status != "" || len(snap.Next) == 0:
		return nil, fmt.Errorf("%w: thread %s has ended its turn (%s)", ErrNothingToContinue, threadID, cur.Status)
	}
	ctx, end := a.traceTurn(ctx, callContinue, threadID, snap.State, snap.State.Req)
	res, err := a.invoke(ctx, threadID, graph.Config{}, snap, turnUsage(snap.State), events)
	end(res, err)
	return res, err
}

// Cancel stops the thread's current turn for good. A call working on the
// thread in this process is stopped (its context is cancelled with
// ErrCancelled) and Cancel waits for it to return, or for ctx. Then the
// cancellation is stored with the thread, so that it holds in every process
// sharing the Saver: pending interrupts are answered with ActionCancel, and a
// turn stopped in the middle is marked cancelled. Afterwards Continue finds
// nothing to continue and Start begins a new turn. Cancelling an unknown
// thread, or one whose turn has ended, does nothing.
func (a *Agent) Cancel(ctx context.Context, threadID string) error {
	if threadID == "" {
		return ErrNoThread
	}
	a.tokens.Delete(threadID)
	a.mu.Lock()
	c := a.calls[threadID]
	if c != nil && !c.cancelling {
		c.cancel(ErrCancelled)
	}
	a.mu.Unlock()
	if c != nil {
		// a Cancel already recording is waited for, not interrupted
		select {
		case <-c.done:
		case <-ctx.Done():
			return fmt.Errorf("agent: cancel %s: waiting for the running call to stop: %w", threadID, context.Cause(ctx))
		}
	}
	ctx, end, err := a.begin(ctx, threadID, true)
	if err != nil {
		// a call started after this Cancel: it begins a new turn, which
		// this Cancel is not about
		a.log.Info("agent: a new call started on the thread while cancelling; leaving it", "thread_id", threadID)
		return nil
	}
	defer end()
	if err := a.cancel(ctx, threadID); err != nil {
		return fmt.Errorf("agent: cancel %s: %w", threadID, err)
	}
	return nil
}

func (a *Agent) cancel(ctx context.Context, threadID string) error {
	snap, err := a.load(ctx, threadID)
	if errors.Is(err, ErrUnknownThread) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(snap.Interrupts) > 0 {
		rs := make(map[string]any, len(snap.Interrupts))
		for _, in := range snap.Interrupts {
			rs[in.ID] = Answer{Action: ActionCancel}
		}
		ctx, end := a.traceTurn(ctx, callCancel, threadID, snap.State, snap.State.Req)
		res, err := a.invoke(ctx, threadID, graph.Config{Resume: rs}, nil, turnUsage(snap.State), nil)
		end(res, err)
		if err != nil {
			return err
		}
		a.log.Info("agent: thread cancelled at its interrupt", "thread_id", threadID, "status", res.Status)
		return nil
	}
	if cur := a.result(threadID, snap.State, nil); cur.Status != "" || len(snap.Next) == 0 {
		return nil
	}
	// stopped in the middle: end the turn as finalize ends a cancelled one,
	// dropping the tasks that were left to run
	if _, err := a.g.UpdateState(ctx, threadID, append(a.writing.cancelWrites(snap.State), a.sc.next.Set(NextCancel)), nFinalize); err != nil {
		return err
	}
	a.log.Info("agent: unfinished turn cancelled", "thread_id", threadID)
	return nil
}

// Get returns where a thread stands without running it.
func (a *Agent) Get(ctx context.Context, threadID string) (*Result, error) {
	snap, err := a.load(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return a.result(threadID, snap.State, snap.Interrupts), nil
}

// load reads the thread's head; ErrUnknownThread when it has none.
func (a *Agent) load(ctx context.Context, threadID string) (*graph.Snapshot[State], error) {
	snap, err := a.g.State(ctx, threadID, 0)
	if errors.Is(err, graph.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownThread, threadID)
	}
	if err != nil {
		return nil, fmt.Errorf("agent: load thread %s: %w", threadID, err)
	}
	return snap, nil
}

// turnUsage is the tokens the thread's current turn has spent so far.
func turnUsage(s State) int { return s.Usage.Total() - s.TurnStart }

// call is one Start, Resume, Continue or Cancel working on a thread.
type call struct {
	cancel     context.CancelCauseFunc
	done       chan struct{}
	cancelling bool // a Cancel recording the cancellation
}

// runCall runs f as the one call on threadID (see begin), with the cause of a
// cancelled context on its error.
func (a *Agent) runCall(ctx context.Context, threadID string, f func(context.Context) (*Result, error)) (*Result, error) {
	ctx, end, err := a.begin(ctx, threadID, false)
	if err != nil {
		return nil, err
	}
	defer end()
	res, err := f(ctx)
	return res, withCause(ctx, err)
}

// begin registers a call on the thread, refusing a second one: two calls
// running one thread would race on its checkpoints. end unregisters it.
// cancelling marks the call as Cancel's own.
func (a *Agent) begin(ctx context.Context, threadID string, cancelling bool) (_ context.Context, end func(), _ error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.calls[threadID] != nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrBusy, threadID)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	c := &call{cancel: cancel, done: make(chan struct{}), cancelling: cancelling}
	a.calls[threadID] = c
	return ctx, func() {
		a.mu.Lock()
		delete(a.calls, threadID)
		a.mu.Unlock()
		cancel(nil)
		close(c.done)
	}, nil
}

// withCause adds why ctx was cancelled (ErrCancelled for Cancel) to err.
func withCause(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// invoke runs the graph on the thread; used is what the turn has already
// spent (counted against its token budget).
// invoke runs the graph on the thread. from, when set, is the thread's head
// as this call loaded it, so the graph does not load it again.
func (a *Agent) invoke(ctx context.Context, thread string, cfg graph.Config, from *graph.Snapshot[State], used int, events func(Event)) (*Result, error) {
	var meter *llm.Meter
	if a.opts.TokenBudget > 0 {
		meter = llm.NewMeter(a.opts.TokenBudget, a.opts.ReserveFraction)
	} else {
		meter = llm.NewMeter(0, 0)
	}
	if used > 0 {
		meter.Add(llm.Record{Time: a.now(), Node: "earlier", PromptTokens: used})
	}
	ctx = llm.WithMeter(ctx, meter)
	ctx, stop := a.withRunLimits(ctx)
	defer stop()
	cfg.ThreadID = thread
	if events != nil {
		var mu sync.Mutex
		cfg.Events = func(e graph.Event) {
			if e.Kind != graph.EventCustom {
				return
			}
			ev, ok := e.Payload.(Event)
			if !ok {
				return
			}
			ev.ThreadID = thread
			mu.Lock()
			defer mu.Unlock()
			events(ev)
		}
	}
	res, err := a.g.InvokeFrom(ctx, from, cfg)
	if err != nil {
		switch {
		case errors.Is(err, graph.ErrNoInterrupt), errors.Is(err, graph.ErrAlreadyResumed):
			return nil, fmt.Errorf("agent: %w", err)
		case errors.Is(err, graph.ErrPendingResume):
			return nil, ErrWaiting
		}
		return nil, fmt.Errorf("agent: run thread %s: %w", thread, err)
	}
	return a.result(thread, res.State, res.Interrupts), nil
}

func (a *Agent) result(thread string, s State, intr []graph.Interrupt) *Result {
	r := &Result{ThreadID: thread, Status: s.Status, Finish: s.Finish, Reply: s.Reply, Report: s.Report,
		Summary: s.Summary, Plan: s.Plan, Citations: s.Citations, Review: s.Review, Usage: s.Usage,
		Unverified: s.Unverified, Extractive: s.Extractive, Language: s.Language, Tag: s.Req.Tag, TraceParent: s.TraceParent, Reads: readStats(s),
		CrossCheck: s.CrossCheck, Charts: s.Charts}
	for _, in := range intr {
		r.Interrupts = append(r.Interrupts, decodeInterrupt(in.ID, in.Payload))
	}
	honestLinks(r, s.Sources)
	for _, src := range s.Sources {
		r.ReadWorkspace = r.ReadWorkspace || src.Provider == workspaceProvider
	}
	if len(r.Interrupts) > 0 {
		r.Status = StatusInterrupted
	} else if r.Status == "" && s.Intent == IntentChat {
		r.Status = StatusReplied
	}
	for _, sr := range s.Results {
		if sr.Turn == s.Turn {
			r.Subtasks = append(r.Subtasks, sr)
		}
	}
	for _, rt := range s.Routes {
		if rt.Turn == s.Turn {
			r.Routes = append(r.Routes, rt)
		}
	}
	r.Sources = sourceRefs(s)
	return r
}

// sourceRefs are the sources read, the ones the report cites (verified)
// first, then by URL.
func sourceRefs(s State) []SourceRef {
	cited := map[string]bool{}
	for _, f := range s.Citations.Footnotes {
		if f.Status == citation.Verified {
			cited[normURL(f.URL)] = true
		}
	}
	var refs []SourceRef
	for u, src := range s.Sources {
		if src.Retrieved {
			refs = append(refs, SourceRef{URL: src.URL, Title: src.Title, Retrieved: true, Cited: cited[u]})
		}
	}
	slices.SortFunc(refs, func(x, y SourceRef) int {
		if x.Cited != y.Cited {
			if x.Cited {
				return -1
			}
			return 1
		}
		return strings.Compare(x.URL, y.URL)
	})
	return refs
}
