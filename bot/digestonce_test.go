package bot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
	"deepresearch/storage/sqlstore"
)

// recordFailsOnce is the bot's Slack store when its first record of a
// status message fails: the summary message is posted, but not recorded,
// as a process dying in between would leave it.
type recordFailsOnce struct {
	*sqlstore.Slack
	failed atomic.Bool
}

func (s *recordFailsOnce) SetStatusMessage(ctx context.Context, id, ts string) (string, error) {
	if s.failed.CompareAndSwap(false, true) {
		return "", errors.New("the store is down")
	}
	return s.Slack.SetStatusMessage(ctx, id, ts)
}

// digestMessages are the bot's summary messages in channel C1.
func digestMessages(fake *slackfake.Server) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range fake.BotMessages("C1") {
		if strings.Contains(string(m.Blocks), `"block_id":"sched_digest:`) {
			out = append(out, m)
		}
	}
	return out
}

// TestDigestMessagePostedOnceWhenItsRecordFails: the summary message is
// posted and its record fails. The next round of publication finds the
// message in the channel (the bot's own, carrying the run's block_id) and
// records it instead of posting another: one summary message, one report
// in its thread.
func TestDigestMessagePostedOnceWhenItsRecordFails(t *testing.T) {
	var rec *recordFailsOnce
	h := newDigestHarnessOn(t, func(s *sqlstore.Slack) slackstate.Store { rec = &recordFailsOnce{Slack: s}; return rec },
		resultResearcher(research.Result{Title: "Competitor news", WriterSummary: "- X cut prices", Report: "# Report\n\nBody."}))
	ctx := context.Background()
	sc := schedule.Schedule{ID: "s1", Channel: "C1", Owner: "UOWNER", Topic: "competitor news", Spec: "@weekly", TZ: "Asia/Tokyo", Enabled: true,
		CreatedAt: h.clock.Now(), ActiveSince: h.clock.Now(), UpdatedAt: h.clock.Now()}
	if err := h.store.CreateSchedule(ctx, sc, 0); err != nil {
		t.Fatal(err)
	}
	due := time.Date(2026, 3, 9, 9, 0, 0, 0, sc.Location())
	if ok, err := h.sched.Fire(ctx, sc, due, true); err != nil || !ok {
		t.Fatalf("fire: %v, %v", ok, err)
	}
	// The service waits between rounds of publication on the bot's clock.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				h.clock.Advance(100 * time.Millisecond)
			}
		}
	}()
	h.settle(t)

	if !rec.failed.Load() {
		t.Fatal("the summary message's record never failed")
	}
	f, err := h.store.GetFiring(ctx, sc.ID, due)
	if err != nil || f.State != schedule.FiringDone || f.Digest == nil {
		t.Fatalf("firing = %+v, %v", f, err)
	}
	msgs := digestMessages(h.fake)
	if len(msgs) != 1 || f.Digest.MessageTS != msgs[0].TS {
		t.Fatalf("summary messages %+v, firing's %q: want one, the firing's", msgs, f.Digest.MessageTS)
	}
	files := h.fake.Files()
	if len(files) != 1 || !files[0].Completed || files[0].ThreadTS != msgs[0].TS {
		t.Fatalf("files = %+v, want the report in the message's thread", files)
	}
}

// TestFindDigestOnlyTheBotsOwn: FindDigest finds the bot's summary message
// of the run, also pages back in a busy channel, and never takes a
// person's or another app's message that copies its block_id, nor one of
// another run, nor one older than the run (give or take the clocks' skew).
func TestFindDigestOnlyTheBotsOwn(t *testing.T) {
	h := newDigestHarness(t)
	ctx := context.Background()
	since := time.Now().Add(-time.Minute)
	ts, err := h.ui.PostDigest(ctx, "C1", schedule.DigestMessage{RunID: "digest:s1@1", ScheduleID: "s1", Topic: "news", Title: "News", Due: time.Now(), Text: "News"})
	if err != nil {
		t.Fatal(err)
	}
	posted, _ := h.fake.Message("C1", ts)
	for i := range 450 { // a busy channel: the message is pages back
		h.fake.AddMessage(slackfake.Message{Channel: "C1", User: "USTRANGER", Text: fmt.Sprint(i)})
	}
	copied := strings.ReplaceAll(string(posted.Blocks), "digest:s1@1", "digest:s1@2")
	h.fake.AddMessage(slackfake.Message{Channel: "C1", User: "USTRANGER", Text: "copied", Blocks: posted.Blocks})
	h.fake.AddMessage(slackfake.Message{Channel: "C1", User: "USTRANGER", Text: "copied", Blocks: []byte(copied)})
	h.fake.AddMessage(slackfake.Message{Channel: "C1", User: "UOTHERBOT", BotID: "BOTHER", Text: "copied", Blocks: []byte(copied)})

	tests := []struct {
		name  string
		runID string
		since time.Time
		want  string
	}{
		{"the bot's, behind a person's copy", "digest:s1@1", since, ts},
		{"the run's creation unknown", "digest:s1@1", time.Time{}, ts},
		{"only copies of a person and another app", "digest:s1@2", since, ""},
		{"posted before the run", "digest:s1@1", time.Now().Add(time.Hour), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := h.ui.FindDigest(ctx, "C1", tc.runID, tc.since)
			if err != nil || got != tc.want {
				t.Fatalf("FindDigest = %q, %v; want %q", got, err, tc.want)
			}
		})
	}

	h.fake.AddChannel(slackfake.Channel{ID: "C2", Name: "nobot", BotAbsent: true})
	if _, err := h.ui.FindDigest(ctx, "C2", "digest:s1@1", since); err == nil || research.Transient(err) {
		t.Errorf("FindDigest in a channel without the bot: %v, want a lasting error", err)
	}
}
