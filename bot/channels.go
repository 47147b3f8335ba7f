package bot

import (
	"context"
	"fmt"
	"slices"

	"github.com/slack-go/slack"
)

// maxMemberPages bounds how many pages of conversations.members (1,000
// each) CheckChannel reads to find the owner.
const maxMemberPages = 20

// CheckChannel says why digests owned by owner may not be posted in
// channel, in words for that person ("" when they may): the id must be a
// public or private channel (C…/G…, never a DM or anything else), allowed
// by Options.AllowedChannels, not archived, with the bot and the owner as
// members. It fails only when Slack could not be asked (a transient error).
// It implements schedule.ChannelChecker.
func (b *Bot) CheckChannel(ctx context.Context, channel, owner string) (string, error) {
	w := func() *words { return b.slackClient.wordsFor(ctx, owner) } // asked only for a refusal
	if !channelIDRE.MatchString(channel) {
		return w().NotAChannel, nil
	}
	if len(b.allowed) > 0 && !b.allowed[channel] {
		return fmt.Sprintf(w().NotAllowedHere, ChannelRef(channel)), nil
	}
	var info *slack.Channel
	err := b.slackClient.call(ctx, "conversations.info", true, func(ctx context.Context) error {
		var err error
		info, err = b.slackClient.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel})
		return err
	})
	if problem, ok := channelProblem(w, channel, err); ok {
		return problem, nil
	}
	if err != nil {
		return "", fmt.Errorf("bot: checking channel %s: %w", channel, err)
	}
	switch {
	case info.IsIM || info.IsMpIM:
		return w().NotAChannel, nil
	case info.IsArchived:
		return fmt.Sprintf(w().Archived, ChannelRef(channel)), nil
	case !info.IsMember:
		return fmt.Sprintf(w().NotMember, ChannelRef(channel)), nil
	}
	if owner == "" {
		return "", nil
	}
	return b.ownerIn(ctx, w, channel, owner)
}

// ownerIn says, as CheckChannel, when owner is not a member of channel.
func (b *Bot) ownerIn(ctx context.Context, w func() *words, channel, owner string) (string, error) {
	cursor := ""
	for range maxMemberPages {
		var members []string
		err := b.slackClient.call(ctx, "conversations.members", true, func(ctx context.Context) error {
			var err error
			members, cursor, err = b.slackClient.api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: channel, Cursor: cursor, Limit: 1000})
			return err
		})
		if problem, ok := channelProblem(w, channel, err); ok {
			return problem, nil
		}
		if err != nil {
			return "", fmt.Errorf("bot: listing the members of %s: %w", channel, err)
		}
		if slices.Contains(members, owner) {
			return "", nil
		}
		if cursor == "" {
			break
		}
	}
	return fmt.Sprintf(w().OwnerNotMember, ChannelRef(channel)), nil
}

// channelProblem maps Slack's answers that mean "not this channel" to words.
func channelProblem(w func() *words, channel string, err error) (string, bool) {
	switch errorCode(err) {
	case "channel_not_found":
		return fmt.Sprintf(w().CannotSee, ChannelRef(channel)), true
	case "not_in_channel":
		return fmt.Sprintf(w().NotMember, ChannelRef(channel)), true
	case "is_archived":
		return fmt.Sprintf(w().Archived, ChannelRef(channel)), true
	}
	return "", false
}
