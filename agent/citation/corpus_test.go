package citation

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// section splits a corpus file into its "-- name --" sections; lines before
// the first section and lines starting with "#" before it are comments.
type section struct{ name, body string }

func sections(t testing.TB, path string) []section {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []section
	for _, ln := range strings.SplitAfter(string(data), "\n") {
		trim := strings.TrimSpace(ln)
		if strings.HasPrefix(trim, "-- ") && strings.HasSuffix(trim, " --") {
			out = append(out, section{name: strings.TrimSpace(trim[3 : len(trim)-3])})
			continue
		}
		if len(out) == 0 {
			continue
		}
		out[len(out)-1].body += ln
	}
	return out
}

// corpusDocs loads testdata/pages.txt: "-- page URL | Title --" sections.
func corpusDocs(t testing.TB) map[string]Doc {
	t.Helper()
	docs := map[string]Doc{}
	for _, s := range sections(t, filepath.Join("testdata", "pages.txt")) {
		spec, ok := strings.CutPrefix(s.name, "page ")
		if !ok {
			t.Fatalf("pages.txt: unexpected section %q", s.name)
		}
		u, title, _ := strings.Cut(spec, " | ")
		docs[u] = Doc{URL: u, Title: title, Text: s.body}
	}
	return docs
}

// corpusLook looks pages up in the corpus.
func corpusLook(t testing.TB) func(string) (Doc, bool) {
	t.Helper()
	docs := corpusDocs(t)
	return func(u string) (Doc, bool) {
		d, ok := docs[u]
		return d, ok
	}
}

// expectation is one citation of a corpus report: its label as written,
// whether its quote is on the page verbatim ("exact"), nearly ("near") or
// not at all ("fab"), and optionally words of the quote as written, to tell
// apart two quotes cited with the same label.
type expectation struct {
	label, class, key string
}

type corpusCase struct {
	name   string
	report string
	expect []expectation
}

func corpusCases(t testing.TB) []corpusCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out []corpusCase
	for _, f := range files {
		c := corpusCase{name: strings.TrimSuffix(filepath.Base(f), ".txt")}
		for _, s := range sections(t, f) {
			switch s.name {
			case "report":
				c.report = s.body
			case "expect":
				for _, ln := range strings.Split(strings.TrimSpace(s.body), "\n") {
					spec, key, _ := strings.Cut(ln, " | ")
					fs := strings.Fields(spec)
					if len(fs) != 2 || (fs[1] != "exact" && fs[1] != "near" && fs[1] != "fab") {
						t.Fatalf("%s: bad expectation %q", f, ln)
					}
					c.expect = append(c.expect, expectation{label: fs[0], class: fs[1], key: strings.TrimSpace(key)})
				}
			}
		}
		if c.report == "" || len(c.expect) == 0 {
			t.Fatalf("%s: needs a report and expectations", f)
		}
		out = append(out, c)
	}
	return out
}

// survived reports whether the citation e kept its source in the check.
func survived(rep Report, e expectation) bool {
	for _, f := range rep.Footnotes {
		if f.Label != e.label {
			continue
		}
		if e.key != "" && !strings.Contains(f.Written+f.Quote, e.key) {
			continue
		}
		if f.Status == Verified {
			return true
		}
	}
	return false
}

// yield counts, over the corpus, the citations whose quote is on the page
// (verbatim or nearly) and those that are fabricated, and how many of each
// survived the check.
type yield struct {
	onPage, onPageKept, fab, fabKept int
	lost, leaked                     []string
}

func (y yield) String() string {
	return fmt.Sprintf("on-page citations kept %d/%d (%.1f%%), fabricated kept %d/%d (%.1f%%)",
		y.onPageKept, y.onPage, pct(y.onPageKept, y.onPage), y.fabKept, y.fab, pct(y.fabKept, y.fab))
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func measure(t testing.TB) yield {
	look := corpusLook(t)
	var y yield
	for _, c := range corpusCases(t) {
		_, rep := Check(c.report, look, Options{})
		for _, e := range c.expect {
			kept := survived(rep, e)
			id := c.name + " " + e.label + " " + e.key
			switch e.class {
			case "fab":
				y.fab++
				if kept {
					y.fabKept++
					y.leaked = append(y.leaked, id)
				}
			default:
				y.onPage++
				if kept {
					y.onPageKept++
				} else {
					y.lost = append(y.lost, id+" ("+e.class+")")
				}
			}
		}
	}
	return y
}

// TestCorpusYield measures the share of citations that survive the check on
// a corpus of varied model outputs: at least 95% of those whose quote is on
// the page (verbatim or nearly) and none of the fabricated ones.
func TestCorpusYield(t *testing.T) {
	y := measure(t)
	t.Logf("YIELD %s", y)
	for _, id := range y.lost {
		t.Logf("lost: %s", id)
	}
	if y.onPage < 60 || y.fab < 20 {
		t.Fatalf("corpus too small: %d on-page, %d fabricated citations", y.onPage, y.fab)
	}
	if pct(y.onPageKept, y.onPage) < 95 {
		t.Errorf("only %d of %d on-page citations survived (want >= 95%%)", y.onPageKept, y.onPage)
	}
	if y.fabKept != 0 {
		t.Errorf("fabricated citations survived: %v", y.leaked)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files of the corpus")

// TestCorpusGolden keeps the checked report of every corpus case in a golden
// file (go test -run TestCorpusGolden -update rewrites them), so a change in
// how reports are rewritten shows in review.
func TestCorpusGolden(t *testing.T) {
	look := corpusLook(t)
	for _, c := range corpusCases(t) {
		t.Run(c.name, func(t *testing.T) {
			out, rep := Check(c.report, look, Options{})
			got := fmt.Sprintf("%s\n-- cited %d, verified %d (repaired %d), dropped %d --\n", out, rep.Cited, rep.Verified, rep.Repaired, rep.Dropped)
			path := filepath.Join("testdata", "corpus", c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("checked report differs from %s:\n%s", path, got)
			}
		})
	}
}

// TestCheckTwice checks that a checked report checks the same again: what
// was kept still verifies (a report is checked again when it is revised).
func TestCheckTwice(t *testing.T) {
	look := corpusLook(t)
	for _, c := range corpusCases(t) {
		out, rep := Check(c.report, look, Options{})
		again, rep2 := Check(out, look, Options{})
		kept := map[int]bool{} // footnotes of the checked report
		for _, f := range rep.Footnotes {
			if f.Status == Verified {
				kept[f.Number] = true
			}
		}
		if again != out || rep2.Verified != len(kept) || rep2.Dropped != 0 || rep2.Repaired != 0 {
			t.Errorf("%s: second check differs (footnotes kept %d, verified again %d, dropped %d, repaired %d):\n%s\n---\n%s", c.name, len(kept), rep2.Verified, rep2.Dropped, rep2.Repaired, out, again)
		}
	}
}

// BenchmarkCheckCorpus checks every report of the corpus once per op.
func BenchmarkCheckCorpus(b *testing.B) {
	look := corpusLook(b)
	cases := corpusCases(b)
	for b.Loop() {
		for _, c := range cases {
			Check(c.report, look, Options{})
		}
	}
}
