package bot

import (
	"context"

	"github.com/slack-go/slack"
)

// The methods below let extensions (schedule/slackui: digests, their modal
// and buttons) call Slack through the bot rather than a client of their
// own: with the bot's retries on rate limits and server errors, its
// per-channel pacing of chat.postMessage, its chat.update budget shared by
// the replicas, and its metrics. Their signatures are *slack.Client's, so
// an interface written for one (slackui.API) takes a *Bot.

// OpenViewContext opens a modal (views.open; a trigger is used once, so
// only rate limits are retried).
func (b *Bot) OpenViewContext(ctx context.Context, triggerID string, view slack.ModalViewRequest) (*slack.ViewResponse, error) {
	var resp *slack.ViewResponse
	err := b.call(ctx, "views.open", false, func(ctx context.Context) error {
		var err error
		resp, err = b.api.OpenViewContext(ctx, triggerID, view)
		return err
	})
	return resp, err
}

// PostMessageContext posts a message paced per channel (chat.postMessage,
// rate limits retried). It returns the channel and the message's ts.
func (b *Bot) PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error) {
	ts, err := b.post(ctx, channelID, false, options...)
	return channelID, ts, err
}

// PostEphemeralContext shows a message to one user (chat.postEphemeral).
func (b *Bot) PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error) {
	var ts string
	err := b.call(ctx, "chat.postEphemeral", true, func(ctx context.Context) error {
		var err error
		ts, err = b.api.PostEphemeralContext(ctx, channelID, userID, options...)
		return err
	})
	return ts, err
}

// UpdateMessageContext edits a message within the chat.update budget, as a
// final picture. It returns the channel and ts.
func (b *Bot) UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error) {
	err := b.updateMessage(ctx, channelID, timestamp, options...)
	return channelID, timestamp, "", err
}

// GetUserInfoContext reads a user (users.info).
func (b *Bot) GetUserInfoContext(ctx context.Context, user string, options ...slack.GetUserInfoOption) (*slack.User, error) {
	var u *slack.User
	err := b.call(ctx, "users.info", true, func(ctx context.Context) error {
		var err error
		u, err = b.api.GetUserInfoContext(ctx, user, options...)
		return err
	})
	return u, err
}

// UploadFileContext uploads and shares a file (files v2 flow; rate limits
// retried).
func (b *Bot) UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error) {
	var f *slack.FileSummary
	err := b.call(ctx, "files.upload", false, func(ctx context.Context) error {
		var err error
		f, err = b.api.UploadFileContext(ctx, params)
		return err
	})
	return f, err
}

// RespondContext posts msg to an interaction's response_url (replacing or
// answering the message it came from), with the bot's retries.
func (b *Bot) RespondContext(ctx context.Context, responseURL string, msg map[string]any) error {
	return b.postResponse(ctx, responseURL, msg)
}
