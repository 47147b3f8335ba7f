package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/graph"
	"deepresearch/graph/savertest"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
)

func cp(id, parent int64) *graph.StoredCheckpoint {
	return &graph.StoredCheckpoint{ID: id, ParentID: parent, Source: "loop", Delta: []byte("d"), Meta: []byte(`{}`)}
}

// TestStatements pins the cost of the hot paths: one statement per Commit on
// an existing chain, two pipelined in one round trip for a new chain, one per
// Load, whatever the batch size.
func TestStatements(t *testing.T) {
	ctx := context.Background()
	var cnt counter
	s, err := postgres.Open(ctx, postgres.Options{URL: pgtest.Schema(t), Tracer: &cnt})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := &graph.Batch{ThreadID: "th", ExpectHead: 1}
	for id := int64(2); id <= 40; id++ {
		big.Checkpoints = append(big.Checkpoints, cp(id, id-1))
		big.Writes = append(big.Writes, graph.PendingWrite{CheckpointID: id - 1, Channel: "c", Value: []byte("v")})
	}
	first := cp(1, 0)
	first.Snapshot = []byte("s")
	tests := []struct {
		name string
		fn   func() error
		want int64
	}{
		{"new chain", func() error {
			return s.Commit(ctx, &graph.Batch{ThreadID: "th", Checkpoints: []*graph.StoredCheckpoint{first}})
		}, 2},
		{"39 checkpoints and writes", func() error { return s.Commit(ctx, big) }, 1},
		{"writes only", func() error {
			return s.Commit(ctx, &graph.Batch{ThreadID: "th", ExpectHead: 40, Writes: []graph.PendingWrite{{CheckpointID: 40, Value: []byte("w")}}})
		}, 1},
		{"load 40 checkpoints", func() error { _, err := s.Load(ctx, "th", "", 0); return err }, 1},
		{"resume", func() error {
			return s.PutResume(ctx, "th", "", 40, graph.PendingWrite{Task: 1, Idx: -4, Value: []byte("r")})
		}, 1},
		{"list", func() error { _, err := s.List(ctx, "th", "", graph.ListOptions{Limit: 5}); return err }, 1},
	}
	for _, tc := range tests {
		cnt.n.Store(0)
		if err := tc.fn(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := cnt.n.Load(); got != tc.want {
			t.Errorf("%s: %d statements, want %d", tc.name, got, tc.want)
		}
	}
}

// TestNoOrphans races commits (on existing chains and on new namespaces)
// against DeleteThread and PruneThreads from another pool, then checks that
// no checkpoint or write outlived its chain.
func TestNoOrphans(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	a, b := open(t, dsn, savertest.Options{}), open(t, dsn, savertest.Options{})
	for round := 0; round < 6; round++ {
		thread := fmt.Sprint("th", round)
		const writers = 4
		for i := 0; i < writers; i++ {
			if err := b.Commit(ctx, &graph.Batch{ThreadID: thread, NS: fmt.Sprint(i), Checkpoints: []*graph.StoredCheckpoint{cp(1, 0)}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(ctx, &graph.Batch{ThreadID: thread, Checkpoints: []*graph.StoredCheckpoint{cp(1, 0)}}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := 0; i < writers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				head := int64(1)
				for k := 0; k < 500; k++ {
					err := b.Commit(ctx, &graph.Batch{ThreadID: thread, NS: fmt.Sprint(i), ExpectHead: head,
						Checkpoints: []*graph.StoredCheckpoint{cp(head+1, head)},
						Writes:      []graph.PendingWrite{{CheckpointID: head, Task: k, Value: []byte("w")}}})
					if err == nil {
						head++
						err = b.Commit(ctx, &graph.Batch{ThreadID: thread, NS: fmt.Sprintf("new-%d-%d", i, k), Checkpoints: []*graph.StoredCheckpoint{cp(1, 0)}})
					}
					if errors.Is(err, graph.ErrThreadDeleted) || errors.Is(err, graph.ErrConflict) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(round) * 3 * time.Millisecond)
		var err error
		if round%2 == 0 {
			err = a.DeleteThread(ctx, thread)
		} else {
			_, err = a.PruneThreads(ctx, time.Now().Add(time.Hour), false)
		}
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var cps, ws, chains int
	if err := conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM graph_checkpoints k WHERE NOT EXISTS (SELECT 1 FROM graph_chains c WHERE c.chain_id = k.chain_id)),
		(SELECT count(*) FROM graph_writes w WHERE NOT EXISTS (SELECT 1 FROM graph_chains c WHERE c.chain_id = w.chain_id)),
		(SELECT count(*) FROM graph_chains c JOIN graph_deleted_threads d ON d.thread_id = c.thread_id)`).Scan(&cps, &ws, &chains); err != nil {
		t.Fatal(err)
	}
	if cps != 0 || ws != 0 || chains != 0 {
		t.Errorf("orphans: %d checkpoints, %d writes; %d chains of deleted threads", cps, ws, chains)
	}
}

func TestMigrateTruncateTables(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	s := open(t, dsn, savertest.Options{})
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if err := s.Commit(ctx, &graph.Batch{ThreadID: "th", Checkpoints: []*graph.StoredCheckpoint{cp(1, 0)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var all []string
	rows, _ := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`)
	all, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// Other stores' tables (bot_*, …) share the schema; TableNames lists the
	// checkpoint tables (graph_*) only.
	all = slices.DeleteFunc(all, func(name string) bool {
		return !strings.HasPrefix(name, "graph_") && name != "deepresearch_migrations"
	})
	want := append(s.TableNames(), "deepresearch_migrations")
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Errorf("tables = %v, want TableNames + migrations = %v", all, want)
	}
	if err := s.Truncate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, table := range s.TableNames() {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s after Truncate: %d rows, %v", table, n, err)
		}
	}
	files, _ := filepath.Glob(filepath.Join("migrations", "*.sql"))
	var migrations int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM deepresearch_migrations`).Scan(&migrations); err != nil || migrations != len(files) {
		t.Errorf("migrations = %d, %v; want %d", migrations, err, len(files))
	}
	if _, err := s.Load(ctx, "th", "", 0); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("Load after Truncate: %v", err)
	}
}
