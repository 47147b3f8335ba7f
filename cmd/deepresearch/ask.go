package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/llm"
	"deepresearch/research"
	"deepresearch/storage"
)

const askUsage = `usage: deepresearch ask [flags] "question"

Runs one research in the terminal: progress on stderr, the report on stdout
(or -o FILE). With --thread ID it continues a thread of this database: a
new question is a follow-up ("dig deeper into X", "rewrite it shorter"); no
question resumes a thread that was interrupted or stopped. An unknown
--thread is refused; leave it out to start a new research.

Before researching it checks the model endpoint (OPENAI_BASE_URL answers,
OPENAI_API_KEY is accepted, DEEPRESEARCH_MODEL is served) and stops with
one line naming the variable to fix. The last line on stderr gives the
elapsed time, and the cost when DEEPRESEARCH_LLM_PRICES prices the models.

exit status: 0 done; 1 error; 2 usage; 3 the report was written without
the model (it became unavailable during the run: an extractive report
that quotes the sources, without synthesis or review).

flags:`

// exitWithoutModel is ask's exit status when the report is extractive.
const exitWithoutModel = 3

// runAsk is `deepresearch ask`.
func runAsk(ctx context.Context, args []string, e env, stdin io.Reader, stdout, stderr io.Writer) error {
	start := time.Now()
	// Page titles, plan lines and the report come from the web and the
	// model: nothing reaches the terminal with control characters.
	stdout, stderr = newTermWriter(stdout), newTermWriter(stderr)
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, askUsage)
		fs.PrintDefaults()
	}
	out := fs.String("o", "", "write the report to this file instead of stdout")
	chartDir := fs.String("chart-dir", "", "write the report's charts to this directory (default: beside the -o file, else the current directory)")
	thread := fs.String("thread", "", "continue or resume this thread")
	yes := fs.Bool("yes", false, "approve every plan and draft without asking (clarifying questions get no answer)")
	approvePlan := fs.Bool("approve-plan", false, "stop to approve the research plan")
	approveDraft := fs.Bool("approve-draft", false, "stop to approve the draft before it is final")
	depth := fs.String("depth", "standard", "quick, standard or deep")
	lang := fs.String("lang", "", "language of the report (default: the question's)")
	quiet := fs.Bool("q", false, "no progress on stderr")
	budget := fs.Int("tokens", 0, "token budget of the run (default 1,000,000)")
	timeBudget := fs.Duration("time", 0, "wall-clock budget of the run (default 15m)")
	team := fs.Int("team", 0, fmt.Sprintf("researchers per subtask, each working another way, their findings cross-checked (1 to %d; default DEEPRESEARCH_TEAM_SIZE, else 1)", agent.MaxTeamSize))
	words, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(err)
	}
	question := strings.TrimSpace(strings.Join(words, " "))
	if question == "" && *thread == "" {
		return usageError{msg: `the question is empty: deepresearch ask "your question"`}
	}
	switch agent.Depth(*depth) {
	case agent.DepthQuick, agent.DepthStandard, agent.DepthDeep:
	default:
		return usageError{msg: fmt.Sprintf("--depth %q: want quick, standard or deep", *depth)}
	}

	if *team < 0 || *team > agent.MaxTeamSize {
		return usageError{msg: fmt.Sprintf("--team %d: want 1 to %d", *team, agent.MaxTeamSize)}
	}

	cfg, err := loadConfig(e)
	if err != nil {
		return err
	}
	tr, stopTracing, err := startTracing(ctx, e, stderr)
	if err != nil {
		return err
	}
	defer stopTracing() // the trace is delivered before ask exits
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	p := &progress{w: stderr, quiet: *quiet}
	var db *storage.DB
	open := func(ctx context.Context, c storage.Config) (*storage.DB, error) {
		d, err := storage.Open(ctx, c)
		db = d
		return d, err
	}
	deps, client, closeAll, err := agentDeps(ctx, cfg, logger, open, depHooks{notice: p.notice, note: func(s string) { fmt.Fprintln(stderr, s) }})
	if err != nil {
		return err
	}
	defer closeAll()
	a, err := agent.New(deps, traced(agent.Options{TokenBudget: *budget, TimeBudget: *timeBudget, TeamSize: cfg.TeamSize}, tr))
	if err != nil {
		return err
	}
	if *thread != "" {
		// A follow-up or a resume needs the thread; a typo must not start
		// a new research.
		if _, err := a.Get(ctx, *thread); err != nil {
			return askError(err)
		}
	}
	// Fail at once, naming the variable, rather than research for minutes
	// into an extractive report.
	if err := client.Check(ctx); err != nil {
		return err
	}
	term := &termRuns{stdout: stdout, p: p, out: *out, chartDir: *chartDir, question: question, deps: deps, logger: logger}
	runner := research.NewRunner(a, research.RunnerOptions{Logger: logger, OnEvent: p.event})
	s := &askSession{
		a: a, store: db.Runs(), term: term, p: p, stderr: stderr, in: bufio.NewReader(stdin),
		f: askFlags{out: *out, chartDir: *chartDir, thread: *thread, depth: *depth, lang: *lang, yes: *yes,
			approvePlan: *approvePlan, approveDraft: *approveDraft, team: *team},
		svc: research.NewService(db.Runs(), runner, term, research.ServiceOptions{
			Kinds: []string{"ask"}, Owner: askOwner(), Lease: cfg.Lease, Slots: 1, Logger: logger, LogPrefix: "ask: "}),
	}
	r, err := s.begin(ctx, question)
	if err != nil {
		return err
	}
	if r, err = s.drive(ctx, r); err != nil {
		return err
	}
	return s.report(ctx, r, client, start)
}

// report says on stderr how the run ended: its figures, and why a report
// is not the model's (exit status 3).
func (s *askSession) report(ctx context.Context, r research.Run, client *llm.Client, start time.Time) error {
	p := s.p
	if r.State == research.StateFailed {
		if s.term.failure != nil {
			return askError(s.term.failure)
		}
		return errors.New(r.Error)
	}
	res, err := s.a.Get(ctx, r.ThreadID)
	if err != nil {
		return askError(err)
	}
	switch {
	case r.State == research.StateCancelled:
		p.printf("cancelled after %s: %s\n", elapsed(time.Since(start)), usageLine(res.Usage, client, -1))
		return nil
	case res.Status == agent.StatusReplied:
		p.printf("replied in %s: %s\n", elapsed(time.Since(start)), usageLine(res.Usage, client, -1))
		return nil
	}
	if !s.term.wrote && s.f.out == "" {
		p.printf("the report was written by an earlier ask of this thread\n")
	}
	for _, u := range res.Unverified {
		p.printf("unverified: %s\n", u)
	}
	if r := res.Review; r != nil && r.Simple {
		p.printf("review score %.2f is heuristic: no reviewer model gave it\n", r.Overall)
	}
	if s := res.Usage.Speculation(); s != "" {
		p.printf("%s\n", s)
	}
	c := res.Citations
	line := fmt.Sprintf("done (%s) in %s: %d sources read (%d wasted reads, %d off-topic results skipped), citations %d cited / %d verified / %d dropped, %s",
		res.Finish, elapsed(time.Since(start)), len(res.Sources), res.Reads.Wasted(), res.Reads.Skipped, c.Cited, c.Verified, c.Dropped, usageLine(res.Usage, client, c.Verified))
	if res.Extractive {
		why := "the model became unavailable"
		if f := p.lastFailure(); f != nil {
			why = f.Error()
		}
		// The report is out; the status says it is not the model's.
		p.printf("%s\n", line)
		return exitError{code: exitWithoutModel, msg: "the report was written without the model (extractive: it quotes the sources, without synthesis or review): " + why}
	}
	p.printf("%s\n", line)
	return nil
}

// usageLine is the run's tokens and requests (every one that reached the
// server, failed and cancelled ones included), the tokens per verified
// citation for a report (verified ≥ 0), and its cost when the prices of
// the models in use are known (DEEPRESEARCH_LLM_PRICES).
func usageLine(u agent.Usage, client *llm.Client, verified int) string {
	s := u.Spent()
	if verified >= 0 {
		s += ", " + u.PerVerified(verified)
	}
	if client.HasPrices() {
		s += ", cost " + money(u.Cost)
	}
	return s
}

// elapsed rounds a duration for people: 850ms, 12.3s, 4m05s.
func elapsed(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// money formats a cost in the prices' currency (USD by convention).
func money(c float64) string {
	if c > 0 && c < 0.01 {
		return fmt.Sprintf("$%.4f", c)
	}
	return fmt.Sprintf("$%.2f", c)
}

// askError maps the agent's errors to one clear line.
func askError(err error) error {
	switch {
	case errors.Is(err, agent.ErrEmptyQuestion):
		return usageError{msg: "the question is empty"}
	case errors.Is(err, agent.ErrUnknownThread):
		// With or without a question: a typo must not start a new research.
		return usageError{msg: "no thread with that --thread id in this database (check it and DEEPRESEARCH_DATA_DIR / DATABASE_URL); leave --thread out to start a new research"}
	case errors.Is(err, agent.ErrWaiting):
		return fmt.Errorf("the thread is waiting for an answer: run deepresearch ask --thread ID without a question to answer it")
	case errors.Is(err, llm.ErrUnauthorized), errors.Is(err, llm.ErrForbidden):
		return fmt.Errorf("the LLM endpoint refused the key: check OPENAI_API_KEY (%w)", err)
	case errors.Is(err, llm.ErrModelNotFound):
		return fmt.Errorf("the model was not found: check DEEPRESEARCH_MODEL (%w)", err)
	}
	return err
}

// askDeps builds the agent's collaborators of cfg, with the checkpoint
// store of its database: Postgres when DATABASE_URL is a postgres URL, else
// SQLite under DEEPRESEARCH_DATA_DIR (default ./data).
func askDeps(ctx context.Context, cfg config, logger *slog.Logger, hooks depHooks) (agent.Deps, *llm.Client, func(), error) {
	return agentDeps(ctx, cfg, logger, storage.Open, hooks)
}

func newThreadID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "cli-" + time.Now().UTC().Format("20060102") + "-" + hex.EncodeToString(b)
}

// askPerson shows an interrupt and reads the answer from the terminal.
func askPerson(w io.Writer, in *bufio.Reader, it agent.Interrupt, yes bool) (agent.Answer, error) {
	switch it.Kind {
	case agent.InterruptClarify:
		fmt.Fprintf(w, "\n? %s\n", it.Question)
		if yes {
			fmt.Fprintln(w, "  (--yes: researching the question as asked)")
			return agent.Answer{Action: agent.ActionAnswer}, nil
		}
		fmt.Fprint(w, "> ")
		line, err := readLine(in)
		if err != nil {
			return agent.Answer{}, err
		}
		return agent.Answer{Action: agent.ActionAnswer, Text: line}, nil
	case agent.InterruptApprovePlan:
		if p := it.Plan; p != nil {
			fmt.Fprintf(w, "\nplan: %s\n", p.Theme)
			for i, st := range p.Subtasks {
				fmt.Fprintf(w, "  %d. %s — %s\n", i+1, st.Title, strings.Join(st.Queries, "; "))
			}
		}
	case agent.InterruptApproveDraft:
		fmt.Fprintf(w, "\ndraft: %s\n", it.Summary)
		if c := it.Citations; c != nil {
			fmt.Fprintf(w, "  citations: %d cited, %d verified, %d dropped\n", c.Cited, c.Verified, c.Dropped)
		}
		if r := it.Review; r != nil {
			fmt.Fprintf(w, "  review: %.2f (fact %.2f) %s\n", r.Overall, r.Scores.FactCheck, r.Feedback)
		}
	}
	if yes {
		fmt.Fprintln(w, "  (--yes: approved)")
		return agent.Answer{Action: agent.ActionApprove}, nil
	}
	var keys []string
	for _, c := range it.Choices {
		k := string(c.Action[0])
		if c.Action == agent.ActionResearch {
			k = "m"
		}
		keys = append(keys, fmt.Sprintf("[%s] %s", k, c.Label))
	}
	for {
		fmt.Fprintf(w, "%s\n> ", strings.Join(keys, "  "))
		line, err := readLine(in)
		if err != nil {
			return agent.Answer{}, err
		}
		cmd, text, _ := strings.Cut(line, " ")
		text = strings.TrimSpace(text)
		var act agent.Action
		switch strings.ToLower(cmd) {
		case "a", "approve", "y", "yes", "":
			act = agent.ActionApprove
		case "r", "revise":
			act = agent.ActionRevise
		case "m", "more", "research":
			act = agent.ActionResearch
		case "c", "cancel":
			act = agent.ActionCancel
		}
		ok := false
		for _, c := range it.Choices {
			ok = ok || c.Action == act
		}
		if !ok {
			fmt.Fprintln(w, "  unknown choice")
			continue
		}
		if (act == agent.ActionRevise || act == agent.ActionResearch) && text == "" {
			fmt.Fprint(w, "  what should change?\n> ")
			if text, err = readLine(in); err != nil {
				return agent.Answer{}, err
			}
		}
		return agent.Answer{Action: act, Feedback: text}, nil
	}
}

func readLine(in *bufio.Reader) (string, error) {
	line, err := in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		if errors.Is(err, io.EOF) {
			return "", errors.New("no answer on stdin (use --yes to approve everything)")
		}
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// progress renders agent events and the model client's notices on stderr.
// Both arrive from several goroutines.
type progress struct {
	w     io.Writer
	quiet bool

	mu      sync.Mutex
	tokens  int
	budget  int
	failure error // the last call that gave up
}

func (p *progress) printf(format string, args ...any) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// notice says that the run waits on the model (instead of minutes of
// silence) and remembers why a call gave up.
func (p *progress) notice(n llm.Notice) {
	switch n.Kind {
	case llm.NoticeRetry:
		p.printf("  waiting for the model (retry %d in %s: %s)\n", n.Retry, elapsed(n.Wait), noticeReason(n.Err))
	case llm.NoticeSlow:
		p.printf("  waiting for the model (no answer for %s, attempt %d)\n", elapsed(n.Wait), n.Attempt)
	case llm.NoticeFailed:
		p.mu.Lock()
		p.failure = n.Err
		p.mu.Unlock()
	}
}

func (p *progress) lastFailure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failure
}

// noticeReason is the short kind of a failed attempt ("llm: server error
// (HTTP 503)"), without the server's message.
func noticeReason(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		if le.Status != 0 {
			return fmt.Sprintf("%v (HTTP %d)", le.Kind, le.Status)
		}
		return le.Kind.Error()
	}
	if err != nil {
		return err.Error()
	}
	return "no answer"
}

func (p *progress) event(ev agent.Event) {
	switch ev.Kind {
	case agent.EventTokens:
		p.mu.Lock()
		if t := ev.Tokens; t != nil && t.Used > p.tokens {
			p.tokens, p.budget = t.Used, t.Budget
		}
		p.mu.Unlock()
	case agent.EventPhase:
		p.mu.Lock()
		tokens := p.tokens
		p.mu.Unlock()
		p.printf("• %s (%d tokens so far)\n", ev.Phase, tokens)
	case agent.EventPlanMade:
		if pl := ev.Plan; pl != nil {
			p.printf("plan: %s\n", pl.Theme)
			for i, st := range pl.Subtasks {
				p.printf("  %d. %s\n", i+1, st.Title)
			}
		}
	case agent.EventSubtaskStarted:
		p.printf("→ [%d.%d] %s\n", ev.Subtask.Round, ev.Subtask.Index+1, ev.Subtask.Title)
	case agent.EventSubtaskFinished:
		mark := "✓"
		if !ev.Subtask.Completed {
			mark = "…"
		}
		p.printf("%s [%d.%d] %s (%d findings, %d tries)\n", mark, ev.Subtask.Round, ev.Subtask.Index+1, ev.Subtask.Title, ev.Subtask.Findings, ev.Subtask.Tries)
	case agent.EventSearched:
		p.printf("  search %q: %d results\n", ev.Query, ev.Results)
	case agent.EventSourceRead:
		p.printf("  read %s <%s>\n", ev.Title, ev.URL)
	case agent.EventDraft, agent.EventWarning, agent.EventBudget:
		p.printf("  %s\n", ev.Message)
	case agent.EventReviewed:
		if r := ev.Review; r != nil {
			verdict := "needs work"
			if r.Approved {
				verdict = "passed"
			}
			p.printf("  review %d: %.2f (fact %.2f) %s\n", r.Round, r.Overall, r.Scores.FactCheck, verdict)
		}
	}
}

// askRequester is who asks through `ask`: the person at this machine. A
// later `ask` may use the reports of earlier ones (they are private
// answers of the same requester); Slack runs never see them.
const askRequester = "cli"

// keepAskReport stores a finished `ask` report as a source for later
// private questions, cited as deepresearch://report/THREAD_ID (a follow-up
// on the thread replaces it with its own report). A report that cannot be
// kept costs nothing else.
func keepAskReport(ctx context.Context, deps agent.Deps, question, threadID string, res research.Result, logger *slog.Logger) {
	src, ok := deps.Reports.(research.ReportSource)
	if !ok || res.Reply || strings.TrimSpace(res.Report) == "" {
		return
	}
	title := ""
	if m := reportTitleRE.FindStringSubmatch(res.Report); m != nil {
		title = strings.TrimSpace(m[1])
	}
	err := src.Store.SaveReport(ctx, research.PastReport{
		RunID: threadID, Private: true, Requester: askRequester, URL: research.ReportURI(threadID),
		Title: title, Question: question, Text: res.Report, CreatedAt: time.Now(),
	})
	if err != nil {
		logger.Error("keep the report as a source", "err", err)
	}
}

// reportTitleRE is a report's first heading.
var reportTitleRE = regexp.MustCompile(`(?m)^#\s+(.+)$`)

// chartPlace is where a chart of the report is written and how the
// report links it.
type chartPlace struct {
	chart      research.Chart
	path, link string
}

// chartPlaces names the report's charts as files named after the report
// (-o report.md: report-chart-1.png beside it; on stdout: the thread's id
// in dir, default the current directory) and returns the report with its
// links pointing at them.
func chartPlaces(threadID string, res research.Result, out, dir string) (string, []chartPlace) {
	report := res.Report
	if len(res.Charts) == 0 {
		return report, nil
	}
	base := threadID
	switch {
	case out != "" && dir == "":
		dir = filepath.Dir(out)
		base = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
	case out != "":
		base = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
	case dir == "":
		dir = "."
	}
	var places []chartPlace
	for _, c := range res.Charts {
		name := base + "-" + c.Name
		path := filepath.Join(dir, name)
		// the link is relative to the report: beside it, its bare name
		link := name
		if out == "" || filepath.Clean(dir) != filepath.Clean(filepath.Dir(out)) {
			link = path
		}
		places = append(places, chartPlace{chart: c, path: path, link: link})
		report = strings.ReplaceAll(report, "]("+c.Name+")", "]("+link+")")
	}
	return report, places
}

// writeCharts writes the report's charts (chartPlaces), says on stderr
// where each went, and returns the report with its links pointing at them.
func writeCharts(threadID string, res research.Result, out, dir string, p *progress) (string, error) {
	report, places := chartPlaces(threadID, res, out, dir)
	for _, pl := range places {
		if err := os.WriteFile(pl.path, pl.chart.PNG, 0o644); err != nil {
			return "", fmt.Errorf("write the chart: %w", err)
		}
		p.printf("chart written to %s (%s)\n", pl.path, pl.chart.Title)
	}
	return report, nil
}
