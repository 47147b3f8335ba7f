// Package mcpserver offers deep research as an MCP server: the tool
// deep_research runs a research (the same durable runs as `ask` and the
// Slack bot) and returns its report, with progress notifications while it
// works; get_report fetches a run's report by id (a client that called
// with wait=false, or came back after a restart); resume_research answers
// a run's approval step. `deepresearch mcp` serves it on stdio.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent"
)

// Researcher runs research threads; *agent.Agent satisfies it.
type Researcher interface {
	Start(ctx context.Context, threadID string, req agent.Request, events func(agent.Event)) (*agent.Result, error)
	Resume(ctx context.Context, threadID string, answers map[string]agent.Answer, events func(agent.Event)) (*agent.Result, error)
	Continue(ctx context.Context, threadID string, events func(agent.Event)) (*agent.Result, error)
	Cancel(ctx context.Context, threadID string) error
	Get(ctx context.Context, threadID string) (*agent.Result, error)
}

// Options tune a Server.
type Options struct {
	Logger  *slog.Logger
	Version string
	// Depth is the runs' depth when the call names none (default
	// standard).
	Depth agent.Depth
	// NewID makes a run id (default mcp-YYYYMMDD-random); an id without the
	// "mcp-" prefix gets it.
	NewID func() string
}

// Server is the MCP server over a Researcher.
type Server struct {
	r   Researcher
	o   Options
	log *slog.Logger
	srv *mcp.Server

	mu      sync.Mutex
	root    context.Context          // the server's lifetime: background runs
	running map[string]chan struct{} // runs working in this process, closed when they end
	wg      sync.WaitGroup
}

// New returns the server; Run serves it.
func New(r Researcher, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Depth == "" {
		o.Depth = agent.DepthStandard
	}
	if o.NewID == nil {
		o.NewID = newID
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{r: r, o: o, log: o.Logger, running: map[string]chan struct{}{}, root: context.Background()}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "deepresearch", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Deep research: deep_research investigates a question on the web and the team's sources and returns a report whose citations were checked against the pages read. A research takes minutes; call it with wait=false to get a run id at once and fetch the report later with get_report.",
		Logger:       o.Logger,
	})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "deep_research", Title: "Deep research",
		Description: "Research a question (minutes): plans, searches, reads and writes a cited markdown report. Returns the report, or with wait=false the run id at once (then get_report). Progress is reported with progress notifications."},
		s.deepResearch)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "get_report", Title: "Get a research report",
		Description: "The status and, once finished, the report of a research run by its run id. A run stopped by a restart is carried on."},
		s.getReport)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "resume_research", Title: "Answer a research's approval step",
		Description: "Answer the approval step a run waits at (approve_plan / approve_draft): approve, revise (with feedback), research more (draft only) or cancel."},
		s.resume)
	s.srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "report", Title: "Research report", MIMEType: "text/markdown",
		URITemplate: reportScheme + "{run_id}", Description: "The finished report of a research run (markdown)."}, s.readReport)
	return s
}

// reportScheme prefixes a report's resource URI: deepresearch://report/RUN_ID.
const reportScheme = "deepresearch://report/"

// readReport serves a finished report as a resource.
func (s *Server) readReport(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, reportScheme)
	if !ok || !ownRun(id) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	res, err := s.r.Get(ctx, id)
	if err != nil || res.Status != agent.StatusDone || res.Report == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: res.Report}}}, nil
}

// MCP is the underlying server (to serve it on another transport).
func (s *Server) MCP() *mcp.Server { return s.srv }

// Run serves one session on t until it ends or ctx is done. Runs started
// with wait=false keep working until ctx is done; a run stopped then is
// carried on by a later get_report (its checkpoints are durable).
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	s.mu.Lock()
	s.root = ctx
	s.mu.Unlock()
	err := s.srv.Run(ctx, t)
	s.wg.Wait()
	return err
}

// ResearchIn is deep_research's arguments.
type ResearchIn struct {
	Question     string `json:"question" jsonschema:"the research question"`
	Language     string `json:"language,omitempty" jsonschema:"language of the report, e.g. en or ja (default: the question's)"`
	Depth        string `json:"depth,omitempty" jsonschema:"quick, standard or deep"`
	ApprovePlan  bool   `json:"approve_plan,omitempty" jsonschema:"stop after planning for the plan to be approved with resume_research"`
	ApproveDraft bool   `json:"approve_draft,omitempty" jsonschema:"stop before the report is final for the draft to be approved with resume_research"`
	Wait         *bool  `json:"wait,omitempty" jsonschema:"wait for the report (default true); false returns the run id at once"`
}

// ReportIn names a run.
type ReportIn struct {
	RunID string `json:"run_id" jsonschema:"the run id deep_research returned"`
	Wait  bool   `json:"wait,omitempty" jsonschema:"wait until the run finishes or stops at an approval step"`
}

// ResumeIn answers a run's approval step.
type ResumeIn struct {
	RunID    string `json:"run_id"`
	Action   string `json:"action" jsonschema:"approve, revise, research or cancel"`
	Feedback string `json:"feedback,omitempty" jsonschema:"what to change (revise) or look into (research)"`
}

// Report is what the tools return (also as structured content).
type Report struct {
	RunID  string `json:"run_id"`
	Status string `json:"status" jsonschema:"running, done, waiting (an approval step: answer with resume_research), replied, cancelled or failed"`
	Report string `json:"report,omitempty"`
	// Summary is the executive summary; Reply answers a message that was
	// not a research question.
	Summary string `json:"summary,omitempty"`
	Reply   string `json:"reply,omitempty"`
	// Waiting describes the approval step a run waits at.
	Waiting *Waiting `json:"waiting,omitempty"`
	Sources []string `json:"sources,omitempty"`
	// Resource is the report's resource URI, once done.
	Resource string `json:"resource,omitempty"`
}

// Waiting is an approval step.
type Waiting struct {
	Kind     string   `json:"kind"`
	Question string   `json:"question,omitempty"`
	Plan     []string `json:"plan,omitempty"`
	Draft    string   `json:"draft,omitempty"`
	Actions  []string `json:"actions"`
}

func (s *Server) deepResearch(ctx context.Context, req *mcp.CallToolRequest, in ResearchIn) (*mcp.CallToolResult, Report, error) {
	q := strings.TrimSpace(in.Question)
	if q == "" {
		return nil, Report{}, errors.New("question is empty")
	}
	depth := agent.Depth(in.Depth)
	switch depth {
	case "":
		depth = s.o.Depth
	case agent.DepthQuick, agent.DepthStandard, agent.DepthDeep:
	default:
		return nil, Report{}, fmt.Errorf("depth %q: want quick, standard or deep", in.Depth)
	}
	id := s.o.NewID()
	if !ownRun(id) {
		id = runPrefix + id
	}
	areq := agent.Request{Question: q, Language: in.Language, Depth: depth, ApprovePlan: in.ApprovePlan, ApproveDraft: in.ApproveDraft,
		NoClarify: true, Tag: id,
		// the answer goes to the client that asked, nobody else
		Audience: &agent.Audience{Private: true}}
	s.log.Info("mcp: research started", "run_id", id)
	run := func(ctx context.Context, events func(agent.Event)) (*agent.Result, error) {
		return s.r.Start(ctx, id, areq, events)
	}
	if in.Wait != nil && !*in.Wait {
		s.background(id, run)
		return s.text(Report{RunID: id, Status: "running"})
	}
	return s.blocking(ctx, req, id, run)
}

func (s *Server) getReport(ctx context.Context, req *mcp.CallToolRequest, in ReportIn) (*mcp.CallToolResult, Report, error) {
	id := strings.TrimSpace(in.RunID)
	if id == "" {
		return nil, Report{}, errors.New("run_id is empty")
	}
	if !ownRun(id) {
		return nil, Report{}, fmt.Errorf("no run %s", id)
	}
	s.mu.Lock()
	done, here := s.running[id]
	s.mu.Unlock()
	if here {
		if !in.Wait {
			return s.text(Report{RunID: id, Status: "running"})
		}
		select {
		case <-done:
		case <-ctx.Done():
			return nil, Report{}, ctx.Err()
		}
	}
	res, err := s.r.Get(ctx, id)
	if errors.Is(err, agent.ErrUnknownThread) {
		return nil, Report{}, fmt.Errorf("no run %s", id)
	}
	if err != nil {
		return nil, Report{}, err
	}
	if res.Status == "" && !here {
		// a run a restart stopped: carry it on from its checkpoint
		cont := func(ctx context.Context, events func(agent.Event)) (*agent.Result, error) {
			return s.r.Continue(ctx, id, events)
		}
		if !in.Wait {
			s.background(id, cont)
			return s.text(Report{RunID: id, Status: "running"})
		}
		return s.blocking(ctx, req, id, cont)
	}
	return s.text(report(id, res))
}

func (s *Server) resume(ctx context.Context, req *mcp.CallToolRequest, in ResumeIn) (*mcp.CallToolResult, Report, error) {
	if !ownRun(in.RunID) {
		return nil, Report{}, fmt.Errorf("no run %s", in.RunID)
	}
	res, err := s.r.Get(ctx, in.RunID)
	if err != nil {
		return nil, Report{}, fmt.Errorf("run %s: %w", in.RunID, err)
	}
	if res.Status != agent.StatusInterrupted || len(res.Interrupts) == 0 {
		return nil, Report{}, fmt.Errorf("run %s waits for no answer (status %q)", in.RunID, statusOf(res))
	}
	it := res.Interrupts[0]
	act := agent.Action(in.Action)
	if !allowed(it, act) {
		return nil, Report{}, fmt.Errorf("action %q: want one of %s", in.Action, strings.Join(actions(it), ", "))
	}
	ans := map[string]agent.Answer{it.ID: {Action: act, Feedback: in.Feedback}}
	return s.blocking(ctx, req, in.RunID, func(ctx context.Context, events func(agent.Event)) (*agent.Result, error) {
		return s.r.Resume(ctx, in.RunID, ans, events)
	})
}

// blocking runs a call of a run to its end (done, or an approval step),
// sending progress notifications when the client asked for them. A call
// the client cancels cancels the run; one stopped by the server's end
// leaves it to be carried on.
func (s *Server) blocking(ctx context.Context, req *mcp.CallToolRequest, id string, run func(context.Context, func(agent.Event)) (*agent.Result, error)) (*mcp.CallToolResult, Report, error) {
	done, ok := s.claim(id)
	if !ok {
		return nil, Report{}, fmt.Errorf("run %s is already working: use get_report with wait=true", id)
	}
	defer s.release(id, done)
	p := s.progress(ctx, req)
	res, err := run(ctx, p.event)
	if err != nil {
		if ctx.Err() != nil && s.rootCtx().Err() == nil {
			// the client cancelled the call: the run ends as cancelled
			if cerr := s.r.Cancel(context.WithoutCancel(ctx), id); cerr != nil {
				s.log.Warn("mcp: cancelling the run", "run_id", id, "err", cerr)
			}
			return nil, Report{}, fmt.Errorf("run %s cancelled", id)
		}
		return nil, Report{}, fmt.Errorf("run %s: %w", id, err)
	}
	return s.text(report(id, res))
}

// background runs a call of a run until it ends or the server stops.
func (s *Server) background(id string, run func(context.Context, func(agent.Event)) (*agent.Result, error)) {
	done, ok := s.claim(id)
	if !ok {
		return
	}
	ctx := s.rootCtx()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.release(id, done)
		if _, err := run(ctx, nil); err != nil && ctx.Err() == nil {
			s.log.Warn("mcp: research failed", "run_id", id, "err", err)
		}
	}()
}

func (s *Server) rootCtx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.root
}

func (s *Server) claim(id string) (chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.running[id]; busy {
		return nil, false
	}
	ch := make(chan struct{})
	s.running[id] = ch
	return ch, true
}

func (s *Server) release(id string, ch chan struct{}) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
	close(ch)
}

// progress sends a run's events as MCP progress notifications.
type progress struct {
	ctx   context.Context
	sess  *mcp.ServerSession
	token any
	mu    sync.Mutex
	n     float64
	log   *slog.Logger
}

func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	p := &progress{ctx: ctx, log: s.log}
	if req != nil && req.Params != nil {
		p.token = req.Params.GetProgressToken()
		p.sess = req.Session
	}
	return p
}

func (p *progress) event(ev agent.Event) {
	if p.token == nil || p.sess == nil {
		return
	}
	msg := ""
	switch ev.Kind {
	case agent.EventPhase:
		msg = string(ev.Phase)
	case agent.EventPlanMade:
		if ev.Plan != nil {
			msg = "plan: " + ev.Plan.Theme
		}
	case agent.EventSubtaskStarted:
		if ev.Subtask != nil {
			msg = "researching: " + ev.Subtask.Title
		}
	case agent.EventSubtaskFinished:
		if ev.Subtask != nil {
			msg = "finished: " + ev.Subtask.Title
		}
	case agent.EventSourceRead:
		msg = "read: " + ev.Title
	default:
		return
	}
	if msg == "" {
		return
	}
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	if err := p.sess.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: n, Message: oneLine(msg, 200)}); err != nil {
		p.log.Debug("mcp: progress notification", "err", err)
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// text is a tool result: the report (or the status) as text for a person,
// and the whole as structured content.
func (s *Server) text(r Report) (*mcp.CallToolResult, Report, error) {
	var b strings.Builder
	switch {
	case r.Report != "":
		b.WriteString(r.Report)
	case r.Reply != "":
		b.WriteString(r.Reply)
	case r.Waiting != nil:
		fmt.Fprintf(&b, "Run %s waits at %s. Answer with resume_research (%s).", r.RunID, r.Waiting.Kind, strings.Join(r.Waiting.Actions, ", "))
		for i, p := range r.Waiting.Plan {
			fmt.Fprintf(&b, "\n%d. %s", i+1, p)
		}
		if r.Waiting.Draft != "" {
			b.WriteString("\n\n" + r.Waiting.Draft)
		}
	default:
		fmt.Fprintf(&b, "Run %s: %s. Fetch the report with get_report.", r.RunID, r.Status)
	}
	if r.Report != "" || r.Reply != "" {
		fmt.Fprintf(&b, "\n\n(run id: %s)", r.RunID)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, r, nil
}

func statusOf(res *agent.Result) string {
	switch res.Status {
	case "":
		return "running"
	case agent.StatusInterrupted:
		return "waiting"
	}
	return string(res.Status)
}

func report(id string, res *agent.Result) Report {
	r := Report{RunID: id, Status: statusOf(res), Report: res.Report, Summary: res.Summary, Reply: res.Reply}
	if res.Status == agent.StatusDone && res.Report != "" {
		r.Resource = reportScheme + id
	}
	for _, src := range res.Sources {
		r.Sources = append(r.Sources, src.URL)
	}
	if res.Status == agent.StatusInterrupted && len(res.Interrupts) > 0 {
		it := res.Interrupts[0]
		w := &Waiting{Kind: string(it.Kind), Question: it.Question, Draft: it.Draft, Actions: actions(it)}
		if it.Plan != nil {
			for _, st := range it.Plan.Subtasks {
				w.Plan = append(w.Plan, st.Title)
			}
		}
		r.Waiting = w
	}
	return r
}

func actions(it agent.Interrupt) []string {
	var out []string
	for _, c := range it.Choices {
		out = append(out, string(c.Action))
	}
	return out
}

func allowed(it agent.Interrupt, a agent.Action) bool {
	for _, c := range it.Choices {
		if c.Action == a {
			return true
		}
	}
	return false
}

// runPrefix starts the id of every run this server starts. The server may
// share its agent and database with the Slack bot (serve), whose threads
// have guessable ids ("slack:TEAM:CHANNEL:TS"): get_report, resume_research
// and the report resource serve only ids with this prefix, so a client
// never reads a Slack run's report or answers its requester's approval.
const runPrefix = "mcp-"

// ownRun reports whether id names a run this server (or an earlier process
// of it) started.
func ownRun(id string) bool { return strings.HasPrefix(id, runPrefix) && len(id) > len(runPrefix) }

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "mcp-" + time.Now().UTC().Format("20060102") + "-" + hex.EncodeToString(b)
}
