// Package sqlstore holds the program's stores (runs, inbox, jobs,
// schedules, notes, feedback, reports) once for both SQL engines: SQLite
// through database/sql and modernc.org/sqlite, and PostgreSQL through pgx.
// The statements are written once, with PostgreSQL's numbered placeholders
// ($1, $2, …; SQLite binds them by number too); where the engines' SQL
// differs (claiming with SKIP LOCKED, bulk inserts of arrays, text search,
// locks, "no limit") the code asks the DB which engine it runs on, and the
// larger differences sit in files named for the engine.
//
// The engines also differ in how a change is made atomic. SQLite has one
// writer: every write runs in a BEGIN IMMEDIATE transaction on the writer
// connection, so a method's reads and changes see no other writer between
// them. PostgreSQL has many: a change that is one statement runs on the
// pool (the statement is its own transaction and its conditions are
// re-checked on the latest row version), and a change of several
// statements runs in a transaction that takes the locks it needs (advisory
// locks, FOR UPDATE). DB.Write and DB.Tx say which of the two a method
// needs; the checkpoint store (graph.Saver) stays in storage/sqlite and
// storage/postgres, whose SQL has little in common.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	sqlitedrv "modernc.org/sqlite"
)

// Engine is the SQL engine under a DB.
type Engine int

// The engines.
const (
	SQLite Engine = iota + 1
	Postgres
)

// String is the engine's name, used in error messages.
func (e Engine) String() string {
	if e == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// Querier runs statements: a connection pool or a transaction.
type Querier interface {
	// Exec runs a statement and returns the number of rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow's Scan returns an error that is sql.ErrNoRows when there is
	// no row (pgx's ErrNoRows is one too).
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows is the result of Query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the result of QueryRow.
type Row interface{ Scan(dest ...any) error }

// DB is one database's connections as the stores use them. It is safe for
// concurrent use.
type DB struct {
	engine Engine
	read   Querier
	write  func(ctx context.Context, fn func(Querier) error) error
	tx     func(ctx context.Context, fn func(Querier) error) error
}

// OnSQLite returns the DB on SQLite's writer (one connection whose
// transactions begin IMMEDIATE) and readers.
func OnSQLite(w, r *sql.DB) *DB {
	tx := func(ctx context.Context, fn func(Querier) error) error {
		t, err := w.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqlite: begin: %w", err)
		}
		if err := fn(sqlQuerier{t}); err != nil {
			_ = t.Rollback()
			return err
		}
		if err := t.Commit(); err != nil {
			return fmt.Errorf("sqlite: commit: %w", err)
		}
		return nil
	}
	return &DB{engine: SQLite, read: sqlQuerier{r}, write: tx, tx: tx}
}

// OnPostgres returns the DB on a pgx pool.
func OnPostgres(pool *pgxpool.Pool) *DB {
	return &DB{
		engine: Postgres,
		read:   pgQuerier{pool},
		write:  func(_ context.Context, fn func(Querier) error) error { return fn(pgQuerier{pool}) },
		tx: func(ctx context.Context, fn func(Querier) error) error {
			return pgx.BeginFunc(ctx, pool, func(t pgx.Tx) error { return fn(pgQuerier{t}) })
		},
	}
}

// Engine is the engine under db.
func (db *DB) Engine() Engine { return db.engine }

// Read is where reads run: SQLite's readers, PostgreSQL's pool.
func (db *DB) Read() Querier { return db.read }

// Write runs fn where a change whose rules are kept by single statements
// runs: in an immediate transaction on SQLite, on the pool on PostgreSQL
// (each statement its own transaction).
func (db *DB) Write(ctx context.Context, fn func(Querier) error) error { return db.write(ctx, fn) }

// Tx runs fn in a transaction on either engine.
func (db *DB) Tx(ctx context.Context, fn func(Querier) error) error { return db.tx(ctx, fn) }

// pick returns sqlite or postgres, the engine's form of a statement.
func (db *DB) pick(sqlite, postgres string) string {
	if db.engine == Postgres {
		return postgres
	}
	return sqlite
}

// errorf is fmt.Errorf with the engine's name in front.
func (db *DB) errorf(format string, args ...any) error {
	return fmt.Errorf(db.engine.String()+": "+format, args...)
}

// limit is the argument of "LIMIT $n" for n rows, or for all of them when
// n <= 0 (SQLite takes -1, PostgreSQL NULL).
func (db *DB) limit(n int) any {
	switch {
	case n > 0:
		return n
	case db.engine == Postgres:
		return nil
	}
	return -1
}

// inList is the condition "col is one of the values of parameter p", and
// list the argument for it: an array on PostgreSQL, a JSON array (read
// with json_each) on SQLite.
func (db *DB) inList(col, p string) string {
	return db.pick(col+` IN (SELECT value FROM json_each(`+p+`))`, col+` = ANY(`+p+`)`)
}

func (db *DB) list(vals []string) (any, error) {
	if vals == nil {
		vals = []string{} // not NULL: NULL would match nothing and fail json_each
	}
	if db.engine == Postgres {
		return vals, nil
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// lock takes a transaction-scoped lock on (class, key) on PostgreSQL
// (pg_advisory_xact_lock); SQLite's single writer needs none.
func (db *DB) lock(ctx context.Context, q Querier, class int32, key string) error {
	if db.engine != Postgres {
		return nil
	}
	if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, class, key); err != nil {
		return fmt.Errorf("postgres: lock: %w", err)
	}
	return nil
}

// isUniqueViolation reports a unique or primary key violation.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	var se *sqlitedrv.Error
	return errors.As(err, &se) && (se.Code() == sqliteConstraintUnique || se.Code() == sqliteConstraintPrimaryKey)
}

// isForeignKeyViolation reports a foreign key violation.
func isForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23503"
	}
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code() == sqliteConstraintForeignKey
}

// SQLite's extended result codes of constraint violations.
const (
	sqliteConstraintForeignKey = 787
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// nanos stores a time as Unix nanoseconds, the zero time as 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos reads a time stored by nanos, in UTC.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nonNil maps nil to an empty blob: blobs are NOT NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// sqlQuerier is a Querier on database/sql (a *sql.DB or a *sql.Tx).
type sqlQuerier struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (s sqlQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := s.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (s sqlQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return s.q.QueryRowContext(ctx, query, args...)
}

// sqlRows gives *sql.Rows the Close of Rows (its error is Err's).
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// pgQuerier is a Querier on pgx (a pool or a transaction).
type pgQuerier struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (p pgQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := p.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (p pgQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return p.q.Query(ctx, query, args...)
}

func (p pgQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return p.q.QueryRow(ctx, query, args...)
}

// writeValue runs fn with db.Write and returns its value.
func writeValue[T any](ctx context.Context, db *DB, fn func(Querier) (T, error)) (T, error) {
	var out T
	err := db.Write(ctx, func(q Querier) error {
		var err error
		out, err = fn(q)
		return err
	})
	return out, err
}

// collect reads every row of a query (rows, err) with scan.
func collect[T any](rows Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanString reads a row of one text column.
func scanString(r Row) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}
