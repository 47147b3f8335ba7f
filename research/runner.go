package research

// The Runner runs a research on the agent (package agent) in the product's
// words: it turns the agent's progress events into Progress snapshots, its
// interrupts and results into this package's, and a person's answers into
// the agent's. The agent keeps the rules (one call per thread, a repeated
// Start returning its turn, durable cancellation); the Runner translates.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"deepresearch/agent"
	"deepresearch/clock"
)

// RunnerOptions tune a Runner.
type RunnerOptions struct {
	Logger *slog.Logger // default slog.Default()
	Clock  clock.Clock  // default clock.Real{}
	// OnEvent, when set, also sees the agent's own progress events (a
	// face that shows each search and page, as the terminal does); they
	// come from several goroutines.
	OnEvent func(agent.Event)
}

// Runner runs research on an *agent.Agent. The bot's thread id is the
// agent's thread id. It is safe for concurrent use.
type Runner struct {
	a       *agent.Agent
	log     *slog.Logger
	clk     clock.Clock
	onEvent func(agent.Event)
}

// NewRunner returns a Runner over a.
func NewRunner(a *agent.Agent, o RunnerOptions) *Runner {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Runner{a: a, log: o.Logger, clk: o.Clock, onEvent: o.OnEvent}
}

// Start asks a new question on the thread (a follow-up when it has
// history). Started again for the same run (the process died after the
// turn finished or paused but before the bot recorded it), it returns that
// turn's outcome instead of asking again.
func (r *Runner) Start(ctx context.Context, req StartRequest, sink ProgressSink) (Outcome, error) {
	areq := agent.Request{
		Question:     req.Question,
		Language:     req.Options.Language,
		ApprovePlan:  req.Options.ApprovePlan,
		ApproveDraft: req.Options.ApproveDraft,
		Depth:        agent.Depth(req.Options.Depth),
		TeamSize:     req.Options.TeamSize,
		Tag:          req.RunID,
		Requester:    req.Requester,
	}
	areq.Audience = &agent.Audience{Channel: req.Options.Channel, Private: req.Options.Private, Team: req.Options.Team, Requester: req.Requester}
	// A digest asks no one: nobody reads the thread before it is posted.
	areq.NoClarify = req.Options.Digest != nil
	if tok := req.Options.WorkspaceToken; tok != "" {
		areq.Workspace = &agent.Workspace{Token: tok, Private: req.Options.WorkspacePrivate, Before: req.Options.WorkspaceBefore}
	}
	started := r.clk.Now()
	t := newTracker(sink)
	t.publish()
	res, err := r.a.Start(ctx, req.ThreadID, areq, r.events(t))
	if err != nil {
		return Outcome{}, r.callErr(ctx, req.ThreadID, err)
	}
	return r.outcome(res, started)
}

// Resume answers the pending interrupt interruptID. An interrupt already
// answered is never answered again; when its turn has ended, Resume returns
// that turn's outcome (the bot resuming after a crash), otherwise the
// refusal.
func (r *Runner) Resume(ctx context.Context, threadID, interruptID string, ans Answer, sink ProgressSink) (Outcome, error) {
	t := r.seededTracker(ctx, threadID, sink)
	res, err := r.a.Resume(ctx, threadID, map[string]agent.Answer{interruptID: toAgentAnswer(ans)}, r.events(t))
	if err != nil {
		return Outcome{}, r.callErr(ctx, threadID, err)
	}
	return r.outcome(res, time.Time{})
}

// Continue carries on the thread's unfinished turn from its last
// checkpoint. It returns ErrNothingToContinue when there is nothing to carry
// on: an unknown thread, a turn that has ended (done, replied or
// cancelled), or an unanswered interrupt (the answer never reached a
// checkpoint; the bot resumes again).
func (r *Runner) Continue(ctx context.Context, threadID string, sink ProgressSink) (Outcome, error) {
	t := r.seededTracker(ctx, threadID, sink)
	res, err := r.a.Continue(ctx, threadID, r.events(t))
	if errors.Is(err, ErrNothingToContinue) {
		return Outcome{}, err
	}
	if err != nil {
		return Outcome{}, r.callErr(ctx, threadID, err)
	}
	return r.outcome(res, time.Time{})
}

// Cancel stops a call still working on the thread in this process and
// records the cancellation with the agent, so the thread's turn ends as
// cancelled: a later Start begins afresh and Continue finds nothing.
func (r *Runner) Cancel(ctx context.Context, threadID string) error {
	if err := r.a.Cancel(ctx, threadID); err != nil {
		return fmt.Errorf("research: cancel %s: %w", threadID, err)
	}
	r.log.Info("research: thread cancelled", "thread_id", threadID)
	return nil
}

// EndRun is told that the bot's run on the thread has ended (its report
// posted, or the run failed or was cancelled): a thread whose run read the
// requester's workspace is forgotten, so that nothing found there is
// stored beyond the run.
func (r *Runner) EndRun(ctx context.Context, threadID string) error {
	forgot, err := r.a.ForgetWorkspace(ctx, threadID)
	if err != nil {
		return fmt.Errorf("research: end run on %s: %w", threadID, err)
	}
	if forgot {
		r.log.Info("research: the run's thread read the workspace and is forgotten", "thread_id", threadID)
	}
	return nil
}

// events is where a call's agent events go: t, and OnEvent.
func (r *Runner) events(t *tracker) func(agent.Event) {
	if r.onEvent == nil {
		return t.event
	}
	return func(ev agent.Event) {
		t.event(ev)
		r.onEvent(ev)
	}
}

// seededTracker is a progress tracker for a turn that is already under way
// (resumed or continued): its events start mid-way, so it is seeded with
// what the thread already has (plan, sources) when there is a sink.
func (r *Runner) seededTracker(ctx context.Context, threadID string, sink ProgressSink) *tracker {
	t := newTracker(sink)
	if sink != nil {
		if cur, err := r.a.Get(ctx, threadID); err == nil {
			t.seed(cur)
		}
	}
	t.publish()
	return t
}

// callErr wraps an agent call's error: a call stopped by Cancel is
// ErrCancelled already, and ctx's error stays visible to errors.Is.
func (r *Runner) callErr(ctx context.Context, threadID string, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	return fmt.Errorf("research: thread %s: %w", threadID, err)
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
		if !started.IsZero() && !res.Repeated {
			out.Elapsed = r.clk.Now().Sub(started)
		}
		return Outcome{Result: &out}, nil
	case agent.StatusCancelled:
		return Outcome{}, fmt.Errorf("research: thread %s: %w", res.ThreadID, ErrCancelled)
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
		return Result{Title: "Reply", Summary: res.Reply, Report: res.Reply, Tokens: res.Usage.Total(), Reply: true, TraceParent: res.TraceParent, Links: readLinks(res.Sources)}
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
	if line := limitsLine(res.Unverified); line != "" {
		summary += "\n\n_" + line + "; see the report._"
	}
	title := ReportHeading(res.Report)
	if title == "" && res.Plan != nil {
		title = res.Plan.Theme
	}
	if title == "" {
		title = "Research report"
	}
	return Result{
		Title:         title,
		Summary:       summary,
		WriterSummary: res.Summary,
		Report:        res.Report,
		Sources:       cited,
		Citations:     res.Citations.Verified,
		Tokens:        res.Usage.Total(),
		Extractive:    res.Extractive,
		Cited:         citedSources(res.Sources),
		// the upload's span joins the turn's trace
		TraceParent:   res.TraceParent,
		Links:         readLinks(res.Sources),
		ReadWorkspace: res.ReadWorkspace,
		Charts:        charts(res.Charts),
	}
}

// charts are the turn's charts as a Result carries them.
func charts(cs []agent.Chart) []Chart {
	var out []Chart
	for _, c := range cs {
		out = append(out, Chart{Name: c.Name, Title: c.Title, PNG: c.PNG})
	}
	return out
}

// readLinks are the addresses of the sources read.
func readLinks(srcs []agent.SourceRef) []string {
	var out []string
	for _, s := range srcs {
		if s.Retrieved {
			out = append(out, s.URL)
		}
	}
	return out
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

// ReportHeading is the report's first level-one heading, or "".
func ReportHeading(report string) string {
	for _, line := range strings.Split(report, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// limitsLine says what the report's notes are, by kind, so a reader can
// trust the count: statements whose citation was removed are unverified;
// questions the research left open are not statements at all.
func limitsLine(notes []string) string {
	c := agent.CountNotes(notes)
	var parts []string
	if c.Unverified > 0 {
		parts = append(parts, fmt.Sprintf("%d statement(s) could not be verified (citation removed)", c.Unverified))
	}
	if c.Open > 0 {
		parts = append(parts, fmt.Sprintf("%d open question(s)", c.Open))
	}
	if c.NotResearched > 0 {
		parts = append(parts, fmt.Sprintf("%d point(s) not fully researched", c.NotResearched))
	}
	if c.Other > 0 {
		parts = append(parts, fmt.Sprintf("%d note(s) on the research", c.Other))
	}
	return strings.Join(parts, "; ")
}
