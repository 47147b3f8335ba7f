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
	"strings"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/llm"
	"deepresearch/storage"
)

const askUsage = `usage: deepresearch ask [flags] "question"

Runs one research in the terminal: progress on stderr, the report on stdout
(or -o FILE). With --thread ID it continues a thread: a new question is a
follow-up ("dig deeper into X", "rewrite it shorter"); no question resumes a
thread that was interrupted or stopped.

flags:`

// runAsk is `deepresearch ask`.
func runAsk(ctx context.Context, args []string, e env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, askUsage)
		fs.PrintDefaults()
	}
	out := fs.String("o", "", "write the report to this file instead of stdout")
	thread := fs.String("thread", "", "continue or resume this thread")
	yes := fs.Bool("yes", false, "approve every plan and draft without asking (clarifying questions get no answer)")
	approvePlan := fs.Bool("approve-plan", false, "stop to approve the research plan")
	approveDraft := fs.Bool("approve-draft", false, "stop to approve the draft before it is final")
	depth := fs.String("depth", "standard", "quick, standard or deep")
	lang := fs.String("lang", "", "language of the report (default: the question's)")
	quiet := fs.Bool("q", false, "no progress on stderr")
	budget := fs.Int("tokens", 0, "token budget of the run (default 1,000,000)")
	timeBudget := fs.Duration("time", 0, "wall-clock budget of the run (default 15m)")
	words, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	question := strings.TrimSpace(strings.Join(words, " "))
	if question == "" && *thread == "" {
		return usageError{`the question is empty: deepresearch ask "your question"`}
	}
	switch agent.Depth(*depth) {
	case agent.DepthQuick, agent.DepthStandard, agent.DepthDeep:
	default:
		return usageError{fmt.Sprintf("--depth %q: want quick, standard or deep", *depth)}
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	deps, closeAll, err := askDeps(ctx, e, logger)
	if err != nil {
		return err
	}
	defer closeAll()
	a, err := agent.New(deps, agent.Options{TokenBudget: *budget, TimeBudget: *timeBudget})
	if err != nil {
		return err
	}

	p := &progress{w: stderr, quiet: *quiet}
	var res *agent.Result
	switch {
	case question != "":
		id := *thread
		if id == "" {
			id = newThreadID()
		}
		p.printf("thread %s (continue it with: deepresearch ask --thread %s)\n", id, id)
		res, err = a.Start(ctx, id, agent.Request{Question: question, Language: *lang, Depth: agent.Depth(*depth),
			ApprovePlan: *approvePlan, ApproveDraft: *approveDraft}, p.event)
	default:
		res, err = a.Get(ctx, *thread)
		if err == nil && res.Status != agent.StatusInterrupted {
			res, err = a.Continue(ctx, *thread, p.event)
		}
	}
	if err != nil {
		return askError(err)
	}
	in := bufio.NewReader(stdin)
	for res.Status == agent.StatusInterrupted {
		answers := map[string]agent.Answer{}
		for _, it := range res.Interrupts {
			ans, err := askPerson(stderr, in, it, *yes)
			if err != nil {
				return fmt.Errorf("%w; answer later with: deepresearch ask --thread %s", err, res.ThreadID)
			}
			answers[it.ID] = ans
		}
		if res, err = a.Resume(ctx, res.ThreadID, answers, p.event); err != nil {
			return askError(err)
		}
	}
	switch res.Status {
	case agent.StatusReplied:
		fmt.Fprintln(stdout, res.Reply)
		return nil
	case agent.StatusCancelled:
		p.printf("cancelled\n")
		return nil
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(res.Report), 0o644); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
		p.printf("report written to %s\n", *out)
	} else {
		fmt.Fprint(stdout, res.Report)
	}
	c := res.Citations
	p.printf("done (%s): %d sources read, citations %d cited / %d verified / %d dropped, %d tokens in %d calls\n",
		res.Finish, len(res.Sources), c.Cited, c.Verified, c.Dropped, res.Usage.Total(), res.Usage.Calls)
	for _, u := range res.Unverified {
		p.printf("unverified: %s\n", u)
	}
	return nil
}

// askError maps the agent's errors to one clear line.
func askError(err error) error {
	switch {
	case errors.Is(err, agent.ErrEmptyQuestion):
		return usageError{"the question is empty"}
	case errors.Is(err, agent.ErrUnknownThread):
		return fmt.Errorf("no thread with that id in this database (check --thread and DEEPRESEARCH_DATA_DIR / DATABASE_URL)")
	case errors.Is(err, agent.ErrWaiting):
		return fmt.Errorf("the thread is waiting for an answer: run deepresearch ask --thread ID without a question to answer it")
	case errors.Is(err, llm.ErrUnauthorized), errors.Is(err, llm.ErrForbidden):
		return fmt.Errorf("the LLM endpoint refused the key: check OPENAI_API_KEY (%w)", err)
	case errors.Is(err, llm.ErrModelNotFound):
		return fmt.Errorf("the model was not found: check DEEPRESEARCH_MODEL (%w)", err)
	}
	return err
}

// askDeps builds the agent's collaborators from the environment, with the
// checkpoint store of askStore.
func askDeps(ctx context.Context, e env, logger *slog.Logger) (agent.Deps, func(), error) {
	return agentDeps(ctx, e, logger, askStore)
}

// askStore opens the database: Postgres when DATABASE_URL is a postgres
// URL, else SQLite under DEEPRESEARCH_DATA_DIR (default ./data).
func askStore(ctx context.Context, e env) (*storage.DB, error) {
	return storage.Open(ctx, storage.ConfigFromEnv(e))
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

// progress renders agent events on stderr.
type progress struct {
	w      io.Writer
	quiet  bool
	tokens int
	budget int
}

func (p *progress) printf(format string, args ...any) {
	if !p.quiet {
		fmt.Fprintf(p.w, format, args...)
	}
}

func (p *progress) event(ev agent.Event) {
	switch ev.Kind {
	case agent.EventTokens:
		if t := ev.Tokens; t != nil && t.Used > p.tokens {
			p.tokens, p.budget = t.Used, t.Budget
		}
	case agent.EventPhase:
		p.printf("• %s (%d tokens so far)\n", ev.Phase, p.tokens)
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
