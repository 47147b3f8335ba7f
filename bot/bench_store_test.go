package bot_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/bot"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlite"
)

// BenchmarkAckBurst200Store is BenchmarkAckBurst200 with the bot's records
// in SQLite and in Postgres, where storing each envelope before its ack is a
// real write: go test -run '^$' -bench AckBurst200Store ./bot/
// The Postgres case needs a server (DEEPRESEARCH_TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/test) and is skipped without one.
func BenchmarkAckBurst200Store(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) bot.Store
	}{
		{"sqlite", func(b *testing.B) bot.Store {
			s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(b.TempDir(), "db.sqlite")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s.BotStore()
		}},
		{"postgres", func(b *testing.B) bot.Store {
			s, err := postgres.Open(context.Background(), postgres.Options{URL: benchSchema(b)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(s.Close)
			return s.BotStore()
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			var all []time.Duration
			for b.Loop() {
				all = append(all, ackBurstOn(b, st.open(b), 200)...)
			}
			slices.Sort(all)
			b.ReportMetric(float64(pct(all, 0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(pct(all, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// benchSchema creates a schema dropped when the benchmark ends and returns
// a URL whose search_path points at it.
func benchSchema(b *testing.B) string {
	base := os.Getenv("DEEPRESEARCH_TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		b.Skipf("Postgres unreachable: %v", err)
	}
	defer conn.Close(ctx)
	buf := make([]byte, 8)
	rand.Read(buf)
	schema := "bench_" + hex.EncodeToString(buf)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, base); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			conn.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
