// Package storage opens the database a deepresearch process uses: SQLite under
// the data directory by default, Postgres when DATABASE_URL says so.
package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"deepresearch/graph"
	"deepresearch/redact"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlite"
)

// Config selects the database.
type Config struct {
	DatabaseURL string // postgres://… or postgresql://…; empty → SQLite
	DataDir     string // where the SQLite file lives (default ./data)
}

// ConfigFromEnv reads DATABASE_URL and DEEPRESEARCH_DATA_DIR.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{DatabaseURL: getenv("DATABASE_URL"), DataDir: getenv("DEEPRESEARCH_DATA_DIR")}
}

// DB is an open database: the checkpoint saver and, through Kind, which
// engine it is.
type DB struct {
	Saver    graph.Saver
	Kind     string // "sqlite" or "postgres"
	Location string // the SQLite path, or the Postgres URL with its secrets masked (redact.URL)
	SQLite   *sqlite.Store
	Postgres *postgres.Store
}

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
		return &DB{Saver: s, Kind: "sqlite", Location: path, SQLite: s}, nil
	case strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://"):
		s, err := postgres.Open(ctx, postgres.Options{URL: u})
		if err != nil {
			return nil, fmt.Errorf("open Postgres database from DATABASE_URL: %w", err)
		}
		return &DB{Saver: s, Kind: "postgres", Location: redact.URL(u), Postgres: s}, nil
	default:
		return nil, fmt.Errorf("%w: DATABASE_URL must start with postgres:// (or be unset to use SQLite under DEEPRESEARCH_DATA_DIR)", ErrConfig)
	}
}

// Migrate applies pending migrations (Open already does; this is for the
// `migrate` command and for operators).
func (db *DB) Migrate(ctx context.Context) error {
	if db.Postgres != nil {
		return db.Postgres.Migrate(ctx)
	}
	return db.SQLite.Migrate(ctx)
}

// Close closes the database.
func (db *DB) Close() error {
	if db.Postgres != nil {
		db.Postgres.Close()
		return nil
	}
	return db.SQLite.Close()
}
