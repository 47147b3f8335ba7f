package bot_test

import (
	"context"
	"strings"
	"testing"

	"deepresearch/bot"
	"deepresearch/research"
)

// stubbornResearcher finishes the step it is in even when its context is
// cancelled — as a research agent does when a model call that already
// answered is being recorded — and then offers a plan for approval.
type stubbornResearcher struct {
	*fakeResearcher
	entered chan struct{}
	release chan struct{}
}

func (s *stubbornResearcher) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	close(s.entered)
	<-s.release
	return research.Outcome{Interrupt: &research.Interrupt{ID: req.ThreadID + "#plan", Kind: research.InterruptPlan, Text: "1. plan step"}}, nil
}

// TestCancelPressedAsTheRunStarts: a Cancel pressed while the run starts
// stops it and says so, even when the researcher's step still returns a
// plan (before: the plan was posted and the run waited for approval).
func TestCancelPressedAsTheRunStarts(t *testing.T) {
	h := newHarness(t)
	res := &stubbornResearcher{fakeResearcher: newFakeResearcher(), entered: make(chan struct{}), release: make(chan struct{})}
	h.startWith(res, func(o *bot.Options) { o.RunOptions = research.RunOptions{ApprovePlan: true} })

	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "research something", "")
	select {
	case <-res.entered:
	case <-ctx.Done():
		t.Fatal("the researcher was never started")
	}
	status, val := h.withButton(ctx, "C1", sent.TS, "dr_cancel")
	h.click(ctx, "U1", "C1", status, "dr_cancel", val)
	h.waitFor(ctx, "cancel recorded", func() bool {
		return h.runOf(ctx, "C1", sent.TS).CancelRequestedBy == "U1"
	})
	close(res.release)
	r := h.waitState(ctx, "C1", sent.TS, research.StateCancelled)
	h.waitFor(ctx, "status says cancelled", func() bool {
		m, _ := h.fake.Message("C1", h.placeOf(ctx, r.ID).StatusTS)
		return strings.Contains(string(m.Blocks), "Cancelled")
	})
	for _, m := range h.botMessages("C1", sent.TS) {
		if strings.Contains(string(m.Blocks), "plan ready for review") {
			t.Errorf("a plan was posted after the cancel: %s", m.Blocks)
		}
	}
}
