package slackfake

import (
	"testing"

	"github.com/slack-go/slack"
)

// Assistant thread methods refuse what real Slack refuses (see
// assistant.go): unknown channels and threads, missing titles, no prompts,
// more than four, prompts without a title or message.
func TestAssistantThreadMethodsValidate(t *testing.T) {
	fake, api, _ := newFake(t)
	_, ctx := connectedBot(t, fake, true)
	started, err := fake.SendAssistantThreadStarted(ctx, AssistantThreadStarted{User: "U7"})
	if err != nil {
		t.Fatal(err)
	}
	dm := "D7"
	msg := fake.AddMessage(Message{Channel: dm, User: "U7", Text: "question"})
	prompts := func(n int) []slack.AssistantThreadsPrompt {
		var ps []slack.AssistantThreadsPrompt
		for range n {
			ps = append(ps, slack.AssistantThreadsPrompt{Title: "t", Message: "m"})
		}
		return ps
	}
	titles := []struct {
		name             string
		channel, ts, txt string
		want             string
	}{
		{"assistant thread", dm, started.TS, "AI規制", ""},
		{"message thread", dm, msg.TS, "AI規制", ""},
		{"no title", dm, started.TS, "", "invalid_arguments"},
		{"no thread_ts", dm, "", "x", "invalid_arguments"},
		{"unknown channel", "D404", started.TS, "x", "channel_not_found"},
		{"unknown thread", dm, "1.000404", "x", "invalid_thread_ts"},
	}
	for _, tt := range titles {
		err := api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: tt.channel, ThreadTS: tt.ts, Title: tt.txt})
		if got := errString(err); got != tt.want {
			t.Errorf("setTitle %s: error %q, want %q", tt.name, got, tt.want)
		}
	}
	if n := len(fake.Titles()); n != 2 {
		t.Errorf("recorded %d titles, want the 2 accepted", n)
	}
	sets := []struct {
		name    string
		channel string
		ts      string
		prompts []slack.AssistantThreadsPrompt
		want    string
	}{
		{"four", dm, started.TS, prompts(4), ""},
		{"one", dm, started.TS, prompts(1), ""},
		{"five", dm, started.TS, prompts(5), "invalid_arguments"},
		{"none", dm, started.TS, nil, "invalid_arguments"},
		{"no message", dm, started.TS, []slack.AssistantThreadsPrompt{{Title: "t"}}, "invalid_arguments"},
		{"no title", dm, started.TS, []slack.AssistantThreadsPrompt{{Message: "m"}}, "invalid_arguments"},
		{"unknown channel", "D404", started.TS, prompts(1), "channel_not_found"},
		{"unknown thread", dm, "1.000404", prompts(1), "invalid_thread_ts"},
	}
	for _, tt := range sets {
		err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: tt.channel, ThreadTS: tt.ts, Prompts: tt.prompts})
		if got := errString(err); got != tt.want {
			t.Errorf("setSuggestedPrompts %s: error %q, want %q", tt.name, got, tt.want)
		}
	}
	if sp := fake.SuggestedPrompts(); len(sp) != 2 || len(sp[0].Prompts) != 4 || sp[0].ThreadTS != started.TS {
		t.Errorf("recorded prompts = %+v, want the 2 accepted", sp)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
