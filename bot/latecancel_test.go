package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

// heldRecord holds the recording of a report upload until released: the
// report is in Slack, the run not yet done.
type heldRecord struct {
	research.Store
	reached chan struct{}
	release chan struct{}
}

func (s *heldRecord) RecordUpload(ctx context.Context, u research.Upload) (bool, error) {
	close(s.reached)
	select {
	case <-s.release:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return s.Store.RecordUpload(ctx, u)
}

// TestCancelDuringUploadSaysTooLate: `/research cancel` while the report is
// being posted is answered "Cancelling", and the run ends done; the status
// message then says the cancel came too late, in the requester's language,
// and the person who cancelled is told so in the thread.
func TestCancelDuringUploadSaysTooLate(t *testing.T) {
	tests := []struct {
		locale, note, you string
	}{
		{"en-US", "came too late", "Your cancel came too late"},
		{"ja-JP", "キャンセルは間に合いませんでした", "キャンセルは間に合いませんでした。調査は終わって"},
	}
	for _, tc := range tests {
		t.Run(tc.locale, func(t *testing.T) {
			h := newHarness(t)
			h.fake.AddUser(slackfake.User{ID: "U1", Name: "taro", Locale: tc.locale})
			ctx := testCtx(t)
			held := &heldRecord{Store: h.store, reached: make(chan struct{}), release: make(chan struct{})}
			h.startOn(held, noDraftApproval)
			sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
			select {
			case <-held.reached:
			case <-ctx.Done():
				t.Fatal("the report was never uploaded")
			}
			h.acked(h.fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "cancel", User: "U1", Channel: "C1"}))
			h.waitFor(ctx, "cancel recorded", func() bool { return h.runOf(ctx, "C1", sent.TS).CancelRequestedBy == "U1" })
			close(held.release)
			h.waitState(ctx, "C1", sent.TS, research.StateDone)

			st, ok := h.statusMessage("C1", sent.TS, 1)
			if !ok {
				t.Fatal("no status message")
			}
			if !strings.Contains(st.Text+string(st.Blocks), tc.note) {
				t.Errorf("final status message does not say the cancel came too late: %s %s", st.Text, st.Blocks)
			}
			told := false // before the status edit, so before the run is done
			for _, e := range h.fake.Ephemerals() {
				told = told || e.User == "U1" && e.ThreadTS == sent.TS && strings.Contains(e.Text, tc.you)
			}
			if !told {
				t.Errorf("the canceller was not told the cancel came too late: %+v", h.fake.Ephemerals())
			}
			h.noPings()
		})
	}
}

// slowCancel is a store whose RequestCancel, once it has recorded the
// cancel, lets the run's step end (release) and returns only when the run
// has left running: the handler's cancel of the run's context comes after
// the step's outcome, as it may when the click and the step end together.
type slowCancel struct {
	research.Store
	release chan struct{}
}

func (s *slowCancel) RequestCancel(ctx context.Context, runID, by string, now time.Time) (research.Run, bool, error) {
	r, cancelled, err := s.Store.RequestCancel(ctx, runID, by, now)
	if err != nil || cancelled {
		return r, cancelled, err
	}
	close(s.release)
	for ctx.Err() == nil {
		if cur, err := s.Run(ctx, runID); err == nil && cur.State != research.StateRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r, cancelled, err
}

// TestCancelRecordedAsTheStepEndsWins: a cancel recorded in the store
// while the researcher's step ends with a plan, before the handler cancels
// the run's context, still cancels the run: no plan is posted and the run
// does not wait for approval.
func TestCancelRecordedAsTheStepEndsWins(t *testing.T) {
	h := newHarness(t)
	res := &stubbornResearcher{fakeResearcher: newFakeResearcher(), entered: make(chan struct{}), release: make(chan struct{})}
	h.run(res, &slowCancel{Store: h.store, release: res.release}, func(o *bot.Options) {
		o.RunOptions = research.RunOptions{ApprovePlan: true}
		o.HeartbeatEvery = time.Hour // only the store tells the run
	})
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "research something", "")
	select {
	case <-res.entered:
	case <-ctx.Done():
		t.Fatal("the researcher was never started")
	}
	status, val := h.withButton(ctx, "C1", sent.TS, "dr_cancel")
	h.click(ctx, "U1", "C1", status, "dr_cancel", val)
	h.waitFor(ctx, "the run left running", func() bool { return h.runOf(ctx, "C1", sent.TS).State != research.StateRunning })
	if r := h.runOf(ctx, "C1", sent.TS); r.State != research.StateCancelled {
		t.Errorf("run state %s after a cancel recorded before the plan, want cancelled", r.State)
	}
	for _, m := range h.botMessages("C1", sent.TS) {
		if strings.Contains(string(m.Blocks), "plan ready for review") {
			t.Errorf("a plan was posted after the cancel: %s", m.Blocks)
		}
	}
}
