package bot_test

import (
	"slices"
	"strings"
	"testing"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

// noDraftApproval makes runs finish without waiting for a click.
func noDraftApproval(o *bot.Options) { o.RunOptions = research.RunOptions{} }

// TestReportSharedWithBlocksSlackAccepts: the report file is shared with
// its summary in blocks that files.completeUploadExternal accepts (no
// markdown block, which real Slack answers with internal_error), the
// summary is mrkdwn, and no unshared file is left behind.
func TestReportSharedWithBlocksSlackAccepts(t *testing.T) {
	h, ctx := started(t, noDraftApproval)
	sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	files := h.files("C1", sent.TS)
	if len(files) != 1 {
		t.Fatalf("%d files in the thread, want 1", len(files))
	}
	blocks := string(files[0].Blocks)
	if strings.Contains(blocks, `"type":"markdown"`) {
		t.Errorf("share blocks hold a markdown block: %s", blocks)
	}
	if !strings.Contains(blocks, "Summary: regulation is moving") {
		t.Errorf("share blocks lack the summary: %s", blocks)
	}
	if o := h.fake.Orphans(); len(o) != 0 {
		t.Errorf("unshared files left: %+v", o)
	}
	h.noPings()
}

// TestReportShareRefusedFallsBack: when Slack refuses the share's summary
// blocks, the same file is shared with its title alone and the summary is
// posted as a message of its own; nothing is left unshared, the run is done.
func TestReportShareRefusedFallsBack(t *testing.T) {
	for _, code := range []string{"internal_error", "invalid_blocks", "msg_blocks_too_long"} {
		t.Run(code, func(t *testing.T) {
			h := newHarness(t)
			h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Error: code, Times: 1})
			h.start(noDraftApproval)
			ctx := testCtx(t)
			sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
			h.waitState(ctx, "C1", sent.TS, research.StateDone)
			if n := len(h.files("C1", sent.TS)); n != 1 {
				t.Fatalf("%d files in the thread, want 1", n)
			}
			if n := len(h.fake.Files()); n != 1 {
				t.Errorf("%d files created, want 1 (the refused one shared again)", n)
			}
			if o := h.fake.Orphans(); len(o) != 0 {
				t.Errorf("unshared files left: %+v", o)
			}
			var summary bool
			for _, m := range h.botMessages("C1", sent.TS) {
				if strings.Contains(string(m.Blocks), `"type":"markdown"`) && strings.Contains(string(m.Blocks), "regulation is moving") {
					summary = true
				}
			}
			if !summary {
				t.Error("the summary was not posted apart")
			}
		})
	}
}

// TestReportShareFailsCleanlyThenRetryPostsIt: a share Slack keeps refusing
// fails the run once (no whole-flow retries, no orphan files); "retry" in
// the thread then posts the finished report — the researcher is asked for
// the failed run's turn, not for a new research.
func TestReportShareFailsCleanlyThenRetryPostsIt(t *testing.T) {
	h := newHarness(t)
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Error: "internal_error"})
	h.start(noDraftApproval)
	ctx := testCtx(t)
	question := "what changed in AI regulation?"
	sent := h.mention(ctx, "U1", "C1", question, "")
	failed := h.waitState(ctx, "C1", sent.TS, research.StateFailed)
	// One share with the summary, one with the title alone, one of the
	// bytes staged again as a new file: never the whole flow over and over.
	if n := h.fake.Calls("files.completeUploadExternal"); n > 3 {
		t.Errorf("%d share attempts for a deterministic refusal, want at most 3", n)
	}
	if o := h.fake.Orphans(); len(o) != 0 {
		t.Errorf("unshared files left after the failure: %+v", o)
	}
	if n := len(h.fake.Files()); n != 0 {
		t.Errorf("%d files left in the workspace", n)
	}

	h.fake.ClearFaults()
	h.mention(ctx, "U1", "C1", "retry", sent.TS)
	h.waitReports(ctx, "C1", sent.TS, 1)
	th := h.res.Thread(failed.ThreadID)
	if !slices.Equal(th.questions, []string{question, question}) {
		t.Errorf("researcher questions = %q, want the original question twice", th.questions)
	}
	if len(th.tags) != 2 || th.tags[1] != failed.ID {
		t.Errorf("researcher tags = %v, want the retry to ask for run %s's turn", th.tags, failed.ID)
	}
	h.waitFor(ctx, "retry run done", func() bool {
		r := h.runOf(ctx, "C1", sent.TS)
		return r.ID != failed.ID && r.State == research.StateDone
	})
	if o := h.fake.Orphans(); len(o) != 0 {
		t.Errorf("unshared files left: %+v", o)
	}
}

// TestRetryWordsOnlyRedeliverAfterUploadFailure: a follow-up question in a
// thread whose report failed to upload is a new research, and "retry" in a
// thread whose run finished is a follow-up as usual.
func TestRetryWordsOnlyRedeliverAfterUploadFailure(t *testing.T) {
	h, ctx := started(t, noDraftApproval)
	sent := h.mention(ctx, "U1", "C1", "first question", "")
	done := h.waitState(ctx, "C1", sent.TS, research.StateDone)
	h.mention(ctx, "U1", "C1", "retry", sent.TS)
	h.waitFor(ctx, "follow-up done", func() bool {
		r := h.runOf(ctx, "C1", sent.TS)
		return r.ID != done.ID && r.State == research.StateDone
	})
	th := h.res.Thread(done.ThreadID)
	if len(th.tags) != 2 || th.tags[1] == done.ID || th.questions[1] != "retry" {
		t.Errorf("after a finished run, retry: tags %v questions %q", th.tags, th.questions)
	}
}
