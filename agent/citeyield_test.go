package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deepresearch/agent/citation"
)

// The citation-yield corpus (testdata/citeyield): model behaviours a
// report's citations must survive when the claim rests on evidence, and
// must not when it does not. world.txt holds the pages read and the
// evidence collected; each case a report and what each citation is.

type yieldSection struct{ name, body string }

func yieldSections(t testing.TB, path string) []yieldSection {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []yieldSection
	for _, ln := range strings.SplitAfter(string(data), "\n") {
		trim := strings.TrimSpace(ln)
		if strings.HasPrefix(trim, "-- ") && strings.HasSuffix(trim, " --") {
			out = append(out, yieldSection{name: strings.TrimSpace(trim[3 : len(trim)-3])})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].body += ln
		}
	}
	return out
}

func parseEvidence(t testing.TB, body string) []Finding {
	t.Helper()
	var fs []Finding
	for _, ln := range strings.Split(strings.TrimSpace(body), "\n") {
		p := strings.SplitN(ln, " | ", 3)
		if len(p) != 3 {
			t.Fatalf("bad evidence line %q", ln)
		}
		u := normURL(p[0])
		fs = append(fs, Finding{ID: hashID(u, p[2]), URL: u, Claim: p[1], Quote: p[2], Kind: FindingSource, Verified: true})
	}
	return fs
}

// yieldWorld is the thread's state the corpus' reports are checked in.
func yieldWorld(t testing.TB) State {
	t.Helper()
	s := State{Sources: map[string]Source{}}
	for _, sec := range yieldSections(t, filepath.Join("testdata", "citeyield", "world.txt")) {
		kind, spec, _ := strings.Cut(sec.name, " ")
		switch kind {
		case "page":
			u, title, _ := strings.Cut(spec, " | ")
			u = normURL(u)
			s.Sources[u] = Source{URL: u, Title: title, Text: sec.body, Retrieved: true, Digest: textKey(sec.body)}
		case "redirect", "canonical":
			from, to, _ := strings.Cut(spec, " -> ")
			src := s.Sources[normURL(to)]
			s.Sources[src.URL] = withAlias(src, normURL(from))
			if kind == "redirect" {
				// as read before: the source under the link, its final URL
				// the page's
				s.Sources[normURL(from)] = Source{URL: normURL(from), FinalURL: src.URL, Title: src.Title, Text: src.Text, Retrieved: true}
			}
		case "evidence":
			s.Findings = parseEvidence(t, sec.body)
		}
	}
	return s
}

type yieldCase struct {
	name, report string
	evidence     []Finding // when the case has its own
	expect       []yieldExpect
}

type yieldExpect struct{ label, class, key string }

func yieldCases(t testing.TB) []yieldCase {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "citeyield", "[0-9]*.txt"))
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	var out []yieldCase
	for _, f := range files {
		c := yieldCase{name: strings.TrimSuffix(filepath.Base(f), ".txt")}
		for _, sec := range yieldSections(t, f) {
			switch sec.name {
			case "report":
				c.report = sec.body
			case "evidence":
				c.evidence = parseEvidence(t, sec.body)
			case "expect":
				for _, ln := range strings.Split(strings.TrimSpace(sec.body), "\n") {
					spec, key, _ := strings.Cut(ln, " | ")
					fs := strings.Fields(spec)
					if len(fs) != 2 || fs[1] != "ev" && fs[1] != "fab" && fs[1] != "para" {
						t.Fatalf("%s: bad expectation %q", f, ln)
					}
					c.expect = append(c.expect, yieldExpect{fs[0], fs[1], strings.TrimSpace(key)})
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// caseYield is one case's outcome: evidence-backed citations kept,
// paraphrases without an id kept, and fabricated ones kept.
type caseYield struct{ ev, evKept, para, paraKept, fab, fabKept int }

func (y caseYield) String() string {
	s := fmt.Sprintf("evidence-backed kept %d/%d (%.0f%%), fabricated kept %d/%d", y.evKept, y.ev, pct(y.evKept, y.ev), y.fabKept, y.fab)
	if y.para > 0 {
		s += fmt.Sprintf(", paraphrased without id kept %d/%d", y.paraKept, y.para)
	}
	return s
}

func (y caseYield) add(o caseYield) caseYield {
	return caseYield{y.ev + o.ev, y.evKept + o.evKept, y.para + o.para, y.paraKept + o.paraKept, y.fab + o.fab, y.fabKept + o.fabKept}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 100
	}
	return 100 * float64(a) / float64(b)
}

func keptCitation(rep citation.Report, e yieldExpect) bool {
	for _, f := range rep.Footnotes {
		if f.Label == e.label && f.Status == citation.Verified && (e.key == "" || strings.Contains(f.Context+f.Written+f.Quote, e.key)) {
			return true
		}
	}
	return false
}

// checkBefore is the check as it was: citations by URL with the quote
// written, the page found by its URL or where its redirect ended.
func checkBefore(report string, s State) citation.Report {
	final := map[string]string{}
	for u, src := range s.Sources {
		if src.FinalURL != "" {
			final[src.FinalURL] = u
		}
	}
	look := func(raw string) (citation.Doc, bool) {
		n := normURL(raw)
		src, ok := s.Sources[n]
		if !ok {
			if k, ok2 := final[n]; ok2 {
				src, ok = s.Sources[k], true
			}
		}
		return citation.Doc{URL: src.URL, Title: src.Title, Text: src.Text}, ok && src.Retrieved
	}
	_, rep := citation.Check(report, look, citation.Options{})
	return rep
}

// runYield checks every case before and after.
func runYield(t testing.TB) (names []string, before, after []caseYield) {
	world := yieldWorld(t)
	cases := yieldCases(t)
	old, oldCases := citationCorpus(t)
	for i := range oldCases {
		oldCases[i].evidence = old.Findings
	}
	cases = append(oldCases, cases...)
	for _, c := range cases {
		s := world
		if strings.HasPrefix(c.name, "citation/") {
			s = old
		}
		if c.evidence != nil {
			s.Findings = c.evidence
		}
		// the sources as the run keeps them now: one per page
		now := State{Findings: s.Findings, Sources: map[string]Source{}}
		for u, src := range s.Sources {
			if src.FinalURL == "" {
				now.Sources[u] = src
			}
		}
		_, repAfter := checkDraft(c.report, now, indexEvidence(now.Findings), citation.Drop)
		repBefore := checkBefore(c.report, s)
		var b, a caseYield
		for _, e := range c.expect {
			kb, ka := keptCitation(repBefore, e), keptCitation(repAfter, e)
			if e.class == "para" {
				b.para++
				a.para++
				if kb {
					b.paraKept++
				}
				if ka {
					a.paraKept++
				}
				continue
			}
			if e.class == "fab" {
				b.fab++
				a.fab++
				if kb {
					b.fabKept++
				}
				if ka {
					a.fabKept++
					t.Logf("%s: fabricated citation %s kept", c.name, e.label)
				}
				continue
			}
			b.ev++
			a.ev++
			if kb {
				b.evKept++
			}
			if ka {
				a.evKept++
			} else {
				t.Logf("%s: evidence-backed citation %s %s lost", c.name, e.label, e.key)
			}
		}
		names, before, after = append(names, c.name), append(before, b), append(after, a)
	}
	return names, before, after
}

// TestCitationYield: whatever the style a model cites in, at least 95% of
// the citations whose claim rests on evidence keep a verified citation, and
// none of the fabricated ones does. (A paraphrase in the page's language
// cited by URL alone, "para", is counted apart: only its id keeps it.)
func TestCitationYield(t *testing.T) {
	names, before, after := runYield(t)
	var tb, ta caseYield
	for i, n := range names {
		t.Logf("%-22s before: %s | after: %s", n, before[i], after[i])
		a := after[i]
		if pct(a.evKept, a.ev) < 95 || a.fabKept > 0 {
			t.Errorf("%s: %s", n, a)
		}
		tb, ta = tb.add(before[i]), ta.add(a)
	}
	t.Logf("%-22s before: %s | after: %s", "all", tb, ta)
}

// BenchmarkCitationYield prints the citation yield of every behaviour of
// the corpus, before (citations by URL with the quote written) and after
// (evidence ids, restatements, one URL per page).
func BenchmarkCitationYield(b *testing.B) {
	var names []string
	var before, after []caseYield
	for b.Loop() {
		names, before, after = runYield(b)
	}
	var tb, ta caseYield
	for i, n := range names {
		fmt.Printf("YIELD %-32s before: %s | after: %s\n", n, before[i], after[i])
		tb, ta = tb.add(before[i]), ta.add(after[i])
	}
	fmt.Printf("YIELD %-32s before: %s | after: %s\n", "all", tb, ta)
	_, cases := citationCorpus(b)
	refs, n := 0, 0
	for _, c := range cases {
		if t := referencesTokens(c.report); t > 0 {
			refs += t
			n++
		}
	}
	fmt.Printf("REFERENCES the model no longer writes: %d tokens in %d reports of the citation corpus (%.0f per report; bytes/4)\n", refs, n, float64(refs)/float64(n))
}

// referencesTokens estimates the output tokens a report spends on its
// reference list and footnote definitions (bytes/4), which a model citing
// by evidence id does not write.
func referencesTokens(report string) int {
	n := 0
	in := false
	for _, ln := range strings.Split(report, "\n") {
		t := strings.TrimSpace(ln)
		if strings.HasPrefix(t, "#") {
			in = refHeadRE.MatchString(t)
		}
		if in || footDefRE.MatchString(t) {
			n += len(ln) + 1
		}
	}
	return n / 4
}

// citationCorpus is the citation package's corpus (testdata/corpus there):
// reports citing by URL in the styles models use, over pages of their own.
// Every sentence of those pages is taken for evidence collected in the run,
// so that a fabricated quote has evidence of its page to pass itself off as.
func citationCorpus(t testing.TB) (State, []yieldCase) {
	t.Helper()
	dir := filepath.Join("citation", "testdata")
	s := State{Sources: map[string]Source{}}
	for _, sec := range yieldSections(t, filepath.Join(dir, "pages.txt")) {
		spec, _ := strings.CutPrefix(sec.name, "page ")
		u, title, _ := strings.Cut(spec, " | ")
		s.Sources[u] = Source{URL: u, Title: title, Text: sec.body, Retrieved: true}
		for _, sn := range sentences(sec.body) {
			s.Findings = append(s.Findings, Finding{ID: hashID(u, sn), URL: u, Title: title, Claim: sn, Quote: sn, Kind: FindingSource, Verified: true})
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "corpus", "*.txt"))
	var cases []yieldCase
	for _, f := range files {
		c := yieldCase{name: "citation/" + strings.TrimSuffix(filepath.Base(f), ".txt")}
		for _, sec := range yieldSections(t, f) {
			switch sec.name {
			case "report":
				c.report = sec.body
			case "expect":
				for _, ln := range strings.Split(strings.TrimSpace(sec.body), "\n") {
					spec, key, _ := strings.Cut(ln, " | ")
					fs := strings.Fields(spec)
					class := "ev"
					if fs[1] == "fab" {
						class = "fab"
					}
					c.expect = append(c.expect, yieldExpect{fs[0], class, strings.TrimSpace(key)})
				}
			}
		}
		cases = append(cases, c)
	}
	return s, cases
}
