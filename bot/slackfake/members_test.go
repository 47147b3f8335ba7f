package slackfake

import (
	"fmt"
	"slices"
	"testing"

	"github.com/slack-go/slack"
)

func TestConversationMembersAndChannelStates(t *testing.T) {
	fake, api, ctx := newFake(t)
	var many []string
	for i := range 250 {
		many = append(many, fmt.Sprintf("U%04d", i))
	}
	fake.AddChannel(Channel{ID: "CMANY", Name: "many", Members: many})
	fake.AddChannel(Channel{ID: "CARCH", Name: "old", Archived: true})
	fake.AddChannel(Channel{ID: "CNOBOT", Name: "nobot", BotAbsent: true})
	fake.AddUser(User{ID: "U1", Name: "one"})

	var got []string
	cursor := ""
	for {
		page, next, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "CMANY", Cursor: cursor, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, many) {
		t.Fatalf("paged members: %d, want %d", len(got), len(many))
	}
	if _, _, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "CNONE"}); err == nil || err.Error() != "channel_not_found" {
		t.Fatalf("unknown channel: %v", err)
	}
	// Without Members: every user of the workspace and the bot.
	all, _, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "CNOBOT"})
	if err != nil || !slices.Contains(all, "U1") || slices.Contains(all, fake.BotUserID()) {
		t.Fatalf("members of a channel without the bot = %v, %v", all, err)
	}
	info, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "CARCH"})
	if err != nil || !info.IsArchived || !info.IsMember {
		t.Fatalf("archived channel = %+v, %v", info, err)
	}
	info, err = api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "CNOBOT"})
	if err != nil || info.IsMember {
		t.Fatalf("channel without the bot = %+v, %v", info, err)
	}
	b, err := api.GetBotInfoContext(ctx, slack.GetBotInfoParameters{Bot: mustAuth(t, api).BotID})
	if err != nil || b.AppID != fake.AppID() || b.AppID == "" {
		t.Fatalf("bots.info = %+v, %v", b, err)
	}
	if _, err := api.GetBotInfoContext(ctx, slack.GetBotInfoParameters{Bot: "BNOPE"}); err == nil {
		t.Fatal("bots.info of another bot answered")
	}
}

func mustAuth(t *testing.T, api *slack.Client) *slack.AuthTestResponse {
	t.Helper()
	res, err := api.AuthTestContext(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return res
}
