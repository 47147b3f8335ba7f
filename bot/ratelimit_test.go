package bot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

// Many runs in a few channels finish within Slack's tier limits, which the
// fake enforces: every status message ends saying Done, and Slack never had
// to answer 429. The fake's buckets are two tokens (update) and one post
// larger than the bot's: a request reaches the fake a little after the bot
// took its token, and without that slack a late request followed by a
// prompt one could land closer together than the bot spaced them.
func TestManyRunsWithinSlackTierLimits(t *testing.T) {
	const runs, channels = 40, 4
	h := newHarness(t, slackfake.WithTierLimits(slackfake.Limits{
		UpdatesPerMinute: 120, UpdateBurst: 12,
		PostInterval: time.Second, PostBurst: 4,
	}))
	h.start(func(o *bot.Options) {
		o.RunOptions = research.RunOptions{}
		o.MaxRunsPerUser = -1
		o.MaxConcurrentRuns = runs
		o.UpdatesPerMinute, o.UpdateBurst = 120, 10
		o.PostBurst, o.PostInterval = 3, time.Second
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	sent := make([]slackfake.Sent, runs)
	for i := range sent {
		sent[i] = h.mention(ctx, fmt.Sprintf("U%03d", i), fmt.Sprintf("C%d", i%channels), fmt.Sprintf("question %d", i), "")
	}
	for i, s := range sent {
		ch := fmt.Sprintf("C%d", i%channels)
		h.waitState(ctx, ch, s.TS, research.StateDone)
		h.waitFor(ctx, fmt.Sprintf("run %d's status message saying Done", i), func() bool {
			m, ok := h.statusMessage(ch, s.TS, 1)
			return ok && strings.HasPrefix(m.Text, "Done") && strings.Contains(string(m.Blocks), "Done")
		})
		if n := len(h.files(ch, s.TS)); n != 1 {
			t.Errorf("run %d: %d report files", i, n)
		}
	}
	elapsed := time.Since(start)
	updates, posts := h.fake.Calls("chat.update"), h.fake.Calls("chat.postMessage")
	t.Logf("%d runs in %v: %d chat.update, %d chat.postMessage", runs, elapsed.Round(time.Millisecond), updates, posts)
	if n := h.fake.RateLimited("chat.update"); n != 0 {
		t.Errorf("Slack answered %d chat.update calls with 429", n)
	}
	if n := h.fake.RateLimited("chat.postMessage"); n != 0 {
		t.Errorf("Slack answered %d chat.postMessage calls with 429", n)
	}
	if updates < runs {
		t.Errorf("%d chat.update calls for %d runs: final pictures missing", updates, runs)
	}
	// One status message per run: no final picture fell back to a new
	// message (a status message posted twice by the run's creator and by
	// a recovery pass is deleted again, so it is not counted here).
	for i, s := range sent {
		if _, two := h.statusMessage(fmt.Sprintf("C%d", i%channels), s.TS, 2); two {
			t.Errorf("run %d has two status messages", i)
		}
	}
}

// refusals sums deepresearch_bot_refusals_total for a delivery ("" for all).
func refusals(t *testing.T, g prometheus.Gatherer, how string) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "deepresearch_bot_refusals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := how == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "how" && l.GetValue() == how {
					match = true
				}
			}
			if match {
				n += int(m.GetCounter().GetValue())
			}
		}
	}
	return n
}

// One user's flood of mentions over their limit gets one refusal in the
// channel; the next five are told to the user alone and the rest dropped,
// so the channel stays usable for everyone else.
func TestRefusalFloodIsCapped(t *testing.T) {
	h := newHarness(t)
	defer h.holdRuns()()
	reg := prometheus.NewRegistry()
	h.start(func(o *bot.Options) {
		o.MaxRunsPerUser = 1
		o.Registerer = reg
	})
	ctx := testCtx(t)
	first := h.mention(ctx, "U1", "C1", "first question", "")
	h.waitState(ctx, "C1", first.TS, research.StateRunning)
	const flood = 10
	var sent []slackfake.Sent
	for i := range flood {
		sent = append(sent, h.mention(ctx, "U1", "C1", fmt.Sprintf("again %d", i), ""))
	}
	h.waitFor(ctx, "every flood mention refused", func() bool { return refusals(t, reg, "") == flood })

	delivered := func() (inThread, private, quiet int) {
		for _, s := range sent {
			for _, m := range h.botMessages("C1", s.TS) {
				if strings.Contains(m.Text, "already have 1") {
					inThread++
				}
			}
		}
		for _, e := range h.fake.Ephemerals() {
			if e.User == "U1" && strings.Contains(e.Text, "already have 1") {
				private++
				if strings.Contains(e.Text, "won't answer the same request again") {
					quiet++
				}
			}
		}
		return inThread, private, quiet
	}
	// A refusal is counted before it is posted: let the posts land.
	h.waitFor(ctx, "the counted refusals posted", func() bool {
		inThread, private, _ := delivered()
		return inThread+private == flood-refusals(t, reg, "dropped")
	})
	inThread, private, quiet := delivered()
	if inThread != 1 || private != 5 || quiet != 1 {
		t.Errorf("%d refusals in threads and %d ephemeral (%d saying repeats go unanswered), want 1, 5 and 1", inThread, private, quiet)
	}
	if n := refusals(t, reg, "dropped"); n != flood-6 {
		t.Errorf("%d refusals dropped, want %d", n, flood-6)
	}

	// Someone else in the channel is unaffected.
	other := h.mention(ctx, "U2", "C1", "my own question", "")
	h.waitState(ctx, "C1", other.TS, research.StateRunning)
	h.waitFor(ctx, "U2's status message", func() bool {
		_, ok := h.statusMessage("C1", other.TS, 1)
		return ok
	})
	if calls := h.fake.CallLog("chat.postMessage"); len(calls) != 3 {
		var sb strings.Builder
		for _, c := range calls {
			fmt.Fprintf(&sb, "\n  %s thread_ts=%q status=%d error=%q text=%.80q", c.At.Format("15:04:05.000"), c.Params.Get("thread_ts"), c.Status, c.Error, c.Params.Get("text"))
		}
		t.Errorf("%d chat.postMessage calls, want 3 (two status messages and one refusal):%s", len(calls), sb.String())
	}
}
