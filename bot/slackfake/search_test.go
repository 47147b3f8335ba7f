package slackfake

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack/socketmode"
)

type searchAnswer struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Results struct {
		Messages []struct {
			Author    string `json:"author_user_id"`
			Channel   string `json:"channel_id"`
			TS        string `json:"message_ts"`
			Content   string `json:"content"`
			Permalink string `json:"permalink"`
		} `json:"messages"`
	} `json:"results"`
	Meta struct {
		Next string `json:"next_cursor"`
	} `json:"response_metadata"`
}

func search(t *testing.T, fake *Server, params url.Values) searchAnswer {
	t.Helper()
	var a searchAnswer
	postForm(t, fake, "assistant.search.context", params.Encode(), &a)
	return a
}

// TestSearchSeesWhatTheUserMaySee: assistant.search.context with a user's
// action_token finds messages in public channels and in private channels
// the user is a member of, never in a private channel or DM of others.
func TestSearchSeesWhatTheUserMaySee(t *testing.T) {
	fake := New()
	defer fake.Close()
	fake.AddChannel(Channel{ID: "C1", Name: "general"})
	fake.AddChannel(Channel{ID: "G1", Name: "leadership", IsPrivate: true, Members: []string{"U2"}})
	fake.AddChannel(Channel{ID: "G2", Name: "pricing", IsPrivate: true, Members: []string{"U1", "U2"}})
	fake.AddChannel(Channel{ID: "D2", IsIM: true, User: "U2"})
	pub := fake.AddMessage(Message{Channel: "C1", User: "U3", Text: "We decided to ship the pricing change in March."})
	fake.AddMessage(Message{Channel: "G1", User: "U2", Text: "Secret: the pricing decision is on hold."})
	mine := fake.AddMessage(Message{Channel: "G2", User: "U2", Text: "Pricing decision: tier B gets 10% off."})
	fake.AddMessage(Message{Channel: "D2", User: "U2", Text: "my private note about the pricing decision"})
	fake.AddMessage(Message{Channel: "C1", User: "U3", Text: "lunch at noon"})
	tok := fake.ActionToken("U1")

	all := search(t, fake, url.Values{"query": {"what did we decide about pricing"}, "action_token": {tok},
		"channel_types": {"public_channel,private_channel,mpim,im"}})
	if !all.OK {
		t.Fatalf("search: %+v", all)
	}
	got := map[string]string{}
	for _, m := range all.Results.Messages {
		got[m.Channel] = m.Content
		if !strings.HasPrefix(m.Permalink, "https://") || !strings.Contains(m.Permalink, m.Channel) {
			t.Errorf("permalink %q", m.Permalink)
		}
	}
	if got["C1"] != pub.Text || got["G2"] != mine.Text || len(got) != 2 {
		t.Fatalf("U1 saw %v", got)
	}
	// Default channel_types: public channels only.
	if pubOnly := search(t, fake, url.Values{"query": {"pricing"}, "action_token": {tok}}); len(pubOnly.Results.Messages) != 1 || pubOnly.Results.Messages[0].Channel != "C1" {
		t.Fatalf("default channel types: %+v", pubOnly.Results.Messages)
	}
	// U2 sees the leadership channel and their DM.
	u2 := search(t, fake, url.Values{"query": {"pricing decision"}, "action_token": {fake.ActionToken("U2")}, "channel_types": {"private_channel,im"}})
	if len(u2.Results.Messages) != 3 {
		t.Fatalf("U2 saw %+v", u2.Results.Messages)
	}
}

func TestSearchRefusals(t *testing.T) {
	fake := New()
	defer fake.Close()
	fake.AddMessage(Message{Channel: "C1", User: "U3", Text: "pricing"})
	for _, tt := range []struct {
		name   string
		params url.Values
		want   string
	}{
		{"no query", url.Values{"action_token": {fake.ActionToken("U1")}}, "invalid_arguments"},
		{"no action token", url.Values{"query": {"pricing"}}, "missing_action_token"},
		{"forged action token", url.Values{"query": {"pricing"}, "action_token": {"1.2.abc"}}, "invalid_action_token"},
		{"limit over 20", url.Values{"query": {"pricing"}, "action_token": {fake.ActionToken("U1")}, "limit": {"21"}}, "invalid_limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if a := search(t, fake, tt.params); a.OK || a.Error != tt.want {
				t.Fatalf("got %+v, want %s", a, tt.want)
			}
		})
	}
}

func TestSearchPages(t *testing.T) {
	fake := New()
	defer fake.Close()
	for range 25 {
		fake.AddMessage(Message{Channel: "C1", User: "U3", Text: "roadmap item"})
	}
	tok := fake.ActionToken("U1")
	first := search(t, fake, url.Values{"query": {"roadmap"}, "action_token": {tok}})
	if len(first.Results.Messages) != 20 || first.Meta.Next == "" {
		t.Fatalf("first page: %d next %q", len(first.Results.Messages), first.Meta.Next)
	}
	second := search(t, fake, url.Values{"query": {"roadmap"}, "action_token": {tok}, "cursor": {first.Meta.Next}})
	if len(second.Results.Messages) != 5 || second.Meta.Next != "" {
		t.Fatalf("second page: %d next %q", len(second.Results.Messages), second.Meta.Next)
	}
}

// TestEventsCarryActionTokens: a user's message events come with an
// action_token that searches as that user.
func TestEventsCarryActionTokens(t *testing.T) {
	fake := New()
	defer fake.Close()
	ctx := testCtx(t)
	b := startBot(t, fake, true)
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.SendAppMention(ctx, AppMention{User: "U1", Channel: "C1", Text: "what about pricing?"}); err != nil {
		t.Fatal(err)
	}
	ev := b.next(t, socketmode.EventTypeEventsAPI)
	var p struct {
		Event struct {
			ActionToken string `json:"action_token"`
		} `json:"event"`
	}
	if err := json.Unmarshal(ev.Request.Payload, &p); err != nil || p.Event.ActionToken == "" {
		t.Fatalf("app_mention without action_token: %s (%v)", ev.Request.Payload, err)
	}
	if a := search(t, fake, url.Values{"query": {"pricing"}, "action_token": {p.Event.ActionToken}}); !a.OK || len(a.Results.Messages) != 1 {
		t.Fatalf("search with the event's token: %+v", a)
	}
}
