// Package sqlitetest lets tests read a SQLite database file as someone
// holding a copy of it would: every value of every row of every table,
// with the graph's packed blobs unpacked (graph.UnpackBlob). Tests use it
// to show what a run leaves in durable state; pgtest.Find does the same
// on a PostgreSQL schema. Open gives tests a fresh store in a temporary
// directory.
package sqlitetest

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"deepresearch/graph"
)

// Find returns where in the database at path each of needles occurs, as
// "table.column: needle" lines (none: it occurs nowhere).
func Find(t testing.TB, path string, needles ...string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatalf("sqlitetest: open %s: %v", path, err)
	}
	defer db.Close()
	tables, err := names(db)
	if err != nil {
		t.Fatalf("sqlitetest: list tables: %v", err)
	}
	var found []string
	for _, table := range tables {
		hits, err := scan(db, table, needles)
		if err != nil {
			t.Fatalf("sqlitetest: read %s: %v", table, err)
		}
		found = append(found, hits...)
	}
	return found
}

func names(db *sql.DB) ([]string, error) {
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func scan(db *sql.DB, table string, needles []string) ([]string, error) {
	rows, err := db.Query(`SELECT * FROM "` + strings.ReplaceAll(table, `"`, `""`) + `"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			text := valueText(v)
			for _, n := range needles {
				if n != "" && strings.Contains(text, n) {
					out = append(out, fmt.Sprintf("%s.%s: %s", table, cols[i], n))
				}
			}
		}
	}
	return out, rows.Err()
}

// valueText is a value as text: a blob also as the bytes it packs.
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
	}
	return fmt.Sprint(v)
}
