package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/slack-go/slack"
)

// call runs one Slack Web API call with retries: a 429 is retried after its
// Retry-After (Slack did not act on the request); a 5xx or network error is
// retried with a backoff only when idempotent is true (the request may
// have been acted on). Every failure is counted by method and error code.
func (b *Bot) call(ctx context.Context, method string, idempotent bool, fn func(context.Context) error) error {
	backoff := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		code := errorCode(err)
		b.metrics.slackErrors.WithLabelValues(method, code).Inc()
		var wait time.Duration
		var rl *slack.RateLimitedError
		var sc slack.StatusCodeError
		switch {
		case errors.As(err, &rl):
			wait = max(rl.RetryAfter, 100*time.Millisecond)
		case idempotent && errors.As(err, &sc) && sc.Code >= 500:
			wait = backoff
		case idempotent && isNetErr(err):
			wait = backoff
		default:
			return fmt.Errorf("%s: %w", method, err)
		}
		if attempt >= b.opts.SlackRetries || ctx.Err() != nil {
			return fmt.Errorf("%s (after %d attempts): %w", method, attempt+1, err)
		}
		b.log.Debug("bot: retrying slack call", "method", method, "code", code, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w", method, ctx.Err())
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func isNetErr(err error) bool {
	var slackErr slack.SlackErrorResponse
	var sc slack.StatusCodeError
	var rl *slack.RateLimitedError
	if errors.As(err, &slackErr) || errors.As(err, &sc) || errors.As(err, &rl) {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	// Everything else from slack-go is transport-level (connection reset,
	// EOF, timeouts) or an API error string; API errors are plain strings
	// without a type, which we recognise by being short codes.
	return !isAPICode(err.Error())
}

func isAPICode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// errorCode names an error for metrics and logs: Slack's error code, the
// HTTP status, "ratelimited" or "transport".
func errorCode(err error) string {
	if err == nil {
		return ""
	}
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var se slack.SlackErrorResponse
	switch {
	case errors.As(err, &rl):
		return "ratelimited"
	case errors.As(err, &sc):
		return fmt.Sprintf("http_%d", sc.Code)
	case errors.As(err, &se):
		return se.Err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	if s := err.Error(); isAPICode(s) {
		return s
	}
	return "transport"
}

// postMessage posts a message and returns its ts. Only 429s are retried.
func (b *Bot) postMessage(ctx context.Context, channel string, opts ...slack.MsgOption) (string, error) {
	var ts string
	err := b.call(ctx, "chat.postMessage", false, func(ctx context.Context) error {
		var err error
		_, ts, err = b.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	return ts, err
}

// updateMessage edits a message in place.
func (b *Bot) updateMessage(ctx context.Context, channel, ts string, opts ...slack.MsgOption) error {
	return b.call(ctx, "chat.update", true, func(ctx context.Context) error {
		_, _, _, err := b.api.UpdateMessageContext(ctx, channel, ts, opts...)
		return err
	})
}

// ephemeral shows text to one user; failures are logged, not returned.
func (b *Bot) ephemeral(ctx context.Context, channel, threadTS, user, text string) {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	err := b.call(ctx, "chat.postEphemeral", true, func(ctx context.Context) error {
		_, err := b.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
	if err != nil {
		b.log.Warn("bot: ephemeral", "channel", channel, "err", err)
	}
}

// reply posts text in a thread; failures are logged.
func (b *Bot) reply(ctx context.Context, channel, threadTS, text string) string {
	ts, err := b.postMessage(ctx, channel, slack.MsgOptionText(text, false), slack.MsgOptionTS(threadTS))
	if err != nil {
		b.log.Warn("bot: reply", "channel", channel, "err", err)
	}
	return ts
}

// respond posts an ephemeral answer to a slash command's response_url.
func (b *Bot) respond(ctx context.Context, responseURL, text string, blocks []slack.Block) {
	if responseURL == "" {
		return
	}
	msg := map[string]any{"response_type": "ephemeral", "text": text}
	if len(blocks) > 0 {
		msg["blocks"] = blocks
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return
	}
	err = b.call(ctx, "response_url", true, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := b.opts.HTTPClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode != http.StatusOK {
			return slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
		}
		return nil
	})
	if err != nil {
		b.log.Warn("bot: response_url", "err", err)
	}
}

// userName returns a user's display name (escaped, never a mention), cached.
func (b *Bot) userName(ctx context.Context, id string) string {
	if id == "" {
		return "someone"
	}
	if v, ok := b.names.Load(id); ok {
		return v.(string)
	}
	var u *slack.User
	err := b.call(ctx, "users.info", true, func(ctx context.Context) error {
		var err error
		u, err = b.api.GetUserInfoContext(ctx, id)
		return err
	})
	name := id
	if err == nil && u != nil {
		switch {
		case u.Profile.DisplayName != "":
			name = u.Profile.DisplayName
		case u.RealName != "":
			name = u.RealName
		case u.Name != "":
			name = u.Name
		}
	}
	name = Escape(name)
	if err == nil {
		b.names.Store(id, name)
	}
	return name
}
