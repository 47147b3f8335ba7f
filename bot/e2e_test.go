package bot_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
)

func TestMentionProgressApprovalReport(t *testing.T) {
	h, ctx := started(t)
	h.connected(ctx, 1)

	sent := h.mention(ctx, "U1", "C1", "2026年の国内生成AI規制の動向を調べて", "")
	approval, val := h.withButton(ctx, "C1", sent.TS, "dr_approve")
	if !strings.Contains(string(approval.Blocks), "Draft ready for review") {
		t.Errorf("approval message = %s", approval.Blocks)
	}
	for _, id := range []string{"dr_revise", "dr_more", "dr_cancel_intr"} {
		if approval.ButtonValue(id) == "" {
			t.Errorf("approval message has no %s button", id)
		}
	}
	run := h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	if want := (slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}).ThreadID(); run.ThreadID != want {
		t.Errorf("thread id = %q, want %q", run.ThreadID, want)
	}

	// The status message was edited in place with the progress.
	var status slackfake.Message
	h.waitFor(ctx, "status waiting", func() bool {
		var ok bool
		status, ok = h.statusMessage("C1", sent.TS, 1)
		return ok && strings.Contains(string(status.Blocks), "Waiting for you")
	})
	if len(status.Edits) == 0 {
		t.Error("status message never edited")
	}
	var sawProgress bool
	for _, e := range append(status.Edits, slackfake.Edit{Blocks: status.Blocks}) {
		s := string(e.Blocks)
		if strings.Contains(s, "Subtasks") && strings.Contains(s, "Plan") && strings.Contains(s, "sources read") && strings.Contains(s, "tokens") && strings.Contains(s, "elapsed") && strings.Contains(s, "dr_cancel") {
			sawProgress = true
		}
	}
	if !sawProgress {
		t.Errorf("no status version with plan, subtasks, sources, tokens, elapsed and Cancel: %s", status.Blocks)
	}

	h.click(ctx, "U1", "C1", approval, "dr_approve", val)
	h.waitReports(ctx, "C1", sent.TS, 1)
	f := h.files("C1", sent.TS)[0]
	if !strings.HasSuffix(f.Name, ".md") || !strings.Contains(string(f.Content), "# AI regulation 2026") {
		t.Errorf("file %q content %q", f.Name, f.Content)
	}
	if !strings.Contains(string(f.Blocks), "Summary: regulation is moving") {
		t.Errorf("summary blocks = %s", f.Blocks)
	}
	run = h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if _, err := h.store.Upload(ctx, run.ID); err != nil {
		t.Errorf("upload not recorded: %v", err)
	}
	// The buttons were replaced by who decided what.
	h.waitFor(ctx, "decision shown", func() bool {
		m, _ := h.fake.Message("C1", approval.TS)
		return strings.Contains(string(m.Blocks), "Approved") && m.ButtonValue("dr_approve") == ""
	})
	h.waitFor(ctx, "status done", func() bool {
		m, _ := h.fake.Message("C1", status.TS)
		return strings.Contains(string(m.Blocks), "Done") && m.ButtonValue("dr_cancel") == ""
	})
	m, _ := h.fake.Message("C1", approval.TS)
	if !strings.Contains(string(m.Blocks), "*u1*") {
		t.Errorf("decision does not name the decider: %s", m.Blocks)
	}
	// The clicked message was replaced through the click's response_url,
	// not with chat.update (which status edits need under load).
	replaced := 0
	for _, p := range h.fake.ResponsePosts() {
		if p.ReplaceOriginal && strings.Contains(string(p.Blocks), "Approved") {
			replaced++
		}
	}
	for _, c := range h.fake.CallLog("chat.update") {
		if c.Params.Get("ts") == approval.TS {
			t.Errorf("the approval message was edited with chat.update")
		}
	}
	if replaced != 1 {
		t.Errorf("%d response_url replacements of the approval message, want 1", replaced)
	}
	if got := h.res.Calls(); !slices.Equal(got, []string{"start:" + run.ThreadID, "resume:" + run.ThreadID}) {
		t.Errorf("researcher calls = %v", got)
	}
	h.noPings()
	if len(h.fake.UnknownMethods()) > 0 {
		t.Errorf("unknown methods called: %v", h.fake.UnknownMethods())
	}
}

func TestRequestChangesViaModal(t *testing.T) {
	h, ctx := started(t)
	sent := h.mention(ctx, "U1", "C1", "compare vector databases", "")
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_revise")
	h.click(ctx, "U1", "C1", approval, "dr_revise", val)
	var view slackfake.View
	h.waitFor(ctx, "feedback modal", func() bool {
		for _, v := range h.fake.Views() {
			if v.CallbackID == "dr_revise_modal" {
				view = v
				return true
			}
		}
		return false
	})

	// An empty submission is refused in the ack, keeping the modal open.
	empty, err := h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "U1", ViewID: view.ID,
		Values: map[string]map[string]slackfake.InputValue{"dr_feedback": {"text": {Value: "  "}}}})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := h.fake.WaitAck(empty.EnvelopeID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ack.Payload), `"response_action":"errors"`) {
		t.Errorf("empty feedback ack = %s", ack.Payload)
	}

	sub, err := h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "U1", ViewID: view.ID,
		Values: map[string]map[string]slackfake.InputValue{"dr_feedback": {"text": {Value: "shorter, with a table <!here>"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitAck(sub.EnvelopeID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	second, val2 := h.withButton(ctx, "C1", sent.TS, "dr_approve", approval.TS)
	if !strings.Contains(string(second.Blocks), "revised after revise: shorter, with a table") {
		t.Errorf("second draft = %s", second.Blocks)
	}
	h.waitFor(ctx, "first request shows the change request", func() bool {
		m, _ := h.fake.Message("C1", approval.TS)
		return strings.Contains(string(m.Blocks), "Changes requested") && strings.Contains(string(m.Blocks), "shorter, with a table")
	})
	h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	h.approveAndWait(ctx, "U1", "C1", sent.TS, second, val2)
	h.noPings()
}

func TestResearchMoreAndCancelButtons(t *testing.T) {
	h, ctx := started(t)
	sent := h.mention(ctx, "U1", "C1", "competitor news", "")
	m, val := h.waitApproval(ctx, "C1", sent.TS, "dr_more")
	h.click(ctx, "U1", "C1", m, "dr_more", val)
	m2, val2 := h.withButton(ctx, "C1", sent.TS, "dr_cancel_intr", m.TS)
	if !strings.Contains(string(m2.Blocks), "revised after more") {
		t.Errorf("after research more: %s", m2.Blocks)
	}
	h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	h.click(ctx, "U1", "C1", m2, "dr_cancel_intr", val2)
	r := h.waitState(ctx, "C1", sent.TS, research.StateCancelled)
	h.waitFor(ctx, "cancel shown", func() bool {
		m, _ := h.fake.Message("C1", m2.TS)
		s, _ := h.fake.Message("C1", h.placeOf(ctx, r.ID).StatusTS)
		return strings.Contains(string(m.Blocks), "Cancelled by") && strings.Contains(string(s.Blocks), "Cancelled by")
	})
	if !slices.Contains(h.res.Cancels(), r.ThreadID) {
		t.Errorf("researcher not told to cancel: %v", h.res.Cancels())
	}
	if n := len(h.files("C1", sent.TS)); n != 0 {
		t.Errorf("%d files after cancel", n)
	}
	h.noPings()
}

func TestCancelWhileRunning(t *testing.T) {
	h := newHarness(t)
	defer h.holdRuns()()
	h.start()
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "long research", "")
	status, val := h.withButton(ctx, "C1", sent.TS, "dr_cancel")
	h.waitState(ctx, "C1", sent.TS, research.StateRunning)
	h.click(ctx, "U1", "C1", status, "dr_cancel", val)
	r := h.waitState(ctx, "C1", sent.TS, research.StateCancelled)
	h.waitFor(ctx, "status cancelled", func() bool {
		m, _ := h.fake.Message("C1", status.TS)
		return strings.Contains(string(m.Blocks), "Cancelled by") && m.ButtonValue("dr_cancel") == ""
	})
	if !slices.Contains(h.res.Cancels(), r.ThreadID) {
		t.Errorf("researcher not told to cancel: %v", h.res.Cancels())
	}
	h.noPings()
}

func TestFollowUpInThreadAndDM(t *testing.T) {
	h, ctx := started(t, noDraftApproval)
	sent := h.mention(ctx, "U1", "C1", "first question", "")
	h.waitReports(ctx, "C1", sent.TS, 1)
	first := h.waitState(ctx, "C1", sent.TS, research.StateDone)

	// A plain reply in a channel thread (no mention) is not for the bot.
	h.message(ctx, slackfake.MessageEvent{User: "U1", Channel: "C1", ThreadTS: sent.TS, Text: "thanks!"})
	h.mention(ctx, "U1", "C1", "dig deeper into the EU part", sent.TS)
	h.waitReports(ctx, "C1", sent.TS, 2)
	second := h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if second.ID == first.ID || second.ThreadID != first.ThreadID || !second.FollowUp {
		t.Errorf("follow-up run = %+v (first %s)", second, first.ID)
	}
	if q := h.res.Thread(first.ThreadID).questions; !slices.Equal(q, []string{"first question", "dig deeper into the EU part"}) {
		t.Errorf("questions on the graph thread = %q", q)
	}

	// In a DM any message starts research, and any reply in its thread follows up.
	dm := h.message(ctx, slackfake.MessageEvent{User: "U2", Channel: "D0U2", Text: "what is RAG?"})
	h.waitReports(ctx, "D0U2", dm.TS, 1)
	h.waitState(ctx, "D0U2", dm.TS, research.StateDone)
	h.message(ctx, slackfake.MessageEvent{User: "U2", Channel: "D0U2", ThreadTS: dm.TS, Text: "rewrite shorter"})
	h.waitReports(ctx, "D0U2", dm.TS, 2)
	dmRun := h.waitState(ctx, "D0U2", dm.TS, research.StateDone)
	if !dmRun.FollowUp {
		t.Errorf("DM reply was not a follow-up: %+v", dmRun)
	}
	h.noPings()
}

func TestSocketDisconnectMidRun(t *testing.T) {
	h := newHarness(t)
	release := h.holdRuns()
	h.start()
	ctx := testCtx(t)
	h.connected(ctx, 1)
	sent := h.mention(ctx, "U1", "C1", "research during a disconnect", "")
	h.waitState(ctx, "C1", sent.TS, research.StateRunning)

	// Slack asks for a refresh, then the new connection drops abruptly.
	first := h.fake.Connections()[0].ID
	if n := h.fake.DisconnectAll(slackfake.ReasonRefreshRequested); n != 1 {
		t.Fatalf("told %d connections", n)
	}
	h.waitFor(ctx, "reconnect", func() bool {
		cs := h.fake.Connections()
		return len(cs) == 1 && cs[0].ID != first
	})
	second := h.fake.Connections()[0].ID
	if err := h.fake.DropConnection(second); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "second reconnect", func() bool {
		cs := h.fake.Connections()
		return len(cs) == 1 && cs[0].ID != second
	})
	release()
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
	h.noPings()
}

func TestRedeliveredEventIsHandledOnce(t *testing.T) {
	h, ctx := started(t)
	sent := h.mention(ctx, "U1", "C1", "only once please", "")
	if err := h.fake.Redeliver(ctx, sent.EnvelopeID, "timeout"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "redelivery acked", func() bool {
		n := 0
		for _, a := range h.fake.Acks() {
			if a.EnvelopeID == sent.EnvelopeID {
				n++
			}
		}
		return n == 2
	})
	h.withButton(ctx, "C1", sent.TS, "dr_approve")
	h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	time.Sleep(200 * time.Millisecond) // let a wrongly handled duplicate show up
	runs, _ := h.store.ListRuns(ctx, research.RunFilter{})
	if len(runs) != 1 {
		t.Errorf("%d runs, want 1", len(runs))
	}
	n := 0
	for _, m := range h.botMessages("C1", sent.TS) {
		if isStatus(m) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d status messages, want 1", n)
	}
}

func TestRestartWhileWaitingForApproval(t *testing.T) {
	h := newHarness(t)
	a := h.start()
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "survive a restart", "")
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "old connection gone", func() bool { return len(h.fake.Connections()) == 0 })

	h.start() // a new process on the same store
	h.connected(ctx, 1)
	r := h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
	if r.Owner != "" || r.Attempt != 1 {
		t.Errorf("run after restart = %+v", r)
	}
	h.noPings()
}

func TestRestartWhileRunning(t *testing.T) {
	h := newHarness(t)
	release := h.holdRuns()
	a := h.start()
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "survive a restart mid-run", "")
	h.waitState(ctx, "C1", sent.TS, research.StateRunning)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if r := h.runOf(ctx, "C1", sent.TS); r.State != research.StateQueued {
		t.Fatalf("after shutdown the run is %s, want queued", r.State)
	}
	release()
	h.start()
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	if calls := h.res.Calls(); !slices.Contains(calls, "continue:"+h.runOf(ctx, "C1", sent.TS).ThreadID) {
		t.Errorf("the new process did not continue the run: %v", calls)
	}
	h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
	if n := len(h.botMessages("C1", sent.TS)); n != 3 { // status, approval, report
		t.Errorf("%d bot messages in the thread, want 3", n)
	}
}

func TestClickByStrangerAndApprover(t *testing.T) {
	h, ctx := started(t, func(o *bot.Options) { o.Approvers = []string{"U3"} })
	sent := h.mention(ctx, "U1", "C1", "who may approve?", "")
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	h.click(ctx, "U2", "C1", approval, "dr_approve", val)
	h.waitFor(ctx, "ephemeral to the stranger", func() bool {
		for _, e := range h.fake.Ephemerals() {
			if e.User == "U2" && strings.Contains(e.Text, "Only") {
				return true
			}
		}
		return false
	})
	if r := h.runOf(ctx, "C1", sent.TS); r.State != research.StateWaiting {
		t.Fatalf("a stranger's click changed the run to %s", r.State)
	}
	// Two approvers' clicks (a double click) resume once.
	h.click(ctx, "U3", "C1", approval, "dr_approve", val)
	r := h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
	resumes := h.resumes(r.ThreadID)
	// Both may decide; the clicks are handled concurrently, so either one
	// is the decision — and only one resumes the run.
	if resumes != 1 || r.Decision == nil || (r.Decision.By != "U3" && r.Decision.By != "U1") {
		t.Errorf("resumes = %d, decision = %+v", resumes, r.Decision)
	}
	h.noPings()
}

func TestTwoReplicasDoubleClick(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.start()
	ctx := testCtx(t)
	h.connected(ctx, 2)
	sent := h.mention(ctx, "U1", "C1", "two replicas", "")
	approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
	// Round-robin delivery sends the two clicks to different replicas.
	h.click(ctx, "U1", "C1", approval, "dr_approve", val)
	r := h.approveAndWait(ctx, "U1", "C1", sent.TS, approval, val)
	time.Sleep(200 * time.Millisecond)
	resumes := h.resumes(r.ThreadID)
	if resumes != 1 || len(h.files("C1", sent.TS)) != 1 {
		t.Errorf("resumes = %d, files = %d", resumes, len(h.files("C1", sent.TS)))
	}
}

func TestClarifyingQuestionAnsweredInThread(t *testing.T) {
	h := newHarness(t)
	h.res.askFirst = true
	h.start(noDraftApproval)
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "regulation news", "")
	h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	h.waitBotText(ctx, "C1", sent.TS, "Which period?")
	// Someone else's reply is not the answer; the requester's is.
	h.message(ctx, slackfake.MessageEvent{User: "U2", Channel: "C1", ThreadTS: sent.TS, Text: "last decade"})
	h.message(ctx, slackfake.MessageEvent{User: "U1", Channel: "C1", ThreadTS: sent.TS, Text: "2025 and 2026"})
	h.waitFor(ctx, "draft after the answer", func() bool {
		for _, m := range h.botMessages("C1", sent.TS) {
			if strings.Contains(string(m.Blocks), "after answer 2025 and 2026") {
				return true
			}
		}
		return false
	})
	r := h.runOf(ctx, "C1", sent.TS)
	if ans := h.res.Thread(r.ThreadID).answers; len(ans) != 1 || ans[0].Text != "2025 and 2026" || ans[0].By != "U1" {
		t.Errorf("answers = %+v", ans)
	}
	h.noPings()
}

func TestMalformedEnvelopeIsAcked(t *testing.T) {
	h, ctx := started(t)
	id, err := h.fake.SendEnvelope(ctx, slackfake.TypeEventsAPI, "this is not an event", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitAck(id, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	id2, err := h.fake.SendEnvelope(ctx, slackfake.TypeInteractive, map[string]any{"type": "block_actions", "actions": "nope"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitAck(id2, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// The bot still works.
	sent := h.mention(ctx, "U1", "C1", "still alive?", "")
	h.withButton(ctx, "C1", sent.TS, "dr_approve")
}

func TestAuthFailureStopsStartup(t *testing.T) {
	h := newHarness(t)
	h.fake.FailAuthTest("invalid_auth")
	b, err := bot.New(h.res, h.store, h.records, h.options())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = b.Run(ctx)
	if !errors.Is(err, bot.ErrAuth) || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN") {
		t.Errorf("Run = %v", err)
	}
	if len(h.fake.Connections()) != 0 {
		t.Error("connected despite the rejected token")
	}
}
