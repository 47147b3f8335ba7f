package slackfake

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// Over the tier limits the fake answers 429 with Retry-After like Slack,
// does not act on the call, and records it; under them, and without
// limits, nothing changes.
func TestTierLimits(t *testing.T) {
	fake := New(WithTierLimits(Limits{UpdatesPerMinute: 1, UpdateBurst: 3, PostInterval: time.Hour, PostBurst: 2}))
	defer fake.Close()
	ctx := testCtx(t)
	api := newAPI(fake)

	var ts []string
	for i := range 2 {
		_, m, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("post", false))
		if err != nil {
			t.Fatalf("post %d within the burst: %v", i, err)
		}
		ts = append(ts, m)
	}
	_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("one too many", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) {
		t.Fatalf("third post in C1 = %v, want a rate limit", err)
	}
	// Retry-After says when a token is back: about an hour, whole seconds.
	if rl.RetryAfter < 59*time.Minute || rl.RetryAfter > time.Hour || rl.RetryAfter%time.Second != 0 {
		t.Errorf("Retry-After = %v, want about 1h in whole seconds", rl.RetryAfter)
	}
	if n := len(fake.Messages("C1")); n != 2 {
		t.Errorf("%d messages in C1, want 2 (a limited call is not acted on)", n)
	}
	// The post limit is per channel.
	if _, _, err := api.PostMessageContext(ctx, "C2", slack.MsgOptionText("other channel", false)); err != nil {
		t.Fatalf("post in C2: %v", err)
	}

	// chat.update: one bucket for the workspace, across channels.
	for i := range 3 {
		if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts[i%2], slack.MsgOptionText("edit", false)); err != nil {
			t.Fatalf("update %d within the burst: %v", i, err)
		}
	}
	_, _, _, err = api.UpdateMessageContext(ctx, "C1", ts[0], slack.MsgOptionText("too many edits", false))
	if !errors.As(err, &rl) || rl.RetryAfter < time.Second || rl.RetryAfter > time.Minute {
		t.Fatalf("fourth update = %v, want a rate limit with Retry-After in (0, 60s]", err)
	}
	if m, _ := fake.Message("C1", ts[0]); m.Text == "too many edits" {
		t.Error("a limited update was applied")
	}

	if n := fake.RateLimited("chat.update"); n != 1 {
		t.Errorf("RateLimited(chat.update) = %d, want 1", n)
	}
	if n := fake.RateLimited("chat.postMessage"); n != 1 {
		t.Errorf("RateLimited(chat.postMessage) = %d, want 1", n)
	}
	limited := 0
	for _, c := range fake.CallLog("") {
		if c.Limited {
			limited++
			if c.Status != http.StatusTooManyRequests || c.Error != "ratelimited" {
				t.Errorf("limited call recorded as %d %q", c.Status, c.Error)
			}
		}
	}
	if limited != 2 {
		t.Errorf("%d calls marked Limited, want 2", limited)
	}

	// Other methods are not limited; turning the limits off lifts them.
	for range 5 {
		if _, err := api.AuthTestContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fake.SetTierLimits(nil)
	for i := range 10 {
		if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("free", false)); err != nil {
			t.Fatalf("post %d without limits: %v", i, err)
		}
	}
}

// The defaults are Slack's published figures, and the admin API turns the
// limits on and off in a fake running in another process.
func TestTierLimitsDefaultsAndAdmin(t *testing.T) {
	if l := (Limits{}).withDefaults(); l.UpdatesPerMinute != 50 || l.UpdateBurst != 20 || l.PostInterval != time.Second || l.PostBurst != 5 {
		t.Errorf("defaults = %+v", l)
	}
	fake, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx := testCtx(t)
	api := newAPI(fake)
	for i := range 8 {
		if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("no limits by default", false)); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	adminPost(t, fake, "tier_limits", Limits{PostInterval: time.Hour, PostBurst: 1, UpdatesPerMinute: -1}, nil)
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("first", false)); err != nil {
		t.Fatal(err)
	}
	var rl *slack.RateLimitedError
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("second", false)); !errors.As(err, &rl) {
		t.Fatalf("second post = %v, want a rate limit", err)
	}
	_, ts, _ := api.PostMessageContext(ctx, "C2", slack.MsgOptionText("c2", false))
	for i := range 30 { // UpdatesPerMinute < 0: chat.update unlimited
		if _, _, _, err := api.UpdateMessageContext(ctx, "C2", ts, slack.MsgOptionText("edit", false)); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	var got struct{ Count int }
	adminGet(t, fake, "rate_limited?method=chat.postMessage", &got)
	if got.Count != 1 {
		t.Errorf("rate_limited = %d, want 1", got.Count)
	}
	adminPost(t, fake, "clear_tier_limits", nil, nil)
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("third", false)); err != nil {
		t.Fatalf("post after clear_tier_limits: %v", err)
	}
}
