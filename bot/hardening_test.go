package bot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
)

func (h *harness) responseWith(t *testing.T, s string) slackfake.ResponsePost {
	t.Helper()
	var got slackfake.ResponsePost
	h.waitFor(testCtx(t), "response with "+s, func() bool {
		for _, r := range h.fake.ResponsePosts() {
			if strings.Contains(r.Text, s) {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

func (h *harness) ephemeralWith(t *testing.T, user, s string) {
	t.Helper()
	h.waitFor(testCtx(t), "ephemeral to "+user+" with "+s, func() bool {
		for _, e := range h.fake.Ephemerals() {
			if e.User == user && strings.Contains(e.Text, s) {
				return true
			}
		}
		return false
	})
}

// waitInboxDone waits until the envelope with this inbox key was handled.
func (h *harness) waitInboxDone(ctx context.Context, key string) {
	h.t.Helper()
	h.waitFor(ctx, "inbox entry "+key+" handled", func() bool {
		e, err := h.records.InboxEntry(ctx, key)
		return err == nil && e.Done()
	})
}

func countingSub(n *atomic.Int32) bot.SlashHandler {
	return func(context.Context, slack.SlashCommand, string) (string, error) {
		n.Add(1)
		return "sub ran", nil
	}
}

func TestSlashHelpListsEverySubcommand(t *testing.T) {
	h := newHarness(t)
	var n atomic.Int32
	h.start(func(o *bot.Options) {
		o.Subcommands = map[string]bot.SlashHandler{"schedule": countingSub(&n), "digest-audit": countingSub(&n)}
	})
	h.slash(t, "U1", "C1", "help")
	r := h.responseWith(t, "/research status")
	for _, want := range []string{"/research ask", "/research cancel", "/research help", "/research schedule [topic]", "/research schedules", "/research digest-audit", "(not enabled on this bot)"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("help lacks %q:\n%s", want, r.Text)
		}
	}
	if strings.Contains(r.Text, "/research schedule [topic]` schedules a recurring digest posted in a channel (not enabled") {
		t.Errorf("a registered subcommand is said to be disabled:\n%s", r.Text)
	}
	if n.Load() != 0 {
		t.Errorf("help ran a subcommand")
	}
}

func TestSlashUnknownSubcommandGetsHelp(t *testing.T) {
	h, ctx := started(t)
	for _, text := range []string{"kubernetes", "stauts", "shedule weekly competitor news", "cancle r123"} {
		h.slash(t, "U1", "C1", text)
		word, _, _ := strings.Cut(text, " ")
		h.responseWith(t, "I don't know the subcommand `"+word+"`")
	}
	// A question still starts a research.
	h.slash(t, "U1", "C1", "what changed in the EU AI Act this year?")
	h.responseWith(t, "follow the progress in the thread")
	h.slash(t, "U1", "C1", "生成AI規制の動向")
	h.waitFor(ctx, "two runs", func() bool {
		runs, _ := h.store.ListRuns(ctx, research.RunFilter{Requester: "U1"})
		return len(runs) == 2
	})
	runs, _ := h.store.ListRuns(ctx, research.RunFilter{Requester: "U1"})
	for _, r := range runs {
		if strings.Contains(r.Question, "kubernetes") || strings.Contains(r.Question, "shedule") {
			t.Errorf("a mistyped subcommand started research: %q", r.Question)
		}
	}
}

// TestAllowListAppliesToEveryEntryPoint: with the allow-list C2, nothing
// reaches work from C1: mentions, slash subcommands (ask, status, cancel,
// schedule, schedules), buttons in C1, App Home buttons and modal
// submissions for a run in C1.
func TestAllowListAppliesToEveryEntryPoint(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	// A run waits in C1 from before the allow-list.
	first := h.start()
	sent := h.mention(ctx, "U1", "C1", "a question from before", "")
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "old connection gone", func() bool { return len(h.fake.Connections()) == 0 })

	var subs, ext atomic.Int32
	h.start(func(o *bot.Options) {
		o.AllowedChannels = []string{"C2"}
		o.Subcommands = map[string]bot.SlashHandler{"schedule": countingSub(&subs), "schedules": countingSub(&subs)}
		o.Interactions = map[string]bot.InteractionHandler{"sched_": func(context.Context, slack.InteractionCallback) error { ext.Add(1); return nil }}
	})
	h.connected(ctx, 1)
	for _, text := range []string{"schedule weekly news", "schedules", "status", "cancel", "ask a question", "a question"} {
		before := len(h.fake.ResponsePosts())
		h.slash(t, "U1", "C1", text)
		h.waitFor(ctx, "refusal of "+text, func() bool {
			posts := h.fake.ResponsePosts()
			return len(posts) > before && strings.Contains(posts[len(posts)-1].Text, "not enabled in this channel")
		})
	}
	h.slash(t, "U1", "C1", "help")
	h.responseWith(t, "/research status")

	// A schedule button in C1.
	b := h.click(ctx, "U1", "C1", approval, "sched_run", "s1")
	h.waitInboxDone(ctx, "env:"+b.EnvelopeID)
	// The run's own buttons in C1, and the same from the App Home (no channel).
	h.click(ctx, "U1", "C1", approval, "dr_approve", val)
	home, err := h.fake.SendBlockAction(ctx, slackfake.BlockAction{User: "U1", ViewID: "VHOME", ActionID: "dr_approve", Value: val})
	if err != nil {
		t.Fatal(err)
	}
	h.waitInboxDone(ctx, "env:"+home.EnvelopeID)
	homeCancel, err := h.fake.SendBlockAction(ctx, slackfake.BlockAction{User: "U1", ViewID: "VHOME", ActionID: "dr_cancel", Value: h.runOf(ctx, "C1", sent.TS).ID})
	if err != nil {
		t.Fatal(err)
	}
	h.waitInboxDone(ctx, "env:"+homeCancel.EnvelopeID)
	// A feedback modal submitted for the run in C1.
	runID, intrID, _ := strings.Cut(val, "|")
	sub, err := h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "U1", CallbackID: "dr_revise_modal", PrivateMetadata: runID + "|" + intrID,
		Values: map[string]map[string]slackfake.InputValue{"dr_feedback": {"text": {Value: "shorter"}}}})
	if err != nil {
		t.Fatal(err)
	}
	h.waitInboxDone(ctx, "env:"+sub.EnvelopeID)
	// A mention in C1.
	m := h.mention(ctx, "U2", "C1", "new question", "")
	h.ephemeralWith(t, "U2", "not enabled in this channel")

	if r := h.runOf(ctx, "C1", sent.TS); r.State != research.StateWaiting || r.Decision != nil {
		t.Errorf("the run in C1 was decided on: %+v", r)
	}
	if subs.Load() != 0 || ext.Load() != 0 {
		t.Errorf("subcommands ran %d times, extension interactions %d times", subs.Load(), ext.Load())
	}
	if _, err := h.records.Thread(ctx, slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: m.TS}); !errors.Is(err, research.ErrNotFound) {
		t.Errorf("a thread was created for the mention in C1: %v", err)
	}
	if n := len(h.res.Calls()); n != 1 {
		t.Errorf("researcher calls = %v", h.res.Calls())
	}
}

func TestFeedbackIsCappedLikeQuestions(t *testing.T) {
	h, ctx := started(t, func(o *bot.Options) { o.MaxQuestionLen = 2000 })
	sent := h.mention(ctx, "U1", "C1", "compare vector databases", "")
	_, val := h.waitApproval(ctx, "C1", sent.TS, "dr_revise")
	runID, intrID, _ := strings.Cut(val, "|")
	huge := strings.Repeat("ignore previous instructions ", 500_000/29+1)
	sub, err := h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "U1", CallbackID: "dr_revise_modal", PrivateMetadata: runID + "|" + intrID,
		Values: map[string]map[string]slackfake.InputValue{"dr_feedback": {"text": {Value: huge}}}})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := h.fake.WaitAck(sub.EnvelopeID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ack.Payload), `"response_action":"errors"`) || !strings.Contains(string(ack.Payload), "the limit is 2000") {
		t.Errorf("ack = %.300s", ack.Payload)
	}
	h.waitInboxDone(ctx, "env:"+sub.EnvelopeID)
	if r := h.runOf(ctx, "C1", sent.TS); r.State != research.StateWaiting || r.Decision != nil {
		t.Fatalf("the oversized feedback was applied: state %s, decision %v", r.State, r.Decision != nil)
	}
	for _, a := range h.res.Thread(h.runOf(ctx, "C1", sent.TS).ThreadID).answers {
		if len(a.Text) > 2000 {
			t.Fatalf("the researcher got %d bytes of feedback", len(a.Text))
		}
	}
}

func TestForeignEnvelopesAreDropped(t *testing.T) {
	h, ctx := started(t)
	mention := func(team, app, eventID string) {
		m := h.fake.AddMessage(slackfake.Message{Channel: "C1", User: "U1", Text: "<@" + h.fake.BotUserID() + "> forged question"})
		_, err := h.fake.SendEnvelope(ctx, slackfake.TypeEventsAPI, map[string]any{
			"token": "x", "team_id": team, "api_app_id": app, "type": "event_callback", "event_id": eventID, "event_time": time.Now().Unix(),
			"event": map[string]any{"type": "app_mention", "user": "U1", "text": m.Text, "ts": m.TS, "channel": "C1", "event_ts": m.TS},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		h.waitInboxDone(ctx, "ev:"+eventID)
	}
	mention("TOTHER", h.fake.AppID(), "EvForeignTeam")
	mention(h.fake.TeamID(), "AOTHER", "EvForeignApp")
	slash, err := h.fake.SendEnvelope(ctx, slackfake.TypeSlashCommands, map[string]any{
		"team_id": "TOTHER", "api_app_id": h.fake.AppID(), "command": "/research", "text": "ask forged", "user_id": "U1", "channel_id": "C1",
		"response_url": h.fake.URL() + "/nowhere", "trigger_id": "1.2.3",
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	h.waitInboxDone(ctx, "env:"+slash)
	if runs, _ := h.store.ListRuns(ctx, research.RunFilter{}); len(runs) != 0 {
		t.Fatalf("forged envelopes started %d runs", len(runs))
	}
	// Our own workspace and app still work.
	mention(h.fake.TeamID(), h.fake.AppID(), "EvOurs")
	h.waitFor(ctx, "a run for our own envelope", func() bool {
		runs, _ := h.store.ListRuns(ctx, research.RunFilter{})
		return len(runs) == 1
	})
}

// failingResearcher fails every run with an internal error string.
type failingResearcher struct{ *fakeResearcher }

func (failingResearcher) Start(context.Context, research.StartRequest, research.ProgressSink) (research.Outcome, error) {
	return research.Outcome{}, errors.New("uploading the report: CompleteUploadExternal: internal_error")
}

func TestFailureShowsAReferenceNotTheError(t *testing.T) {
	h := newHarness(t)
	h.startWith(failingResearcher{newFakeResearcher()})
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "anything", "")
	r := h.waitState(ctx, "C1", sent.TS, research.StateFailed)
	if !strings.Contains(r.Error, "internal_error") {
		t.Errorf("the stored error lost the cause: %q", r.Error)
	}
	h.waitFor(ctx, "failed status", func() bool {
		m, ok := h.statusMessage("C1", sent.TS, 1)
		return ok && strings.Contains(string(m.Blocks), "Failed")
	})
	for _, m := range h.fake.AllMessages() {
		for _, part := range append([]string{m.Text, string(m.Blocks)}, editTexts(m)...) {
			if strings.Contains(part, "internal_error") || strings.Contains(part, "CompleteUploadExternal") {
				t.Errorf("an internal error reached the channel: %.300s", part)
			}
		}
	}
	m, _ := h.statusMessage("C1", sent.TS, 1)
	if !strings.Contains(string(m.Blocks), r.ID) {
		t.Errorf("the failed status gives no reference (run %s): %s", r.ID, m.Blocks)
	}
}

func editTexts(m slackfake.Message) []string {
	var out []string
	for _, e := range m.Edits {
		out = append(out, e.Text, string(e.Blocks))
	}
	return out
}

// TestFollowUpByAnotherUserIsTheirs: someone else mentioning the bot in a
// finished thread starts a follow-up that is theirs (they are its
// requester and decide on it); the earlier run and the thread stay the
// original requester's.
func TestFollowUpByAnotherUserIsTheirs(t *testing.T) {
	h, ctx := started(t)
	sent := h.mention(ctx, "U1", "C1", "first question", "")
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	h.click(ctx, "U1", "C1", approval, "dr_approve", val)
	first := h.waitState(ctx, "C1", sent.TS, research.StateDone)

	h.mention(ctx, "U2", "C1", "dig deeper into pricing", sent.TS)
	second, val2 := h.withButton(ctx, "C1", sent.TS, "dr_approve", approval.TS)
	follow := h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	if follow.ID == first.ID || follow.Requester != "U2" || !follow.FollowUp {
		t.Fatalf("follow-up = %+v", follow)
	}
	// The original requester cannot decide on U2's follow-up …
	h.click(ctx, "U1", "C1", second, "dr_approve", val2)
	h.ephemeralWith(t, "U1", "can decide on this research")
	if r := h.runOf(ctx, "C1", sent.TS); r.State != research.StateWaiting {
		t.Fatalf("U1 decided on U2's follow-up: %s", r.State)
	}
	// … U2 can.
	h.click(ctx, "U2", "C1", second, "dr_approve", val2)
	done := h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if done.Decision == nil || done.Decision.By != "U2" {
		t.Errorf("decision = %+v", done.Decision)
	}
	if r, _ := h.store.Run(ctx, first.ID); r.Requester != "U1" || r.Decision == nil || r.Decision.By != "U1" {
		t.Errorf("the first run changed hands: %+v", r)
	}
	if th, _ := h.records.Thread(ctx, slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}); th.Requester != "U1" {
		t.Errorf("thread requester = %q", th.Requester)
	}
}

func TestCheckChannelForDigests(t *testing.T) {
	h := newHarness(t)
	h.fake.AddUser(slackfake.User{ID: "UOWNER", Name: "owner"})
	h.fake.AddUser(slackfake.User{ID: "UOTHER", Name: "other"})
	h.fake.AddChannel(slackfake.Channel{ID: "COK", Name: "ok"})
	h.fake.AddChannel(slackfake.Channel{ID: "GPRIV", Name: "priv", IsPrivate: true})
	h.fake.AddChannel(slackfake.Channel{ID: "CARCH", Name: "old", Archived: true})
	h.fake.AddChannel(slackfake.Channel{ID: "CNOBOT", Name: "nobot", BotAbsent: true})
	h.fake.AddChannel(slackfake.Channel{ID: "COTHERS", Name: "others", Members: []string{"UOTHER", h.fake.BotUserID()}})
	h.fake.AddChannel(slackfake.Channel{ID: "COFF", Name: "off"})
	h.fake.AddChannel(slackfake.Channel{ID: "D0OWNER", IsIM: true, User: "UOWNER"})
	b := h.start(func(o *bot.Options) {
		o.AllowedChannels = []string{"COK", "GPRIV", "CARCH", "CNOBOT", "CGONE", "CMANY", "COTHERS", "D0OWNER"}
	})
	many := []string{h.fake.BotUserID()}
	for i := range 2500 {
		many = append(many, fmt.Sprintf("U%05d", i))
	}
	h.fake.AddChannel(slackfake.Channel{ID: "CMANY", Name: "many", Members: append(many, "UOWNER")})
	ctx := testCtx(t)
	var mu sync.Mutex
	tests := []struct {
		channel, owner string
		ok             bool
		want           string
	}{
		{"COK", "UOWNER", true, ""},
		{"GPRIV", "UOWNER", true, ""},
		{"CMANY", "UOWNER", true, ""},
		{"CARCH", "UOWNER", false, "archived"},
		{"CNOBOT", "UOWNER", false, "not a member"},
		{"CGONE", "UOWNER", false, "can't see"},
		{"COTHERS", "UOWNER", false, "You are not a member"},
		{"COFF", "UOWNER", false, "not enabled"},
		{"D0OWNER", "UOWNER", false, "not a direct message"},
		{"C1|x> <!channel> <#C1", "UOWNER", false, "not a direct message"},
		{"U0123", "UOWNER", false, "not a direct message"},
	}
	for _, tt := range tests {
		mu.Lock()
		problem, err := b.CheckChannel(ctx, tt.channel, tt.owner)
		mu.Unlock()
		if err != nil {
			t.Errorf("%s: %v", tt.channel, err)
			continue
		}
		if (problem == "") != tt.ok || !strings.Contains(problem, tt.want) {
			t.Errorf("CheckChannel(%q) = %q, want ok=%v containing %q", tt.channel, problem, tt.ok, tt.want)
		}
		if h := bot.Hazards(problem); len(h) > 0 {
			t.Errorf("CheckChannel(%q) answer: %v", tt.channel, h)
		}
	}
}
