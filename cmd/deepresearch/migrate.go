package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"deepresearch/storage"
)

func runMigrate(ctx context.Context, args []string, e env, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{"migrate takes no arguments; the database comes from DATABASE_URL or DEEPRESEARCH_DATA_DIR"}
	}
	db, err := storage.Open(ctx, storage.ConfigFromEnv(e))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrated %s database at %s\n", db.Kind, db.Location)
	return nil
}
