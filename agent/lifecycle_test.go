package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/graph"
	"deepresearch/graph/memsaver"
)

const question = "What does the EU AI Act require?"

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// countingSaver counts the loads of threads' root checkpoints (subgraphs
// load their own namespaces).
type countingSaver struct {
	*memsaver.Store
	loads atomic.Int64
}

func (s *countingSaver) Load(ctx context.Context, thread, ns string, id int64) (*graph.Chain, error) {
	if ns == "" {
		s.loads.Add(1)
	}
	return s.Store.Load(ctx, thread, ns, id)
}

// startHeld starts a turn of a on thread whose first search holds until the
// turn's context ends, and returns once the search is held; the turn's error
// comes on the channel.
func startHeld(ctx context.Context, e *env, a *agent.Agent, thread string) <-chan error {
	entered := make(chan struct{})
	e.web.OnSearch = researchSearches(func(ctx context.Context, n int) error {
		if n != 1 {
			return nil
		}
		close(entered)
		<-ctx.Done()
		return ctx.Err()
	})
	errc := make(chan error, 1)
	go func() {
		_, err := a.Start(ctx, thread, agent.Request{Question: question}, nil)
		errc <- err
	}()
	<-entered
	return errc
}

// TestCancelThenContinueFindsNothing cancels a thread wherever it stands:
// a call running in this process, or a thread left by another process
// (a new Agent on the same Saver). Afterwards no process finds anything to
// continue, and a new question starts a new turn.
func TestCancelThenContinueFindsNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leave brings the thread where it is cancelled; it returns the
		// Agent to cancel with.
		leave func(t *testing.T, e *env, thread string) *agent.Agent
	}{
		{"running in this process", func(t *testing.T, e *env, thread string) *agent.Agent {
			a := e.agent()
			errc := startHeld(testCtx(t), e, a, thread)
			if err := a.Cancel(testCtx(t), thread); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			// Cancel has waited: the call no longer holds the thread (its
			// result may still be on its way to errc)
			if _, err := a.Continue(testCtx(t), thread, nil); errors.Is(err, agent.ErrBusy) {
				t.Fatal("Cancel returned before the running call let go of the thread")
			}
			select {
			case err := <-errc:
				if !errors.Is(err, agent.ErrCancelled) || !errors.Is(err, context.Canceled) {
					t.Errorf("the cancelled Start returned %v, want ErrCancelled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the cancelled Start did not return")
			}
			e.web.OnSearch = nil
			return nil // already cancelled
		}},
		{"stopped mid-turn by a crash", func(t *testing.T, e *env, thread string) *agent.Agent {
			ctx, cancel := context.WithCancel(testCtx(t))
			var once sync.Once
			e.web.OnSearch = researchSearches(func(_ context.Context, n int) error {
				if n == 2 {
					once.Do(cancel)
				}
				return nil
			})
			if _, err := e.agent().Start(ctx, thread, agent.Request{Question: question}, nil); !errors.Is(err, context.Canceled) {
				t.Fatalf("Start: %v", err)
			}
			e.web.OnSearch = nil
			return e.agent()
		}},
		{"waiting at the plan", func(t *testing.T, e *env, thread string) *agent.Agent {
			if res := e.start(thread, agent.Request{Question: question, ApprovePlan: true}); len(res.Interrupts) != 1 {
				t.Fatalf("%+v", res)
			}
			return e.agent()
		}},
		{"waiting at the draft", func(t *testing.T, e *env, thread string) *agent.Agent {
			if res := e.start(thread, agent.Request{Question: question, ApproveDraft: true}); len(res.Interrupts) != 1 {
				t.Fatalf("%+v", res)
			}
			return e.agent()
		}},
		{"waiting at a clarifying question", func(t *testing.T, e *env, thread string) *agent.Agent {
			e.brain.Intent = func(string) (string, string) { return "clarify", "Which regulation?" }
			res := e.start(thread, agent.Request{Question: "regulation?"})
			e.brain.Intent = nil
			if len(res.Interrupts) != 1 || res.Interrupts[0].Kind != agent.InterruptClarify {
				t.Fatalf("%+v", res)
			}
			return e.agent()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := testCtx(t)
			const thread = "cancel"
			if a := tc.leave(t, e, thread); a != nil {
				if err := a.Cancel(ctx, thread); err != nil {
					t.Fatalf("Cancel: %v", err)
				}
			}
			got, err := e.agent().Get(ctx, thread)
			if err != nil || got.Status != agent.StatusCancelled || got.Finish != agent.FinishCancelled || len(got.Interrupts) != 0 {
				t.Fatalf("after Cancel: %v %+v", err, got)
			}
			calls := e.srv.Calls()
			if _, err := e.agent().Continue(ctx, thread, nil); !errors.Is(err, agent.ErrNothingToContinue) {
				t.Fatalf("Continue after Cancel: %v, want ErrNothingToContinue", err)
			}
			if e.srv.Calls() != calls {
				t.Errorf("Continue after Cancel called the model %d times", e.srv.Calls()-calls)
			}
			// cancelling again changes nothing
			if err := e.agent().Cancel(ctx, thread); err != nil {
				t.Errorf("second Cancel: %v", err)
			}
			res := e.start(thread, agent.Request{Question: question})
			checkReport(t, res)
		})
	}
}

// TestCancelWithNothingToCancel: an unknown thread, or one whose turn has
// ended, is left as it is.
func TestCancelWithNothingToCancel(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	if err := e.agent().Cancel(ctx, "nobody"); err != nil {
		t.Errorf("Cancel of an unknown thread: %v", err)
	}
	if _, err := e.agent().Get(ctx, "nobody"); !errors.Is(err, agent.ErrUnknownThread) {
		t.Errorf("Cancel created the thread: %v", err)
	}
	res := e.start("done", agent.Request{Question: question})
	if err := e.agent().Cancel(ctx, "done"); err != nil {
		t.Errorf("Cancel of a finished thread: %v", err)
	}
	got, err := e.agent().Get(ctx, "done")
	if err != nil || got.Status != agent.StatusDone || got.Report != res.Report {
		t.Errorf("Cancel changed a finished thread: %v %s", err, got.Status)
	}
	if err := e.agent().Cancel(ctx, ""); !errors.Is(err, agent.ErrNoThread) {
		t.Errorf("Cancel without a thread: %v", err)
	}
}

// TestCancelWaitsAtMostForCtx: a call that does not stop leaves Cancel to
// its context.
func TestCancelWaitsAtMostForCtx(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	entered := make(chan struct{})
	e.web.OnSearch = researchSearches(func(_ context.Context, n int) error {
		if n == 1 {
			close(entered)
			<-release // ignores its context
		}
		return nil
	})
	a := e.agent()
	done := make(chan struct{})
	sctx := testCtx(t)
	go func() {
		defer close(done)
		a.Start(sctx, "stuck", agent.Request{Question: question}, nil)
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.Cancel(ctx, "stuck"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Cancel = %v, want its context's deadline", err)
	}
	close(release)
	<-done
}

// TestContinueNothingToContinue: Continue refuses, without calling the
// model, every thread that has no unfinished turn.
func TestContinueNothingToContinue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leave   func(t *testing.T, e *env, thread string)
		unknown bool
	}{
		{"unknown thread", func(*testing.T, *env, string) {}, true},
		{"finished", func(t *testing.T, e *env, thread string) {
			checkReport(t, e.start(thread, agent.Request{Question: question}))
		}, false},
		{"replied", func(t *testing.T, e *env, thread string) {
			e.brain.Intent = func(string) (string, string) { return "chat", "Hello." }
			if res := e.start(thread, agent.Request{Question: "hi"}); res.Status != agent.StatusReplied {
				t.Fatalf("%+v", res)
			}
		}, false},
		{"waiting for an answer", func(t *testing.T, e *env, thread string) {
			e.start(thread, agent.Request{Question: question, ApprovePlan: true})
		}, false},
		{"cancelled at its interrupt", func(t *testing.T, e *env, thread string) {
			e.start(thread, agent.Request{Question: question, ApprovePlan: true})
			res, err := e.agent().Resume(testCtx(t), thread, map[string]agent.Answer{"": {Action: agent.ActionCancel}}, nil)
			if err != nil || res.Status != agent.StatusCancelled {
				t.Fatalf("%v %+v", err, res)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tc.leave(t, e, "th")
			calls := e.srv.Calls()
			res, err := e.agent().Continue(testCtx(t), "th", nil)
			if !errors.Is(err, agent.ErrNothingToContinue) || res != nil {
				t.Fatalf("Continue = %+v, %v; want ErrNothingToContinue", res, err)
			}
			if errors.Is(err, agent.ErrUnknownThread) != tc.unknown {
				t.Errorf("Continue = %v; want ErrUnknownThread in it: %v", err, tc.unknown)
			}
			if e.srv.Calls() != calls {
				t.Errorf("Continue called the model %d times", e.srv.Calls()-calls)
			}
		})
	}
}

// TestStartSameTagReturnsFinishedTurn: Start asked again for the same
// request (same tag), from another process, returns the finished turn
// without calling the model or searching, and loads the thread once; a new
// tag starts a new turn.
func TestStartSameTagReturnsFinishedTurn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    agent.Request
		chat   bool
		status agent.Status
	}{
		{"report", agent.Request{Question: question, Tag: "run-1"}, false, agent.StatusDone},
		{"reply", agent.Request{Question: "hello there", Tag: "run-1"}, true, agent.StatusReplied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.chat {
				e.brain.Intent = func(string) (string, string) { return "chat", "Hello." }
			}
			saver := &countingSaver{Store: e.store}
			first := e.start("tag", tc.req)
			if first.Status != tc.status || first.Tag != "run-1" {
				t.Fatalf("first Start: %+v", first)
			}
			calls, searches := e.brain.Total(), e.web.Searches()
			a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Saver: saver, Logger: slog.New(slog.DiscardHandler)}, e.opts)
			if err != nil {
				t.Fatal(err)
			}
			again, err := a.Start(testCtx(t), "tag", tc.req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if again.Status != tc.status || again.Report != first.Report || again.Reply != first.Reply || again.Tag != "run-1" {
				t.Errorf("the same Start again returned %+v, want the first turn %+v", again, first)
			}
			if e.brain.Total() != calls || e.web.Searches() != searches {
				t.Errorf("the same Start again called the model %d times and searched %d times", e.brain.Total()-calls, e.web.Searches()-searches)
			}
			if n := saver.loads.Load(); n != 1 {
				t.Errorf("the same Start again loaded the thread %d times, want 1", n)
			}
			other := tc.req
			other.Tag = "run-2"
			next := e.start("tag", other)
			if next.Status != tc.status || next.Tag != "run-2" || e.brain.Total() == calls {
				t.Errorf("a new tag did not start a new turn: %d model calls, %+v", e.brain.Total()-calls, next)
			}
		})
	}
}

// TestStartSameTagWaitingReturnsInterrupt: Start asked again for the
// request whose turn waits at an interrupt returns that interrupt (to be
// shown again); another request is refused with ErrWaiting.
func TestStartSameTagWaitingReturnsInterrupt(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	req := agent.Request{Question: question, ApprovePlan: true, Tag: "run-1"}
	first := e.start("wait", req)
	if len(first.Interrupts) != 1 {
		t.Fatalf("%+v", first)
	}
	calls := e.brain.Total()
	again, err := e.agent().Start(ctx, "wait", req, nil)
	if err != nil {
		t.Fatalf("the same Start again: %v", err)
	}
	if again.Status != agent.StatusInterrupted || len(again.Interrupts) != 1 || again.Interrupts[0].ID != first.Interrupts[0].ID ||
		again.Interrupts[0].Plan == nil {
		t.Errorf("the same Start again returned %+v, want the waiting interrupt %+v", again, first.Interrupts[0])
	}
	for _, tag := range []string{"run-2", ""} {
		if _, err := e.agent().Start(ctx, "wait", agent.Request{Question: question, Tag: tag}, nil); !errors.Is(err, agent.ErrWaiting) {
			t.Errorf("Start with tag %q on a waiting thread: %v, want ErrWaiting", tag, err)
		}
	}
	if _, err := e.agent().Resume(ctx, "wait", map[string]agent.Answer{"no-such-interrupt": {Action: agent.ActionApprove}}, nil); !errors.Is(err, graph.ErrNoInterrupt) {
		t.Errorf("Resume of an unknown interrupt: %v", err)
	}
	if e.brain.Total() != calls {
		t.Errorf("%d model calls", e.brain.Total()-calls)
	}
	// the interrupt shown again is answered as usual
	res, err := e.agent().Resume(ctx, "wait", map[string]agent.Answer{again.Interrupts[0].ID: {Action: agent.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, res)
}

// TestResumeAnsweredFinished: answering an interrupt again, once its turn
// has ended, returns that turn instead of failing; while the thread waits
// at a later interrupt the repeated answer is still refused.
func TestResumeAnsweredFinished(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer agent.Action
		status agent.Status
	}{
		{"approved", agent.ActionApprove, agent.StatusDone},
		{"cancelled", agent.ActionCancel, agent.StatusCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := testCtx(t)
			first := e.start("resume", agent.Request{Question: question, ApprovePlan: true})
			if len(first.Interrupts) != 1 {
				t.Fatalf("%+v", first)
			}
			id := first.Interrupts[0].ID
			done, err := e.agent().Resume(ctx, "resume", map[string]agent.Answer{id: {Action: tc.answer}}, nil)
			if err != nil || done.Status != tc.status {
				t.Fatalf("Resume: %v %+v", err, done)
			}
			calls := e.brain.Total()
			for _, action := range []agent.Action{tc.answer, agent.ActionRevise} {
				again, err := e.agent().Resume(ctx, "resume", map[string]agent.Answer{id: {Action: action, Feedback: "x"}}, nil)
				if err != nil {
					t.Fatalf("answering again (%s): %v", action, err)
				}
				if again.Status != tc.status || again.Report != done.Report || len(again.Interrupts) != 0 {
					t.Errorf("answering again (%s) returned %+v, want the ended turn", action, again)
				}
			}
			if e.brain.Total() != calls {
				t.Errorf("answering again called the model %d times", e.brain.Total()-calls)
			}
		})
	}
}

// TestOneCallPerThread: while a call works on a thread, another call of the
// same Agent on that thread is refused; other threads run.
func TestOneCallPerThread(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	a := e.agent()
	errc := startHeld(ctx, e, a, "busy")
	for name, call := range map[string]func() error{
		"Start": func() error {
			_, err := a.Start(ctx, "busy", agent.Request{Question: question}, nil)
			return err
		},
		"Resume": func() error {
			_, err := a.Resume(ctx, "busy", map[string]agent.Answer{"": {Action: agent.ActionApprove}}, nil)
			return err
		},
		"Continue": func() error {
			_, err := a.Continue(ctx, "busy", nil)
			return err
		},
	} {
		if err := call(); !errors.Is(err, agent.ErrBusy) {
			t.Errorf("%s on a busy thread: %v, want ErrBusy", name, err)
		}
	}
	res, err := a.Start(ctx, "free", agent.Request{Question: question}, nil)
	if err != nil {
		t.Fatalf("Start on another thread: %v", err)
	}
	checkReport(t, res)
	if err := a.Cancel(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, agent.ErrCancelled) {
		t.Errorf("the cancelled call returned %v", err)
	}
	// the thread is free again
	checkReport(t, e.start("busy", agent.Request{Question: question}))
}

// TestCallsLoadOnce: Start, Resume and Continue each load the thread once
// before running it (the graph's run loads it once more).
func TestCallsLoadOnce(t *testing.T) {
	e := newEnv(t)
	saver := &countingSaver{Store: e.store}
	ctx := testCtx(t)
	a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Saver: saver, Logger: slog.New(slog.DiscardHandler)}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	// want counts Saver.Load calls: the agent's own load, which the graph
	// reuses when it starts a turn, continues one or stores an answer.
	loads := func(name string, want int64, fn func() (*agent.Result, error)) *agent.Result {
		t.Helper()
		saver.loads.Store(0)
		res, err := fn()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := saver.loads.Load(); n != want {
			t.Errorf("%s loaded the thread %d times, want %d", name, n, want)
		}
		return res
	}
	res := loads("Start on a new thread", 1, func() (*agent.Result, error) {
		return a.Start(ctx, "once", agent.Request{Question: question, ApprovePlan: true}, nil)
	})
	loads("Resume", 1, func() (*agent.Result, error) {
		return a.Resume(ctx, "once", map[string]agent.Answer{res.Interrupts[0].ID: {Action: agent.ActionApprove}}, nil)
	})
	// a run stopped mid-way, continued
	stop, cancel := context.WithCancel(ctx)
	var once sync.Once
	e.web.OnSearch = researchSearches(func(_ context.Context, n int) error {
		if n == 2 {
			once.Do(cancel)
		}
		return nil
	})
	if _, err := a.Start(stop, "once", agent.Request{Question: question}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start: %v", err)
	}
	e.web.OnSearch = nil
	checkReport(t, loads("Continue", 1, func() (*agent.Result, error) { return a.Continue(ctx, "once", nil) }))
	checkReport(t, loads("Start on a thread with history", 1, func() (*agent.Result, error) {
		return a.Start(ctx, "once", agent.Request{Question: question}, nil)
	}))
}

// TestConcurrentCancels: Cancels racing on one thread all succeed; none
// interrupts another one's recording.
func TestConcurrentCancels(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	a := e.agent()
	errc := startHeld(ctx, e, a, "race")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := a.Cancel(ctx, "race"); err != nil {
				t.Errorf("Cancel: %v", err)
			}
		})
	}
	wg.Wait()
	if err := <-errc; !errors.Is(err, agent.ErrCancelled) {
		t.Errorf("the cancelled call returned %v", err)
	}
	if got, err := a.Get(ctx, "race"); err != nil || got.Status != agent.StatusCancelled {
		t.Errorf("after the Cancels: %v %+v", err, got)
	}
}
