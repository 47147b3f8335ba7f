// Package docs holds the design notes; its test checks that the code keeps
// the layering design.md describes.
package docs

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "deepresearch"

// layers reads design.md's layer table: for each row, top first, the
// packages named in backquotes in its second column.
func layers(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("design.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	pkg := regexp.MustCompile("`([a-z][a-z0-9/]*)`")
	sc := bufio.NewScanner(f)
	inTable := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "| layer |"):
			inTable = true
			continue
		case inTable && strings.HasPrefix(line, "| ---"):
			continue
		case inTable && !strings.HasPrefix(line, "|"):
			inTable = false
		}
		if !inTable {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 4 {
			continue
		}
		var row []string
		for _, m := range pkg.FindAllStringSubmatch(cols[2], -1) {
			if !strings.HasSuffix(m[1], ".go") && !strings.Contains(m[1], ".") {
				row = append(row, m[1])
			}
		}
		out = append(out, row)
	}
	if len(out) < 5 {
		t.Fatalf("design.md's layer table has %d rows", len(out))
	}
	return out
}

// layerOf is the row of the longest listed prefix of pkg (module-relative).
func layerOf(rows [][]string, pkg string) (int, bool) {
	best, bestLen := -1, -1
	for i, row := range rows {
		for _, p := range row {
			if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best, best >= 0
}

// TestLayering: every package is in a layer of design.md's table, and no
// package imports one in a layer above it. The SQL engines are imported
// only by storage.
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	rows := layers(t)
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		if from == "docs" || from == "" {
			continue
		}
		fl, ok := layerOf(rows, from)
		if !ok {
			t.Errorf("%s is in no layer of design.md", from)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			tl, ok := layerOf(rows, to)
			if !ok {
				continue // reported as its own package
			}
			if tl < fl {
				t.Errorf("%s (layer %d) imports %s (layer %d, above it)", from, fl, to, tl)
			}
			engine := to == "storage/sqlite" || to == "storage/postgres"
			// cmd/graphbench measures the Postgres saver itself.
			if engine && from != "storage" && !strings.HasPrefix(from, "storage/") && from != "cmd/graphbench" {
				t.Errorf("%s imports the engine %s: only storage chooses an engine", from, to)
			}
		}
	}
}

// TestRunServiceKnowsNoSlack: the research package imports nothing of
// Slack, and none of its files (but tests) says anything of it either:
// the run's words, its store contract, its lifecycle (the Service) and the
// Runner are every face's; Slack's records are slackstate's.
func TestRunServiceKnowsNoSlack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-deps", "./research")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "slack") || dep == module+"/bot" || strings.HasPrefix(dep, module+"/bot/") {
			t.Errorf("research depends on %s", dep)
		}
	}
	word := regexp.MustCompile(`(?i)slack|socket mode|thread_?ts`)
	files, err := filepath.Glob("../research/*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		checked++
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if word.MatchString(line) {
				t.Errorf("%s:%d speaks of Slack: %s", file, i+1, strings.TrimSpace(line))
			}
		}
	}
	if checked < 5 {
		t.Errorf("checked %d files of research/: the glob finds too few", checked)
	}
}
