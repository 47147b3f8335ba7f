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
	var oldF []string
	oldS := map[string]bool{}
	if prev != nil && prev.Digest != nil {
		w.Since = prev.Due
		oldF = prev.Digest.Findings
		for _, s := range prev.Digest.Sources {
			oldS[sourceKey(s.URL)] = true
		}
	}
	oldSig := make([]signature, len(oldF))
	for i, f := range oldF {
		oldSig[i] = sign(f)
	}
	seen := map[string]bool{}
	for _, f := range dedupeFindings(findings) {
		sig := sign(f)
		known := false
		for _, o := range oldSig {
			if sig.similar(o) {
				known = true
				break
			}
		}
		if known {
			w.KnownFindings = append(w.KnownFindings, f)
		} else {
			w.NewFindings = append(w.NewFindings, f)
		}
	}
	for _, s := range sources {
		k := sourceKey(s.URL)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		if oldS[k] {
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
	sigs := make([]signature, len(outF))
	for i, f := range outF {
		sigs[i] = sign(f)
	}
	keys := map[string]bool{}
	var outS []research.Source
	for _, s := range sources {
		if k := sourceKey(s.URL); k != "" && !keys[k] {
			keys[k] = true
			outS = append(outS, s)
		}
	}
	if prev != nil && prev.Digest != nil {
	next:
		for _, f := range prev.Digest.Findings {
			sig := sign(f)
			for _, s := range sigs {
				if sig.similar(s) {
					continue next
				}
			}
			outF, sigs = append(outF, f), append(sigs, sig)
		}
		for _, s := range prev.Digest.Sources {
			if k := sourceKey(s.URL); k != "" && !keys[k] {
				keys[k] = true
				outS = append(outS, s)
			}
		}
	}
	if len(outF) > maxFindings {
		outF = outF[:maxFindings]
	}
	if len(outS) > maxSources {
		outS = outS[:maxSources]
	}
	return outF, outS
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

func dedupeFindings(fs []string) []string {
	var out []string
	var sigs []signature
next:
	for _, f := range fs {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		sig := sign(f)
		for _, s := range sigs {
			if sig.similar(s) {
				continue next
			}
		}
		out, sigs = append(out, f), append(sigs, sig)
	}
	return out
}

type signature struct {
	tokens  map[string]bool
	numbers string // the numbers mentioned, in order
}

var reNumber = regexp.MustCompile(`\d+(?:[.,]\d+)*`)

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// sign tokenises a finding: lower-cased words of letters and digits, and
// character bigrams of CJK runs (which have no spaces).
func sign(s string) signature {
	s = stripMarkdown(s)
	sig := signature{tokens: map[string]bool{}, numbers: strings.Join(reNumber.FindAllString(s, -1), " ")}
	var word []rune
	var cjk []rune
	flushWord := func() {
		if len(word) > 0 {
			sig.tokens[strings.ToLower(string(word))] = true
			word = word[:0]
		}
	}
	flushCJK := func() {
		switch {
		case len(cjk) == 1:
			sig.tokens[string(cjk)] = true
		case len(cjk) > 1:
			for i := 0; i+1 < len(cjk); i++ {
				sig.tokens[string(cjk[i:i+2])] = true
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range s {
		switch {
		case isCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushCJK()
			word = append(word, r)
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
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
	if fs := bullets(summary); len(fs) > 0 {
		return capN(fs, 20)
	}
	var section []string
	in := false
	for _, line := range strings.Split(report, "\n") {
		if m := reHeading.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			title := strings.ToLower(strings.TrimSpace(m[2]))
			in = false
			for _, h := range findingsHeadings {
				if strings.Contains(title, h) {
					in = true
				}
			}
			if len(section) > 0 && !in {
				break
			}
			continue
		}
		if in {
			section = append(section, line)
		}
	}
	if fs := bullets(strings.Join(section, "\n")); len(fs) > 0 {
		return capN(fs, 20)
	}
	return capN(sentences(stripMarkdown(summary)), 20)
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

func capN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
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
	fmt.Fprintf(&b, "> Scheduled research: %s (`%s`, %s)\n\n", oneLine(sc.Topic), sc.Spec, orUTC(sc.TZ))
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
		for _, c := range charts {
			if c.Name == name {
				refs = append(refs, m)
				return chartToken(len(refs) - 1)
			}
		}
		return m
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

func orUTC(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
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
