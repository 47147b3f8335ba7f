package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"deepresearch/bot"
	"deepresearch/storage"
)

// dbPoolCollector exposes the database connection pool, read when /metrics
// is scraped: on Postgres the pgxpool of the process (its size is set with
// pool_max_conns in DATABASE_URL; pgx's default is max(4, CPUs)); on SQLite
// the writer's single connection (database/sql stats).
//
//	deepresearch_db_pool_conns{state="total|acquired|idle"}
//	deepresearch_db_pool_max_conns
type dbPoolCollector struct {
	db         *storage.DB
	conns, max *prometheus.Desc
}

func newDBPoolCollector(db *storage.DB) *dbPoolCollector {
	return &dbPoolCollector{
		db: db,
		conns: prometheus.NewDesc("deepresearch_db_pool_conns",
			"Database connections of this process's pool, by state (total = acquired + idle + being opened).", []string{"state"}, nil),
		max: prometheus.NewDesc("deepresearch_db_pool_max_conns",
			"Size of this process's database connection pool.", nil, nil),
	}
}

func (c *dbPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.conns
	ch <- c.max
}

func (c *dbPoolCollector) Collect(ch chan<- prometheus.Metric) {
	if c.db == nil {
		return
	}
	st := c.db.Stats()
	total, acquired, idle, maxConns := float64(st.Total), float64(st.InUse), float64(st.Idle), float64(st.Max)
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, total, "total")
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, acquired, "acquired")
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, idle, "idle")
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, maxConns)
}

// dbPoolMetrics registers the pool collector on the registry serve exposes
// on /metrics (a bot extension, so serveBot's signature stays as it is).
func dbPoolMetrics(db *storage.DB) func(*bot.Options) {
	return func(o *bot.Options) {
		if o.Registerer != nil && db != nil {
			o.Registerer.MustRegister(newDBPoolCollector(db))
		}
	}
}
