package schedule

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"deepresearch/agent/links"
	"deepresearch/research"
	"deepresearch/tools/search"
)

// WhatsNew is this run's findings and sources split by whether an earlier
// digest of the schedule already reported them.
type WhatsNew struct {
	Since         time.Time // due time of the previous digest; zero for the first
	NewFindings   []string
	KnownFindings []string
	NewSources    []research.Source
	KnownSources  []research.Source
}

// First reports whether there was no previous digest to compare with.
func (w WhatsNew) First() bool { return w.Since.IsZero() }

// SimilarityThreshold is the Dice coefficient over word (or, for CJK text,
// character-bigram) sets above which two findings say the same thing, if
// they also mention the same numbers.
const SimilarityThreshold = 0.6

// Compare splits findings and sources into new and known against prev
// (nil: everything is new). Sources match by normalised URL
// (tools/search.NormalizeURL); findings by text similarity.
func Compare(prev *Firing, findings []string, sources []research.Source) WhatsNew {
	var w WhatsNew
	var old findingSet
	oldS := map[string]bool{}
	if prev != nil && prev.Digest != nil {
		w.Since = prev.Due
		for _, f := range prev.Digest.Findings {
			old = append(old, sign(f))
		}
		addSources(oldS, nil, prev.Digest.Sources)
	}
	for _, f := range dedupeFindings(findings) {
		if old.has(sign(f)) {
			w.KnownFindings = append(w.KnownFindings, f)
		} else {
			w.NewFindings = append(w.NewFindings, f)
		}
	}
	for _, s := range addSources(map[string]bool{}, nil, sources) {
		if oldS[sourceKey(s.URL)] {
			w.KnownSources = append(w.KnownSources, s)
		} else {
			w.NewSources = append(w.NewSources, s)
		}
	}
	return w
}

// Carry returns the digest record to keep for the next comparison: this
// run's findings and sources first, then the earlier ones not seen again (so
// something reported two digests ago is still known), capped.
func Carry(prev *Firing, findings []string, sources []research.Source) ([]string, []research.Source) {
	const maxFindings, maxSources = 300, 500
	outF := dedupeFindings(findings)
	var sigs findingSet
	for _, f := range outF {
		sigs = append(sigs, sign(f))
	}
	keys := map[string]bool{}
	outS := addSources(keys, nil, sources)
	if prev != nil && prev.Digest != nil {
		for _, f := range prev.Digest.Findings {
			if sig := sign(f); !sigs.has(sig) {
				outF, sigs = append(outF, f), append(sigs, sig)
			}
		}
		outS = addSources(keys, outS, prev.Digest.Sources)
	}
	return outF[:min(len(outF), maxFindings)], outS[:min(len(outS), maxSources)]
}

// addSources appends to out the sources whose normalised URL is not in
// keys yet, and adds their keys.
func addSources(keys map[string]bool, out, sources []research.Source) []research.Source {
	for _, s := range sources {
		if k := sourceKey(s.URL); k != "" && !keys[k] {
			keys[k] = true
			out = append(out, s)
		}
	}
	return out
}

func sourceKey(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return ""
	}
	if n, err := search.NormalizeURL(u); err == nil {
		return n
	}
	return strings.ToLower(u)
}

// dedupeFindings returns the findings, trimmed, without empty ones and
// those that say what an earlier one says.
func dedupeFindings(fs []string) []string {
	var out []string
	var sigs findingSet
	for _, f := range fs {
		f = strings.TrimSpace(f)
		if sig := sign(f); f != "" && !sigs.has(sig) {
			out, sigs = append(out, f), append(sigs, sig)
		}
	}
	return out
}

// signature is what a finding is compared by: its terms and the numbers
// it mentions.
type signature struct {
	tokens  map[string]bool
	numbers string // the numbers mentioned, in order
}

// findingSet holds the signatures of findings.
type findingSet []signature

// has reports whether the set holds a finding that says what sig says.
func (fs findingSet) has(sig signature) bool { return slices.ContainsFunc(fs, sig.similar) }

var reNumber = regexp.MustCompile(`\d+(?:[.,]\d+)*`)

// sign signs a finding, markdown stripped: its terms are those a report
// is searched by (research.ReportTerms: lower-cased words of letters and
// digits, and character bigrams of CJK runs, which have no spaces).
func sign(s string) signature {
	s = stripMarkdown(s)
	sig := signature{tokens: map[string]bool{}, numbers: strings.Join(reNumber.FindAllString(s, -1), " ")}
	for _, t := range research.ReportTerms(s) {
		sig.tokens[t] = true
	}
	return sig
}

func (a signature) similar(b signature) bool {
	if a.numbers != b.numbers || len(a.tokens) == 0 || len(b.tokens) == 0 {
		return false
	}
	inter := 0
	for t := range a.tokens {
		if b.tokens[t] {
			inter++
		}
	}
	return 2*float64(inter)/float64(len(a.tokens)+len(b.tokens)) >= SimilarityThreshold
}

var (
	reFootnote = regexp.MustCompile(`\[\^[^\]]*\]`)
	reLink     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	reBullet   = regexp.MustCompile(`^\s*(?:[-*•・]|\d+[.)])\s+`)
	reHeading  = regexp.MustCompile(`^(#{1,6})\s+(.*)$`)
)

func stripMarkdown(s string) string {
	s = reFootnote.ReplaceAllString(s, "")
	s = reLink.ReplaceAllString(s, "$1")
	s = strings.NewReplacer("**", "", "__", "", "`", "").Replace(s)
	return strings.TrimSpace(s)
}

var findingsHeadings = []string{"key findings", "findings", "summary", "executive summary", "主な発見", "主な調査結果", "要約", "概要", "調査結果", "エグゼクティブサマリー"}

// ExtractFindings pulls the findings out of an agent's summary and report:
// the bullets of the summary; else the bullets under a "Key findings" /
// "Summary" (or Japanese) heading of the report; else the summary's
// sentences. At most 20, markdown stripped.
func ExtractFindings(summary, report string) []string {
	fs := bullets(summary)
	if len(fs) == 0 {
		fs = bullets(findingsSection(report))
	}
	if len(fs) == 0 {
		fs = sentences(stripMarkdown(summary))
	}
	return fs[:min(len(fs), 20)]
}

// findingsSection is the text under the report's first headings that name
// its findings or summary (findingsHeadings).
func findingsSection(report string) string {
	var section []string
	in := false
	for _, line := range strings.Split(report, "\n") {
		if m := reHeading.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			title := strings.ToLower(m[2])
			in = slices.ContainsFunc(findingsHeadings, func(h string) bool { return strings.Contains(title, h) })
			if len(section) > 0 && !in {
				break
			}
			continue
		}
		if in {
			section = append(section, line)
		}
	}
	return strings.Join(section, "\n")
}

func bullets(md string) []string {
	var out []string
	for _, line := range strings.Split(md, "\n") {
		if loc := reBullet.FindStringIndex(line); loc != nil {
			if t := stripMarkdown(line[loc[1]:]); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

func sentences(s string) []string {
	var out []string
	var cur strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		cur.WriteRune(r)
		end := r == '。' || r == '！' || r == '？' || ((r == '.' || r == '!' || r == '?') && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])))
		if end || r == '\n' {
			if t := strings.TrimSpace(cur.String()); t != "" {
				out = append(out, t)
			}
			cur.Reset()
		}
	}
	if t := strings.TrimSpace(cur.String()); t != "" {
		out = append(out, t)
	}
	return out
}

// DateLabel formats a due time for people: "2026-03-09 09:00 JST".
func DateLabel(t time.Time) string { return t.Format("2006-01-02 15:04 MST") }

// ComposeReport writes the digest's markdown file: what is new since the
// previous digest first, then what is only referenced, then the full report
// with its headings moved under "Full report".
func ComposeReport(sc Schedule, due time.Time, w WhatsNew, r research.Result) string {
	var b strings.Builder
	title := strings.TrimSpace(r.Title)
	if title == "" {
		title = sc.Topic
	}
	fmt.Fprintf(&b, "# %s — digest of %s\n\n", oneLine(title), DateLabel(due))
	fmt.Fprintf(&b, "> Scheduled research: %s (`%s`, %s)\n\n", oneLine(sc.Topic), sc.Spec, sc.Location())
	if w.First() {
		b.WriteString("## Findings\n\n_First digest of this schedule: everything below is new._\n\n")
	} else {
		fmt.Fprintf(&b, "## New since %s\n\n", DateLabel(w.Since.In(due.Location())))
	}
	if len(w.NewFindings) == 0 && len(w.NewSources) == 0 {
		b.WriteString("_Nothing new since the previous digest._\n\n")
	}
	if len(w.NewFindings) > 0 {
		b.WriteString("### New findings\n\n")
		for _, f := range w.NewFindings {
			fmt.Fprintf(&b, "- %s\n", oneLine(f))
		}
		b.WriteString("\n")
	}
	if len(w.NewSources) > 0 {
		b.WriteString("### New sources\n\n")
		for _, s := range w.NewSources {
			fmt.Fprintf(&b, "- %s\n", mdLink(s))
		}
		b.WriteString("\n")
	}
	if len(w.KnownFindings) > 0 || len(w.KnownSources) > 0 {
		b.WriteString("## Already reported\n\n")
		if len(w.KnownFindings) > 0 {
			fmt.Fprintf(&b, "Still current from earlier digests (%d):\n\n", len(w.KnownFindings))
			for _, f := range w.KnownFindings {
				fmt.Fprintf(&b, "- %s\n", truncate(oneLine(f), 140))
			}
			b.WriteString("\n")
		}
		if len(w.KnownSources) > 0 {
			fmt.Fprintf(&b, "Sources seen before (%d): ", len(w.KnownSources))
			parts := make([]string, len(w.KnownSources))
			for i, s := range w.KnownSources {
				parts[i] = mdLink(s)
			}
			b.WriteString(strings.Join(parts, " · "))
			b.WriteString("\n\n")
		}
	}
	if rep := strings.TrimSpace(r.Report); rep != "" {
		b.WriteString("## Full report\n\n")
		b.WriteString(demoteHeadings(rep, 2))
		b.WriteString("\n")
	}
	// Only the sources read (in this run or the schedule's earlier ones)
	// are links, and none shows another address (a page titled with a URL);
	// the report's links to its own charts stay.
	text, refs := holdChartRefs(b.String(), r.Charts)
	text = links.Markdown(text, digestLinks(r, w))
	for i, ref := range refs {
		text = strings.ReplaceAll(text, chartToken(i), ref)
	}
	return text
}

// chartRefRE is a report's link to one of its charts: ![alt](chart-1.png).
var chartRefRE = regexp.MustCompile(`!\[[^\[\]\n]*\]\(([A-Za-z0-9-]+\.png)\)`)

func chartToken(i int) string { return fmt.Sprintf("DRCHARTREF%dX", i) }

// holdChartRefs replaces the links to the charts a result has by tokens
// (see chartToken) that links.Markdown leaves alone, and returns them.
func holdChartRefs(text string, charts []research.Chart) (string, []string) {
	var refs []string
	text = chartRefRE.ReplaceAllStringFunc(text, func(m string) string {
		name := chartRefRE.FindStringSubmatch(m)[1]
		if !slices.ContainsFunc(charts, func(c research.Chart) bool { return c.Name == name }) {
			return m
		}
		refs = append(refs, m)
		return chartToken(len(refs) - 1)
	})
	return text, refs
}

// digestLinks is the set of addresses a digest may link: the sources its
// run read and those the schedule's earlier digests listed.
func digestLinks(r research.Result, w WhatsNew) links.Set {
	urls := slices.Clone(r.Links)
	for _, srcs := range [][]research.Source{r.Cited, w.NewSources, w.KnownSources} {
		for _, s := range srcs {
			urls = append(urls, s.URL)
		}
	}
	return links.NewSet(urls...)
}

func mdLink(s research.Source) string {
	title := oneLine(s.Title)
	if title == "" {
		title = s.URL
	}
	title = strings.NewReplacer("[", "(", "]", ")").Replace(title)
	return fmt.Sprintf("[%s](%s)", title, strings.ReplaceAll(s.URL, ")", "%29"))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// demoteHeadings adds levels to markdown headings outside code fences.
func demoteHeadings(md string, levels int) string {
	lines := strings.Split(md, "\n")
	fence := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		if !fence && reHeading.MatchString(t) {
			n := min(len(t)-len(strings.TrimLeft(t, "#"))+levels, 6)
			lines[i] = strings.Repeat("#", n) + " " + strings.TrimSpace(strings.TrimLeft(t, "#"))
		}
	}
	return strings.Join(lines, "\n")
}
