package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"deepresearch/graph"
	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/sqlstore"
)

// engine opens databases on one SQL engine for the suites.
type engine struct {
	name string
	// fresh returns where an empty database is: a file's path, or the URL
	// of a new schema (PostgreSQL: without a server it skips, unless CI is
	// set, when it fails).
	fresh func(t testing.TB) string
	// open opens (migrating) the database at loc until t ends.
	open func(t testing.TB, loc string) (*sqlstore.DB, graph.Saver)
}

var engines = []engine{
	{
		name:  "sqlite",
		fresh: func(t testing.TB) string { return filepath.Join(t.TempDir(), "db.sqlite") },
		open: func(t testing.TB, loc string) (*sqlstore.DB, graph.Saver) {
			s, err := sqlite.Open(context.Background(), sqlite.Options{Path: loc})
			if err != nil {
				t.Fatalf("open %s: %v", loc, err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s.SQL(), s
		},
	},
	{
		name:  "postgres",
		fresh: func(t testing.TB) string { return pgtest.Schema(t) },
		open: func(t testing.TB, loc string) (*sqlstore.DB, graph.Saver) {
			s, err := postgres.Open(context.Background(), postgres.Options{URL: loc, MaxConns: 8})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			t.Cleanup(s.Close)
			return s.SQL(), s
		},
	},
}

// db opens an empty database on e.
func (e engine) db(t testing.TB) *sqlstore.DB {
	db, _ := e.open(t, e.fresh(t))
	return db
}

// onEach runs fn as a subtest on each engine.
func onEach(t *testing.T, fn func(t *testing.T, e engine)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { fn(t, e) })
	}
}

func TestRunsConformance(t *testing.T) {
	onEach(t, func(t *testing.T, e engine) {
		Runs(t, func(t *testing.T) research.Store { return sqlstore.NewRuns(e.db(t)) })
	})
}

func TestSlackConformance(t *testing.T) {
	onEach(t, func(t *testing.T, e engine) {
		Slack(t, func(t *testing.T) (slackstate.Store, research.Store) {
			db := e.db(t)
			return sqlstore.NewSlack(db), sqlstore.NewRuns(db)
		})
	})
}

// TestRunsTwoHandles races goroutines over two DBs (two connection pools)
// on one database: the compare-and-set rules must hold across them.
func TestRunsTwoHandles(t *testing.T) {
	onEach(t, func(t *testing.T, e engine) {
		loc := e.fresh(t)
		a, _ := e.open(t, loc)
		b, _ := e.open(t, loc)
		RunsTwoHandles(t, sqlstore.NewRuns(a), sqlstore.NewRuns(b), sqlstore.NewSlack(a), sqlstore.NewSlack(b))
	})
}

func TestJobsConformance(t *testing.T) {
	onEach(t, func(t *testing.T, e engine) {
		Jobs(t, func(t testing.TB) jobs.Queue { return sqlstore.NewJobs(e.db(t)) })
	})
}

// TestJobsTwoHandles opens the database twice, as two processes would.
func TestJobsTwoHandles(t *testing.T) {
	onEach(t, func(t *testing.T, e engine) {
		loc := e.fresh(t)
		a, _ := e.open(t, loc)
		b, _ := e.open(t, loc)
		JobsTwoHandles(t, sqlstore.NewJobs(a), sqlstore.NewJobs(b))
	})
}

func TestSchedulesConformance(t *testing.T) {
	onEach(t, func(t *testing.T, e engine) {
		Schedules(t, func(t *testing.T) (schedule.Store, research.Store) {
			db := e.db(t)
			return sqlstore.NewSchedules(db), sqlstore.NewRuns(db)
		})
	})
}

func TestFeedbackConformance(t *testing.T) {
	onEach(t, func(t *testing.T, e engine) {
		Feedback(t, func(t *testing.T) research.FeedbackStore { return sqlstore.NewFeedback(e.db(t)) })
	})
}

func TestReportsConformance(t *testing.T) {
	onEach(t, func(t *testing.T, e engine) {
		Reports(t, func(t *testing.T) (research.ReportStore, graph.Saver) {
			db, saver := e.open(t, e.fresh(t))
			return sqlstore.NewReports(db), saver
		})
	})
}

// BenchmarkRunLife: go test -run '^$' -bench RunLife ./storage/sqlstore/
func BenchmarkRunLife(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			BenchRuns(b, func(tb testing.TB) research.Store { return sqlstore.NewRuns(e.db(tb)) })
		})
	}
}

func BenchmarkJobsClaimFinish(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			BenchJobs(b, func(tb testing.TB) jobs.Queue { return sqlstore.NewJobs(e.db(tb)) })
		})
	}
}
