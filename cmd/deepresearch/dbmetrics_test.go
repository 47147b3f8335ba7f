package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"deepresearch/bot"
	"deepresearch/storage"
)

// The pool gauges on Postgres follow pgxpool.Stat at scrape time, and the
// pool size set in DATABASE_URL (pool_max_conns) is the one reported.
func TestDBPoolMetricsPostgres(t *testing.T) {
	base := os.Getenv("DEEPRESEARCH_TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("PostgreSQL not reachable (%v); CI runs this test", err)
	}
	defer conn.Close(context.Background())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "dbmetrics_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", "3")
	u.RawQuery = q.Encode()

	db, err := storage.Open(ctx, storage.Config{DatabaseURL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := prometheus.NewRegistry()
	dbPoolMetrics(db)(&bot.Options{Registerer: reg})

	read := func() map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				k := mf.GetName()
				for _, l := range m.GetLabel() {
					k += "/" + l.GetValue()
				}
				out[k] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	c1, err := db.Postgres.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := db.Postgres.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := read()
	if got["deepresearch_db_pool_max_conns"] != 3 || got["deepresearch_db_pool_conns/acquired"] != 2 ||
		got["deepresearch_db_pool_conns/total"] < 2 || got["deepresearch_db_pool_conns/total"] > 3 {
		t.Errorf("with two connections acquired: %v", got)
	}
	c1.Release()
	c2.Release()
	got = read()
	if got["deepresearch_db_pool_conns/acquired"] != 0 || got["deepresearch_db_pool_conns/idle"] < 2 {
		t.Errorf("after releasing them: %v", got)
	}
}
