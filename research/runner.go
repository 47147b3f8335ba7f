package research

// The Runner runs a research on the agent (package agent) in the product's
// words: it turns the agent's progress events into Progress snapshots, its
// interrupts and results into this package's, and a person's answers into
// the agent's.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"deepresearch/agent"
	"deepresearch/graph"
)

// RunnerOptions tune a Runner.
type RunnerOptions struct {
	// Logger defaults to slog.Default(); Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

// Runner runs research on an *agent.Agent. The bot's
// thread id is the agent's thread id. It is safe for concurrent use.
type Runner struct {
	a   *agent.Agent
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	running map[string]*call // by thread: the call working on it in this process
	// cancelled marks threads whose unfinished work was discarded by Cancel
	// while the agent has no way to record it (see Cancel); Continue does
	// not carry them on. Cleared by the next Start or Resume.
	cancelled map[string]bool
}

type call struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// NewRunner returns a Runner over a.
func NewRunner(a *agent.Agent, o RunnerOptions) *Runner {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Runner{a: a, log: o.Logger, now: o.Now, running: map[string]*call{}, cancelled: map[string]bool{}}
}

// errCancelled is the cause given to a running call's context by Cancel.
var errCancelled = errors.New("research: the run was cancelled")

// Start asks a new question on the thread (a follow-up when it has history).
func (r *Runner) Start(ctx context.Context, req StartRequest, sink ProgressSink) (Outcome, error) {
	areq := agent.Request{
		Question:     req.Question,
		Language:     req.Options.Language,
		ApprovePlan:  req.Options.ApprovePlan,
		ApproveDraft: req.Options.ApproveDraft,
		Depth:        agent.Depth(req.Options.Depth),
		Tag:          req.RunID,
	}
	if req.RunID != "" {
		// The same run asking again: its turn already finished (the process
		// died before the bot recorded it). Return it; do not research again.
		if cur, err := r.a.Get(ctx, req.ThreadID); err == nil && cur.Tag == req.RunID && len(cur.Interrupts) == 0 &&
			(cur.Status == agent.StatusDone || cur.Status == agent.StatusReplied) {
			r.log.Info("research: the run's turn already finished; returning its result", "thread_id", req.ThreadID, "run_id", req.RunID)
			return r.outcome(cur, time.Time{})
		}
	}
	started := r.now()
	out, err := r.run(ctx, req.ThreadID, sink, false, func(ctx context.Context, events func(agent.Event)) (*agent.Result, error) {
		return r.a.Start(ctx, req.ThreadID, areq, events)
	})
	if errors.Is(err, agent.ErrWaiting) {
		// The thread waits at an interrupt: this Start already ran (in a
		// process that died before the bot recorded the pause). Show it again.
		if cur, gerr := r.a.Get(ctx, req.ThreadID); gerr == nil && len(cur.Interrupts) > 0 {
			r.log.Info("research: start on a waiting thread; returning its interrupt", "thread_id", req.ThreadID)
			return r.outcome(cur, time.Time{})
		}
	}
	if err != nil {
		return Outcome{}, err
	}
	return r.outcome(out, started)
}

// Resume answers the pending interrupt interruptID. An interrupt already
// answered is never answered again; when its turn has finished, Resume
// returns that turn's outcome (the bot resuming after a crash), otherwise
// the refusal.
func (r *Runner) Resume(ctx context.Context, threadID, interruptID string, ans Answer, sink ProgressSink) (Outcome, error) {
	out, err := r.run(ctx, threadID, sink, true, func(ctx context.Context, events func(agent.Event)) (*agent.Result, error) {
		return r.a.Resume(ctx, threadID, map[string]agent.Answer{interruptID: toAgentAnswer(ans)}, events)
	})
	if errors.Is(err, graph.ErrAlreadyResumed) || errors.Is(err, graph.ErrNoInterrupt) {
		// The answer was stored and the turn ran to its end in a process that
		// died before the bot recorded the outcome (the bot's Continue found
		// nothing left to run). Return that outcome instead of failing the run.
		if cur, gerr := r.a.Get(ctx, threadID); gerr == nil && len(cur.Interrupts) == 0 &&
			(cur.Status == agent.StatusDone || cur.Status == agent.StatusReplied) {
			r.log.Info("research: interrupt already answered and the turn finished; returning its result", "thread_id", threadID, "interrupt_id", interruptID)
			return r.outcome(cur, time.Time{})
		}
	}
	if err != nil {
		return Outcome{}, err
	}
	return r.outcome(out, time.Time{})
}

// Continue carries on the thread's unfinished turn from its last checkpoint.
// It returns ErrNothingToContinue when there is nothing to carry on: an
// unknown thread, a finished turn (the new input never reached a
// checkpoint), an unanswered interrupt (the answer never reached one; the
// bot resumes again), or work discarded by Cancel.
func (r *Runner) Continue(ctx context.Context, threadID string, sink ProgressSink) (Outcome, error) {
	r.mu.Lock()
	cancelled := r.cancelled[threadID]
	r.mu.Unlock()
	if cancelled {
		return Outcome{}, ErrNothingToContinue
	}
	cur, err := r.a.Get(ctx, threadID)
	switch {
	case errors.Is(err, agent.ErrUnknownThread):
		return Outcome{}, ErrNothingToContinue
	case err != nil:
		return Outcome{}, wrapCtx(ctx, err)
	case cur.Status != "" || len(cur.Interrupts) > 0:
		// done, replied, cancelled, or waiting for an answer
		return Outcome{}, ErrNothingToContinue
	}
	out, err := r.run(ctx, threadID, sink, true, func(ctx context.Context, events func(agent.Event)) (*agent.Result, error) {
		return r.a.Continue(ctx, threadID, events)
	})
	if err != nil {
		return Outcome{}, err
	}
	return r.outcome(out, time.Time{})
}

// Cancel stops a call still working on the thread in this process (waiting
// for it to return, or for ctx) and records the cancellation with the agent:
// a pending interrupt is answered with cancel, so the thread's turn ends as
// cancelled and a later Start begins afresh. A turn stopped in the middle
// cannot be marked in the agent (it has no API for it); a later Start
// begins a new turn anyway, and this Runner does not Continue it.
func (r *Runner) Cancel(ctx context.Context, threadID string) error {
	r.mu.Lock()
	c := r.running[threadID]
	r.mu.Unlock()
	if c != nil {
		c.cancel(errCancelled)
		select {
		case <-c.done:
		case <-ctx.Done():
			return fmt.Errorf("research: cancel %s: waiting for the run to stop: %w", threadID, ctx.Err())
		}
	}
	cur, err := r.a.Get(ctx, threadID)
	switch {
	case errors.Is(err, agent.ErrUnknownThread):
		return nil
	case err != nil:
		return fmt.Errorf("research: cancel %s: %w", threadID, err)
	}
	if len(cur.Interrupts) > 0 {
		answers := make(map[string]agent.Answer, len(cur.Interrupts))
		for _, in := range cur.Interrupts {
			answers[in.ID] = agent.Answer{Action: agent.ActionCancel}
		}
		res, err := r.a.Resume(ctx, threadID, answers, nil)
		if err != nil {
			return fmt.Errorf("research: cancel %s: %w", threadID, err)
		}
		r.log.Info("research: thread cancelled", "thread_id", threadID, "status", res.Status)
		return nil
	}
	if cur.Status == "" {
		// The turn stopped in the middle: keep it from being continued.
		r.mu.Lock()
		r.cancelled[threadID] = true
		r.mu.Unlock()
		r.log.Info("research: unfinished turn discarded", "thread_id", threadID)
	}
	return nil
}

// run makes one agent call for a thread with a cancellable context and a
// progress tracker. resumed seeds the progress with what the thread already
// has (plan, sources), as a continued turn's events start mid-way.
func (r *Runner) run(ctx context.Context, threadID string, sink ProgressSink, resumed bool,
	fn func(context.Context, func(agent.Event)) (*agent.Result, error)) (*agent.Result, error) {
	if threadID == "" {
		return nil, agent.ErrNoThread
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &call{cancel: cancel, done: make(chan struct{})}
	defer close(c.done)
	r.mu.Lock()
	if prev := r.running[threadID]; prev != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("research: thread %s already has a run in this process", threadID)
	}
	r.running[threadID] = c
	delete(r.cancelled, threadID)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.running, threadID)
		r.mu.Unlock()
	}()

	t := newTracker(sink)
	if resumed {
		if cur, err := r.a.Get(cctx, threadID); err == nil {
			t.seed(cur)
		}
	}
	t.publish()
	res, err := fn(cctx, t.event)
	if err != nil {
		if cause := context.Cause(cctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return nil, err
	}
	return res, nil
}

func wrapCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	return err
}

// outcome maps where the agent stopped to the bot's Outcome. started, when
// set, is when the turn began (for Result.Elapsed); zero lets the bot use
// its run's age.
func (r *Runner) outcome(res *agent.Result, started time.Time) (Outcome, error) {
	if len(res.Interrupts) > 0 {
		in := toInterrupt(res.Interrupts[0])
		return Outcome{Interrupt: &in}, nil
	}
	switch res.Status {
	case agent.StatusDone, agent.StatusReplied:
		out := toResult(res)
		if !started.IsZero() {
			out.Elapsed = r.now().Sub(started)
		}
		return Outcome{Result: &out}, nil
	case agent.StatusCancelled:
		return Outcome{}, fmt.Errorf("research: thread %s: %w", res.ThreadID, errCancelled)
	}
	return Outcome{}, fmt.Errorf("research: thread %s: the agent stopped with status %q and nothing to show", res.ThreadID, res.Status)
}

// toAgentAnswer maps the bot's decision to the agent's answer.
func toAgentAnswer(a Answer) agent.Answer {
	text := strings.TrimSpace(a.Text)
	switch a.Action {
	case ActionApprove:
		return agent.Answer{Action: agent.ActionApprove}
	case ActionRevise:
		return agent.Answer{Action: agent.ActionRevise, Feedback: text}
	case ActionMore:
		return agent.Answer{Action: agent.ActionResearch, Feedback: text}
	case ActionCancel:
		return agent.Answer{Action: agent.ActionCancel}
	case ActionAnswer:
		return agent.Answer{Action: agent.ActionAnswer, Text: text}
	}
	return agent.Answer{Action: agent.Action(a.Action), Text: text, Feedback: text}
}

// toInterrupt maps an agent pause to what the bot shows.
func toInterrupt(in agent.Interrupt) Interrupt {
	switch in.Kind {
	case agent.InterruptClarify:
		return Interrupt{ID: in.ID, Kind: InterruptQuestion, Text: in.Question}
	case agent.InterruptApprovePlan:
		return Interrupt{ID: in.ID, Kind: InterruptPlan, Text: planText(in.Plan)}
	}
	return Interrupt{ID: in.ID, Kind: InterruptDraft, Text: draftText(in), Draft: in.Draft}
}

// planText renders a plan as markdown for approval.
func planText(p *agent.Plan) string {
	if p == nil {
		return "(no plan)"
	}
	var b strings.Builder
	if p.Theme != "" {
		// Plans are shown in a markdown block: standard markdown, where
		// *x* would be italic.
		fmt.Fprintf(&b, "**%s**\n", p.Theme)
	}
	if p.PlanText != "" {
		fmt.Fprintf(&b, "%s\n", p.PlanText)
	}
	for i, st := range p.Subtasks {
		fmt.Fprintf(&b, "%d. %s", i+1, st.Title)
		if len(st.Queries) > 0 {
			fmt.Fprintf(&b, " — %s", strings.Join(st.Queries, "; "))
		}
		b.WriteString("\n")
	}
	if len(p.Subtasks) == 0 {
		for _, pt := range p.InvestigationPoints {
			fmt.Fprintf(&b, "• %s\n", pt)
		}
	}
	return strings.TrimSpace(b.String())
}

// draftText is the draft's summary with its citation check and review.
func draftText(in agent.Interrupt) string {
	var b strings.Builder
	sum := strings.TrimSpace(in.Summary)
	if sum == "" {
		sum = firstLines(in.Draft, 12)
	}
	b.WriteString(sum)
	if c := in.Citations; c != nil {
		fmt.Fprintf(&b, "\n\nCitations: %d verified of %d cited, %d dropped.", c.Verified, c.Cited, c.Dropped)
	}
	if rv := in.Review; rv != nil {
		if rv.Simple {
			fmt.Fprintf(&b, "\nReview score: %.2f (estimated by rules: no reviewer model answered).", rv.Overall)
		} else {
			fmt.Fprintf(&b, "\nReview score: %.2f.", rv.Overall)
		}
		if fb := strings.TrimSpace(rv.Feedback); fb != "" && !rv.Approved {
			fmt.Fprintf(&b, " Reviewer: %s", fb)
		}
	}
	return strings.TrimSpace(b.String())
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

// toResult maps a finished turn to a Result.
func toResult(res *agent.Result) Result {
	if res.Status == agent.StatusReplied {
		return Result{Title: "Reply", Summary: res.Reply, Report: res.Reply, Tokens: res.Usage.Total(), Reply: true}
	}
	cited := 0
	for _, s := range res.Sources {
		if s.Cited {
			cited++
		}
	}
	summary := strings.TrimSpace(res.Summary)
	if summary == "" {
		summary = firstLines(res.Report, 6)
	}
	if len(res.Unverified) > 0 {
		summary += fmt.Sprintf("\n\n_%d statement(s) could not be verified; see the report._", len(res.Unverified))
	}
	title := reportHeading(res.Report)
	if title == "" && res.Plan != nil {
		title = res.Plan.Theme
	}
	if title == "" {
		title = "Research report"
	}
	return Result{
		Title:      title,
		Summary:    summary,
		Report:     res.Report,
		Sources:    cited,
		Citations:  res.Citations.Verified,
		Tokens:     res.Usage.Total(),
		Extractive: res.Extractive,
		Cited:      citedSources(res.Sources),
	}
}

// citedSources lists the sources the report cites, else those it read.
func citedSources(srcs []agent.SourceRef) []Source {
	var out []Source
	for _, s := range srcs {
		if s.Cited {
			out = append(out, Source{URL: s.URL, Title: s.Title})
		}
	}
	if len(out) == 0 {
		for _, s := range srcs {
			if s.Retrieved {
				out = append(out, Source{URL: s.URL, Title: s.Title})
			}
		}
	}
	return out
}

// reportHeading is the report's first level-one heading, or "".
func reportHeading(report string) string {
	for _, line := range strings.Split(report, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}
