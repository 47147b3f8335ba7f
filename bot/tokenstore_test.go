package bot_test

import (
	"context"
	"testing"

	"deepresearch/bot"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/sqlitetest"
)

// durableDB opens an empty database of kind, "sqlite" or "postgres" (a
// fresh schema; without a server the test skips), and returns it with a
// function that says where in its rows each of needles occurs.
func durableDB(t *testing.T, kind string) (*storage.DB, func(needles ...string) []string) {
	t.Helper()
	cfg := storage.Config{DataDir: t.TempDir()}
	if kind == "postgres" {
		cfg = storage.Config{DatabaseURL: pgtest.Schema(t)}
	}
	db, err := storage.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if kind == "postgres" {
		return db, func(needles ...string) []string { return pgtest.Find(t, cfg.DatabaseURL, needles...) }
	}
	return db, func(needles ...string) []string { return sqlitetest.Find(t, db.Location(), needles...) }
}

// TestActionTokenNeverStored: the action_token that comes with the asker's
// message reaches the researcher, and no row of the database (SQLite,
// PostgreSQL) holds it — not while the run works, not after it is done.
func TestActionTokenNeverStored(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(t)
			db, find := durableDB(t, kind)
			h.store, h.records = nil, nil // the harness's stores are not used
			release := h.holdRuns()
			h.runOn(h.res, db.Runs(), db.Slack(), noDraftApproval, func(o *bot.Options) { o.WorkspaceSearch = true })
			ctx := testCtx(t)
			sent := h.mention(ctx, "U1", "C1", "what did we decide about pricing?", "")
			key := slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}
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
			if hits := find(token); len(hits) > 0 {
				t.Errorf("while the run works, the database holds the action_token: %v", hits)
			}
			release()
			h.waitFor(ctx, "run done", func() bool {
				r, err := db.Runs().LatestRun(ctx, key.ThreadID())
				return err == nil && r.State == research.StateDone
			})
			if hits := find(token); len(hits) > 0 {
				t.Errorf("after the run, the database holds the action_token: %v", hits)
			}
		})
	}
}
