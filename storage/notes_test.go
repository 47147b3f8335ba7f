package storage_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/agent"
	"deepresearch/storage"
)

func openBoth(t *testing.T) map[string]*storage.DB {
	t.Helper()
	ctx := context.Background()
	out := map[string]*storage.DB{}
	db, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	out["sqlite"] = db

	base := os.Getenv("DEEPRESEARCH_TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Logf("PostgreSQL not reachable (%v); testing SQLite only", err)
		return out
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "notes_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	pg, err := storage.Open(ctx, storage.Config{DatabaseURL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	out["postgres"] = pg
	return out
}

func TestResearchNotes(t *testing.T) {
	for kind, db := range openBoth(t) {
		t.Run(kind, func(t *testing.T) {
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
