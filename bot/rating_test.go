package bot_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
	"deepresearch/storage/sqlitetest"
)

// Feedback buttons under a digest: a click is kept once per user (the
// latest winning) and acknowledged quietly; a negative one opens the "what
// was wrong?" form, whose text is kept with it; a click from a channel off
// the allow-list is refused.
func TestRatingsOnDigests(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	h.fake.AddChannel(slackfake.Channel{ID: "C1", Name: "research"})
	h.fake.AddChannel(slackfake.Channel{ID: "C9", Name: "elsewhere"})
	fb := sqlitetest.Feedback(t)
	reg := prometheus.NewRegistry()
	schedules := sqlitetest.Schedules(t)
	now := time.Now()
	if err := schedules.CreateSchedule(ctx, schedule.Schedule{ID: "s1", Channel: "C1", Owner: "U1", Topic: "news", Spec: "@daily", TZ: "UTC",
		Enabled: true, ActiveSince: now, CreatedAt: now, UpdatedAt: now}, 0); err != nil {
		t.Fatal(err)
	}
	rb := h.start(func(o *bot.Options) {
		o.Feedback, o.AllowedChannels, o.Registerer = fb, []string{"C1"}, reg
		o.Digests = servedBy(&schedule.Manager{Store: schedules})
	})
	h.connected(ctx, 1)

	due := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	ts, err := rb.Digests().PostDigest(ctx, "C1", schedule.DigestMessage{ScheduleID: "s1", Topic: "news", Title: "News", Due: due, Text: "News"})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := h.fake.Message("C1", ts)
	runID := schedule.ThreadID("s1", due)
	var blocks []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(msg.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	last := blocks[len(blocks)-1]
	if last.Type != "context_actions" || last.BlockID != "dr_rate:"+runID || len(last.Elements) != 1 || last.Elements[0].Type != "feedback_buttons" {
		t.Fatalf("last block = %+v", last)
	}

	click := func(user, channel, value string) {
		t.Helper()
		h.acked(h.fake.SendBlockAction(ctx, slackfake.BlockAction{User: user, Channel: channel, MessageTS: ts,
			ActionID: "dr_rate", BlockID: last.BlockID, ActionType: "feedback_buttons", Value: value}))
	}
	click("U2", "C1", "positive")
	click("U3", "C1", "negative")
	var form slackfake.View
	h.waitFor(ctx, "the what-was-wrong form", func() bool {
		for _, v := range h.fake.Views() {
			if v.CallbackID == "dr_rate_why" && v.PrivateMetadata == runID {
				form = v
				return true
			}
		}
		return false
	})
	h.acked(h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "U3", ViewID: form.ID, Values: map[string]map[string]slackfake.InputValue{
		"dr_rate_why_block": {"dr_rate_why_text": {Type: "plain_text_input", Value: "The prices are from 2024 <!channel>"}},
	}}))
	click("U2", "C1", "negative") // changed their mind: the latest click wins
	click("U4", "C9", "positive") // off the allow-list
	// The form's submission and U2's second click are handled
	// concurrently: the records are looked up by user, not by order.
	byUser := map[string]research.Feedback{}
	h.waitFor(ctx, "the ratings", func() bool {
		got, _ := fb.Feedback(ctx, runID)
		clear(byUser)
		for _, r := range got {
			byUser[r.User] = r
		}
		return len(got) == 2 && byUser["U3"].Text != "" && byUser["U2"].Value == research.FeedbackBad
	})
	if r := byUser["U3"]; r.Value != research.FeedbackBad || r.Text != "The prices are from 2024 <!channel>" {
		t.Errorf("U3's rating = %+v", r)
	}
	if r := byUser["U2"]; r.Text != "" {
		t.Errorf("U2's rating = %+v", r)
	}
	// quietly: nothing posted in the channel but the digest, no ephemeral
	// but the refusal in C9
	if n := len(h.fake.BotMessages("C1")); n != 1 {
		t.Errorf("%d bot messages in C1, want the digest alone", n)
	}
	for _, e := range h.fake.Ephemerals() {
		if e.Channel == "C1" {
			t.Errorf("ephemeral in C1: %+v", e)
		}
	}
	// counted by value, the refused click not at all
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "deepresearch_bot_feedback_total" {
			for _, m := range mf.GetMetric() {
				counts[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if counts["positive"] != 1 || counts["negative"] != 2 {
		t.Errorf("feedback counters = %v, want positive 1, negative 2", counts)
	}
}

// /research status and the App Home show each run's tally; the clicks are counted in
// the bot's metrics (TestRatingsOnDigests).
func TestRatingsInStatus(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	fb := sqlitetest.Feedback(t)
	h.start(func(o *bot.Options) { o.Feedback = fb })
	h.connected(ctx, 1)
	r := research.Run{ID: "run-rated", ThreadID: "slack:T:C1:1.000001",
		Requester: "U1", Question: "what is new in EU AI regulation", State: research.StateQueued, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	p := slackstate.Place{RunID: r.ID, Key: slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: "1.000001"}}
	if err := h.records.CreateRun(ctx, r, p, 0); err != nil {
		t.Fatal(err)
	}
	for i, v := range []research.FeedbackValue{research.FeedbackGood, research.FeedbackGood, research.FeedbackBad} {
		if err := fb.RecordFeedback(ctx, research.Feedback{RunID: r.ID, User: fmt.Sprintf("U%d", i+2), Value: v, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	h.slash(t, "U1", "C1", "status")
	h.responseContaining(t, "`"+r.ID+"` ")
	h.responseContaining(t, "👍 2 👎 1")
	if _, err := h.fake.SendAppHomeOpened(ctx, "U1", ""); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "the tally in the App Home", func() bool {
		v, ok := h.fake.HomeView("U1")
		return ok && strings.Contains(string(v.JSON), "👍 2 👎 1")
	})
}

// Every finished report carries the feedback buttons: in the stream's final
// blocks, and in the final status message where streaming is not served.
func TestRatingsUnderReports(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stream bool
	}{{"stream", true}, {"status message", false}} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.stream {
				h = streaming(t)
			}
			ctx := testCtx(t)
			h.start(func(o *bot.Options) { o.Feedback = sqlitetest.Feedback(t) })
			h.connected(ctx, 1)
			ts := h.mention(ctx, "U1", "C1", "what changed in the EU AI Act", "").TS
			approval, val := h.waitApproval(ctx, "C1", ts, "dr_approve")
			h.approveAndWait(ctx, "U1", "C1", ts, approval, val)
			r := h.waitState(ctx, "C1", ts, research.StateDone)
			want := `"block_id":"dr_rate:` + r.ID + `"`
			h.waitFor(ctx, "the feedback buttons under the report", func() bool {
				if tt.stream {
					for _, st := range threadStreams(h, "C1", ts) {
						if !st.Open && strings.Contains(string(st.FinalBlocks), want) {
							return true
						}
					}
					return false
				}
				for _, m := range h.botMessages("C1", ts) {
					if strings.Contains(string(m.Blocks), want) && strings.Contains(string(m.Blocks), `"feedback_buttons"`) {
						return true
					}
				}
				return false
			})
		})
	}
}

// TestForgedRatingsAreRefused: ratings are defence in depth against forged
// envelopes: one without a team id, one for a run that does not exist, one
// for a run shown in another channel, and one by a user who is not the
// DM's owner (a click or the "what was wrong?" form) are not recorded. The
// owner's "Good" after their "Not good" drops the complaint's text.
func TestForgedRatingsAreRefused(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	h.fake.AddChannel(slackfake.Channel{ID: "C2", Name: "elsewhere"})
	fb := sqlitetest.Feedback(t)
	h.start(func(o *bot.Options) { o.Feedback = fb })
	h.connected(ctx, 1)
	now := time.Now()
	for _, r := range []struct {
		research.Run
		key slackstate.ThreadKey
	}{
		{research.Run{ID: "run-c1", ThreadID: "slack:T:C1:1.000001"}, slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: "1.000001"}},
		{research.Run{ID: "run-dm", ThreadID: "slack:T:D0U1:1.000002"}, slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "D0U1", ThreadTS: "1.000002"}},
	} {
		r.Requester, r.Question, r.State, r.CreatedAt, r.UpdatedAt = "U1", "what changed", research.StateDone, now, now
		if err := h.records.CreateRun(ctx, r.Run, slackstate.Place{RunID: r.ID, Key: r.key}, 0); err != nil {
			t.Fatal(err)
		}
	}
	click := func(user, channel, runID, value string) {
		t.Helper()
		sent := h.acked(h.fake.SendBlockAction(ctx, slackfake.BlockAction{User: user, Channel: channel, MessageTS: "1.000009",
			ActionID: "dr_rate", BlockID: "dr_rate:" + runID, ActionType: "feedback_buttons", Value: value}))
		h.waitInboxDone(ctx, "env:"+sent.EnvelopeID)
	}
	why := func(user, runID, text string) {
		t.Helper()
		sent := h.acked(h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: user, CallbackID: "dr_rate_why", PrivateMetadata: runID,
			Values: map[string]map[string]slackfake.InputValue{"dr_rate_why_block": {"dr_rate_why_text": {Value: text}}}}))
		h.waitInboxDone(ctx, "env:"+sent.EnvelopeID)
	}

	// A block action without any team id.
	id, err := h.fake.SendEnvelope(ctx, slackfake.TypeInteractive, map[string]any{
		"type": "block_actions", "api_app_id": h.fake.AppID(), "trigger_id": h.fake.NewTriggerID(),
		"user":      map[string]any{"id": "U7"},
		"container": map[string]any{"type": "message", "channel_id": "C1", "message_ts": "1.000009"},
		"channel":   map[string]any{"id": "C1"},
		"actions":   []any{map[string]any{"action_id": "dr_rate", "block_id": "dr_rate:run-c1", "type": "feedback_buttons", "value": "positive"}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	h.waitInboxDone(ctx, "env:"+id)
	click("U8", "C1", "run-gone", "negative")                 // no such run
	click("U8", "C2", "run-c1", "negative")                   // the run is in C1
	click("U9", "D0U1", "run-dm", "negative")                 // U1's DM
	click("U8", "C1", "schedule:nope:1764320400", "negative") // no such schedule (nor digests)
	why("U9", "run-dm", "forged complaint")
	why("U8", "run-gone", "forged complaint")

	click("U2", "C1", "run-c1", "positive")
	click("U1", "D0U1", "run-dm", "negative")
	why("U1", "run-dm", "the sources are old")
	click("U1", "D0U1", "run-dm", "positive") // changed their mind

	for run, want := range map[string][]research.Feedback{
		"run-c1":                   {{RunID: "run-c1", User: "U2", Value: research.FeedbackGood}},
		"run-dm":                   {{RunID: "run-dm", User: "U1", Value: research.FeedbackGood}},
		"run-gone":                 nil,
		"schedule:nope:1764320400": nil,
	} {
		got, err := fb.Feedback(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i].At = time.Time{}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ratings of %s = %+v, want %+v", run, got, want)
		}
	}
}
