package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/tools/fetch"
)

// TestOversizedQuestion: a 100 KB mention gets a clear reply (or a report),
// nothing crashes, and what the bot posts stays within Slack's limits.
func TestOversizedQuestion(t *testing.T) {
	w := newWorld(t, config{})
	ctx := context.Background()
	big := "What does the EU AI Act require? " + strings.Repeat("Also consider this detail at length. ", 100<<10/37)
	ms := w.send(ctx, []mention{
		{User: "U1", Channel: "C1", Text: big},
		{User: "U2", Channel: "C1", Text: strings.Repeat("法規制について詳しく調べてください。", 100<<10/54)},
		{User: "U3", Channel: "C1", Text: "What does the EU AI Act require?"}, // an ordinary one still works
	})
	vs := w.settle(ctx, ms, 90*time.Second)
	_, sum := tally(t, vs)
	for i, v := range vs[:2] {
		if v.Kind == outFailed {
			t.Errorf("oversized mention %d failed instead of a clear reply: %.300q", i, v.Reply)
		}
		if v.Kind == outRejected && !strings.Contains(v.Reply, "too long") {
			t.Errorf("oversized mention %d: unclear reply %.300q", i, v.Reply)
		}
	}
	if vs[2].Kind != outReport {
		t.Errorf("the ordinary mention after the big ones: %+v", vs[2])
	}
	maxText := 0
	for _, m := range w.slack.BotMessages("C1") {
		maxText = max(maxText, utf8.RuneCountInString(m.Text))
	}
	figure(t, "oversized", "question_bytes=%d %s max_bot_text_runes=%d", len(big), sum, maxText)
	if maxText > 40000 {
		t.Errorf("a bot message has %d characters (Slack truncates at 40,000)", maxText)
	}
	w.checkNoPings()
}

// TestMentionFlood: one user sends hundreds of mentions (thousands in the
// long version). The per-user limit answers the excess with a clear reply,
// the work stays bounded, and every mention gets exactly one outcome.
func TestMentionFlood(t *testing.T) {
	const limit = 3
	w := newWorld(t, config{MaxRunsPerUser: limit, LLMLatency: 200 * time.Millisecond, SlackLimits: true})
	ctx := context.Background()
	total := n(300, 3000)
	start := time.Now()
	ms := questions(total, total/10, func(int) string { return "UFLOOD" })
	ms = w.send(ctx, ms)
	sendTime := time.Since(start)
	vs := w.settle(ctx, ms, 300*time.Second)
	counts, sum := tally(t, vs)
	// The flood does not monopolise the channels: a few refusals in each,
	// the rest to the user alone, then silence after saying so.
	inThread := map[string]int{}
	for i, v := range vs {
		if v.Kind == outRejected && !strings.Contains(v.Reply, "research runs in progress") {
			t.Errorf("mention %d: unclear rejection %.200q", i, v.Reply)
			break
		}
	}
	for _, m := range ms {
		for _, msg := range w.slack.Thread(m.Channel, m.TS) {
			if msg.IsBot() && strings.Contains(msg.Text, "research runs in progress") {
				inThread[m.Channel]++
			}
		}
	}
	maxInThread := 0
	for ch, n := range inThread {
		maxInThread = max(maxInThread, n)
		if n > 2 {
			t.Errorf("channel %s: %d refusals posted in threads; a flood should get one per window", ch, n)
		}
	}
	ephemerals := 0
	for _, e := range w.slack.Ephemerals() {
		if e.User == "UFLOOD" {
			ephemerals++
		}
	}
	runs := counts[outReport] + counts[outFailed]
	// Bounded work: the LLM was called for the accepted runs only.
	perRun := float64(w.llm.Calls()) / float64(max(runs, 1))
	figure(t, "flood", "mentions=%d %s accepted_runs=%d llm_calls=%d llm_calls_per_run=%.1f send=%s elapsed=%s dropped_events=%d refusals_in_thread_max_per_channel=%d ephemeral_refusals=%d slack_429=%d",
		total, sum, runs, w.llm.Calls(), perRun, sendTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), int(metricValue(t, w, "deepresearch_bot_dropped_events_total")),
		maxInThread, ephemerals, w.slack.RateLimited(""))
	if runs > total/2 {
		t.Errorf("%d of %d flood mentions became runs; the per-user limit of %d did not hold", runs, total, limit)
	}
	if counts[outRejected] == 0 {
		t.Error("no mention was refused")
	}
}

// TestControlSequences: the LLM writes Slack control sequences into the
// plan, the draft, the report and its summary. Nothing the bot posts
// notifies anyone, and the text is shown escaped.
func TestControlSequences(t *testing.T) {
	inject := "<!channel> <!here> <@U123> <!subteam^S1> @everyone <https://evil.example|click> <#C999>"
	w := newWorld(t, config{Inject: inject, ApproveDraft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ms := w.send(ctx, []mention{{User: "U1", Channel: "C1", Text: "What does the EU AI Act require? <!channel>"}})
	approval := w.waitButton(ctx, ms[0], "dr_approve")
	w.click(ctx, ms[0], approval, "U1", "dr_approve")
	vs := w.settle(ctx, ms, 60*time.Second)
	_, sum := tally(t, vs)
	if vs[0].Kind != outReport {
		t.Fatalf("no report: %+v", vs[0])
	}
	w.checkNoPings()
	// The injected text is visible, escaped, in what the bot posted.
	var shown string
	for _, m := range w.slack.Thread("C1", ms[0].TS) {
		if !m.IsBot() {
			continue
		}
		shown += m.Text + string(m.Blocks)
		for _, e := range m.Edits {
			shown += e.Text + string(e.Blocks)
		}
	}
	for _, f := range w.slack.Files() {
		shown += f.InitialComment + string(f.Blocks) + f.Title
	}
	// JSON escapes < > & as \u003c \u003e \u0026; undo that first.
	var unq string
	_ = json.Unmarshal([]byte(`"`+strings.NewReplacer(`"`, ``, `\`, `\\`, "\n", " ", "\t", " ").Replace(shown)+`"`), &unq)
	plain := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(shown)
	for _, want := range []string{"&lt;!channel&gt;", "&lt;!subteam^S1&gt;", "&lt;@U123&gt;", "hxxps://evil[.]example"} {
		if !strings.Contains(plain, want) {
			t.Errorf("the bot's messages do not show %q escaped", want)
		}
	}
	// The link the model wrote is shown, inert: only the sources read are
	// links.
	for _, l := range w.slack.LiveLinks() {
		if strings.Contains(l.URL, "evil.example") {
			t.Errorf("a live link to %q (%s %s)", l.URL, l.Where, l.TS)
		}
	}
	for _, bad := range []string{"<!channel>", "<!here>", "<@U123>", "<!subteam^S1>", "<https://evil.example|click>"} {
		if strings.Contains(plain, bad) {
			t.Errorf("the bot posted %q unescaped", bad)
		}
	}
	figure(t, "control_sequences", "%s pings=%d", sum, len(w.slack.Pings()))
}

// TestHostilePages: search results lead the fetcher to a 48 MB page, a gzip
// bomb, a redirect loop and pages in the wrong charsets during runs. The
// runs finish; the fetcher refuses or cuts with its errors.
func TestHostilePages(t *testing.T) {
	w := newWorld(t, config{Hostile: true})
	ctx := context.Background()
	// One run fetches every hostile page (several times); the long
	// version runs ten.
	ms := w.send(ctx, questions(n(1, 10), 1, user1))
	vs := w.settle(ctx, ms, 360*time.Second)
	counts, sum := tally(t, vs)
	if counts[outReport] != len(ms) {
		t.Errorf("want every run to finish: %s", sum)
	}
	var hit []string
	for _, p := range hostilePaths {
		if w.hits(p) == 0 {
			t.Errorf("the run never fetched %s", p)
		}
		hit = append(hit, fmt.Sprintf("%s=%d", strings.TrimPrefix(p, "/"), w.hits(p)))
	}
	// What the fetcher makes of each page.
	var seen []string
	for _, p := range hostilePaths {
		res, err := w.fetcher.Fetch(ctx, w.web.URL+p)
		switch p {
		case "/huge", "/bomb":
			if err == nil && !res.Truncated || err != nil && !errors.Is(err, fetch.ErrTooLarge) {
				t.Errorf("%s: err %v, truncated %v; want it cut at the size cap", p, err, res != nil && res.Truncated)
			}
		case "/loop":
			if !errors.Is(err, fetch.ErrRedirectLoop) && !errors.Is(err, fetch.ErrTooManyRedirects) {
				t.Errorf("%s: err %v; want a redirect loop error", p, err)
			}
		case "/sjis":
			if err != nil || !strings.Contains(res.Text, "日本語のページです") {
				t.Errorf("%s: err %v; text not decoded from Shift_JIS", p, err)
			}
		case "/latin1":
			if err != nil || !utf8.ValidString(res.Text) {
				t.Errorf("%s: err %v; text is not valid UTF-8", p, err)
			}
		}
		switch {
		case err != nil:
			seen = append(seen, fmt.Sprintf("%s:%q", strings.TrimPrefix(p, "/"), errShort(err)))
		default:
			seen = append(seen, fmt.Sprintf("%s:ok(charset=%s,truncated=%v,bytes=%d)", strings.TrimPrefix(p, "/"), res.Charset, res.Truncated, len(res.Text)))
		}
	}
	runtime.GC()
	_, peak := RSS()
	if peak > memoryScale*1500<<20 {
		t.Errorf("peak RSS %d MB: hostile pages blew up memory", peak>>20)
	}
	figure(t, "hostile_pages", "runs=%d %s hits=[%s] fetcher=[%s] peak_rss_mb=%d", len(ms), sum, strings.Join(hit, " "), strings.Join(seen, " "), peak>>20)
}

func errShort(err error) string {
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// TestForgedClick: someone else presses Approve on a user's draft. They get
// an ephemeral refusal and the run stays paused; the requester's own click
// then finishes it.
func TestForgedClick(t *testing.T) {
	w := newWorld(t, config{ApproveDraft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ms := w.send(ctx, []mention{{User: "U1", Channel: "C1", Text: "What does the EU AI Act require?"}})
	approval := w.waitButton(ctx, ms[0], "dr_approve")
	threadID := slackstate.ThreadKey{Team: w.slack.TeamID(), Channel: "C1", ThreadTS: ms[0].TS}.ThreadID()
	llmBefore := w.llm.Calls()
	for _, act := range []string{"dr_approve", "dr_cancel_intr", "dr_more"} {
		w.click(ctx, ms[0], approval, "UEVIL", act)
	}
	// A forged click on the Cancel button of the status message too.
	r, err := w.store.LatestRun(ctx, threadID)
	if err != nil {
		t.Fatal(err)
	}
	statusTS, err := w.records.StatusMessage(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := w.slack.Message("C1", statusTS); ok {
		w.click(ctx, ms[0], st, "UEVIL", "dr_cancel")
	}
	// Wait for the refusals.
	var refusals []slackfake.Ephemeral
	if err := w.slack.Wait(ctx, func() bool {
		refusals = refusals[:0]
		for _, e := range w.slack.Ephemerals() {
			if e.User == "UEVIL" {
				refusals = append(refusals, e)
			}
		}
		return len(refusals) >= 3
	}); err != nil {
		t.Fatalf("refusals: %d of 3+: %v", len(refusals), err)
	}
	for _, e := range refusals {
		if !strings.Contains(e.Text, "Only") {
			t.Errorf("refusal %q", e.Text)
		}
	}
	time.Sleep(500 * time.Millisecond)
	r, err = w.store.LatestRun(ctx, threadID)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != research.StateWaiting || r.Decision != nil || r.CancelRequestedBy != "" {
		t.Fatalf("after forged clicks the run is %s (decision %+v, cancel by %q)", r.State, r.Decision, r.CancelRequestedBy)
	}
	if w.llm.Calls() != llmBefore {
		t.Errorf("forged clicks made the agent work: %d LLM calls", w.llm.Calls()-llmBefore)
	}
	w.click(ctx, ms[0], approval, "U1", "dr_approve")
	vs := w.settle(ctx, ms, 60*time.Second)
	_, sum := tally(t, vs)
	if vs[0].Kind != outReport {
		t.Errorf("after the requester's approval: %+v", vs[0])
	}
	figure(t, "forged_clicks", "forged=4 refusals=%d %s", len(refusals), sum)
}

// waitButton waits for a bot message in the mention's thread with a button
// of actionID.
func (w *world) waitButton(ctx context.Context, m mention, actionID string) slackfake.Message {
	w.t.Helper()
	var found slackfake.Message
	err := w.slack.Wait(ctx, func() bool {
		for _, msg := range w.slack.Thread(m.Channel, m.TS) {
			if msg.IsBot() && msg.ButtonValue(actionID) != "" {
				found = msg
				return true
			}
		}
		return false
	})
	if err != nil {
		w.t.Fatalf("no %s button in the thread: %v (errors %q)", actionID, err, first(w.logs.Errors(), 3))
	}
	return found
}

// click presses a button of msg as user and waits for the ack.
func (w *world) click(ctx context.Context, m mention, msg slackfake.Message, user, actionID string) {
	w.t.Helper()
	sent, err := w.slack.SendBlockAction(ctx, slackfake.BlockAction{User: user, Channel: m.Channel, MessageTS: msg.TS, ThreadTS: m.TS,
		ActionID: actionID, Value: msg.ButtonValue(actionID)})
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.slack.WaitAck(sent.EnvelopeID, 10*time.Second); err != nil {
		w.t.Fatal(err)
	}
}
