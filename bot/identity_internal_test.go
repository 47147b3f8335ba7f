package bot

import (
	"testing"

	"github.com/slack-go/slack"
)

// TestOwnFileShare: the report found in a thread must be one the bot
// shared; another app's message sharing a file of the same name is not it
// (before, any message with a bot_id was taken for the bot's).
func TestOwnFileShare(t *testing.T) {
	me := identity{botUserID: "U0BOT", botID: "B0BOT"}
	msg := func(user, bot string) slack.Message {
		var m slack.Message
		m.User, m.BotID = user, bot
		return m
	}
	tests := []struct {
		name string
		id   identity
		m    slack.Message
		want bool
	}{
		{"the bot's message", me, msg("U0BOT", "B0BOT"), true},
		{"the bot's file share without bot_id", me, msg("U0BOT", ""), true},
		{"another app", me, msg("U0OTHER", "B0OTHER"), false},
		{"another app posing with the bot's user", me, msg("U0BOT", "B0OTHER"), false},
		{"a person", me, msg("U1", ""), false},
		{"identity unknown", identity{}, msg("U0BOT", "B0BOT"), false},
		{"bot_id unknown", identity{botUserID: "U0BOT"}, msg("U0BOT", "B0BOT"), true},
	}
	for _, tt := range tests {
		if got := tt.id.ownFileShare(tt.m); got != tt.want {
			t.Errorf("%s: ownFileShare = %v, want %v", tt.name, got, tt.want)
		}
	}
}
