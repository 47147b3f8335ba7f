package slackfake

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// TestStreamLifecycle drives chat.startStream / appendStream / stopStream
// with slack-go as the bot would: a plan title, task cards moving through
// their states with sources, final blocks; a stopped stream takes no more.
func TestStreamLifecycle(t *testing.T) {
	fake, api, ctx := newFake(t)

	parent := fake.AddMessage(Message{Channel: "C1", User: "U1", Text: "research this"})
	card := slack.NewTaskUpdateChunk("t1", "Search the news")
	card.Status = slack.TaskCardStatusInProgress
	ch, ts, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(parent.TS),
		slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModePlan),
		slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(fake.TeamID()),
		slack.MsgOptionChunks(slack.NewPlanUpdateChunk("EU AI Act"), card))
	if err != nil || ch != "C1" || ts == "" {
		t.Fatalf("start = %q %q %v", ch, ts, err)
	}
	done := slack.NewTaskUpdateChunk("t1", "Search the news")
	done.Status, done.Details = slack.TaskCardStatusComplete, "3 searches, 5 pages read"
	done.Sources = []slack.TaskCardSource{slack.NewTaskCardSource("https://example.com/a", "Example A")}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(done)); err != nil {
		t.Fatalf("append: %v", err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("**Summary** so far")); err != nil {
		t.Fatalf("append markdown: %v", err)
	}
	final := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Done*", false, false), nil, nil)
	if _, _, err := api.StopStreamContext(ctx, "C1", ts, slack.MsgOptionBlocks(final)); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("late")); err == nil || err.Error() != "message_not_in_streaming_state" {
		t.Fatalf("append after stop = %v", err)
	}
	if _, _, err := api.StopStreamContext(ctx, "C1", ts); err == nil || err.Error() != "message_not_in_streaming_state" {
		t.Fatalf("second stop = %v", err)
	}

	streams := fake.Streams()
	if len(streams) != 1 {
		t.Fatalf("%d streams", len(streams))
	}
	st := streams[0]
	if st.Open || st.DisplayMode != "plan" || st.ThreadTS != parent.TS || st.RecipientUser != "U1" || st.PlanTitle() != "EU AI Act" {
		t.Fatalf("stream = %+v (plan %q)", st, st.PlanTitle())
	}
	tasks := st.Tasks()
	if len(tasks) != 1 || tasks[0].Status != "complete" || len(tasks[0].Sources) != 1 || tasks[0].Sources[0].Text != "Example A" {
		t.Fatalf("tasks = %+v", tasks)
	}
	if m, ok := fake.Message("C1", ts); !ok || !strings.Contains(string(m.Blocks), "*Done*") || m.ThreadTS != parent.TS {
		t.Fatalf("stream message = %+v", m)
	}
}

// TestStreamRefusals: what Slack refuses in streaming calls.
func TestStreamRefusals(t *testing.T) {
	fake, api, ctx := newFake(t)
	recipient := []slack.MsgOption{slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(fake.TeamID())}
	with := func(opts ...slack.MsgOption) []slack.MsgOption {
		return append(append([]slack.MsgOption{}, recipient...), opts...)
	}

	noText := slack.NewTaskUpdateChunk("t1", "Read")
	noText.Sources = []slack.TaskCardSource{{Type: "url", URL: "https://example.com"}}
	longURL := slack.NewTaskUpdateChunk("t1", "Read")
	longURL.Sources = []slack.TaskCardSource{slack.NewTaskCardSource("https://example.com/"+strings.Repeat("a", 3000), "Example")}
	atLimit := slack.NewTaskUpdateChunk("t1", "Read")
	atLimit.Sources = []slack.TaskCardSource{slack.NewTaskCardSource("https://example.com/"+strings.Repeat("a", 3000-len("https://example.com/")), "Example")}
	var many []slack.Block
	for range 51 {
		many = append(many, slack.NewDividerBlock())
	}
	tests := []struct {
		name    string
		channel string
		opts    []slack.MsgOption
		want    string
	}{
		{"no thread", "C1", with(slack.MsgOptionMarkdownText("x")), "invalid_arguments"},
		{"channel without recipient", "C1", []slack.MsgOption{slack.MsgOptionTS("1.1"), slack.MsgOptionMarkdownText("x")}, "missing_recipient_team_id"},
		{"channel without recipient user", "C1", []slack.MsgOption{slack.MsgOptionTS("1.1"), slack.MsgOptionRecipientTeamID("T1"), slack.MsgOptionMarkdownText("x")}, "missing_recipient_user_id"},
		{"DM needs no recipient", "D1", []slack.MsgOption{slack.MsgOptionTS("1.1"), slack.MsgOptionMarkdownText("x")}, ""},
		{"source without text", "C1", with(slack.MsgOptionTS("1.1"), slack.MsgOptionChunks(noText)), "invalid_chunks"},
		{"source url over 3,000 characters", "C1", with(slack.MsgOptionTS("1.1"), slack.MsgOptionChunks(longURL)), "invalid_chunks"},
		{"source url of 3,000 characters", "C1", with(slack.MsgOptionTS("1.1"), slack.MsgOptionChunks(atLimit)), ""},
		{"markdown_text and chunks", "C1", with(slack.MsgOptionTS("1.1"), slack.MsgOptionMarkdownText("x"), slack.MsgOptionChunks(atLimit)), "cannot_provide_both_markdown_text_and_chunks"},
		{"51 blocks in a chunk", "C1", with(slack.MsgOptionTS("1.1"), slack.MsgOptionChunks(slack.NewBlocksChunk(many...))), "invalid_blocks"},
		{"unknown display mode", "C1", with(slack.MsgOptionTS("1.1"), slack.MsgOptionTaskDisplayMode("grid")), "invalid_arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := api.StartStreamContext(ctx, tt.channel, tt.opts...)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", "9.9", slack.MsgOptionMarkdownText("x")); err == nil || err.Error() != "message_not_found" {
		t.Fatalf("append to no stream = %v", err)
	}
}

// TestStreamTiers: chat.startStream is Tier 2 and chat.appendStream Tier 4,
// apart from chat.update's budget.
func TestStreamTiers(t *testing.T) {
	fake := New(WithTierLimits(Limits{StartStreamsPerMinute: 2, AppendsPerMinute: 3}))
	defer fake.Close()
	ctx := testCtx(t)
	api := newAPI(fake)
	var ts string
	for i := range 3 {
		_, got, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS("1.1"), slack.MsgOptionMarkdownText("x"))
		var rl *slack.RateLimitedError
		switch {
		case i < 2 && err != nil:
			t.Fatalf("start %d: %v", i, err)
		case i == 2 && (!errors.As(err, &rl) || rl.RetryAfter < time.Second):
			t.Fatalf("third start = %v, want a 429 with Retry-After", err)
		}
		if i == 0 {
			ts = got
		}
	}
	for i := range 4 {
		_, _, err := api.AppendStreamContext(ctx, "D1", ts, slack.MsgOptionMarkdownText("y"))
		if (i < 3) != (err == nil) {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if fake.RateLimited("chat.update") != 0 || fake.RateLimited("chat.appendStream") != 1 || fake.RateLimited("chat.startStream") != 1 {
		t.Fatalf("rate limited: update %d append %d start %d", fake.RateLimited("chat.update"), fake.RateLimited("chat.appendStream"), fake.RateLimited("chat.startStream"))
	}
}

// TestWithoutStreaming: a workspace that does not serve the streaming
// methods refuses each of them with the configured code, and records the
// calls.
func TestWithoutStreaming(t *testing.T) {
	for _, code := range []string{"unknown_method", "missing_scope"} {
		t.Run(code, func(t *testing.T) {
			fake := New(WithoutStreaming(code))
			defer fake.Close()
			ctx := testCtx(t)
			api := newAPI(fake)
			_, _, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS("1.1"), slack.MsgOptionMarkdownText("x"))
			if err == nil || err.Error() != code {
				t.Fatalf("start = %v, want %s", err, code)
			}
			if _, _, err := api.AppendStreamContext(ctx, "D1", "1.2", slack.MsgOptionMarkdownText("x")); err == nil || err.Error() != code {
				t.Fatalf("append = %v, want %s", err, code)
			}
			if _, _, err := api.StopStreamContext(ctx, "D1", "1.2"); err == nil || err.Error() != code {
				t.Fatalf("stop = %v, want %s", err, code)
			}
			if len(fake.Streams()) != 0 || fake.Calls("chat.startStream") != 1 {
				t.Fatalf("streams %d, start calls %d", len(fake.Streams()), fake.Calls("chat.startStream"))
			}
			if _, _, err := api.PostMessageContext(ctx, "D1", slack.MsgOptionText("plain", false)); err != nil {
				t.Fatalf("post still works: %v", err)
			}
		})
	}
}

// TestStreamBlocksShowUntilStopped: a blocks chunk's buttons are on the
// streaming message (people click them while it streams); the final
// blocks replace them.
func TestStreamBlocksShowUntilStopped(t *testing.T) {
	fake, api, ctx := newFake(t)
	btn := slack.NewButtonBlockElement("dr_cancel", "run1", slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false))
	_, ts, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS("1.1"),
		slack.MsgOptionChunks(slack.NewPlanUpdateChunk("Plan"), slack.NewBlocksChunk(slack.NewActionBlock("a1", btn))))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := fake.Message("D1", ts); m.ButtonValue("dr_cancel") != "run1" {
		t.Fatalf("streaming message blocks = %s", m.Blocks)
	}
	if _, _, err := api.AppendStreamContext(ctx, "D1", ts, slack.MsgOptionChunks(slack.NewBlocksChunk(slack.NewDividerBlock()))); err != nil {
		t.Fatal(err)
	}
	if m, _ := fake.Message("D1", ts); m.ButtonValue("dr_cancel") != "run1" || !strings.Contains(string(m.Blocks), "divider") {
		t.Fatalf("after append: %s", m.Blocks)
	}
	final := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Done*", false, false), nil, nil)
	if _, _, err := api.StopStreamContext(ctx, "D1", ts, slack.MsgOptionBlocks(final)); err != nil {
		t.Fatal(err)
	}
	if m, _ := fake.Message("D1", ts); m.ButtonValue("dr_cancel") != "" || !strings.Contains(string(m.Blocks), "*Done*") {
		t.Fatalf("after stop: %s", m.Blocks)
	}
}
