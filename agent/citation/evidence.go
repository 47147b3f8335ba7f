package citation

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Evidence is a piece of evidence collected in the run, which a report may
// cite by its id ("[E12]") instead of copying it: the program, not the
// model, then writes the footnote (the exact span read, the title, the
// canonical URL). The quote is still verified against the page like any
// other.
type Evidence struct {
	Quote string
	Title string
	URL   string
	// Claim is what the evidence says, in the report's language.
	Claim string
}

// EvidenceAt lists the evidence collected from the page at a URL (as the
// Lookup names it).
type EvidenceAt func(url string) []Evidence

// EvidenceLookup finds evidence by its number (12 for "E12"); ok is false
// for an id the run never gave out.
type EvidenceLookup func(n int) (Evidence, bool)

var (
	// an evidence id: "E12", "e12", "E 12", "E-12" (what small models write)
	evidenceIDRE = regexp.MustCompile(`^\^?[Ee][-\s]?(\d{1,5})$`)
	// a bracketed group of ids in the text: "[E12]", "[E12, E15]",
	// "[E12][E15]" is two groups, "【E12】", "(E12)", "[^E12]"
	evidenceGroupRE = regexp.MustCompile(`[\[【(（]\s*(\^?[Ee][-\s]?\d{1,5}(?:\s*[,;，、；]\s*\^?[Ee]?[-\s]?\d{1,5})*)\s*[\]】)）]`)
	// a footnote's text that names an id first: "E12", "[E12] …", "(E12)"
	evidenceDefRE = regexp.MustCompile(`^\s*[\[【(（]?\s*[Ee][-\s]?(\d{1,5})\b\s*[\]】)）]?`)
)

// evidenceIDs parses "E12, E15" (and "E12, 15") into numbers; ok is false
// when anything else stands in the group.
func evidenceIDs(s string) ([]int, bool) {
	var out []int
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(",;，、；", r) }) {
		p = strings.TrimSpace(p)
		if p != "" && p[0] >= '0' && p[0] <= '9' {
			p = "E" + p
		}
		m := evidenceIDRE.FindStringSubmatch(p)
		if m == nil {
			return nil, false
		}
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out, len(out) > 0
}

func evidenceLabel(n int) string { return "E" + strconv.Itoa(n) }

// resolveEvidence turns citations by evidence id into footnotes: "[E12]" in
// the text becomes the marker "[^E12]", and a footnote whose label or text
// names an id ("[^E12]: …", "[^3]: E12", "[^3]: [E12] "…" — …") cites that
// evidence whatever else it says. It returns the text without the
// definitions it replaced and the number each label cites.
func resolveEvidence(report string) (string, map[string]int) {
	lines := strings.Split(report, "\n")
	cites := map[string]int{}
	inFence := false
	out := lines[:0:0]
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if strings.HasPrefix(strings.TrimSpace(ln), "```") {
			inFence = !inFence
		}
		if inFence {
			out = append(out, ln)
			continue
		}
		if m := defRE.FindStringSubmatch(ln); m != nil {
			n := 0
			if id := evidenceIDRE.FindStringSubmatch(m[1]); id != nil {
				n, _ = strconv.Atoi(id[1])
			} else if id := evidenceDefRE.FindStringSubmatch(m[2]); id != nil {
				n, _ = strconv.Atoi(id[1])
			}
			if n > 0 {
				if _, seen := cites[m[1]]; !seen {
					cites[m[1]] = n
				}
				for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") && strings.TrimSpace(lines[i+1]) != "" {
					i++
				}
				continue
			}
		}
		ln = evidenceGroupRE.ReplaceAllStringFunc(ln, func(g string) string {
			inner := evidenceGroupRE.FindStringSubmatch(g)[1]
			ns, ok := evidenceIDs(inner)
			if !ok {
				return g
			}
			var b strings.Builder
			for _, n := range ns {
				l := evidenceLabel(n)
				cites[l] = n
				b.WriteString("[^" + l + "]")
			}
			return b.String()
		})
		out = append(out, ln)
	}
	return strings.Join(out, "\n"), cites
}

// evidenceDef is the footnote the program writes for a label that cites
// evidence: defLine renders it from the record.
func evidenceDef(label string, e Evidence) *def {
	return &def{label: label, quote: strings.TrimSpace(e.Quote), title: e.Title, url: e.URL, evidence: true}
}

// stopWords are words too common to say two texts speak of the same thing.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for that with from this are was were has have had its their which will been into than
		more also but not can may per such these those there they them then when what who whom how all any our out over
		under about after before between said says say its it's one two`) {
		m[w] = true
	}
	return m
}()

// contentTokens are what a paraphrase keeps of the text it restates: the
// words of three letters or more and the numbers (Latin script), and pairs
// of adjacent characters (Japanese and Chinese, which have no spaces).
func contentTokens(s string) map[string]bool {
	f := fold(s)
	out := map[string]bool{}
	ws := f.words(0, len(f.r))
	for i, w := range ws {
		r := []rune(w)
		switch {
		case len(r) == 1 && isCJK(r[0]):
			if i+1 < len(ws) {
				if n := []rune(ws[i+1]); len(n) == 1 && isCJK(n[0]) {
					out[w+ws[i+1]] = true
				}
			}
		case unicode.IsDigit(r[0]) || len(r) >= 3 && !stopWords[w]:
			out[w] = true
		}
	}
	return out
}

// overlap is the share of a's tokens that b has.
func overlap(a, b map[string]bool) float64 {
	if len(a) == 0 {
		return 0
	}
	n := 0
	for t := range a {
		if b[t] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// minRestated is the share of a translated quote's words that the claim of
// a piece of evidence must have for the quote to be taken as a translation
// of it.
const minRestated = 0.6

// restated finds the evidence of a page that a quote the page does not
// have stands for, where that can be told from the words alone:
//
//   - the quote is a researcher's wording: the claim of a piece of
//     evidence, up to what the matcher forgives on a page;
//   - the quote merges passages of the page: each part (split at ";",
//     ",", "and", "、") is on the page, and the first is evidence;
//   - the quote is a translation (its language is not the page's): most
//     of its words are the claim's, which is in the report's language,
//     with no number the evidence lacks and no negation added or dropped.
//
// A paraphrase in the page's own language is not taken: it cannot be told
// from a near copy with one fact changed ("two days" for "three days", a
// title swapped), which must stay unverified. Citing the evidence by id is
// how a paraphrasing model keeps its citations.
func restated(m *Matcher, doc Doc, written string, cands []Evidence) (Evidence, bool) {
	if len(cands) == 0 {
		return Evidence{}, false
	}
	for _, e := range cands {
		if _, ok := m.Find(Doc{Text: e.Claim}, written); ok && strings.TrimSpace(e.Claim) != "" {
			return e, true
		}
	}
	if e, ok := merged(m, doc, written, cands); ok {
		return e, true
	}
	if guessLanguage(written) == guessLanguage(doc.Text) {
		return Evidence{}, false
	}
	return translated(written, cands)
}

// translated finds the evidence a quote in another language than the page
// translates: the one whose claim shares most of its words, with no number
// the evidence lacks and no negation added or dropped.
func translated(written string, cands []Evidence) (Evidence, bool) {
	w := contentTokens(written)
	if len(w) < 3 {
		return Evidence{}, false
	}
	best, bestSim := -1, 0.0
	for i, e := range cands {
		if sim := overlap(w, contentTokens(e.Claim)); sim > bestSim {
			best, bestSim = i, sim
		}
	}
	if best < 0 || bestSim < minRestated {
		return Evidence{}, false
	}
	e := cands[best]
	wf := fold(written)
	nums := append(digitRuns(wf.r), numberWords(wf.words(0, len(wf.r)))...)
	var have []string
	for _, t := range []string{e.Claim, e.Quote} {
		f := fold(t) // each on its own: folding drops what parts numbers
		have = append(append(have, digitRuns(f.r)...), numberWords(f.words(0, len(f.r)))...)
	}
	for _, n := range nums {
		if !slices.Contains(have, n) {
			return Evidence{}, false
		}
	}
	if (negations(e.Claim) > 0) != (negations(written) > 0) {
		return Evidence{}, false
	}
	return e, true
}

// mergeSplitRE splits a quote that merges passages of a page.
var mergeSplitRE = regexp.MustCompile(`\s*(?:[;；,、，]|\band\b|\bwhile\b|\bwith\b)\s*`)

// merged verifies a quote that joins passages of the page: every part is
// on the page; the evidence returned holds the first.
func merged(m *Matcher, doc Doc, written string, cands []Evidence) (Evidence, bool) {
	var parts []string
	for _, p := range mergeSplitRE.Split(written, -1) {
		if foldedLen(p) > 0 {
			parts = append(parts, p)
		}
	}
	if len(parts) < 2 {
		return Evidence{}, false
	}
	// short parts join the part before them ("…, the ministry said")
	var joined []string
	for _, p := range parts {
		if n := len(joined); n > 0 && foldedLen(p) < 12 {
			joined[n-1] += " " + p
			continue
		}
		joined = append(joined, p)
	}
	if len(joined) < 2 {
		return Evidence{}, false
	}
	var first Match
	for i, p := range joined {
		mt, ok := m.Find(doc, p)
		if !ok {
			return Evidence{}, false
		}
		if i == 0 {
			first = mt
		}
	}
	for _, e := range cands {
		if mt, ok := m.Find(Doc{Text: e.Quote}, first.Quote); ok && mt.Exact {
			return e, true
		}
	}
	return Evidence{}, false
}
