package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"

	"github.com/slack-go/slack"
)

// streaming is a harness whose workspace serves Slack's streaming methods.
func streaming(t *testing.T, opts ...slackfake.Option) *harness {
	return newHarness(t, append([]slackfake.Option{slackfake.WithoutStreaming("")}, opts...)...)
}

// threadStreams returns the streams in a thread.
func threadStreams(h *harness, channel, threadTS string) []slackfake.Stream {
	var out []slackfake.Stream
	for _, st := range h.fake.Streams() {
		if st.ThreadTS == threadTS && (st.Channel == channel || channel == "") {
			out = append(out, st)
		}
	}
	return out
}

// openStreams counts the streams still open anywhere.
func openStreams(h *harness) int {
	n := 0
	for _, st := range h.fake.Streams() {
		if st.Open {
			n++
		}
	}
	return n
}

// updatesOf counts chat.update calls on messages of a thread.
func updatesOf(h *harness, channel, threadTS string) int {
	n := 0
	for _, c := range h.fake.CallLog("chat.update") {
		ts := c.Params.Get("ts")
		if m, ok := h.fake.Message(channel, ts); ok && (m.ThreadTS == threadTS || m.TS == threadTS) {
			n++
		}
	}
	return n
}

// TestStreamedPlanEndToEnd: a mention in a channel and a message in a DM
// each get ONE stream in their thread: a plan titled with the question, a
// task card per subtask with its detail and the pages it read (escaped,
// only http(s) links), the approval point, and at the end the outcome and
// the report's summary as final blocks. The report file lands, and the
// only chat.update of the run is the approval's buttons replaced by the
// decision (today's status message took one per progress step).
func TestStreamedPlanEndToEnd(t *testing.T) {
	tests := []struct {
		name, channel string
		send          func(h *harness, ctx context.Context) string
	}{
		{"channel", "C1", func(h *harness, ctx context.Context) string {
			return h.mention(ctx, "U1", "C1", "EU AI Act <!channel> timeline", "").TS
		}},
		{"DM", "D0U1", func(h *harness, ctx context.Context) string {
			return h.message(ctx, slackfake.MessageEvent{User: "U1", Channel: "D0U1", Text: "EU AI Act <!channel> timeline"}).TS
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := streaming(t)
			h.start()
			ctx := testCtx(t)
			h.connected(ctx, 1)
			ts := tt.send(h, ctx)
			approval, val := h.waitApproval(ctx, tt.channel, ts, "dr_approve")
			if sts := threadStreams(h, tt.channel, ts); len(sts) != 1 || !sts[0].Open {
				t.Fatalf("while waiting: %d streams (%+v), want one open", len(sts), sts)
			}
			h.approveAndWait(ctx, "U1", tt.channel, ts, approval, val)
			h.waitFor(ctx, "stream stopped", func() bool { return openStreams(h) == 0 })

			sts := threadStreams(h, tt.channel, ts)
			if len(sts) != 1 {
				t.Fatalf("%d streams in the thread, want 1", len(sts))
			}
			st := sts[0]
			if st.DisplayMode != "plan" {
				t.Errorf("display mode %q", st.DisplayMode)
			}
			if tt.channel == "C1" && (st.RecipientUser != "U1" || st.RecipientTeam != h.fake.TeamID()) {
				t.Errorf("recipient = %q/%q", st.RecipientUser, st.RecipientTeam)
			}
			if title := st.PlanTitle(); !strings.Contains(title, "EU AI Act") || strings.Contains(title, "<!channel>") {
				t.Errorf("plan title %q", title)
			}
			tasks := st.Tasks()
			if len(tasks) != 2 {
				t.Fatalf("tasks = %+v", tasks)
			}
			for _, c := range tasks {
				if c.Status != "complete" {
					t.Errorf("task %q ended %q", c.Title, c.Status)
				}
			}
			if tasks[0].Details != "3 searches, 3 pages read" || tasks[1].Details != "1 search, 1 page read" {
				t.Errorf("details = %q, %q", tasks[0].Details, tasks[1].Details)
			}
			var urls []string
			for _, src := range tasks[0].Sources {
				urls = append(urls, src.URL)
			}
			if strings.Join(urls, " ") != "https://example.com/news https://evil.example/x" {
				t.Errorf("sources of task 1 = %v (the javascript: one must be left out)", urls)
			}
			if len(tasks[1].Sources) != 1 || tasks[1].Sources[0].Text == "" {
				t.Errorf("sources of task 2 = %+v (a page without a title shows its URL)", tasks[1].Sources)
			}
			all := ""
			for _, raw := range st.Chunks {
				all += string(raw)
			}
			all += string(st.FinalBlocks)
			for _, bad := range []string{"<!channel>", "<!here>", "<!everyone>", "<@U0BOSS>", "<!subteam", "[https://good.example](https://evil.example)"} {
				if strings.Contains(all, bad) {
					t.Errorf("stream carries %q", bad)
				}
			}
			if !strings.Contains(all, "dr_cancel") || !strings.Contains(all, "Waiting for you") {
				t.Errorf("stream has no Cancel button or approval point: %s", all)
			}
			final := string(st.FinalBlocks)
			if !strings.Contains(final, "Summary: regulation is moving") || !strings.Contains(final, "Done") {
				t.Errorf("final blocks = %s", final)
			}
			if f := h.files(tt.channel, ts); len(f) != 1 || !strings.Contains(string(f[0].Content), "# AI regulation 2026") {
				t.Errorf("report files = %+v", f)
			}
			if n := updatesOf(h, tt.channel, ts); n > 2 {
				t.Errorf("%d chat.update calls for the run, want at most 2", n)
			}
			if m, ok := h.statusMessage(tt.channel, ts, 2); ok {
				t.Errorf("a status message was posted besides the stream: %s", m.Blocks)
			}
			if m, ok := h.statusMessage(tt.channel, ts, 1); !ok || m.TS != st.TS || h.fake.Calls("chat.postMessage") != 1 {
				t.Errorf("the run's picture is not the stream's (%s), or %d messages posted (want the approval only)", m.TS, h.fake.Calls("chat.postMessage"))
			}
			t.Logf("%s: chat.update %d, chat.appendStream %d, chunks %d", tt.name, updatesOf(h, tt.channel, ts), st.AppendCalls, len(st.Chunks))
			h.noPings()
		})
	}
}

// TestStreamFallback: where Slack refuses the streaming methods the run
// shows the edited status message, and the workspace is not asked again.
func TestStreamFallback(t *testing.T) {
	for _, code := range []string{"unknown_method", "missing_scope", "not_allowed_token_type", "method_deprecated"} {
		t.Run(code, func(t *testing.T) {
			h := newHarness(t, slackfake.WithoutStreaming(code))
			h.start(noDraftApproval)
			ctx := testCtx(t)
			for i, q := range []string{"first", "second"} {
				sent := h.mention(ctx, "U1", "C1", q, "")
				h.waitReports(ctx, "C1", sent.TS, 1)
				h.waitState(ctx, "C1", sent.TS, research.StateDone)
				h.waitFor(ctx, "status done", func() bool {
					m, ok := h.statusMessage("C1", sent.TS, 1)
					return ok && strings.Contains(string(m.Blocks), "Done")
				})
				if n := h.fake.Calls("chat.startStream"); n != 1 {
					t.Errorf("after run %d: %d chat.startStream calls, want 1", i+1, n)
				}
			}
			if len(h.fake.Streams()) != 0 {
				t.Errorf("streams = %+v", h.fake.Streams())
			}
		})
	}
}

// TestStreamTakenOver: a run taken over by another process (a restart
// mid-run, a process that lost its lease) continues the run's recorded
// stream: one stream, none open after the end.
func TestStreamTakenOver(t *testing.T) {
	h := streaming(t)
	release := h.holdRuns()
	a := h.start()
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "survive a restart mid-run", "")
	h.waitState(ctx, "C1", sent.TS, research.StateRunning)
	h.waitFor(ctx, "cards shown", func() bool {
		sts := threadStreams(h, "C1", sent.TS)
		return len(sts) == 1 && len(sts[0].Tasks()) == 2
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if sts := threadStreams(h, "C1", sent.TS); len(sts) != 1 || !sts[0].Open {
		t.Fatalf("after shutdown: %+v, want the stream left open for the next process", sts)
	}
	release()
	h.start()
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
	h.waitFor(ctx, "stream stopped", func() bool { return openStreams(h) == 0 })
	sts := threadStreams(h, "C1", sent.TS)
	if len(sts) != 1 {
		t.Fatalf("%d streams, want 1", len(sts))
	}
	if !strings.Contains(string(sts[0].FinalBlocks), "Summary: regulation is moving") {
		t.Errorf("final blocks = %s", sts[0].FinalBlocks)
	}
	if p := h.placeOf(ctx, h.runOf(ctx, "C1", sent.TS).ID); p.StatusTS != sts[0].TS {
		t.Errorf("run's status ts %q, stream %q", p.StatusTS, sts[0].TS)
	}
}

// TestStreamStoppedElsewhereIsReplaced: a process that takes a run over
// and finds its stream stopped (by Slack, or a process that died while
// stopping it) starts a fresh one that says the run resumed; at no time
// are two streams of the run open, and none is after the end.
func TestStreamStoppedElsewhereIsReplaced(t *testing.T) {
	h := streaming(t)
	release := h.holdRuns()
	a := h.start()
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "a stream that stops under us", "")
	h.waitState(ctx, "C1", sent.TS, research.StateRunning)
	h.waitFor(ctx, "a stream", func() bool { return len(threadStreams(h, "C1", sent.TS)) == 1 })
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	api := slack.New(h.fake.BotToken(), slack.OptionAPIURL(h.fake.APIURL()))
	if _, _, err := api.StopStreamContext(ctx, "C1", threadStreams(h, "C1", sent.TS)[0].TS); err != nil {
		t.Fatal(err)
	}
	release()
	h.start()
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
	h.waitFor(ctx, "streams stopped", func() bool { return openStreams(h) == 0 })
	sts := threadStreams(h, "C1", sent.TS)
	if len(sts) != 2 {
		t.Fatalf("%d streams, want the stopped one and a fresh one", len(sts))
	}
	fresh := sts[1]
	if !strings.Contains(string(fresh.Chunks[0]), "Resumed") || len(fresh.Tasks()) != 2 || !strings.Contains(string(fresh.FinalBlocks), "Summary") {
		t.Errorf("fresh stream = %s / %s", fresh.Chunks, fresh.FinalBlocks)
	}
	if !sts[0].StoppedAt.Before(fresh.StartedAt) {
		t.Error("the fresh stream started before the old one stopped")
	}
}

// TestStreamCancelled: a cancel, while running or while waiting, stops
// the run's stream with the cancellation.
func TestStreamCancelled(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		h := streaming(t)
		h.holdRuns()
		h.start()
		ctx := testCtx(t)
		sent := h.mention(ctx, "U1", "C1", "cancel me", "")
		h.waitState(ctx, "C1", sent.TS, research.StateRunning)
		var st slackfake.Stream
		h.waitFor(ctx, "a stream", func() bool {
			sts := threadStreams(h, "C1", sent.TS)
			if len(sts) == 1 {
				st = sts[0]
			}
			return len(sts) == 1
		})
		m, _ := h.fake.Message("C1", st.TS)
		h.click(ctx, "U1", "C1", m, "dr_cancel", h.runOf(ctx, "C1", sent.TS).ID)
		h.waitState(ctx, "C1", sent.TS, research.StateCancelled)
		h.waitFor(ctx, "stream stopped with the cancel", func() bool {
			sts := threadStreams(h, "C1", sent.TS)
			return len(sts) == 1 && !sts[0].Open && strings.Contains(string(sts[0].FinalBlocks), "Cancelled")
		})
	})
	t.Run("waiting", func(t *testing.T) {
		h := streaming(t)
		h.start()
		ctx := testCtx(t)
		sent := h.mention(ctx, "U1", "C1", "cancel me later", "")
		approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_cancel_intr")
		h.click(ctx, "U1", "C1", approval, "dr_cancel_intr", val)
		h.waitState(ctx, "C1", sent.TS, research.StateCancelled)
		h.waitFor(ctx, "stream stopped with the cancel", func() bool {
			sts := threadStreams(h, "C1", sent.TS)
			return len(sts) == 1 && !sts[0].Open && strings.Contains(string(sts[0].FinalBlocks), "Cancelled")
		})
	})
}

// TestStreamAppendsArePaced: a researcher that reports progress a hundred
// times a second gets its snapshots coalesced into appends at least the
// progress interval apart.
func TestStreamAppendsArePaced(t *testing.T) {
	const interval = 100 * time.Millisecond
	h := streaming(t)
	res := &chattyResearcher{fakeResearcher: h.res, n: 200, every: time.Millisecond}
	h.startWith(res, noDraftApproval, func(o *bot.Options) { o.ProgressInterval = interval })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "chatty", "")
	h.waitReports(ctx, "C1", sent.TS, 1)
	h.waitFor(ctx, "stream stopped", func() bool { return openStreams(h) == 0 })
	st := threadStreams(h, "C1", sent.TS)[0]
	// The first append is the probe of the stream the run's creator
	// started (openStatus); from then on the bot waits the interval after
	// each append before the next, so the fake takes them at least that
	// far apart however long the 200 snapshots take (a count per expected
	// duration fails on a loaded machine, where the snapshots come slower).
	if len(st.AppendedAt) < 2 {
		t.Fatalf("%d appends for 200 snapshots, want the probe and progress", len(st.AppendedAt))
	}
	for i := 2; i < len(st.AppendedAt); i++ {
		if gap := st.AppendedAt[i].Sub(st.AppendedAt[i-1]); gap < interval {
			t.Errorf("append %d came %s after the one before, want at least %s (%d appends for 200 snapshots)", i+1, gap, interval, len(st.AppendedAt))
		}
	}
	if title := st.PlanTitle(); !strings.HasPrefix(title, "Chatty theme") || strings.Contains(title, "<!here>") {
		t.Errorf("plan title %q, want the theme (escaped)", title)
	}
	if tasks := st.Tasks(); len(tasks) != 2 || tasks[0].Details != "3 searches, 3 pages read" {
		t.Errorf("tasks = %+v", tasks)
	}
}

// chattyResearcher reports n snapshots every interval before the scripted
// researcher's own.
type chattyResearcher struct {
	*fakeResearcher
	n     int
	every time.Duration
}

func (c *chattyResearcher) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	for i := range c.n {
		sink(research.Progress{Phase: "researching", Theme: "Chatty theme <!here>", Tokens: i, Subtasks: []research.Subtask{
			{Title: "Search", State: research.SubtaskRunning, Searches: i},
			{Title: "Read", State: research.SubtaskPending},
		}})
		time.Sleep(c.every)
	}
	return c.fakeResearcher.Start(ctx, req, sink)
}

// TestStreamSavesUpdates: the same run (progress, draft approval, report)
// spends chat.update on every progress step with the status message, and
// at most on the decided approval with a stream.
func TestStreamSavesUpdates(t *testing.T) {
	count := func(t *testing.T, h *harness) (updates, appends int) {
		res := &chattyResearcher{fakeResearcher: h.res, n: 20, every: 30 * time.Millisecond}
		h.startWith(res)
		ctx := testCtx(t)
		sent := h.mention(ctx, "U1", "C1", "count the edits", "")
		approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
		h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
		h.waitFor(ctx, "no open stream", func() bool { return openStreams(h) == 0 })
		// The final picture of the status message may still be on its way.
		time.Sleep(200 * time.Millisecond)
		for _, st := range threadStreams(h, "C1", sent.TS) {
			appends += st.AppendCalls
		}
		return updatesOf(h, "C1", sent.TS), appends
	}
	before, _ := count(t, newHarness(t))
	after, appends := count(t, streaming(t))
	t.Logf("chat.update per run: status message %d, stream %d (chat.appendStream %d)", before, after, appends)
	if after > 2 || before <= after {
		t.Errorf("chat.update per run: status message %d, stream %d", before, after)
	}
}

// TestStrayStreamIsStopped: a process that replaced a run's stream (the
// recorded one had stopped) and then went away leaves its fresh stream
// open, unknown to the run's record; the process that continues the run
// stops it before starting its own, so one stream at most is open and
// none after the end.
func TestStrayStreamIsStopped(t *testing.T) {
	h := streaming(t)
	release := h.holdRuns()
	a := h.start()
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "two takeovers", "")
	h.waitState(ctx, "C1", sent.TS, research.StateRunning)
	h.waitFor(ctx, "a stream", func() bool { return len(threadStreams(h, "C1", sent.TS)) == 1 })
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	api := slack.New(h.fake.BotToken(), slack.OptionAPIURL(h.fake.APIURL()))
	if _, _, err := api.StopStreamContext(ctx, "C1", threadStreams(h, "C1", sent.TS)[0].TS); err != nil {
		t.Fatal(err)
	}
	release()
	b := h.start()
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	if sts := threadStreams(h, "C1", sent.TS); len(sts) != 2 || !sts[1].Open {
		t.Fatalf("streams while waiting: %+v", sts)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "old connection gone", func() bool { return len(h.fake.Connections()) == 0 })
	h.start()
	h.connected(ctx, 1)
	h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
	h.waitFor(ctx, "streams stopped", func() bool { return openStreams(h) == 0 })
	sts := threadStreams(h, "C1", sent.TS)
	if len(sts) != 3 {
		t.Fatalf("%d streams, want 3 (recorded, the stray, the last)", len(sts))
	}
	if !sts[1].StoppedAt.Before(sts[2].StartedAt) {
		t.Error("the last stream started while the stray one was open")
	}
	if !strings.Contains(string(sts[2].FinalBlocks), "Summary") {
		t.Errorf("final blocks = %s", sts[2].FinalBlocks)
	}
	// The recorded message, where the run is looked up, shows the outcome.
	r := h.runOf(ctx, "C1", sent.TS)
	if m, _ := h.fake.Message("C1", h.placeOf(ctx, r.ID).StatusTS); !strings.Contains(string(m.Blocks), "Done") {
		t.Errorf("recorded message = %s", m.Blocks)
	}
}

// TestStreamStartRateLimited: beyond chat.startStream's Tier 2 budget a
// run does not wait for a stream: it shows the edited status message at
// once, and the workspace keeps streaming for later runs.
func TestStreamStartRateLimited(t *testing.T) {
	h := streaming(t, slackfake.WithTierLimits(slackfake.Limits{StartStreamsPerMinute: 1}))
	h.start(noDraftApproval)
	ctx := testCtx(t)
	first := h.mention(ctx, "U1", "C1", "first", "")
	h.waitReports(ctx, "C1", first.TS, 1)
	second := h.mention(ctx, "U2", "C2", "second", "")
	h.waitReports(ctx, "C2", second.TS, 1)
	h.waitState(ctx, "C2", second.TS, research.StateDone)
	if n := len(threadStreams(h, "C1", first.TS)); n != 1 {
		t.Errorf("first run: %d streams", n)
	}
	h.waitFor(ctx, "the second run's status message done", func() bool {
		m, ok := h.statusMessage("C2", second.TS, 1)
		return ok && strings.Contains(string(m.Blocks), "Done")
	})
	if n := len(threadStreams(h, "C2", second.TS)); n != 0 {
		t.Errorf("second run: %d streams", n)
	}
}

// TestRefusedMentionsLeaveTheStreamBudget: mentions refused by the
// per-user limit spend no chat.startStream: after one user's flood of 40
// (limit 3) the next user's run is still shown as a stream.
func TestRefusedMentionsLeaveTheStreamBudget(t *testing.T) {
	h := streaming(t)
	defer h.holdRuns()()
	h.start(func(o *bot.Options) { o.MaxRunsPerUser = 3 })
	ctx := testCtx(t)
	h.connected(ctx, 1)
	for i := range 40 {
		h.mention(ctx, "U1", "C1", fmt.Sprintf("question %d", i), "")
	}
	for _, env := range h.fake.Envelopes() {
		var p struct {
			EventID string `json:"event_id"`
		}
		if json.Unmarshal(env.Payload, &p) == nil && p.EventID != "" {
			h.waitInboxDone(ctx, "ev:"+p.EventID)
		}
	}
	if runs, _ := h.store.ListRuns(ctx, research.RunFilter{}); len(runs) != 3 {
		t.Fatalf("%d runs for the flood, want 3", len(runs))
	}
	sent := h.mention(ctx, "U2", "C2", "the next user's question", "")
	key := slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C2", ThreadTS: sent.TS}
	h.waitFor(ctx, "the next user's run shown", func() bool {
		r, err := h.store.LatestRun(ctx, key.ThreadID())
		return err == nil && h.placeOf(ctx, r.ID).StatusTS != ""
	})
	if p := h.placeOf(ctx, h.runOf(ctx, "C2", sent.TS).ID); !p.Stream || len(threadStreams(h, "C2", sent.TS)) != 1 {
		t.Errorf("the next user's run: stream planned %v, %d streams (chat.startStream calls %d)", p.Stream, len(threadStreams(h, "C2", sent.TS)), h.fake.Calls("chat.startStream"))
	}
}

// streamOfRun returns the one stream of a thread.
func streamOfRun(t *testing.T, h *harness, channel, threadTS string) slackfake.Stream {
	t.Helper()
	sts := threadStreams(h, channel, threadTS)
	if len(sts) != 1 {
		t.Fatalf("%d streams in the thread, want 1", len(sts))
	}
	return sts[0]
}

// stillStreams checks that the workspace still streams after another
// run's content was refused: a new run gets a stream, stopped at its end.
func stillStreams(ctx context.Context, t *testing.T, h *harness) {
	t.Helper()
	h.fake.ClearFaults()
	sent := h.mention(ctx, "U2", "C2", "the next question", "")
	h.waitReports(ctx, "C2", sent.TS, 1)
	h.waitFor(ctx, "the next run's stream stopped", func() bool {
		sts := threadStreams(h, "C2", sent.TS)
		return len(sts) == 1 && !sts[0].Open && strings.Contains(string(sts[0].FinalBlocks), "Done")
	})
}

// TestStreamContentRefusalStaysWithTheRun: Slack refusing what one run's
// stream carried (invalid_chunks on an append, invalid_blocks on the stop)
// affects that run only: its stream is stopped, not left open, the run's
// outcome is shown on its message, and the workspace keeps streaming.
// Only a refusal of the method itself turns streaming off (TestStreamFallback).
func TestStreamContentRefusalStaysWithTheRun(t *testing.T) {
	for _, tt := range []struct{ name, method, code string }{
		{"chunk refused", "chat.appendStream", "invalid_chunks"},
		{"final blocks refused", "chat.stopStream", "invalid_blocks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := streaming(t)
			h.fake.InjectFault(tt.method, slackfake.Fault{Error: tt.code, Times: 1})
			h.start(noDraftApproval)
			ctx := testCtx(t)
			h.connected(ctx, 1)
			sent := h.mention(ctx, "U1", "C1", "a refused chunk", "")
			h.waitReports(ctx, "C1", sent.TS, 1)
			h.waitState(ctx, "C1", sent.TS, research.StateDone)
			h.waitFor(ctx, "the run's stream stopped", func() bool { return openStreams(h) == 0 })
			st := streamOfRun(t, h, "C1", sent.TS)
			h.waitFor(ctx, "the outcome on the run's message", func() bool {
				m, ok := h.fake.Message("C1", st.TS)
				return ok && strings.Contains(string(m.Blocks), "Done")
			})
			stillStreams(ctx, t, h)
		})
	}
}

// gatedResearcher is the scripted researcher whose Start waits for next
// before its second progress snapshot and for done before it ends.
type gatedResearcher struct {
	*fakeResearcher
	next, done chan struct{}
}

func (g *gatedResearcher) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	g.begin("start", req.ThreadID)
	progress(sink, "researching", 0)
	for _, gate := range []chan struct{}{g.next, g.done} {
		select {
		case <-gate:
		case <-ctx.Done():
			return research.Outcome{}, ctx.Err()
		}
		progress(sink, "writing", 1)
	}
	return g.fakeResearcher.next(req.ThreadID, req.Options, "v1"), nil
}

// TestStreamRefusedMidRunShowsAStatusMessage: when Slack starts refusing a
// run's chunks mid-run, the run stops its stream (it was retried for ever,
// the stream left open) and goes on with an edited status message on the
// same message; the workspace keeps streaming.
func TestStreamRefusedMidRunShowsAStatusMessage(t *testing.T) {
	h := streaming(t)
	g := &gatedResearcher{fakeResearcher: h.res, next: make(chan struct{}), done: make(chan struct{})}
	h.startWith(g, noDraftApproval)
	ctx := testCtx(t)
	h.connected(ctx, 1)
	sent := h.mention(ctx, "U1", "C1", "refused mid-run", "")
	h.waitFor(ctx, "the run's cards streamed", func() bool {
		sts := threadStreams(h, "C1", sent.TS)
		return len(sts) == 1 && sts[0].AppendCalls > 0 && len(sts[0].Tasks()) == 2
	})
	h.fake.InjectFault("chat.appendStream", slackfake.Fault{Error: "invalid_chunks"})
	close(g.next)
	h.waitFor(ctx, "the refused stream stopped while the run goes on", func() bool { return openStreams(h) == 0 })
	if r := h.runOf(ctx, "C1", sent.TS); !r.State.Active() {
		t.Fatalf("run %s already", r.State)
	}
	h.fake.ClearFaults()
	close(g.done)
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	st := streamOfRun(t, h, "C1", sent.TS)
	h.waitFor(ctx, "the outcome on the run's message", func() bool {
		m, ok := h.fake.Message("C1", st.TS)
		return ok && strings.Contains(string(m.Blocks), "Done")
	})
	stillStreams(ctx, t, h)
}

// TestStreamCancelWhileWaitingRefusedFinal: a waiting run cancelled from
// its Cancel button, whose final blocks Slack refuses on chat.stopStream,
// still has its stream stopped, and its message shows the cancellation.
func TestStreamCancelWhileWaitingRefusedFinal(t *testing.T) {
	h := streaming(t)
	h.start()
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "cancel me while waiting", "")
	h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	st := streamOfRun(t, h, "C1", sent.TS)
	h.fake.InjectFault("chat.stopStream", slackfake.Fault{Error: "invalid_blocks", Times: 1})
	m, _ := h.fake.Message("C1", st.TS)
	h.click(ctx, "U1", "C1", m, "dr_cancel", h.runOf(ctx, "C1", sent.TS).ID)
	h.waitState(ctx, "C1", sent.TS, research.StateCancelled)
	h.waitFor(ctx, "the stream stopped and the cancellation shown", func() bool {
		m, ok := h.fake.Message("C1", st.TS)
		return openStreams(h) == 0 && ok && strings.Contains(string(m.Blocks), "Cancelled")
	})
}

// TestUnrecordedStreamIsStopped: a process died between starting a new
// run's stream and recording it, so the stream is open and unknown to the
// run's record; the process that picks the run up stops it before
// starting the run's stream, so one stream at most is open.
func TestUnrecordedStreamIsStopped(t *testing.T) {
	h := streaming(t)
	ctx := testCtx(t)
	root := h.fake.AddMessage(slackfake.Message{Channel: "C1", User: "U1", Text: "a question"})
	key := slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: root.TS}
	now := time.Now()
	if _, err := h.records.PutThread(ctx, slackstate.Thread{Key: key, ThreadID: key.ThreadID(), Requester: "U1", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	run := research.Run{ID: "rorphan", ThreadID: key.ThreadID(), Requester: "U1", Question: "a question", CreatedAt: now, UpdatedAt: now,
		Options: research.RunOptions{ApproveDraft: true}}
	if err := h.records.CreateRun(ctx, run, slackstate.Place{RunID: run.ID, Key: key, Stream: true}, 0); err != nil {
		t.Fatal(err)
	}
	api := slack.New(h.fake.BotToken(), slack.OptionAPIURL(h.fake.APIURL()))
	if _, _, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root.TS), slack.MsgOptionRecipientUserID("U1"),
		slack.MsgOptionRecipientTeamID(h.fake.TeamID()), slack.MsgOptionChunks(slack.NewMarkdownTextChunk("Queued"))); err != nil {
		t.Fatal(err)
	}
	// The creator took the run too, and its lease ran out.
	if _, err := h.store.AcquireRun(ctx, run.ID, "dead-0", now.Add(-time.Hour), time.Second); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.waitApproval(ctx, "C1", root.TS, "dr_approve")
	sts := threadStreams(h, "C1", root.TS)
	if len(sts) != 2 {
		t.Fatalf("%d streams, want 2 (the creator's, the pickup's): %+v", len(sts), sts)
	}
	if sts[0].Open || !sts[0].StoppedAt.Before(sts[1].StartedAt) {
		t.Errorf("the creator's stream (open %v, stopped %s) was not stopped before the pickup's started (%s)",
			sts[0].Open, sts[0].StoppedAt.Format("15:04:05.000"), sts[1].StartedAt.Format("15:04:05.000"))
	}
}

// TestSlowCreatorsStreamIsTheOnlyOne: this process's recovery picks up a
// new run while its creator is still starting the run's stream (Slack
// answers chat.startStream slowly): the run waits for the creator's stream
// instead of starting a second one beside it.
func TestSlowCreatorsStreamIsTheOnlyOne(t *testing.T) {
	h := streaming(t)
	h.fake.InjectFault("chat.startStream", slackfake.Fault{Delay: 1500 * time.Millisecond, Times: 1})
	h.start(func(o *bot.Options) { o.RecoverEvery = 50 * time.Millisecond })
	ctx := testCtx(t)
	h.connected(ctx, 1)
	sent := h.mention(ctx, "U1", "C1", "What does the EU AI Act require?", "")
	h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	if got := threadStreams(h, "C1", sent.TS); len(got) != 1 {
		for _, st := range got {
			t.Logf("stream %s open %v, started %s", st.TS, st.Open, st.StartedAt.Format(time.StampMicro))
		}
		t.Errorf("%d streams in the thread, want 1", len(got))
	}
}
