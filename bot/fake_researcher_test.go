package bot_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"deepresearch/research"
)

// evilText is what a hostile web page or a confused LLM might produce.
const evilText = "<!channel> <!here> <!everyone> <@U0BOSS> <!subteam^S123|@team> @channel @here @everyone & more"

// fakeResearcher is a scripted Researcher. Start emits progress and, when
// the run asks for draft approval, pauses on a draft interrupt; Resume
// finishes on approve and drafts again on revise/more. Hold makes every
// call wait (for cancel, disconnect and restart scenarios).
type fakeResearcher struct {
	mu       sync.Mutex
	threads  map[string]*fakeThread
	hold     chan struct{}    // when non-nil, calls wait for it to be closed (or ctx)
	entered  chan string      // receives "start"/"resume"/"continue" as calls begin (if non-nil, never blocks)
	askFirst bool             // ask a clarifying question before drafting
	charts   []research.Chart // the charts every result has (its report links them)
	calls    []string
	cancels  []string
}

type fakeThread struct {
	seq       int
	pending   string // pending interrupt id
	inFlight  bool   // a call started and did not finish (for Continue)
	lastInput string
	asked     bool
	questions []string
	tags      []string // StartRequest.RunID of each Start
	tokens    []string // StartRequest.Options.WorkspaceToken of each Start
	answers   []research.Answer
}

func newFakeResearcher() *fakeResearcher {
	return &fakeResearcher{threads: map[string]*fakeThread{}}
}

func (f *fakeResearcher) thread(id string) *fakeThread {
	t, ok := f.threads[id]
	if !ok {
		t = &fakeThread{}
		f.threads[id] = t
	}
	return t
}

func (f *fakeResearcher) setHold(ch chan struct{}) {
	f.mu.Lock()
	f.hold = ch
	f.mu.Unlock()
}

func (f *fakeResearcher) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeResearcher) Thread(id string) fakeThread {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.thread(id)
}

func (f *fakeResearcher) Cancels() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cancels...)
}

func (f *fakeResearcher) begin(kind, threadID string) (chan struct{}, *fakeThread) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, kind+":"+threadID)
	t := f.thread(threadID)
	t.inFlight = true
	if f.entered != nil {
		select {
		case f.entered <- kind:
		default:
		}
	}
	return f.hold, t
}

func (f *fakeResearcher) wait(ctx context.Context, hold chan struct{}) error {
	if hold == nil {
		return nil
	}
	select {
	case <-hold:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fake researcher: %w", ctx.Err())
	}
}

func progress(sink research.ProgressSink, phase string, done int) {
	subs := []research.Subtask{
		{Title: "Search news " + evilText, State: research.SubtaskRunning, Searches: 3, Sources: []research.Source{
			{URL: "https://example.com/news", Title: "News " + evilText},
			{URL: "javascript:alert(1)", Title: "not a page"},
			{URL: "https://evil.example/x", Title: "[https://good.example](https://evil.example)"},
		}},
		{Title: "Read regulations", State: research.SubtaskPending},
	}
	for i := 0; i < done && i < len(subs); i++ {
		subs[i].State = research.SubtaskDone
	}
	if done > 0 {
		subs[1].Searches, subs[1].Sources = 1, []research.Source{{URL: "https://example.org/law"}}
	}
	sink(research.Progress{
		Phase:       phase,
		Plan:        []string{"Find recent news", "Read the drafts of the law " + evilText},
		Subtasks:    subs,
		SourcesRead: 3 + done,
		Tokens:      1000 * (done + 1),
		Note:        "reading " + evilText,
	})
}

// next decides what a run does after its input: a question, a draft, or the result.
func (f *fakeResearcher) next(threadID string, opts research.RunOptions, feedback string) research.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.thread(threadID)
	t.inFlight = false
	if f.askFirst && !t.asked {
		t.asked = true
		t.seq++
		t.pending = fmt.Sprintf("%s#q%d", threadID, t.seq)
		return research.Outcome{Interrupt: &research.Interrupt{ID: t.pending, Kind: research.InterruptQuestion, Text: "Which period? " + evilText}}
	}
	if opts.ApproveDraft && feedback != "approve" {
		t.seq++
		t.pending = fmt.Sprintf("%s#d%d", threadID, t.seq)
		return research.Outcome{Interrupt: &research.Interrupt{ID: t.pending, Kind: research.InterruptDraft,
			Text: "## Draft\nThe draft " + feedback + " " + evilText}}
	}
	t.pending = ""
	return research.Outcome{Result: &research.Result{
		Title:     "AI regulation 2026 <!here>",
		Summary:   "Summary: regulation is moving. " + evilText,
		Report:    "# AI regulation 2026\n\nFindings for " + t.lastInput + ".\n\n[1] https://example.com\n" + chartRefs(f.charts),
		Sources:   5,
		Citations: 7,
		Tokens:    4200,
		Charts:    f.charts,
	}}
}

func (f *fakeResearcher) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	hold, t := f.begin("start", req.ThreadID)
	f.mu.Lock()
	t.questions = append(t.questions, req.Question)
	t.tags = append(t.tags, req.RunID)
	t.tokens = append(t.tokens, req.Options.WorkspaceToken)
	t.lastInput = req.Question
	f.mu.Unlock()
	progress(sink, "researching", 0)
	if err := f.wait(ctx, hold); err != nil {
		return research.Outcome{}, err
	}
	progress(sink, "writing", 1)
	return f.next(req.ThreadID, req.Options, "v1"), nil
}

func (f *fakeResearcher) Resume(ctx context.Context, threadID, interruptID string, ans research.Answer, sink research.ProgressSink) (research.Outcome, error) {
	hold, t := f.begin("resume", threadID)
	f.mu.Lock()
	if t.pending != interruptID {
		f.mu.Unlock()
		return research.Outcome{}, fmt.Errorf("fake researcher: resume %s: pending is %q", interruptID, t.pending)
	}
	t.pending = ""
	t.answers = append(t.answers, ans)
	f.mu.Unlock()
	progress(sink, "revising", 1)
	if err := f.wait(ctx, hold); err != nil {
		return research.Outcome{}, err
	}
	opts := research.RunOptions{ApproveDraft: true}
	switch ans.Action {
	case research.ActionApprove:
		return f.next(threadID, opts, "approve"), nil
	case research.ActionAnswer:
		return f.next(threadID, opts, "after answer "+ans.Text), nil
	}
	return f.next(threadID, opts, "revised after "+string(ans.Action)+": "+ans.Text), nil
}

func (f *fakeResearcher) Continue(ctx context.Context, threadID string, sink research.ProgressSink) (research.Outcome, error) {
	f.mu.Lock()
	t := f.thread(threadID)
	inFlight := t.inFlight
	f.mu.Unlock()
	if !inFlight {
		return research.Outcome{}, research.ErrNothingToContinue
	}
	hold, _ := f.begin("continue", threadID)
	progress(sink, "continuing", 1)
	if err := f.wait(ctx, hold); err != nil {
		return research.Outcome{}, err
	}
	return f.next(threadID, research.RunOptions{ApproveDraft: true}, "continued"), nil
}

func (f *fakeResearcher) Cancel(_ context.Context, threadID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, threadID)
	t := f.thread(threadID)
	t.pending, t.inFlight = "", false
	return nil
}

// chartRefs are a report's links to its charts.
func chartRefs(cs []research.Chart) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n![Chart: %s](%s)\n", c.Title, c.Name)
	}
	return b.String()
}
