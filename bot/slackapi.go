package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"deepresearch/clock"

	"github.com/slack-go/slack"
)

// Client is the Slack Web API client of one app installation: its bot
// token, the app-level token Socket Mode connects with, the API URL and the
// HTTP client. A process makes one and shares it: the Bot (Options.Client)
// and the WorkspaceSearch its researcher uses call Slack through it.
type Client struct {
	api      *slack.Client
	http     *http.Client
	botToken string
	appToken string
}

// ClientOptions configure a Client.
type ClientOptions struct {
	BotToken   string       // xoxb-…
	AppToken   string       // xapp-… with connections:write ("" when only the Web API is used)
	APIURL     string       // Slack Web API base, e.g. "https://slack.com/api/"; "" for Slack's own
	HTTPClient *http.Client // default: a client with a 30s timeout
}

// NewClient returns the Client of o.
func NewClient(o ClientOptions) *Client {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	sopts := []slack.Option{slack.OptionHTTPClient(o.HTTPClient)}
	if o.AppToken != "" {
		sopts = append(sopts, slack.OptionAppLevelToken(o.AppToken))
	}
	if o.APIURL != "" {
		sopts = append(sopts, slack.OptionAPIURL(apiBase(o.APIURL)))
	}
	return &Client{api: slack.New(o.BotToken, sopts...), http: o.HTTPClient, botToken: o.BotToken, appToken: o.AppToken}
}

// slackClient is the bot's Slack Web API client (a Client) with its budgets. Every call goes
// through call (retries, error metrics); messages are paced per channel,
// edits kept within the workspace's chat.update budget and refusals capped
// under a flood; user names and languages are cached. The live replicas
// split its budgets among themselves (presence.go).
type slackClient struct {
	api           *slack.Client
	http          *http.Client // response_urls
	log           *slog.Logger
	metrics       *Metrics
	clk           clock.Clock
	retries       int           // Options.SlackRetries
	refusalWindow time.Duration // Options.RefusalWindow

	limiter      *channelLimiter
	edits        editOrder     // per-message edit order across status message instances
	names        sync.Map      // user id -> display name
	langs        sync.Map      // user id -> lang of their Slack client
	updates      *updateBudget // chat.update budget of the process (nil: unlimited)
	appends      *updateBudget // chat.appendStream budget of the process
	streamStarts *updateBudget // chat.startStream (Tier 2): a run without a token gets a status message
	streamStops  *updateBudget // chat.stopStream (Tier 2): a stop waits for a token
	posts        *postPacer    // chat.postMessage pace per channel (nil: unpaced)
	refusals     *refusalGate  // caps refusal replies under a flood (nil: uncapped)
	live         atomic.Int32  // replicas the workspace's budgets are split among (presence.go)
}

// newSlackClient is the client of a bot with opts (defaults applied),
// calling Slack through client.
func newSlackClient(client *Client, opts Options, log *slog.Logger, m *Metrics) *slackClient {
	c := &slackClient{
		api:           client.api,
		http:          client.http,
		log:           log,
		metrics:       m,
		clk:           opts.Clock,
		retries:       opts.SlackRetries,
		refusalWindow: opts.RefusalWindow,
		limiter:       newChannelLimiter(opts.ProgressInterval, opts.Clock),
		updates:       newUpdateBudget(opts.UpdatesPerMinute, opts.UpdateBurst, opts.Clock),
		appends:       newUpdateBudget(appendsPerMinute, appendBurst, opts.Clock),
		streamStarts:  newUpdateBudget(streamCallsPerMinute, streamCallsPerMinute, opts.Clock),
		streamStops:   newUpdateBudget(streamCallsPerMinute, streamCallsPerMinute, opts.Clock),
		posts:         newPostPacer(opts.PostInterval, opts.PostBurst, opts.Clock),
		refusals:      newRefusalGate(opts.RefusalWindow, opts.Clock),
	}
	c.live.Store(1)
	return c
}

// now is the time on the bot's clock.
func (c *slackClient) now() time.Time { return c.clk.Now() }

// call runs one Slack Web API call with retries: a 429 is retried after its
// Retry-After (Slack did not act on the request); a 5xx or network error is
// retried with a backoff only when idempotent is true (the request may
// have been acted on). Every failure is counted by method and error code.
func (c *slackClient) call(ctx context.Context, method string, idempotent bool, fn func(context.Context) error) error {
	backoff := clock.Backoff{Initial: 200 * time.Millisecond, Max: 5 * time.Second}
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		code := errorCode(err)
		if code != "skipped" {
			c.metrics.slackErrors.WithLabelValues(method, code).Inc()
		}
		if errors.Is(err, errEditSkipped) {
			return fmt.Errorf("%s: %w", method, err)
		}
		var wait time.Duration
		var rl *slack.RateLimitedError
		var sc slack.StatusCodeError
		switch {
		case errors.As(err, &rl):
			wait = max(rl.RetryAfter, 100*time.Millisecond)
		case idempotent && errors.As(err, &sc) && sc.Code >= 500:
			wait = backoff.Delay(attempt + 1)
		case idempotent && isNetErr(err):
			wait = backoff.Delay(attempt + 1)
		default:
			return fmt.Errorf("%s: %w", method, err)
		}
		if attempt >= c.retries || ctx.Err() != nil {
			return fmt.Errorf("%s (after %d attempts): %w", method, attempt+1, err)
		}
		c.log.Debug("bot: retrying slack call", "method", method, "code", code, "wait", wait)
		if err := clock.Sleep(ctx, c.clk, wait); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
	}
}

// transient reports whether a Slack call's error may go away by itself:
// rate limits, server errors and connection failures.
func transient(err error) bool {
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	return errors.As(err, &rl) || (errors.As(err, &sc) && sc.Code >= 500) || isNetErr(err)
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
		if r != '_' && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
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
	case errors.Is(err, errEditSkipped):
		return "skipped"
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
func (c *slackClient) postMessage(ctx context.Context, channel string, opts ...slack.MsgOption) (string, error) {
	return c.post(ctx, channel, false, opts...)
}

// post posts a message paced per channel (Slack allows about one message
// per second per channel, with short bursts); idempotent as for call.
func (c *slackClient) post(ctx context.Context, channel string, idempotent bool, opts ...slack.MsgOption) (string, error) {
	ts, _, err := c.postUnless(ctx, channel, idempotent, nil, opts...)
	return ts, err
}

// postUnless is post, except that once the channel's slot has come it
// asks unneeded (when not nil) and skips the post if that reports true:
// waiting for the slot can take a while in a busy channel, and the message
// may have become unnecessary meanwhile.
func (c *slackClient) postUnless(ctx context.Context, channel string, idempotent bool, unneeded func() bool, opts ...slack.MsgOption) (ts string, skipped bool, err error) {
	start := c.now()
	if err := c.posts.wait(ctx, channel); err != nil {
		return "", false, fmt.Errorf("chat.postMessage: %w", err)
	}
	c.metrics.postWait.Observe(c.now().Sub(start).Seconds())
	if unneeded != nil && unneeded() {
		return "", true, nil
	}
	ts, err = c.send(ctx, channel, idempotent, opts...)
	return ts, false, err
}

// send calls chat.postMessage.
func (c *slackClient) send(ctx context.Context, channel string, idempotent bool, opts ...slack.MsgOption) (string, error) {
	var ts string
	err := c.call(ctx, "chat.postMessage", idempotent, func(ctx context.Context) error {
		var err error
		_, ts, err = c.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	return ts, err
}

// editKind says whether an edit is a final picture or a progress picture.
type editKind int

const (
	editFinal    editKind = iota // waits for a chat.update token, ahead of progress
	editProgress                 // skipped (errEditSkipped) when no token is free beyond the finals' reserve
)

// updateMessage edits a message in place: a final picture.
func (c *slackClient) updateMessage(ctx context.Context, channel, ts string, opts ...slack.MsgOption) error {
	return c.editMessage(ctx, editFinal, channel, ts, opts...)
}

// editMessage edits a message within the workspace's chat.update budget.
// Every attempt (retries too) takes a token. A final edit waits for its
// token, then for the channel's edit slot; a progress edit's caller waits
// for the channel slot first, and the edit is skipped (errEditSkipped)
// when no token is free beyond the finals' reserve. A 429 pauses the
// budget for its Retry-After; a progress edit then gives up instead of
// waiting.
func (c *slackClient) editMessage(ctx context.Context, kind editKind, channel, ts string, opts ...slack.MsgOption) error {
	return c.call(ctx, "chat.update", true, func(ctx context.Context) error {
		if kind == editProgress {
			if !c.updates.tryProgress() {
				c.metrics.updateSkipped.Inc()
				return errEditSkipped
			}
		} else {
			start := c.now()
			if err := c.updates.wait(ctx); err != nil {
				return err
			}
			c.metrics.updateWait.Observe(c.now().Sub(start).Seconds())
			if err := c.limiter.wait(ctx, channel); err != nil {
				return err
			}
		}
		_, _, _, err := c.api.UpdateMessageContext(ctx, channel, ts, opts...)
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) {
			c.updates.pause(max(rl.RetryAfter, 100*time.Millisecond))
			if kind == editProgress {
				return fmt.Errorf("%w: %w", errEditSkipped, err)
			}
		}
		return err
	})
}

// ephemeral shows text to one user; failures are logged, not returned.
func (c *slackClient) ephemeral(ctx context.Context, channel, threadTS, user, text string) {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	err := c.call(ctx, "chat.postEphemeral", true, func(ctx context.Context) error {
		_, err := c.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
	if err != nil {
		c.log.Warn("bot: ephemeral", "channel", channel, "err", err)
	}
}

// refuse answers a mention the bot will not work on (kind: "busy",
// "limit", "too_long", "help") without letting one user's flood take over
// the channel: the first refusal of a kind per user and channel in
// Options.RefusalWindow is posted in the thread, the next few are shown to
// the user alone, and the rest are dropped (logged and counted).
// refusalQuietNote ends the last refusal a user is shown before repeats go
// unanswered; tests look for it.
const refusalQuietNote = "You've asked me this several times in a row: I won't answer the same request again in this channel for the next %s."

func (c *slackClient) refuse(ctx context.Context, channel, threadTS, user, kind, text string) {
	how := c.refusals.route(user, channel, kind)
	c.metrics.refusals.WithLabelValues(kind, string(how)).Inc()
	switch how {
	case refuseInThread:
		c.reply(ctx, channel, threadTS, text)
	case refuseEphemeral:
		c.ephemeral(ctx, channel, threadTS, user, text)
	case refuseLast:
		c.ephemeral(ctx, channel, threadTS, user, text+"\n"+fmt.Sprintf(refusalQuietNote, c.refusalWindow.Round(time.Second)))
	default:
		c.log.Info("bot: refusal not answered (repeated too often)", "channel", channel, "user", user, "kind", kind, "thread_ts", threadTS)
	}
}

// reply posts text in a thread; failures are logged.
func (c *slackClient) reply(ctx context.Context, channel, threadTS, text string) string {
	ts, err := c.postMessage(ctx, channel, slack.MsgOptionText(text, false), slack.MsgOptionTS(threadTS))
	if err != nil {
		c.log.Warn("bot: reply", "channel", channel, "err", err)
	}
	return ts
}

// respond posts an ephemeral answer to a slash command's response_url.
func (c *slackClient) respond(ctx context.Context, responseURL, text string, blocks []slack.Block) {
	if responseURL == "" {
		return
	}
	msg := map[string]any{"response_type": "ephemeral", "text": text}
	if len(blocks) > 0 {
		msg["blocks"] = blocks
	}
	if err := c.postResponse(ctx, responseURL, msg); err != nil {
		c.log.Warn("bot: response_url", "err", err)
	}
}

// replaceOriginal replaces the message an interaction came from through the
// interaction's response_url: immediate for the person who clicked, and
// outside the chat.update budget that status edits share.
func (c *slackClient) replaceOriginal(ctx context.Context, responseURL, text string, blocks []slack.Block) error {
	msg := map[string]any{"replace_original": true, "text": text}
	if len(blocks) > 0 {
		msg["blocks"] = blocks
	}
	return c.postResponse(ctx, responseURL, msg)
}

func (c *slackClient) postResponse(ctx context.Context, responseURL string, msg map[string]any) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return c.call(ctx, "response_url", true, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.http.Do(req)
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
}

// userName returns a user's display name (escaped, never a mention), cached.
func (c *slackClient) userName(ctx context.Context, id string) string {
	if id == "" {
		return "someone"
	}
	if v, ok := c.names.Load(id); ok {
		return v.(string)
	}
	var u *slack.User
	err := c.call(ctx, "users.info", true, func(ctx context.Context) error {
		var err error
		u, err = c.api.GetUserInfoContext(ctx, id)
		return err
	})
	name := id
	if err == nil && u != nil {
		c.langs.Store(id, langOf(u.Locale))
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
		c.names.Store(id, name)
	}
	return name
}
