package research_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/research"
)

const question = "What does the EU AI Act require?"

func TestRunToCompletion(t *testing.T) {
	w := newWorld(t)
	r, _ := w.researcher()
	ctx := testCtx(t)
	var rec recorder
	out, err := r.Start(ctx, research.StartRequest{ThreadID: "t1", Question: question, Options: research.RunOptions{Depth: "quick"}}, rec.sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.Interrupt != nil || out.Result == nil {
		t.Fatalf("outcome = %+v", out)
	}
	res := out.Result
	if res.Title != reportTitle {
		t.Errorf("title = %q", res.Title)
	}
	if res.Summary != reportSummary {
		t.Errorf("summary = %q", res.Summary)
	}
	if !strings.Contains(res.Report, "## References") || !strings.Contains(res.Report, "[^1]: ") {
		t.Errorf("report = %q", res.Report)
	}
	if res.Citations == 0 || res.Sources == 0 || res.Tokens == 0 || res.Elapsed <= 0 {
		t.Errorf("result stats: citations %d sources %d tokens %d elapsed %v", res.Citations, res.Sources, res.Tokens, res.Elapsed)
	}

	snaps := rec.all()
	if len(snaps) < 5 {
		t.Fatalf("only %d progress snapshots", len(snaps))
	}
	phases := map[string]bool{}
	var sawRunning, sawPlan bool
	for _, p := range snaps {
		phases[p.Phase] = true
		if slices.Equal(p.Plan, plan) {
			sawPlan = true
		}
		for _, s := range p.Subtasks {
			sawRunning = sawRunning || s.State == research.SubtaskRunning
		}
	}
	for _, ph := range []string{"planning", "researching", "writing", "reviewing"} {
		if !phases[ph] {
			t.Errorf("no snapshot in phase %q (phases %v)", ph, phases)
		}
	}
	if !sawPlan || !sawRunning {
		t.Errorf("plan seen %v, running subtask seen %v", sawPlan, sawRunning)
	}
	last := snaps[len(snaps)-1]
	if last.SourcesRead == 0 || last.Tokens == 0 {
		t.Errorf("last snapshot = %+v", last)
	}
	if len(last.Subtasks) < 2 {
		t.Fatalf("subtasks = %+v", last.Subtasks)
	}
	for _, s := range last.Subtasks {
		if s.State != research.SubtaskDone {
			t.Errorf("subtask %q is %s at the end", s.Title, s.State)
		}
	}
	// snapshots grow monotonically and are independent copies
	for i := 1; i < len(snaps); i++ {
		if snaps[i].Tokens < snaps[i-1].Tokens || snaps[i].SourcesRead < snaps[i-1].SourcesRead {
			t.Errorf("snapshot %d went backwards: %+v after %+v", i, snaps[i], snaps[i-1])
		}
	}
	if last.Theme == "" {
		t.Error("the last snapshot has no theme")
	}
	// every subtask shows its searches and the pages it read, once each;
	// together they are the sources read
	read := map[string]bool{}
	for _, st := range last.Subtasks {
		if st.State != research.SubtaskDone || st.Searches == 0 || len(st.Sources) == 0 {
			t.Errorf("subtask %q: %s, %d searches, %d sources", st.Title, st.State, st.Searches, len(st.Sources))
		}
		seen := map[string]bool{}
		for _, src := range st.Sources {
			if src.URL == "" || src.Title == "" || seen[src.URL] {
				t.Errorf("subtask %q: source %+v (repeated: %v)", st.Title, src, seen[src.URL])
			}
			seen[src.URL], read[src.URL] = true, true
		}
	}
	if len(read) != last.SourcesRead {
		t.Errorf("subtasks read %d pages, progress says %d", len(read), last.SourcesRead)
	}
	// a snapshot's subtask sources are its own
	if n := len(last.Subtasks[0].Sources); n > 0 {
		snaps[len(snaps)-2].Subtasks[0].Sources = append(snaps[len(snaps)-2].Subtasks[0].Sources, research.Source{URL: "x"})
		if len(last.Subtasks[0].Sources) != n {
			t.Error("snapshots share their subtask sources")
		}
	}
	first := snaps[0]
	first.Plan = append(first.Plan, "x")
	if len(snaps[len(snaps)-1].Plan) != len(plan) {
		t.Error("snapshots share their plan")
	}

	// the turn is finished: nothing to continue
	if _, err := r.Continue(ctx, "t1", rec.sink); !errors.Is(err, research.ErrNothingToContinue) {
		t.Errorf("Continue after done: %v", err)
	}
	if _, err := r.Continue(ctx, "unknown", rec.sink); !errors.Is(err, research.ErrNothingToContinue) {
		t.Errorf("Continue on an unknown thread: %v", err)
	}
}

func TestDraftApproval(t *testing.T) {
	w := newWorld(t)
	r, _ := w.researcher()
	ctx := testCtx(t)
	var rec recorder
	out, err := r.Start(ctx, research.StartRequest{ThreadID: "t2", Question: question,
		Options: research.RunOptions{Depth: "quick", ApproveDraft: true}}, rec.sink)
	if err != nil {
		t.Fatal(err)
	}
	in := out.Interrupt
	if in == nil || out.Result != nil {
		t.Fatalf("outcome = %+v", out)
	}
	if in.Kind != research.InterruptDraft || in.ID == "" {
		t.Errorf("interrupt = %+v", in)
	}
	if !strings.Contains(in.Draft, "# "+reportTitle) || !strings.Contains(in.Draft, "[^1]:") {
		t.Errorf("draft = %q", in.Draft)
	}
	if !strings.Contains(in.Text, reportSummary) || !strings.Contains(in.Text, "Citations:") {
		t.Errorf("text = %q", in.Text)
	}
	// a waiting thread has nothing to continue: the bot resumes it
	if _, err := r.Continue(ctx, "t2", rec.sink); !errors.Is(err, research.ErrNothingToContinue) {
		t.Errorf("Continue while waiting: %v", err)
	}

	// another process answers
	r2, _ := w.researcher()
	var rec2 recorder
	out, err = r2.Resume(ctx, "t2", in.ID, research.Answer{Action: research.ActionApprove, By: "U1"}, rec2.sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result == nil || !strings.Contains(out.Result.Report, "## References") {
		t.Fatalf("outcome after approve = %+v", out)
	}
	if snaps := rec2.all(); len(snaps) == 0 || len(snaps[0].Plan) != len(plan) || snaps[0].SourcesRead == 0 {
		t.Errorf("resumed progress does not start from the thread's plan and sources: %+v", snaps)
	}
	// a second answer to the same interrupt is not applied: the graph
	// refuses it, and since the turn has finished, Resume returns that
	// turn's outcome unchanged (a bot process that died before recording
	// the outcome gets it back instead of failing the run)
	again, err := r2.Resume(ctx, "t2", in.ID, research.Answer{Action: research.ActionRevise, Text: "other", By: "U1"}, rec2.sink)
	if err != nil || again.Result == nil || again.Result.Report != out.Result.Report {
		t.Errorf("a second answer: err %v, outcome %+v; want the finished turn's report unchanged", err, again)
	}
}

func TestResearchMoreAndRevise(t *testing.T) {
	w := newWorld(t)
	r, _ := w.researcher()
	ctx := testCtx(t)
	out, err := r.Start(ctx, research.StartRequest{ThreadID: "t3", Question: question,
		Options: research.RunOptions{Depth: "quick", ApproveDraft: true, ApprovePlan: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Interrupt == nil || out.Interrupt.Kind != research.InterruptPlan || !strings.Contains(out.Interrupt.Text, "1. Timeline") {
		t.Fatalf("plan interrupt = %+v", out.Interrupt)
	}
	planners := w.brain.Count("planner")
	out, err = r.Resume(ctx, "t3", out.Interrupt.ID, research.Answer{Action: research.ActionRevise, Text: "start with penalties"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Interrupt == nil || out.Interrupt.Kind != research.InterruptPlan || w.brain.Count("planner") != planners+1 {
		t.Fatalf("revise did not replan: %+v", out.Interrupt)
	}
	out, err = r.Resume(ctx, "t3", out.Interrupt.ID, research.Answer{Action: research.ActionApprove}, nil)
	if err != nil || out.Interrupt == nil || out.Interrupt.Kind != research.InterruptDraft {
		t.Fatalf("after plan approval: %+v, %v", out, err)
	}
	researched := w.brain.Count("reflect")
	out, err = r.Resume(ctx, "t3", out.Interrupt.ID, research.Answer{Action: research.ActionMore, Text: "look for SMEs"}, nil)
	if err != nil || out.Interrupt == nil || out.Interrupt.Kind != research.InterruptDraft {
		t.Fatalf("after research more: %+v, %v", out, err)
	}
	if w.brain.Count("reflect") == researched {
		t.Error("research more did not research")
	}
	out, err = r.Resume(ctx, "t3", out.Interrupt.ID, research.Answer{Action: research.ActionApprove}, nil)
	if err != nil || out.Result == nil {
		t.Fatalf("after approve: %+v, %v", out, err)
	}
}

func TestCancelRunning(t *testing.T) {
	w := newWorld(t)
	r, a := w.researcher()
	ctx := testCtx(t)
	entered := w.brain.HangAt("writer")
	done := make(chan error, 1)
	go func() {
		_, err := r.Start(ctx, research.StartRequest{ThreadID: "t4", Question: question, Options: research.RunOptions{Depth: "quick"}}, nil)
		done <- err
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the writer was never called")
	}
	if err := r.Cancel(ctx, "t4"); err != nil {
		t.Fatal(err)
	}
	// Cancel returned after the running call did: the thread is free (a
	// call still running would make this Continue busy) and has nothing
	// left to continue. (Start's own return, after the agent's, may come a
	// moment later.)
	if _, err := r.Continue(ctx, "t4", nil); !errors.Is(err, research.ErrNothingToContinue) {
		t.Errorf("Continue right after cancel: %v (the cancelled call still running?)", err)
	}
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Errorf("Start after cancel: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the cancelled Start never returned")
	}
	w.brain.HangAt("")
	// a later Start begins afresh and finishes
	out, err := r.Start(ctx, research.StartRequest{ThreadID: "t4", Question: "Tell me about the AI Act fines", FollowUp: true, Options: research.RunOptions{Depth: "quick"}}, nil)
	if err != nil || out.Result == nil {
		t.Fatalf("Start after cancel: %+v, %v", out, err)
	}
	if res, err := a.Get(ctx, "t4"); err != nil || res.Status != agent.StatusDone {
		t.Errorf("thread after the new start: %+v, %v", res, err)
	}
}

func TestCancelWaiting(t *testing.T) {
	w := newWorld(t)
	r, a := w.researcher()
	ctx := testCtx(t)
	out, err := r.Start(ctx, research.StartRequest{ThreadID: "t5", Question: question, Options: research.RunOptions{Depth: "quick", ApproveDraft: true}}, nil)
	if err != nil || out.Interrupt == nil {
		t.Fatalf("%+v, %v", out, err)
	}
	// the bot cancels a waiting run from any process
	r2, _ := w.researcher()
	if err := r2.Cancel(ctx, "t5"); err != nil {
		t.Fatal(err)
	}
	res, err := a.Get(ctx, "t5")
	if err != nil || res.Status != agent.StatusCancelled || res.Finish != agent.FinishCancelled {
		t.Fatalf("thread after cancel: %+v, %v", res, err)
	}
	if _, err := r.Resume(ctx, "t5", out.Interrupt.ID, research.Answer{Action: research.ActionApprove}, nil); err == nil {
		t.Error("the cancelled interrupt could still be answered")
	}
	// cancelling again, or an unknown thread, is not an error
	if err := r2.Cancel(ctx, "t5"); err != nil {
		t.Error(err)
	}
	if err := r2.Cancel(ctx, "nothing-here"); err != nil {
		t.Error(err)
	}
	out, err = r.Start(ctx, research.StartRequest{ThreadID: "t5", Question: question, FollowUp: true, Options: research.RunOptions{Depth: "quick"}}, nil)
	if err != nil || out.Result == nil {
		t.Fatalf("Start after cancel: %+v, %v", out, err)
	}
}

// A run stopped by its context (shutdown, lost lease) is carried on by
// Continue in another process, without repeating finished work.
func TestContinueAfterStop(t *testing.T) {
	w := newWorld(t)
	r, _ := w.researcher()
	ctx := testCtx(t)
	w.stopInWriter(ctx, func(ctx context.Context) error {
		_, err := r.Start(ctx, research.StartRequest{ThreadID: "t6", Question: question, Options: research.RunOptions{Depth: "quick"}}, nil)
		return err
	})
	planners := w.brain.Count("planner")
	r2, _ := w.researcher()
	var rec recorder
	out, err := r2.Continue(ctx, "t6", rec.sink)
	if err != nil || out.Result == nil {
		t.Fatalf("Continue: %+v, %v", out, err)
	}
	if w.brain.Count("planner") != planners {
		t.Error("Continue planned again")
	}
	if snaps := rec.all(); len(snaps) == 0 || snaps[len(snaps)-1].SourcesRead == 0 {
		t.Errorf("continued progress = %+v", snaps)
	}
}

// A Start repeated for the same run after its turn finished (the process
// died before the bot recorded the outcome) returns that turn's report and
// asks the LLM nothing; another run on the thread starts a new turn.
func TestStartRepeatedForFinishedRun(t *testing.T) {
	w := newWorld(t)
	r, _ := w.researcher()
	ctx := testCtx(t)
	req := research.StartRequest{RunID: "run1", ThreadID: "t7", Question: question, Options: research.RunOptions{Depth: "quick"}}
	first, err := r.Start(ctx, req, nil)
	if err != nil || first.Result == nil {
		t.Fatalf("Start: %+v, %v", first, err)
	}
	planners, writers := w.brain.Count("planner"), w.brain.Count("writer")
	r2, _ := w.researcher()
	again, err := r2.Start(ctx, req, nil)
	if err != nil || again.Result == nil {
		t.Fatalf("repeated Start: %+v, %v", again, err)
	}
	if again.Result.Report != first.Result.Report {
		t.Errorf("repeated Start returned another report")
	}
	if w.brain.Count("planner") != planners || w.brain.Count("writer") != writers {
		t.Errorf("repeated Start asked the LLM again (planner %d→%d, writer %d→%d)", planners, w.brain.Count("planner"), writers, w.brain.Count("writer"))
	}

	follow := req
	follow.RunID, follow.FollowUp, follow.Question = "run2", true, "What about the penalties?"
	if _, err := r2.Start(ctx, follow, nil); err != nil {
		t.Fatal(err)
	}
	if w.brain.Count("writer") == writers {
		t.Error("a new run on the thread did not research")
	}
}
