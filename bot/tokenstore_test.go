package bot_test

import (
	"context"
	"testing"

	"deepresearch/bot"
	"deepresearch/research"
	"deepresearch/storage"
	"deepresearch/storage/sqlitetest"
)

// TestActionTokenNeverStored: the action_token that comes with the asker's
// message reaches the researcher, and no row of the SQLite database holds
// it — not while the run works, not after it is done.
func TestActionTokenNeverStored(t *testing.T) {
	h := newHarness(t)
	db, err := storage.Open(context.Background(), storage.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h.store = nil // the memory store is not used
	release := h.holdRuns()
	h.startOn(db.Runs(), noDraftApproval, func(o *bot.Options) { o.WorkspaceSearch = true })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "what did we decide about pricing?", "")
	key := research.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}
	var token string
	h.waitFor(ctx, "the researcher started", func() bool {
		th := h.res.Thread(key.ThreadID())
		if len(th.tokens) > 0 {
			token = th.tokens[0]
		}
		return len(th.tokens) > 0
	})
	if token == "" {
		t.Fatal("the researcher got no workspace token")
	}
	if hits := sqlitetest.Find(t, db.Location(), token); len(hits) > 0 {
		t.Errorf("while the run works, the database holds the action_token: %v", hits)
	}
	release()
	h.waitFor(ctx, "run done", func() bool {
		r, err := db.Runs().LatestRun(ctx, key.ThreadID())
		return err == nil && r.State == research.StateDone
	})
	if hits := sqlitetest.Find(t, db.Location(), token); len(hits) > 0 {
		t.Errorf("after the run, the database holds the action_token: %v", hits)
	}
}
