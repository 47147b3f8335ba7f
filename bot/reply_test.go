package bot_test

import (
	"context"
	"strings"
	"testing"

	"deepresearch/bot"
	"deepresearch/research"
)

// replyResearcher answers every message as small talk.
type replyResearcher struct{ *fakeResearcher }

func (r replyResearcher) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	return research.Outcome{Result: &research.Result{Title: "Reply", Summary: "You're welcome! **Ask me** anything.", Report: "You're welcome!", Reply: true}}, nil
}

// extractiveResearcher finishes with a report written without the model.
type extractiveResearcher struct{ *fakeResearcher }

func (r extractiveResearcher) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	return research.Outcome{Result: &research.Result{Title: "EU AI Act", Summary: "Quotes from the sources.", Report: "# EU AI Act\n\n> quotes", Extractive: true}}, nil
}

// TestResultIsShared: how a finished run's result reaches the thread.
func TestResultIsShared(t *testing.T) {
	for _, tc := range []struct {
		name     string
		res      bot.Researcher
		question string
		check    func(t *testing.T, h *harness, threadTS string)
	}{
		{
			// A message that needs an answer, not a research, is answered
			// with a message in the thread; no report file is uploaded and
			// the run is done (before: it was uploaded as a report file —
			// and failed when Slack refused the share).
			name: "small talk gets a reply, not a file", res: replyResearcher{newFakeResearcher()}, question: "hi there, thanks!",
			check: func(t *testing.T, h *harness, threadTS string) {
				if n := len(h.fake.Files()); n != 0 {
					t.Errorf("%d files uploaded for small talk", n)
				}
				var reply bool
				for _, m := range h.botMessages("C1", threadTS) {
					if strings.Contains(string(m.Blocks), "**Ask me** anything") {
						reply = true
					}
				}
				if !reply {
					t.Error("no reply message in the thread")
				}
			},
		},
		{
			// A report written without the model (the endpoint failed after
			// a good start) says so where it is shared.
			name: "an extractive report says so", res: extractiveResearcher{newFakeResearcher()}, question: "What does the EU AI Act require?",
			check: func(t *testing.T, h *harness, threadTS string) {
				files := h.files("C1", threadTS)
				if len(files) != 1 || !strings.Contains(string(files[0].Blocks), "written without it") {
					t.Fatalf("share of an extractive report: %+v", files)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.startWith(tc.res)
			ctx := testCtx(t)
			sent := h.mention(ctx, "U1", "C1", tc.question, "")
			h.waitState(ctx, "C1", sent.TS, research.StateDone)
			tc.check(t, h, sent.TS)
		})
	}
}
