// Package pgtest gives tests a throwaway schema on the test PostgreSQL
// server. It is for tests only: nothing outside _test.go files should import
// it.
//
// The server is DEEPRESEARCH_TEST_DATABASE_URL, or DefaultURL when that is
// unset. Without a reachable server a test that asks for a schema is skipped,
// unless the CI environment variable is set (to anything), as .ci/run does:
// then it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/graph"
)

// DefaultURL is the server used when DEEPRESEARCH_TEST_DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// BaseURL returns the test server's connection string.
func BaseURL() string {
	if u := os.Getenv("DEEPRESEARCH_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Schema creates an empty schema with a random name, drops it (CASCADE) when
// the test ends, and returns BaseURL with search_path set to it. Without a
// server it skips the test, or fails it when CI is set.
func Schema(t testing.TB) string {
	t.Helper()
	base := BaseURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required when CI is set: %v", err)
		}
		t.Skipf("PostgreSQL unreachable (%v); set DEEPRESEARCH_TEST_DATABASE_URL or start it", err)
	}
	defer conn.Close(context.Background())
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, base, schema)
}

// withSearchPath returns dsn, a URL or a key=value string, with search_path
// set (a runtime parameter pgx passes to the server on every connection).
func withSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", dsn, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Find returns where in the schema of dsn (as Schema returns it) each of
// needles occurs, as "table.column: needle" lines (none: it occurs
// nowhere): every value of every row of every table, as someone holding a
// dump would read it, the graph's packed blobs unpacked.
func Find(t testing.TB, dsn string, needles ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		t.Fatalf("pgtest: list tables: %v", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("pgtest: list tables: %v", err)
	}
	var found []string
	for _, table := range tables {
		rows, err := conn.Query(ctx, `SELECT * FROM `+pgx.Identifier{table}.Sanitize())
		if err != nil {
			t.Fatalf("pgtest: read %s: %v", table, err)
		}
		cols := rows.FieldDescriptions()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatalf("pgtest: read %s: %v", table, err)
			}
			for i, v := range vals {
				text := valueText(v)
				for _, n := range needles {
					if n != "" && strings.Contains(text, n) {
						found = append(found, table+"."+cols[i].Name+": "+n)
					}
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("pgtest: read %s: %v", table, err)
		}
	}
	return found
}

// valueText is a value as text: a blob also as the bytes it packs, a JSON
// value as JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		s := string(x)
		if raw, err := graph.UnpackBlob(x); err == nil {
			s += "\n" + string(raw)
		}
		return s
	case nil:
		return ""
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}
