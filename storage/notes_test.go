package storage_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/storage"
	"deepresearch/storage/pgtest"
)

// openDB opens an empty DB of the kind: "sqlite", or "postgres" (a fresh
// schema; without a server the test skips, unless CI is set).
func openDB(t *testing.T, kind string) *storage.DB {
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
	return db
}

func TestResearchNotes(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			db := openDB(t, kind)
			ctx := context.Background()
			notes := db.Notes()
			at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
			in := []agent.Note{
				{ID: "b", ThreadID: "t1", Turn: 0, Step: 110, Subtask: "規制", Query: "生成AI 規制 2026", Summary: "要約", Sources: []string{"https://a.example/1"}, CreatedAt: at},
				{ID: "a", ThreadID: "t1", Turn: 0, Step: 100, Subtask: "market", Query: "q1", Summary: "s1", CreatedAt: at},
				{ID: "c", ThreadID: "t2", Turn: 1, Step: 100, Query: "other", Summary: "x", CreatedAt: at},
			}
			for _, n := range in {
				if err := notes.SaveNote(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
			// the same note saved again (a re-run after a crash) is stored once
			if err := notes.SaveNote(ctx, in[0]); err != nil {
				t.Fatal(err)
			}
			got, err := notes.List(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
				t.Fatalf("notes %+v", got)
			}
			if got[1].Query != "生成AI 規制 2026" || !slices.Equal(got[1].Sources, []string{"https://a.example/1"}) || !got[1].CreatedAt.Equal(at) {
				t.Fatalf("round trip lost data: %+v", got[1])
			}
			if got[0].Sources == nil || len(got[0].Sources) != 0 {
				t.Fatalf("nil sources should read back empty: %#v", got[0].Sources)
			}
			if err := notes.SaveNote(ctx, agent.Note{ThreadID: "t1"}); err == nil {
				t.Fatal("a note without id was accepted")
			}
		})
	}
}
