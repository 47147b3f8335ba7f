package bot_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlite"
)

// BenchmarkAckBurst200Store is BenchmarkAckBurst200 with the bot's records
// in SQLite and in Postgres, where storing each envelope before its ack is a
// real write: go test -run '^$' -bench AckBurst200Store ./bot/
// The Postgres case needs a server (DEEPRESEARCH_TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/test) and is skipped without one
// (unless CI is set, when it fails).
func BenchmarkAckBurst200Store(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) (research.Store, slackstate.Store)
	}{
		{"sqlite", func(b *testing.B) (research.Store, slackstate.Store) {
			s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(b.TempDir(), "db.sqlite")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return sqlite.NewRuns(s), sqlite.NewSlack(s)
		}},
		{"postgres", func(b *testing.B) (research.Store, slackstate.Store) {
			s, err := postgres.Open(context.Background(), postgres.Options{URL: pgtest.Schema(b)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(s.Close)
			return postgres.NewRuns(s), postgres.NewSlack(s)
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			var all []time.Duration
			for b.Loop() {
				runs, records := st.open(b)
				all = append(all, ackBurstOn(b, runs, records, 200)...)
			}
			slices.Sort(all)
			b.ReportMetric(float64(pct(all, 0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(pct(all, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
		})
	}
}
