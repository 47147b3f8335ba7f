package main

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"deepresearch/bot"
	"deepresearch/storage"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
)

// The pool gauges on Postgres follow pgxpool.Stat at scrape time, and the
// pool size set in DATABASE_URL (pool_max_conns) is the one reported.
func TestDBPoolMetricsPostgres(t *testing.T) {
	u, err := url.Parse(pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "3")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	pg, err := postgres.Open(ctx, postgres.Options{URL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	db := storage.OnPostgres(pg, "test")
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
	c1, err := pg.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := pg.Pool().Acquire(ctx)
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
