package bot_test

import (
	"strings"
	"testing"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

// TestRetryOfAnotherUsersReport: after alice's report failed to upload,
// bob's "retry" is refused (it is her report) and posts nothing; an
// approver's retry posts it as hers ("asked by alice") and the retried run
// carries no workspace credential of hers from the earlier message; her
// own retry carries the one that came with her new message.
func TestRetryOfAnotherUsersReport(t *testing.T) {
	h := newHarness(t)
	h.fake.AddUser(slackfake.User{ID: "U1", Name: "alice"})
	h.fake.AddUser(slackfake.User{ID: "U2", Name: "bob"})
	h.fake.AddUser(slackfake.User{ID: "U3", Name: "carol"})
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Error: "internal_error"})
	h.start(noDraftApproval, func(o *bot.Options) { o.WorkspaceSearch = true; o.Approvers = []string{"U3"} })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
	failed := h.waitState(ctx, "C1", sent.TS, research.StateFailed)
	if tokens := h.res.Thread(failed.ThreadID).tokens; len(tokens) != 1 || tokens[0] == "" {
		t.Fatalf("the first run's researcher got tokens %q: the test needs one", tokens)
	}
	h.fake.ClearFaults()

	// bob: refused, nothing posted, no run.
	bob := h.mention(ctx, "U2", "C1", "retry", sent.TS)
	h.waitDone(ctx, h.inboxKey(bob.EnvelopeID))
	told := false
	for _, e := range h.fake.Ephemerals() {
		told = told || e.User == "U2" && strings.Contains(e.Text, "alice")
	}
	if !told {
		t.Errorf("bob was not told whose report it is: %+v", h.fake.Ephemerals())
	}
	if _, err := h.store.Run(ctx, bot.MessageRunID(h.fake.TeamID(), "C1", bob.TS)); err == nil {
		t.Error("bob's retry created a run")
	}
	if n := len(h.files("C1", sent.TS)); n != 0 {
		t.Fatalf("%d files after bob's retry, want 0", n)
	}

	// carol (an approver): the report is posted as alice's, without her token.
	carol := h.mention(ctx, "U3", "C1", "retry", sent.TS)
	h.waitReports(ctx, "C1", sent.TS, 1)
	r := h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if r.ID != bot.MessageRunID(h.fake.TeamID(), "C1", carol.TS) {
		t.Fatalf("latest run %s is not carol's retry", r.ID)
	}
	if r.Requester != "U1" {
		t.Errorf("retried run's requester = %s, want U1 (alice)", r.Requester)
	}
	if tokens := h.res.Thread(failed.ThreadID).tokens; len(tokens) != 2 || tokens[1] != "" {
		t.Errorf("researcher tokens %q: carol's retry carries a workspace token", tokens)
	}
	blocks := string(h.files("C1", sent.TS)[0].Blocks)
	if !strings.Contains(blocks, "alice") || strings.Contains(blocks, "carol") {
		t.Errorf("report blocks do not name alice as the asker: %s", blocks)
	}
}

// TestRetryByRequesterUsesTheirNewToken: the requester's own retry carries
// the action_token of the retry message, not the earlier one.
func TestRetryByRequesterUsesTheirNewToken(t *testing.T) {
	h := newHarness(t)
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Error: "internal_error"})
	h.start(noDraftApproval, func(o *bot.Options) { o.WorkspaceSearch = true })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
	failed := h.waitState(ctx, "C1", sent.TS, research.StateFailed)
	h.fake.ClearFaults()
	h.mention(ctx, "U1", "C1", "retry", sent.TS)
	h.waitReports(ctx, "C1", sent.TS, 1)
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	if tokens := h.res.Thread(failed.ThreadID).tokens; len(tokens) != 2 || tokens[1] == "" || tokens[1] == tokens[0] {
		t.Errorf("researcher tokens %q: want the retry message's own token the second time", tokens)
	}
}
