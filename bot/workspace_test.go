package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/tools/search"
)

// WorkspaceSearch against the fake Slack: what the asker may read, as
// results with the message text and permalink; private channels only when
// asked for; errors that say what to do.
func TestWorkspaceSearch(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	fake.AddChannel(slackfake.Channel{ID: "CPUB", Name: "general"})
	fake.AddChannel(slackfake.Channel{ID: "GMINE", Name: "plans", IsPrivate: true, Members: []string{"U1"}})
	fake.AddChannel(slackfake.Channel{ID: "GTHEIRS", Name: "board", IsPrivate: true, Members: []string{"U2"}})
	fake.AddMessage(slackfake.Message{Channel: "CPUB", User: "U2", TS: "1600000000.000100", Text: "We decided the pricing change ships in March."})
	fake.AddMessage(slackfake.Message{Channel: "GMINE", User: "U2", TS: "1600000001.000100", Text: "Pricing: tier B gets 10% off, decided today."})
	fake.AddMessage(slackfake.Message{Channel: "GTHEIRS", User: "U2", TS: "1600000002.000100", Text: "Board: the pricing decision is on hold."})
	ws, err := bot.NewWorkspaceSearch(bot.WorkspaceSearchOptions{Client: bot.NewClient(bot.ClientOptions{BotToken: fake.BotToken(), APIURL: fake.APIURL()})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok := fake.ActionToken("U1")
	for _, tc := range []struct {
		name     string
		private  bool
		channels []string
	}{
		{"public only", false, []string{"CPUB"}},
		{"with the asker's private channels", true, []string{"CPUB", "GMINE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ws.SearchWorkspace(ctx, agent.Workspace{Token: tok, Private: tc.private}, search.Query{Text: "pricing decided"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res {
				if !strings.HasPrefix(r.URL, "https://") || !strings.Contains(r.URL, "/archives/") || r.Content == "" || r.Source != "slack" {
					t.Errorf("result %+v: want a permalink, the message text and the source slack", r)
				}
				if strings.Contains(r.URL, "GTHEIRS") {
					t.Errorf("found a message in a private channel the asker is not in: %+v", r)
				}
				got = append(got, r.URL)
			}
			for _, ch := range tc.channels {
				if !strings.Contains(strings.Join(got, " "), "/"+ch+"/") {
					t.Errorf("no result from %s in %v", ch, got)
				}
			}
			if len(res) != len(tc.channels) {
				t.Errorf("%d results %v, want %d", len(res), got, len(tc.channels))
			}
		})
	}
	// Only what was written before the question.
	res, err := ws.SearchWorkspace(ctx, agent.Workspace{Token: tok, Private: true, Before: "1600000001.000100"}, search.Query{Text: "pricing decided"})
	if err != nil || len(res) != 1 || !strings.Contains(res[0].URL, "CPUB") {
		t.Errorf("before the second message: %+v, %v; want only the first", res, err)
	}
	// A token Slack does not know says what to do.
	if _, err := ws.SearchWorkspace(ctx, agent.Workspace{Token: "1.2.bogus"}, search.Query{Text: "pricing"}); err == nil || !strings.Contains(err.Error(), "ask again") {
		t.Errorf("unknown token: %v; want an error that says to ask again", err)
	}
}

// A burst of workspace searches keeps to the method's rate limit: beyond
// it a query goes without the workspace at once, and Slack answers no 429.
func TestWorkspaceSearchKeepsToTheRateLimit(t *testing.T) {
	fake := slackfake.New() // assistant.search.context: 10 a minute per workspace
	defer fake.Close()
	fake.AddChannel(slackfake.Channel{ID: "CPUB", Name: "general"})
	fake.AddMessage(slackfake.Message{Channel: "CPUB", User: "U2", TS: "1600000000.000100", Text: "We decided the pricing change ships in March."})
	ws, err := bot.NewWorkspaceSearch(bot.WorkspaceSearchOptions{Client: bot.NewClient(bot.ClientOptions{BotToken: fake.BotToken(), APIURL: fake.APIURL()}), MaxWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tok := fake.ActionToken("U1")
	found, spent := 0, 0
	for range 14 {
		res, err := ws.SearchWorkspace(context.Background(), agent.Workspace{Token: tok}, search.Query{Text: "pricing"})
		switch {
		case err == nil && len(res) == 1:
			found++
		case err != nil && strings.Contains(err.Error(), "spent"):
			spent++
		default:
			t.Fatalf("search: %d results, %v", len(res), err)
		}
	}
	if found != 10 || spent != 4 {
		t.Errorf("%d searches answered and %d skipped; want 10 and 4", found, spent)
	}
	if n := fake.RateLimited("assistant.search.context"); n != 0 {
		t.Errorf("Slack answered 429 %d times", n)
	}
}
