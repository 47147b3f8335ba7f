package sqlstore

import (
	"context"
	"io/fs"
	"time"

	"deepresearch/storage/migrate"
)

// lockMigrations is the advisory lock class of Migrate on PostgreSQL (key 2
// is the current schema).
const lockMigrations int32 = 0x64726d67 // "drmg"

// Migrate applies the migrations of fsys (migrate.Load) not yet recorded in
// the database, all in one transaction, so that processes starting at once
// apply each exactly once: SQLite's writer lock, or on PostgreSQL an
// advisory lock on the schema, makes the others wait and then find nothing
// to do. now stamps SQLite's records (PostgreSQL uses its clock).
func (db *DB) Migrate(ctx context.Context, fsys fs.FS, now func() time.Time) error {
	all, err := migrate.Load(fsys)
	if err != nil {
		return err
	}
	return db.Tx(ctx, func(q Querier) error {
		if db.engine == Postgres {
			if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))`, lockMigrations); err != nil {
				return db.errorf("migration lock: %w", err)
			}
		}
		if _, err := q.Exec(ctx, db.pick(`CREATE TABLE IF NOT EXISTS `+migrate.TableName+` (
				version    INTEGER PRIMARY KEY,
				name       TEXT    NOT NULL,
				applied_at INTEGER NOT NULL
			) STRICT`, `CREATE TABLE IF NOT EXISTS `+migrate.TableName+` (
				version    integer     PRIMARY KEY,
				name       text        NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`)); err != nil {
			return db.errorf("create %s: %w", migrate.TableName, err)
		}
		rows, err := q.Query(ctx, `SELECT version FROM `+migrate.TableName)
		versions, err := collect(rows, err, func(r Row) (int, error) {
			var v int
			err := r.Scan(&v)
			return v, err
		})
		if err != nil {
			return db.errorf("read %s: %w", migrate.TableName, err)
		}
		applied := map[int]bool{}
		for _, v := range versions {
			applied[v] = true
		}
		pending, err := migrate.Pending(all, applied)
		if err != nil {
			return err
		}
		for _, m := range pending {
			// No arguments: pgx sends it with the simple protocol, so one
			// file may hold several statements (as SQLite's driver allows).
			if _, err := q.Exec(ctx, m.SQL); err != nil {
				return db.errorf("migration %s: %w", m.Name, err)
			}
			record, args := `INSERT INTO `+migrate.TableName+` (version, name) VALUES ($1, $2)`, []any{m.Version, m.Name}
			if db.engine == SQLite {
				record, args = `INSERT INTO `+migrate.TableName+` (version, name, applied_at) VALUES ($1, $2, $3)`, append(args, now().UnixNano())
			}
			if _, err := q.Exec(ctx, record, args...); err != nil {
				return db.errorf("record migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
}
