package bot_test

import (
	"context"
	"strings"
	"testing"

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
