package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"deepresearch/storage"
)

const migrateUsage = `usage: deepresearch migrate

Applies the database migrations and exits. The database is Postgres when
DATABASE_URL is a postgres:// URL, else the SQLite file under
DEEPRESEARCH_DATA_DIR (default ./data). serve and ask migrate on start too;
run this to migrate ahead of a rollout.`

func runMigrate(ctx context.Context, args []string, e env, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), migrateUsage) }
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return usageError{msg: "migrate takes no arguments; the database comes from DATABASE_URL or DEEPRESEARCH_DATA_DIR"}
	}
	cfg, err := loadConfig(e)
	if err != nil {
		return err
	}
	db, err := storage.Open(ctx, cfg.Storage)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrated %s database at %s\n", db.Kind(), db.Location())
	return nil
}
