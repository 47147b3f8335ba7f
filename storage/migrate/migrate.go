// Package migrate reads the numbered, append-only schema migrations that the
// SQL stores embed in their binaries. Each store applies them with its own
// driver (inside one transaction, under its own lock); this package only
// finds, orders and checks the files, so both stores follow one rule:
//
//	NNNN_short_name.sql   (NNNN = 1, 2, 3, … without gaps; never edited once released)
package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// TableName is the bookkeeping table every store records applied versions in.
const TableName = "deepresearch_migrations"

// Migration is one numbered schema change.
type Migration struct {
	Version int    // 1, 2, 3, …
	Name    string // file name, e.g. "0001_checkpoints.sql"
	SQL     string
}

// Load returns the *.sql files at the top of fsys in version order. It fails
// on a malformed name, a duplicate version or a gap, so a bad file stops the
// build's tests rather than a production start-up.
func Load(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("migrate: list: %w", err)
	}
	var ms []Migration
	for _, name := range names {
		num, _, ok := strings.Cut(path.Base(name), "_")
		if !ok {
			return nil, fmt.Errorf("migrate: %s: name must be NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migrate: %s: name must start with a positive version number", name)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("migrate: read %s: %w", name, err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrate: %s: expected version %d (versions must be 1, 2, 3, … without gaps or duplicates)", m.Name, i+1)
		}
	}
	return ms, nil
}

// Pending returns the migrations whose versions are not in applied, in order.
// It fails if the database knows a version this binary does not (a newer
// binary migrated it; running an older one against it is unsafe).
func Pending(all []Migration, applied map[int]bool) ([]Migration, error) {
	known := map[int]bool{}
	var out []Migration
	for _, m := range all {
		known[m.Version] = true
		if !applied[m.Version] {
			out = append(out, m)
		}
	}
	for v := range applied {
		if !known[v] {
			return nil, fmt.Errorf("migrate: database has schema version %d, unknown to this binary (newer release?)", v)
		}
	}
	return out, nil
}
