package research_test

import (
	"strings"
	"testing"

	"deepresearch/research"
)

// TestProgressShowsWaitingForTheModel: while a model call is retried, the
// run's progress (the Slack status message) says it waits on the model
// instead of showing nothing new.
func TestProgressShowsWaitingForTheModel(t *testing.T) {
	w := newWorld(t)
	w.brain.FailNext("planner")
	r, _ := w.researcher()
	rec := &recorder{}
	out, err := r.Start(testCtx(t), research.StartRequest{RunID: "run1", ThreadID: "tw", Question: question, Options: research.RunOptions{Depth: "quick"}}, rec.sink)
	if err != nil || out.Result == nil {
		t.Fatalf("Start: %+v, %v", out, err)
	}
	var notes []string
	for _, p := range rec.all() {
		if strings.Contains(p.Note, "waiting for the model") {
			notes = append(notes, p.Note)
		}
	}
	if len(notes) == 0 || !strings.Contains(notes[0], "retry 1") {
		t.Fatalf("no 'waiting for the model (retry 1)' in the progress; notes seen: %q", notes)
	}
}
