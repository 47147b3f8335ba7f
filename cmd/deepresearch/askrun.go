package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"deepresearch/agent"
	"deepresearch/clock"
	"deepresearch/research"
)

// askFlags are what `ask` was asked for.
type askFlags struct {
	out, chartDir, thread, depth, lang string
	yes, approvePlan, approveDraft     bool
	team                               int
}

// askSession runs one `ask` through the run service, on the database
// serve uses: a run is created for the question (or, without one, for
// carrying the thread on), worked on under a lease, paused for the person
// at the terminal, and its report written once. A killed `ask` leaves its
// run running until its lease expires; `ask --thread ID` then takes it
// over and continues from the last checkpoint.
type askSession struct {
	a      *agent.Agent
	svc    *research.Service
	store  research.RunStore
	term   *termRuns
	p      *progress
	f      askFlags
	stderr io.Writer
	in     *bufio.Reader
}

// newAskID is a fresh id with prefix ("cli-" threads, "ask-" runs and
// owners).
func newAskID(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + time.Now().UTC().Format("20060102") + "-" + hex.EncodeToString(b)
}

// askOwner names this process as a run's lease holder.
func askOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("ask-%s-%d-%s", host, os.Getpid(), newAskID(""))
}

// begin returns the run to work on: a new one for a question (a follow-up
// on --thread), else the thread's unfinished run, or a new run that
// carries the thread on from its last checkpoint.
func (s *askSession) begin(ctx context.Context, question string) (research.Run, error) {
	now := time.Now()
	r := research.Run{
		ID: "ask:" + newAskID(""), ThreadID: s.f.thread, Requester: askRequester, Question: question, FollowUp: s.f.thread != "",
		Options: research.RunOptions{ApprovePlan: s.f.approvePlan, ApproveDraft: s.f.approveDraft, Depth: s.f.depth,
			Language: s.f.lang, TeamSize: s.f.team, Private: true},
		CreatedAt: now, UpdatedAt: now,
	}
	if question == "" {
		latest, err := s.store.LatestRun(ctx, s.f.thread)
		if err == nil && latest.State.Active() {
			return latest, nil
		}
		if err != nil && !errors.Is(err, research.ErrNotFound) {
			return research.Run{}, err
		}
	}
	if r.ThreadID == "" {
		r.ThreadID = newThreadID()
	}
	if question != "" {
		s.p.printf("thread %s (continue it with: deepresearch ask --thread %s)\n", r.ThreadID, r.ThreadID)
	}
	err := s.svc.Create(ctx, r, 0)
	if errors.Is(err, research.ErrThreadBusy) {
		if latest, lerr := s.store.LatestRun(ctx, r.ThreadID); lerr == nil && latest.State == research.StateWaiting {
			return research.Run{}, askError(agent.ErrWaiting)
		}
		return research.Run{}, fmt.Errorf("the thread has a run that did not finish: run deepresearch ask --thread %s without a question to continue it", r.ThreadID)
	}
	return r, err
}

// drive takes the run from its state to its end: it works on it (taking
// it over once a stopped process's lease expires), asks the person at
// every pause, and returns the run once it has ended.
func (s *askSession) drive(ctx context.Context, r research.Run) (research.Run, error) {
	for {
		var err error
		switch r.State {
		case research.StateDone, research.StateFailed, research.StateCancelled:
			return r, nil
		case research.StateWaiting:
			r, err = s.answer(ctx, r)
		default:
			r, err = s.work(ctx, r.ID)
			if err == nil && ctx.Err() != nil {
				// handed back: a later ask continues at once
				err = fmt.Errorf("%w; continue with: deepresearch ask --thread %s", ctx.Err(), r.ThreadID)
			}
		}
		if err != nil {
			return r, err
		}
	}
}

// work works on the run; while another process holds it (a stopped ask
// whose lease has not expired) it waits for the lease to end.
func (s *askSession) work(ctx context.Context, id string) (research.Run, error) {
	told := false
	for {
		cur, err := s.svc.Work(ctx, id)
		if !errors.Is(err, research.ErrNotAcquired) {
			return cur, err
		}
		if cur, err = s.store.Run(ctx, id); err != nil || cur.State != research.StateRunning {
			return cur, err
		}
		if !told {
			s.p.printf("the run is held by another process until %s (its lease); waiting to take it over\n", cur.LeaseUntil.Local().Format("15:04:05"))
			told = true
		}
		wait := max(time.Until(cur.LeaseUntil)+50*time.Millisecond, 100*time.Millisecond)
		if err := clock.Sleep(ctx, clock.Real{}, wait); err != nil {
			return cur, err
		}
	}
}

// answer asks the person about the interrupt the run waits on and records
// the decision; a cancel ends the run.
func (s *askSession) answer(ctx context.Context, r research.Run) (research.Run, error) {
	res, err := s.a.Get(ctx, r.ThreadID)
	if err != nil {
		return r, askError(err)
	}
	var it agent.Interrupt
	for _, x := range res.Interrupts {
		if r.Interrupt != nil && x.ID == r.Interrupt.ID {
			it = x
		}
	}
	if it.ID == "" {
		return r, fmt.Errorf("the run waits on an interrupt its thread %s no longer has", r.ThreadID)
	}
	ans, err := askPerson(s.stderr, s.in, it, s.f.yes)
	if err != nil {
		return r, fmt.Errorf("%w; answer later with: deepresearch ask --thread %s", err, r.ThreadID)
	}
	d := research.Decision{InterruptID: it.ID, Action: productAction(ans.Action), Text: ans.Feedback, By: askRequester, At: time.Now()}
	if ans.Action == agent.ActionAnswer {
		d.Text = ans.Text
	}
	next, err := s.svc.Decide(ctx, r.ID, d)
	if err != nil {
		return r, err
	}
	return next, nil
}

// productAction is an agent's choice in the product's words (the Runner
// maps it back).
func productAction(a agent.Action) research.Action {
	switch a {
	case agent.ActionResearch:
		return research.ActionMore
	case agent.ActionApprove:
		return research.ActionApprove
	case agent.ActionRevise:
		return research.ActionRevise
	case agent.ActionCancel:
		return research.ActionCancel
	case agent.ActionAnswer:
		return research.ActionAnswer
	}
	return research.Action(a)
}

// termRuns is the terminal's face of the run service: progress goes to
// stderr (through the Runner's agent events), the report to stdout or
// the -o file, once.
type termRuns struct {
	stdout   io.Writer
	p        *progress
	out      string // -o
	chartDir string
	question string
	deps     agent.Deps
	logger   *slog.Logger

	wrote   bool  // this process wrote the report
	failure error // why the run failed
}

// Open shows a run: the terminal shows it as it goes.
func (t *termRuns) Open(_ context.Context, r research.Run) research.View {
	return &termView{t: t, threadID: r.ThreadID}
}

// termView is one run at the terminal.
type termView struct {
	t        *termRuns
	threadID string
}

func (*termView) Show(context.Context, research.Run)       {}
func (*termView) Progress(research.Progress)               {}
func (*termView) Alive(context.Context)                    {}
func (*termView) Turned(research.Outcome)                  {}
func (*termView) Cancelled(context.Context, string)        {}
func (*termView) Halt()                                    {}
func (*termView) Ended(context.Context, research.RunState) {}
func (*termView) Discard(context.Context, string) bool     { return true }
func (v *termView) Failed(_ context.Context, cause error)  { v.t.failure = cause }
func (*termView) Paused(_ context.Context, in research.Interrupt) research.PendingInterrupt {
	return research.PendingInterrupt{ID: in.ID, Kind: in.Kind, Text: in.Text}
}

// Finished keeps the report as a source for later private questions.
func (v *termView) Finished(ctx context.Context, res research.Result, _ string) {
	keepAskReport(ctx, v.t.deps, v.t.question, v.threadID, res, v.t.logger)
}

// Published reports whether the -o file holds the report already (an
// ask that stopped after writing it and before recording it): it is not
// written again. The report on stdout is never found.
func (v *termView) Published(_ context.Context, res research.Result, _ research.Staging) (research.Upload, bool) {
	t := v.t
	if t.out == "" || res.Reply {
		return research.Upload{}, false
	}
	report, _ := chartPlaces(v.threadID, res, t.out, t.chartDir)
	got, err := os.ReadFile(t.out)
	if err != nil || !bytes.Equal(got, []byte(termSafe(report))) {
		return research.Upload{}, false
	}
	t.p.printf("report written to %s\n", t.out)
	return research.Upload{FileID: t.out}, true
}

// Publish writes the reply to stdout, or the report's charts and the
// report to -o or stdout.
func (v *termView) Publish(_ context.Context, res research.Result, _ research.Staging) (research.Upload, error) {
	t := v.t
	t.wrote = true
	if res.Reply {
		fmt.Fprintln(t.stdout, res.Summary)
		return research.Upload{FileID: "stdout"}, nil
	}
	report, err := writeCharts(v.threadID, res, t.out, t.chartDir, t.p)
	if err != nil {
		return research.Upload{}, err
	}
	if t.out == "" {
		fmt.Fprint(t.stdout, report)
		return research.Upload{FileID: "stdout"}, nil
	}
	if err := os.WriteFile(t.out, []byte(termSafe(report)), 0o644); err != nil {
		return research.Upload{}, fmt.Errorf("write the report: %w", err)
	}
	t.p.printf("report written to %s\n", t.out)
	return research.Upload{FileID: t.out}, nil
}
