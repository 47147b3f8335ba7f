package bot_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/storage/sqlstore"

	"github.com/slack-go/slack"
)

func (h *harness) slash(t *testing.T, user, channel, text string) slackfake.Sent {
	t.Helper()
	return h.acked(h.fake.SendSlashCommand(testCtx(t), slackfake.SlashCommand{Command: "/research", Text: text, User: user, Channel: channel}))
}

func (h *harness) responseContaining(t *testing.T, s string) {
	t.Helper()
	h.waitFor(testCtx(t), "response with "+s, func() bool {
		for _, r := range h.fake.ResponsePosts() {
			if strings.Contains(r.Text, s) {
				return true
			}
		}
		return false
	})
}

func TestSlashCommands(t *testing.T) {
	h := newHarness(t)
	defer h.holdRuns()()
	h.start()
	ctx := testCtx(t)

	h.slash(t, "U1", "C1", "help")
	h.responseContaining(t, "/research status")
	h.slash(t, "U1", "C1", "status")
	h.responseContaining(t, "no research runs yet")
	h.slash(t, "U1", "C1", "ask")
	h.responseContaining(t, "Please add a question")

	h.slash(t, "U1", "C1", "ask what changed in the EU AI Act? @channel")
	var top slackfake.Message
	h.waitFor(ctx, "top-level question message", func() bool {
		for _, m := range h.fake.Messages("C1") {
			if m.IsBot() && m.ThreadTS == "" && strings.Contains(m.Text, "EU AI Act") {
				top = m
				return true
			}
		}
		return false
	})
	r := h.waitState(ctx, "C1", top.TS, research.StateRunning)
	h.responseContaining(t, "follow the progress in the thread")

	h.slash(t, "U1", "C1", "status")
	h.responseContaining(t, r.ID)
	h.slash(t, "U2", "C1", "cancel "+r.ID)
	h.responseContaining(t, "can cancel this research")
	h.slash(t, "U1", "C1", "cancel")
	h.waitState(ctx, "C1", top.TS, research.StateCancelled)
	h.slash(t, "U1", "C1", "cancel nope")
	h.responseContaining(t, "There is no research run")
	h.slash(t, "U1", "C1", "schedules")
	h.responseContaining(t, "not available yet")
	h.noPings()
}

func TestSlashSubcommandExtension(t *testing.T) {
	h := newHarness(t)
	h.start(func(o *bot.Options) {
		o.Subcommands = map[string]bot.SlashHandler{
			"schedules": func(_ context.Context, cmd slack.SlashCommand, args string) (string, error) {
				return "schedules of " + cmd.UserID + " " + args, nil
			},
		}
	})
	h.slash(t, "U1", "C1", "schedules all")
	h.responseContaining(t, "schedules of U1 all")
}

func TestAppHomeShowsRecentRuns(t *testing.T) {
	h, ctx := started(t, noDraftApproval)
	sent := h.mention(ctx, "U1", "C1", "home question <!everyone>", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if _, err := h.fake.SendAppHomeOpened(ctx, "U1", ""); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "home view", func() bool {
		v, ok := h.fake.HomeView("U1")
		return ok && strings.Contains(string(v.JSON), "home question") && strings.Contains(string(v.JSON), "Done")
	})
	v, _ := h.fake.HomeView("U1")
	if slackfake.MentionsBroadcast(string(v.JSON)) {
		t.Errorf("home view contains a broadcast: %s", v.JSON)
	}
}

func TestAssistantThread(t *testing.T) {
	h, ctx := started(t, noDraftApproval)
	started, err := h.fake.SendAssistantThreadStarted(ctx, slackfake.AssistantThreadStarted{User: "U5"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "suggested prompts", func() bool { return len(h.fake.SuggestedPrompts()) == 1 })
	if p := h.fake.SuggestedPrompts()[0]; p.ThreadTS != started.TS || len(p.Prompts) == 0 {
		t.Errorf("prompts = %+v", p)
	}
	dm := "D" + "U5"[1:]
	h.message(ctx, slackfake.MessageEvent{User: "U5", Channel: dm, ThreadTS: started.TS, Text: "research RAG evaluation"})
	h.waitReports(ctx, dm, started.TS, 1)
	h.waitFor(ctx, "status set and cleared", func() bool {
		st := h.fake.Statuses()
		return len(st) >= 2 && st[0].Status != "" && st[len(st)-1].Status == "" && st[0].ThreadTS == started.TS
	})
}

func TestAssistantStatusRefreshed(t *testing.T) {
	h := newHarness(t)
	release := h.holdRuns()
	h.start(func(o *bot.Options) {
		o.RunOptions = research.RunOptions{}
		o.StatusRefresh = 100 * time.Millisecond
	})
	ctx := testCtx(t)
	sent := h.message(ctx, slackfake.MessageEvent{User: "U6", Channel: "D6", Text: "slow research"})
	h.waitFor(ctx, "status refreshed", func() bool {
		n := 0
		for _, s := range h.fake.Statuses() {
			if s.ThreadTS == sent.TS && s.Status != "" {
				n++
			}
		}
		return n >= 4
	})
	release()
	h.waitState(ctx, "D6", sent.TS, research.StateDone)
}

func TestUploadRetriedAndPostedOnce(t *testing.T) {
	h := newHarness(t)
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Status: http.StatusInternalServerError, Times: 1})
	h.fake.RateLimit("files.getUploadURLExternal", 1, time.Second)
	h.start(noDraftApproval)
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "upload despite faults", "")
	r := h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if n := len(h.files("C1", sent.TS)); n != 1 {
		t.Fatalf("%d files posted, want 1", n)
	}
	withFiles := 0
	for _, m := range h.botMessages("C1", sent.TS) {
		if len(m.Files) > 0 {
			withFiles++
		}
	}
	if withFiles != 1 {
		t.Errorf("%d messages with files, want 1", withFiles)
	}
	if _, err := h.store.Upload(ctx, r.ID); err != nil {
		t.Error(err)
	}
	h.noPings()
}

func TestRateLimitedStatusMessage(t *testing.T) {
	h := newHarness(t)
	h.fake.RateLimit("chat.postMessage", 1, time.Second)
	h.fake.RateLimit("chat.update", 2, time.Second)
	h.start(noDraftApproval)
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "despite 429s", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	h.waitFor(ctx, "status done", func() bool {
		m, ok := h.statusMessage("C1", sent.TS, 1)
		return ok && strings.Contains(string(m.Blocks), "Done")
	})
	if n := len(h.files("C1", sent.TS)); n != 1 {
		t.Errorf("%d files", n)
	}
}

func TestAllowListAndUserLimit(t *testing.T) {
	h := newHarness(t)
	defer h.holdRuns()()
	h.start(func(o *bot.Options) {
		o.AllowedChannels = []string{"C1"}
		o.MaxRunsPerUser = 1
	})
	ctx := testCtx(t)
	h.mention(ctx, "U1", "C2", "not here", "")
	h.waitFor(ctx, "allow-list ephemeral", func() bool {
		for _, e := range h.fake.Ephemerals() {
			if e.Channel == "C2" && strings.Contains(e.Text, "not enabled in this channel") {
				return true
			}
		}
		return false
	})
	sent := h.mention(ctx, "U1", "C1", "first", "")
	h.waitState(ctx, "C1", sent.TS, research.StateRunning)
	second := h.mention(ctx, "U1", "C1", "second", "")
	h.waitBotText(ctx, "C1", second.TS, "already have 1")
	// A second question in the busy thread is refused politely.
	h.mention(ctx, "U1", "C1", "and another thing", sent.TS)
	h.waitBotText(ctx, "C1", sent.TS, "still working")
	runs, _ := h.store.ListRuns(ctx, research.RunFilter{})
	if len(runs) != 1 {
		t.Errorf("%d runs, want 1", len(runs))
	}
}

func TestEmptyMentionGetsHelp(t *testing.T) {
	h, ctx := started(t)
	sent := h.mention(ctx, "U1", "C1", "", "")
	h.waitBotText(ctx, "C1", sent.TS, "/research ask")
}

func TestBotIgnoresItsOwnEchoes(t *testing.T) {
	h := newHarness(t, slackfake.WithEchoBotMessages(true))
	h.start(noDraftApproval)
	ctx := testCtx(t)
	dm := h.message(ctx, slackfake.MessageEvent{User: "U7", Channel: "D7", Text: "echo test"})
	h.waitState(ctx, "D7", dm.TS, research.StateDone)
	time.Sleep(200 * time.Millisecond)
	runs, _ := h.store.ListRuns(ctx, research.RunFilter{})
	if len(runs) != 1 {
		t.Errorf("%d runs, want 1 (the bot reacted to its own messages)", len(runs))
	}
}

// A status message that can no longer be edited (deleted, or Slack refuses)
// does not swallow the outcome: the final picture is posted anew.
func TestFinalStatusPostedWhenUneditable(t *testing.T) {
	h := newHarness(t)
	h.fake.InjectFault("chat.update", slackfake.Fault{Error: "message_not_found"})
	h.start(noDraftApproval)
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "status message gone", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	h.waitFor(ctx, "a fresh final message", func() bool {
		m, ok := h.statusMessage("C1", sent.TS, 2)
		return ok && strings.HasPrefix(m.Text, "Done")
	})
	if m, _ := h.statusMessage("C1", sent.TS, 1); !strings.HasPrefix(m.Text, "Queued") {
		t.Errorf("first status message = %q, want it untouched (Queued)", m.Text)
	}
}

// A Slack outage longer than one call's retries does not fail the run: the
// upload is tried again in later rounds, and the report is posted once.
func TestUploadSurvivesLongerOutage(t *testing.T) {
	h := newHarness(t)
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Status: http.StatusServiceUnavailable, Times: 7})
	h.start(func(o *bot.Options) { o.RunOptions = research.RunOptions{}; o.SlackRetries = 2 })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "upload through an outage", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if n := len(h.files("C1", sent.TS)); n != 1 {
		t.Fatalf("%d files posted, want 1", n)
	}
}

// When the status message could not be posted (by the run's creator or by
// the process working on it), the run's recorded status message still ends
// up saying Done: the one recorded meanwhile is edited, or the final
// message posted in its place is recorded.
func TestFinalMessageRecordedWhenStatusNeverPosted(t *testing.T) {
	h := newHarness(t)
	h.fake.InjectFault("chat.postMessage", slackfake.Fault{Status: http.StatusInternalServerError, Times: 2})
	h.start(func(o *bot.Options) { o.RunOptions = research.RunOptions{}; o.SlackRetries = 1 })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "status message never posted", "")
	r := h.waitState(ctx, "C1", sent.TS, research.StateDone)
	statusTS := h.placeOf(ctx, r.ID).StatusTS
	if statusTS == "" {
		t.Fatal("the run has no status message recorded")
	}
	m, ok := h.fake.Message("C1", statusTS)
	if !ok || !strings.HasPrefix(m.Text, "Done") {
		t.Fatalf("recorded status message = %q (found %v), want the Done message", m.Text, ok)
	}
}

// lateCreatorRecord is a Slack store where the run's creator records its
// status message late: its SetStatusMessage (the first) waits until a
// second one comes, and lands before it.
type lateCreatorRecord struct {
	*sqlstore.Slack
	calls         atomic.Int32
	second, first chan struct{}
}

func (s *lateCreatorRecord) SetStatusMessage(ctx context.Context, id, ts string) (string, error) {
	switch s.calls.Add(1) {
	case 1:
		select {
		case <-s.second:
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
		}
		defer close(s.first)
	case 2:
		close(s.second)
		select {
		case <-s.first:
		case <-ctx.Done():
		}
	}
	return s.Slack.SetStatusMessage(ctx, id, ts)
}

// The run's creator posted its status message, but recorded it only after
// the process working on the run (whose own post failed) found none
// recorded and posted the final message: the recorded message is edited to
// the outcome, and the final message posted in its place is removed, so the
// thread shows the outcome once, where the run says it is.
func TestFinalMessageWhenCreatorRecordsLate(t *testing.T) {
	h := newHarness(t)
	store := &lateCreatorRecord{Slack: h.records, second: make(chan struct{}), first: make(chan struct{})}
	h.startOnRecords(store, func(o *bot.Options) { o.RunOptions = research.RunOptions{}; o.SlackRetries = 1 })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "creator records late", "")
	// The creator's status message is posted (its record waits); the
	// runner's own post then fails, with its retry.
	h.waitFor(ctx, "the creator's status message", func() bool {
		_, ok := h.statusMessage("C1", sent.TS, 1)
		return ok
	})
	h.fake.InjectFault("chat.postMessage", slackfake.Fault{Status: http.StatusInternalServerError, Times: 2})
	r := h.waitState(ctx, "C1", sent.TS, research.StateDone)
	h.waitFor(ctx, "the recorded status message says Done", func() bool {
		ts, err := h.records.StatusMessage(ctx, r.ID)
		if err != nil || ts == "" {
			return false
		}
		m, ok := h.fake.Message("C1", ts)
		return ok && strings.HasPrefix(m.Text, "Done")
	})
	h.waitFor(ctx, "one Done message in the thread", func() bool {
		n := 0
		for _, m := range h.botMessages("C1", sent.TS) {
			if strings.HasPrefix(m.Text, "Done") {
				n++
			}
		}
		return n == 1
	})
	if n := store.calls.Load(); n != 2 {
		t.Errorf("%d status records, want 2 (the creator's and the final message's)", n)
	}
}
