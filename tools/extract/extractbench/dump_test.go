package extractbench

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDumpRoundTripAndCompare(t *testing.T) {
	pages := []Page{
		{ID: "a1", Set: "s", Source: "s", Type: "article", Site: "a.example"},
		{ID: "b1", Set: "s", Source: "s", Type: "forum", Site: "b.example"},
		{ID: "c1", Set: "s", Source: "s", Type: "forum", Site: "c.example"},
	}
	base := Result{Pages: []PageResult{
		{Score: PageScore{TP: 1, Exact: true}},
		{Score: PageScore{TP: 0.5, FN: 0.5}},
		{Score: PageScore{FP: 1}},
	}}
	next := Result{Pages: []PageResult{
		{Score: PageScore{TP: 1, Exact: true}},
		{Score: PageScore{TP: 1}},
		{Score: PageScore{FP: 1}},
	}}
	dir := t.TempDir()
	write := func(name string, r Result) string {
		path := filepath.Join(dir, name)
		var b strings.Builder
		if err := WriteDump(&b, pages, r); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, b.String())
		return path
	}
	bp, np := write("base.tsv", base), write("next.tsv", next)
	got, r, err := ReadDump(bp)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1].Type != "forum" || got[2].Site != "c.example" || r.Pages[1].Score.TP != 0.5 || !r.Pages[0].Score.Exact {
		t.Fatalf("ReadDump = %+v, %+v", got, r.Pages)
	}
	var out strings.Builder
	if err := WriteComparison(&out, bp, np, 2); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "# 1 pages moved") || !strings.Contains(s, "+0.333  0.667→1.000  forum      b1") {
		t.Errorf("comparison does not report the page that moved:\n%s", s)
	}
	if !strings.Contains(s, "# folds by site (2 folds) and source corpus: mean F1 / worst fold") {
		t.Errorf("comparison lacks the folds by site and source corpus:\n%s", s)
	}
	// b1 is in some fold's training pages, so the training F1 of "all"
	// rises at least once and never falls.
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "all ") && (strings.Contains(line, "up 0 ") || !strings.Contains(line, "down 0 ")) {
			t.Errorf("all: want training F1 up and never down: %s", line)
		}
	}
	if err := WriteComparison(&out, bp, filepath.Join(dir, "missing.tsv"), 2); err == nil {
		t.Error("comparing with a missing dump: want an error")
	}
}
