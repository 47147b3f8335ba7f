// Package storage opens the database a deepresearch process uses: SQLite under
// the data directory by default, Postgres when DATABASE_URL says so. The rest
// of the program sees the engine only through DB's methods.
package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"deepresearch/agent"
	"deepresearch/graph"
	"deepresearch/redact"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlite"
)

// Config selects the database (cmd/deepresearch fills it from DATABASE_URL
// and DEEPRESEARCH_DATA_DIR).
type Config struct {
	DatabaseURL string // postgres://… or postgresql://…; empty → SQLite
	DataDir     string // where the SQLite file lives (default ./data)
}

// Notes keeps the agent's research notes and lists a thread's for audits.
type Notes interface {
	agent.NoteStore
	List(ctx context.Context, threadID string) ([]agent.Note, error)
}

// PoolStats describes the process's database connections.
type PoolStats struct {
	Total, InUse, Idle, Max int
}

// DB is an open database: every store of the program on one engine.
type DB struct {
	kind, location string
	saver          graph.Saver
	runs           research.Store
	slack          slackstate.Store
	schedules      schedule.Store
	notes          Notes
	feedback       research.FeedbackStore
	reports        research.ReportStore
	stats          func() PoolStats
	migrate        func(context.Context) error
	close          func() error
}

// Kind is "sqlite" or "postgres".
func (db *DB) Kind() string { return db.kind }

// Location is the SQLite path, or the Postgres URL with its secrets masked.
func (db *DB) Location() string { return db.location }

// Saver is the graph's checkpoint store.
func (db *DB) Saver() graph.Saver { return db.saver }

// Runs is the store of the runs: their leases, decisions and uploads.
func (db *DB) Runs() research.Store { return db.runs }

// Slack is the store of the Slack bot's own records: the thread mapping,
// the inbox and event keys, the replica registry and the runs' places.
func (db *DB) Slack() slackstate.Store { return db.slack }

// Schedules is the store of digest schedules and their firings.
func (db *DB) Schedules() schedule.Store { return db.schedules }

// Notes is the store of the agent's research notes.
func (db *DB) Notes() Notes { return db.notes }

// Feedback is the store of people's feedback on reports.
func (db *DB) Feedback() research.FeedbackStore { return db.feedback }

// Reports is the store of finished reports, searched as a source by later
// questions.
func (db *DB) Reports() research.ReportStore { return db.reports }

// Stats reports the connection pool, for metrics.
func (db *DB) Stats() PoolStats { return db.stats() }

// ErrConfig is a configuration mistake; its message names the variable.
var ErrConfig = errors.New("storage: configuration")

// Open opens (creating and migrating as needed) the configured database.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	u := strings.TrimSpace(cfg.DatabaseURL)
	switch {
	case u == "":
		dir := cfg.DataDir
		if dir == "" {
			dir = "data"
		}
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("%w: DEEPRESEARCH_DATA_DIR %q cannot be created: %v", ErrConfig, dir, err)
		}
		path := filepath.Join(dir, "deepresearch.db")
		s, err := sqlite.Open(ctx, sqlite.Options{Path: path})
		if err != nil {
			return nil, fmt.Errorf("open SQLite database %s: %w", path, err)
		}
		return OnSQLite(s, path), nil
	case strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://"):
		s, err := postgres.Open(ctx, postgres.Options{URL: u})
		if err != nil {
			return nil, fmt.Errorf("open Postgres database from DATABASE_URL: %w", err)
		}
		return OnPostgres(s, redact.URL(u)), nil
	default:
		return nil, fmt.Errorf("%w: DATABASE_URL must start with postgres:// (or be unset to use SQLite under DEEPRESEARCH_DATA_DIR)", ErrConfig)
	}
}

// OnSQLite is the DB on an open SQLite store; location names it in logs.
func OnSQLite(s *sqlite.Store, location string) *DB {
	return &DB{
		kind: "sqlite", location: location, saver: s,
		runs: sqlite.NewRuns(s), slack: sqlite.NewSlack(s), schedules: sqlite.NewSchedules(s), notes: sqlite.NewNotes(s), feedback: sqlite.NewFeedback(s), reports: sqlite.NewReports(s),
		stats: func() PoolStats {
			st := s.DB().Stats()
			return PoolStats{Total: st.OpenConnections, InUse: st.InUse, Idle: st.Idle, Max: st.MaxOpenConnections}
		},
		migrate: s.Migrate, close: s.Close,
	}
}

// OnPostgres is the DB on an open Postgres store; location names it in logs
// (without secrets).
func OnPostgres(s *postgres.Store, location string) *DB {
	return &DB{
		kind: "postgres", location: location, saver: s,
		runs: postgres.NewRuns(s), slack: postgres.NewSlack(s), schedules: postgres.NewSchedules(s), notes: postgres.NewNotes(s), feedback: postgres.NewFeedback(s), reports: postgres.NewReports(s),
		stats: func() PoolStats {
			st := s.Pool().Stat()
			return PoolStats{Total: int(st.TotalConns()), InUse: int(st.AcquiredConns()), Idle: int(st.IdleConns()), Max: int(st.MaxConns())}
		},
		migrate: s.Migrate, close: func() error { s.Close(); return nil },
	}
}

// Migrate applies pending migrations (Open already does; this is for the
// `migrate` command and for operators).
func (db *DB) Migrate(ctx context.Context) error { return db.migrate(ctx) }

// Close closes the database.
func (db *DB) Close() error { return db.close() }
