// Package citation checks, deterministically, that every citation of a
// markdown report points at a document retrieved during the run and carries
// a quote that appears in the text that was read. Citations that fail are
// dropped (their markers removed and the claim marked unverified) or
// flagged, and the rest are renumbered in order of first use.
//
// The quote may stand where reports put it: right before the marker
//
//	… "exact words from the page"[^1]
//
// in “curly”, 「Japanese」 or "straight" quotation marks, or in the footnote
// definition, the format the writer is asked for:
//
//	[^3]: "exact quote" — Title, https://example.org/page
//
// Numbered references ("[1]" with a "[1] Title URL" or "1. Title - URL"
// list) and inline markdown links to the source ("([Title](url))") are
// turned into footnotes first. A quote that is close to a passage of the page
// (punctuation, ellipses, width, line breaks, a word or two) is replaced by
// the exact text of the page; one that is not is never kept.
package citation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Doc is a document retrieved in this run.
type Doc struct {
	URL   string // as cited (normalised by the caller's Lookup)
	Title string
	Text  string // the exact text that was read
}

// Lookup finds a retrieved document by the URL a footnote cites; ok is
// false when nothing at that URL was retrieved in this run.
type Lookup func(url string) (Doc, bool)

// Status is the outcome for one citation.
type Status string

// Outcomes.
const (
	Verified      Status = "verified"
	NoURL         Status = "no_url"          // the footnote names no URL
	NotRetrieved  Status = "not_retrieved"   // the URL was not read in this run
	NoQuote       Status = "no_quote"        // no quote, neither inline nor in the footnote
	QuoteTooShort Status = "quote_too_short" // a quote too short to prove anything
	QuoteNotFound Status = "quote_not_found" // the quote is not in the text read
	Undefined     Status = "undefined"       // a marker in the text with no footnote
	Unused        Status = "unused"          // a footnote never referenced

	// UnknownEvidence is a citation by an evidence id ("[E99]") the run
	// never gave out.
	UnknownEvidence Status = "unknown_evidence"
)

// Footnote is the check of one citation: a footnote used with one quote
// (the footnote's own, or one written inline before its marker).
type Footnote struct {
	Label  string `json:"label"`            // as written by the model (the URL for a markdown link)
	Number int    `json:"number,omitempty"` // after renumbering (0 when dropped)
	URL    string `json:"url,omitempty"`
	Title  string `json:"title,omitempty"`
	// Quote is the quote as kept: the exact text of the page when it was
	// repaired.
	Quote string `json:"quote,omitempty"`
	// Written is the quote as the model wrote it, when it was repaired or
	// dropped.
	Written string `json:"written,omitempty"`
	Inline  bool   `json:"inline,omitempty"` // the quote stood before the marker
	Status  Status `json:"status"`
	// Context is the text just before the first marker, to say which claim
	// lost its source.
	Context string `json:"context,omitempty"`
}

// Report is the outcome of a check.
type Report struct {
	Cited     int        `json:"cited"`              // citations referenced in the text
	Verified  int        `json:"verified"`           // kept
	Repaired  int        `json:"repaired,omitempty"` // kept with the quote replaced by the page's exact text
	Dropped   int        `json:"dropped"`            // removed (or flagged)
	Footnotes []Footnote `json:"footnotes,omitempty"`
}

// Failed returns the citations that did not verify.
func (r Report) Failed() []Footnote {
	var out []Footnote
	for _, f := range r.Footnotes {
		if f.Status != Verified {
			out = append(out, f)
		}
	}
	return out
}

// Mode says what happens to a failing citation.
type Mode int

const (
	// Drop removes the citation's markers, takes the quotation marks off
	// a quote that was not found and marks the claim unverified.
	Drop Mode = iota
	// Flag keeps the footnote but marks it "(unverified)".
	Flag
)

// Options tune a check.
type Options struct {
	Mode Mode
	// MinQuoteRunes is the shortest quote accepted, in letters and digits
	// (default 8; Japanese carries more per rune, so 8 is about a short
	// clause in either language). A shorter quoted phrase before a
	// marker is not taken for the citation's quote.
	MinQuoteRunes int
	// ReferencesHeading is the heading put above the footnotes
	// (default "## References").
	ReferencesHeading string
	// Language of the report ("ja" or other) for the unverified mark;
	// guessed from the report when empty.
	Language string
	// Evidence, when set, resolves citations by evidence id ("[E12]",
	// "[^3]: E12"): their footnotes are written from the evidence record,
	// not from what the model wrote.
	Evidence EvidenceLookup
	// EvidenceAt, when set, lets a quote the page does not have still
	// back its claim when it restates evidence collected from that page
	// (a paraphrase, a translation, two sentences merged): the footnote
	// then quotes the evidence, and the quotation marks go.
	EvidenceAt EvidenceAt
}

var (
	defRE    = regexp.MustCompile(`^\s{0,3}\[\^([^\]\s]+)\]:\s?(.*)$`)
	markerRE = regexp.MustCompile(`\[\^([^\]\s]+)\]`)
	urlRE    = regexp.MustCompile(`(?:https?|doc|mcp|file|deepresearch)://[^\s<>()\[\]"“”「」]+`)
	refHdrRE = regexp.MustCompile(`(?i)^#{1,6}\s*(references|sources|参考文献|出典|参照|情報源)\s*$`)
)

// quote pairs tried in order.
var quotePairs = [][2]string{{"\"", "\""}, {"“", "”"}, {"「", "」"}, {"『", "』"}, {"„", "“"}, {"«", "»"}}

// parseDef splits a footnote's text into quote, title and URL. The quote is
// the longest quoted passage that is not the URL; the title what is left
// before the URL (or after it) without separators.
func parseDef(text string) (quote, title, url string) {
	text = mdLinkRE.ReplaceAllString(text, "$1, $2")
	if m := urlRE.FindString(text); m != "" {
		url = strings.TrimRight(m, ".,;:)>」』")
	}
	qa, qb, quote := longestQuote(text)
	if qa < 0 {
		qa, qb, quote = singleQuoted(text)
	}
	rest := text
	if qa >= 0 {
		rest = text[:qa] + " " + text[qb:]
	}
	return strings.TrimSpace(quote), defTitle(rest, url), url
}

// longestQuote finds the longest passage of text in the first pair of
// quotation marks (quotePairs, in order) that quotes anything but a URL:
// the quote with its marks at text[qa:qb] (qa -1 when none), and the quote.
// Escaped marks ("\"") do not count.
func longestQuote(text string) (qa, qb int, quote string) {
	qa, qb = -1, -1
	for _, p := range quotePairs {
		for i := 0; i < len(text); {
			o := strings.Index(text[i:], p[0])
			if o < 0 {
				break
			}
			o += i
			if o > 0 && text[o-1] == '\\' {
				i = o + len(p[0])
				continue
			}
			c := unescapedIndex(text, o+len(p[0]), p[1])
			if c < 0 {
				break
			}
			q := text[o+len(p[0]) : c]
			if !strings.Contains(q, "://") && (qa < 0 || foldedLen(q) > foldedLen(text[qa:qb])) {
				qa, qb = o, c+len(p[1])
				quote = q
			}
			i = c + len(p[1])
		}
		if qa >= 0 {
			break
		}
	}
	return qa, qb, quote
}

// unescapedIndex is the byte offset of the first mark in text from c on
// that no backslash escapes, or -1.
func unescapedIndex(text string, c int, mark string) int {
	for {
		k := strings.Index(text[c:], mark)
		if k < 0 {
			return -1
		}
		c += k
		if text[c-1] != '\\' {
			return c
		}
		c += len(mark)
	}
}

// singleQuoted finds a passage in 'single quotes' that ends the text (its
// trailing full stop aside) and starts it or follows a space: the quote
// with its marks at text[qa:qb] (qa -1 when none), and the quote.
func singleQuoted(text string) (qa, qb int, quote string) {
	t := strings.TrimRight(strings.TrimSpace(text), ".。")
	for _, p := range [][2]string{{"'", "'"}, {"‘", "’"}} {
		if !strings.HasSuffix(t, p[1]) {
			continue
		}
		if o := strings.LastIndex(t[:len(t)-len(p[1])], p[0]); o >= 0 && (o == 0 || t[o-1] == ' ') {
			return o, len(t), t[o+len(p[0]) : len(t)-len(p[1])]
		}
	}
	return -1, -1, ""
}

// defTitle is the title of a footnote without its quote (rest): what is
// before the URL, else after it, without separators and quote labels.
func defTitle(rest, url string) string {
	if url == "" {
		return trimTitle(rest)
	}
	k := strings.Index(rest, url)
	if k < 0 {
		return ""
	}
	if title := trimTitle(rest[:k]); title != "" {
		return title
	}
	return trimTitle(rest[k+len(url):])
}

// trimTitle takes spaces, separators and a trailing quote label off s.
func trimTitle(s string) string {
	s = strings.TrimSpace(s)
	for _, lbl := range []string{"Quote:", "quote:", "引用:", "引用："} {
		s = strings.TrimSpace(strings.TrimSuffix(s, lbl))
	}
	return strings.Trim(s, " —–-,:、，<>().。")
}

type def struct {
	label string
	text  string
	line  int
	quote string
	title string
	url   string
	// evidence: written by the program from an evidence record
	evidence bool
	// moved: the URL is the page's own, not the alias written
	moved bool
}

// group is a run of adjacent markers in the body ("[^1][^2]") with the
// quote written right before it, if any.
type group struct {
	start, end int // bytes of the markers
	labels     []string
	// the inline quote: its opening mark at qOpen, its closing mark at
	// qClose, the text between them
	qOpen, qClose     int
	openLen, closeLen int
	quote             string
	units             []*unit
	quoteMatch        *Match // the quote as verified, nil when it was not
}

// unit is one citation: a footnote used with one quote.
type unit struct {
	fn     Footnote
	pos    int // first use
	def    *def
	match  Match
	alias  *unit // a bare use of a footnote whose quote was inline
	number int
	listed bool
	// rescued: the quote written is not on the page, the evidence it
	// stands for is
	rescued bool
}

func (u *unit) ok() bool { return u.fn.Status == Verified }

// closers maps a closing quotation mark to its opening mark.
var closers = map[rune]string{'"': "\"", '”': "“", '’': "‘", '」': "「", '』': "『", '»': "«"}

// maxAttribution is the most text that may stand between a quotation and
// its marker: who said it ("…," said the analyst[^1], 「…」と述べた[^1]).
const maxAttribution = 40

// inlineQuote finds a quotation that ends right before byte i (white space
// and one punctuation mark may stand between), or before a short
// attribution in the same sentence, within its paragraph.
func inlineQuote(text string, i, floor int, minRunes int) (group, bool) {
	if g, ok := quoteEndingAt(text, i, floor, minRunes); ok {
		return g, true
	}
	// look back over an attribution: no sentence end, line break or
	// other quotation mark on the way
	n := 0
	for j := i; j > floor && n < maxAttribution; n++ {
		r, size := utf8.DecodeLastRuneInString(text[floor:j])
		if strings.ContainsRune("。．！？!?\n「『“‘«", r) || r == '.' && n > 0 {
			break
		}
		if _, isClose := closers[r]; isClose {
			g, ok := quoteEndingAt(text, j, floor, minRunes)
			if ok && attribution(text[g.qClose+g.closeLen:i]) {
				return g, true
			}
			break
		}
		j -= size
	}
	return group{}, false
}

// saidRE is an attribution that ends the clause: who, a verb of saying,
// and at most two more words ("said Dana Whitfield", "the manual says").
var saidRE = regexp.MustCompile(`(?i)^[,;:]?\s*(?:\S+\s+){0,4}?(?:said|says|added|adds|wrote|writes|noted|notes|stated|states|warned|warns|explained|explains|told|argued|argues|claimed|claims|reported|reports|announced|announces|concluded|concludes)(?:\s+\S+){0,2}\s*$|^[,;:]?\s+according to(?:\s+\S+){1,4}\s*$`)

// attribution reports whether the text between a quotation and its marker
// only says who said it: ", said the analyst", ", she added", 「…」と述べた.
// A clause of its own ("… page explains that tables shrink") is not.
func attribution(s string) bool {
	if strings.HasPrefix(s, "と") {
		return utf8.RuneCountInString(s) <= 12
	}
	return saidRE.MatchString(s) && !strings.Contains(strings.ToLower(s), " that ")
}

// quoteEndingAt finds a quotation whose closing mark stands right before
// byte i (white space and one punctuation mark may stand between).
func quoteEndingAt(text string, i, floor int, minRunes int) (g group, ok bool) {
	j := i
	skip := func() {
		for j > floor && (text[j-1] == ' ' || text[j-1] == '\t') {
			j--
		}
	}
	skip()
	if r, n := utf8.DecodeLastRuneInString(text[floor:j]); n > 0 && strings.ContainsRune(".,;:。、，．", r) {
		j -= n
		skip()
	}
	r, n := utf8.DecodeLastRuneInString(text[floor:j])
	open, isClose := closers[r]
	if n == 0 || !isClose {
		return g, false
	}
	closeAt := j - n
	lo := max(floor, closeAt-3000)
	if k := strings.LastIndex(text[lo:closeAt], "\n\n"); k >= 0 {
		lo += k + 2
	}
	k := strings.LastIndex(text[lo:closeAt], open)
	if k < 0 {
		return g, false
	}
	openAt := lo + k
	q := text[openAt+len(open) : closeAt]
	if markerRE.MatchString(q) || foldedLen(q) < minRunes {
		return g, false
	}
	return group{qOpen: openAt, qClose: closeAt, openLen: len(open), closeLen: n, quote: q}, true
}

// Check verifies every citation of report against the documents found by
// lookup and returns the rewritten report (failed citations dropped or
// flagged, quotes that were nearly right replaced by the page's exact text,
// the rest renumbered 1..n in order of first use, all definitions gathered
// under one References heading at the end) and the outcome.
func Check(report string, lookup Lookup, opts Options) (string, Report) {
	report = strings.ReplaceAll(report, "\r\n", "\n")
	opts = opts.withDefaults(report)
	report = normalizeStyles(report)
	var cites map[string]int // label → evidence number
	if opts.Evidence != nil {
		report, cites = resolveEvidence(report)
	}
	defs, order, body := splitDefinitions(strings.Split(report, "\n"))
	text := strings.Join(dropEmptyRefHeading(body), "\n")
	unknown := map[string]bool{}
	if opts.Evidence != nil {
		order = evidenceDefs(text, defs, order, cites, opts.Evidence, unknown)
	}
	groups := markerGroups(text, opts.MinQuoteRunes)

	c := checker{defs: defs, lookup: lookup, opts: opts, matcher: NewMatcher(), units: map[string]*unit{}, used: map[string]bool{}, unknown: unknown}
	// Quotes written inline first: a footnote used both with an inline
	// quote and bare takes the quote for its bare uses.
	for _, g := range groups {
		if g.qOpen >= 0 {
			c.checkInline(g, text)
		}
	}
	for _, g := range groups {
		if g.qOpen < 0 {
			for _, l := range g.labels {
				g.units = append(g.units, c.use(c.unit(l, "", g.start, text)))
			}
		}
	}
	c.borrowInlineQuotes()
	numbered := renumber(groups, func(u *unit) bool {
		return u.ok() || opts.Mode == Flag && u.fn.Status != Undefined && u.fn.Status != UnknownEvidence
	})
	text = rewriteBody(text, groups, opts)

	// References, and the report.
	var refs []string
	for _, u := range numbered {
		refs = append(refs, c.defLine(u))
	}
	rep := c.report(order)
	out := strings.TrimRight(text, "\n \t")
	if len(refs) > 0 {
		out += "\n\n" + opts.ReferencesHeading + "\n\n" + strings.Join(refs, "\n") + "\n"
	} else {
		out += "\n"
	}
	return out, rep
}

// withDefaults fills the options left zero; the language is guessed from
// report.
func (o Options) withDefaults(report string) Options {
	if o.MinQuoteRunes <= 0 {
		o.MinQuoteRunes = 8
	}
	if o.ReferencesHeading == "" {
		o.ReferencesHeading = "## References"
	}
	if o.Language == "" {
		o.Language = guessLanguage(report)
	}
	return o
}

// splitDefinitions separates the footnote definitions (with continuation
// lines indented by 4; outside code fences; the first of a label wins) from
// the body, everything else. order lists the labels as defined.
func splitDefinitions(lines []string) (defs map[string]*def, order, body []string) {
	defs = map[string]*def{}
	inFence := false
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if strings.HasPrefix(strings.TrimSpace(ln), "```") {
			inFence = !inFence
		}
		m := defRE.FindStringSubmatch(ln)
		if inFence || m == nil {
			body = append(body, ln)
			continue
		}
		d := &def{label: m[1], text: m[2], line: i}
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") && strings.TrimSpace(lines[i+1]) != "" {
			i++
			d.text += " " + strings.TrimSpace(lines[i])
		}
		if _, dup := defs[d.label]; !dup {
			d.quote, d.title, d.url = parseDef(d.text)
			defs[d.label] = d
			order = append(order, d.label)
		}
	}
	return defs, order, body
}

// evidenceDefs writes the footnotes that cite evidence from the evidence
// record: those resolved from "[E12]" (cites) and bare "[^E12]" markers in
// text. A label citing evidence the run never gave out loses its
// definition and is marked in unknown. It returns order with the labels
// newly defined.
func evidenceDefs(text string, defs map[string]*def, order []string, cites map[string]int, evidence EvidenceLookup, unknown map[string]bool) []string {
	// a bare "[^E12]" in the text cites evidence 12 too
	for _, m := range markerRE.FindAllStringSubmatch(text, -1) {
		if id := evidenceIDRE.FindStringSubmatch(m[1]); id != nil && defs[m[1]] == nil {
			if _, ok := cites[m[1]]; !ok {
				n, _ := strconv.Atoi(id[1]) // \d+ parses; one too long for an int is evidence 0, never given out
				cites[m[1]] = n
			}
		}
	}
	for _, l := range slices.Sorted(maps.Keys(cites)) {
		e, ok := evidence(cites[l])
		if !ok || strings.TrimSpace(e.URL) == "" {
			unknown[l] = true
			delete(defs, l)
			continue
		}
		if defs[l] == nil {
			order = append(order, l)
		}
		defs[l] = evidenceDef(l, e)
	}
	return order
}

// markerGroups finds the runs of adjacent markers in text outside code,
// in order, each with the inline quote before it (one of at least
// minRunes, after the previous group).
func markerGroups(text string, minRunes int) []*group {
	code := fences(text)
	var groups []*group
	for _, m := range markerRE.FindAllStringSubmatchIndex(text, -1) {
		if within(code, m[0]) {
			continue
		}
		label := text[m[2]:m[3]]
		floor := 0
		if n := len(groups); n > 0 {
			g := groups[n-1]
			if strings.Trim(text[g.end:m[0]], " ,、") == "" {
				g.end = m[1]
				if !slices.Contains(g.labels, label) {
					g.labels = append(g.labels, label)
				}
				continue
			}
			floor = g.end
		}
		g := &group{start: m[0], end: m[1], labels: []string{label}, qOpen: -1}
		if q, ok := inlineQuote(text, m[0], floor, minRunes); ok {
			g.qOpen, g.qClose, g.openLen, g.closeLen, g.quote = q.qOpen, q.qClose, q.openLen, q.closeLen, q.quote
		}
		groups = append(groups, g)
	}
	return groups
}

// checkInline verifies the citations of a group with an inline quote. When
// the quote is on a cited page, it backs every label whose page has it and
// the others are judged by their own quotes; when it is on none, it is
// dropped.
func (c *checker) checkInline(g *group, text string) {
	var kept []*unit
	for _, l := range g.labels {
		if u := c.unit(l, g.quote, g.start, text); u.ok() && !u.rescued {
			kept = append(kept, u)
		}
	}
	if len(kept) == 0 {
		c.quoteOnNoPage(g, text)
		return
	}
	g.quoteMatch = &kept[0].match
	for _, l := range g.labels {
		if u := c.unit(l, g.quote, g.start, text); u.ok() {
			g.units = append(g.units, c.use(u))
		} else {
			g.units = append(g.units, c.use(c.unit(l, "", g.start, text))) // co-cited: its own quote decides
		}
	}
}

// quoteOnNoPage handles a group whose inline quote is on none of the
// pages: the quote is dropped (and loses its quotation marks); a footnote
// whose own quote verifies, or the evidence the quote stands for, still
// backs the claim (the quoted words may be a title, a paraphrase or a
// translation, not a quote).
func (c *checker) quoteOnNoPage(g *group, text string) {
	for _, l := range g.labels {
		u := c.unit(l, g.quote, g.start, text)
		g.units = append(g.units, c.use(u))
		if u.ok() {
			continue
		}
		if d := c.defs[l]; d != nil && d.quote != "" {
			if own := c.unit(l, "", g.start, text); own.ok() {
				g.units = append(g.units, c.use(own))
			}
		}
	}
}

// borrowInlineQuotes lets bare uses of a footnote without a quote of its
// own borrow the quote a use of the same footnote had inline.
func (c *checker) borrowInlineQuotes() {
	for _, u := range c.list {
		if u.fn.Inline || u.fn.Status != NoQuote {
			continue
		}
		for _, v := range c.list {
			if v.fn.Label == u.fn.Label && v.fn.Inline && v.ok() {
				u.alias, u.fn.Status, u.fn.Quote = v, Verified, v.fn.Quote
				break
			}
		}
	}
}

// renumber numbers the citations kept by first use, one number per source
// and quote, and returns them in number order.
func renumber(groups []*group, keep func(*unit) bool) []*unit {
	next := 1
	var numbered []*unit
	same := map[string]*unit{} // one footnote per source and quote
	for _, g := range groups {
		for _, u := range g.units {
			if !keep(u) {
				continue
			}
			t := u
			if u.alias != nil {
				t = u.alias
			}
			if t.number == 0 && t.ok() && t.def != nil {
				k := t.def.url + "\x00" + collapseSpace(t.fn.Quote)
				if v := same[k]; v != nil {
					t.number = v.number
				} else {
					same[k] = t
				}
			}
			if t.number == 0 {
				t.number = next
				next++
				numbered = append(numbered, t)
			}
			u.number = t.number
		}
	}
	return numbered
}

// edit replaces text[a:b] with s.
type edit struct {
	a, b int
	s    string
}

// rewriteBody applies each group's edits to text: repaired or unquoted
// inline quotes, and the markers renumbered or replaced by the unverified
// mark.
func rewriteBody(text string, groups []*group, opts Options) string {
	var edits []edit
	for _, g := range groups {
		edits = append(edits, g.edits(text, opts)...)
	}
	slices.SortFunc(edits, func(x, y edit) int { return y.a - x.a })
	for _, e := range edits {
		text = text[:e.a] + e.s + text[e.b:]
	}
	return text
}

// edits are the changes the check makes to g in text.
func (g *group) edits(text string, opts Options) []edit {
	var edits []edit
	nums := g.numbers()
	if g.qOpen >= 0 {
		switch {
		case g.quoteMatch != nil && !g.quoteMatch.Exact:
			edits = append(edits, edit{g.qOpen + g.openLen, g.qClose, innerQuote(g.quoteMatch.Quote, text[g.qOpen:g.qOpen+g.openLen])})
		case g.quoteMatch == nil && opts.Mode == Drop:
			// not found: no longer a quotation
			edits = append(edits, edit{g.qOpen, g.qOpen + g.openLen, ""}, edit{g.qClose, g.qClose + g.closeLen, ""})
		}
	}
	if len(nums) > 0 {
		var b strings.Builder
		for _, n := range nums {
			fmt.Fprintf(&b, "[^%d]", n)
		}
		return append(edits, edit{g.start, g.end, b.String()})
	}
	return append(edits, edit{g.markStart(text), g.end, unverifiedMark(opts.Language)})
}

// numbers are the footnote numbers the group's citations kept, in order.
func (g *group) numbers() []int {
	var nums []int
	for _, u := range g.units {
		if u.number > 0 && !slices.Contains(nums, u.number) {
			nums = append(nums, u.number)
		}
	}
	return nums
}

// markStart is where the unverified mark replacing the group's markers
// starts: the spaces before them go, never the closing quotation mark.
func (g *group) markStart(text string) int {
	a := g.start
	for a > 0 && (text[a-1] == ' ' || text[a-1] == '\t') {
		a--
	}
	if g.qOpen >= 0 && a < g.qClose+g.closeLen {
		a = g.qClose + g.closeLen
	}
	return a
}

// report is the outcome: every citation in order of first use, then the
// footnotes of order never used.
func (c *checker) report(order []string) Report {
	var rep Report
	slices.SortStableFunc(c.list, func(x, y *unit) int { return x.pos - y.pos })
	for _, u := range c.list {
		u.fn.Number = u.number
		rep.Footnotes = append(rep.Footnotes, u.fn)
		rep.Cited++
		if u.ok() {
			rep.Verified++
			if u.fn.Written != "" {
				rep.Repaired++
			}
		} else {
			rep.Dropped++
		}
	}
	for _, l := range order {
		if !c.used[l] {
			d := c.defs[l]
			rep.Footnotes = append(rep.Footnotes, Footnote{Label: l, Quote: d.quote, Title: d.title, URL: d.url, Status: Unused})
		}
	}
	return rep
}

// checker holds what one check has learnt.
type checker struct {
	defs    map[string]*def
	lookup  Lookup
	opts    Options
	matcher *Matcher
	units   map[string]*unit
	list    []*unit
	used    map[string]bool
	unknown map[string]bool // labels citing evidence ids never given out
}

// use counts u as cited.
func (c *checker) use(u *unit) *unit {
	if !u.listed {
		u.listed = true
		c.list = append(c.list, u)
		c.used[u.fn.Label] = true
	}
	return u
}

// unit returns the citation of footnote label with quote ("" for the
// footnote's own), verifying it the first time.
func (c *checker) unit(label, quote string, pos int, text string) *unit {
	key := label + "\x00" + quote
	if u := c.units[key]; u != nil {
		return u
	}
	u := &unit{pos: pos, fn: Footnote{Label: label, Inline: quote != "", Context: unquote(contextBefore(text, pos))}}
	c.units[key] = u
	d := c.defs[label]
	if d == nil {
		u.fn.Status = Undefined
		if c.unknown[label] {
			u.fn.Status = UnknownEvidence
		}
		u.fn.Quote = strings.TrimSpace(quote)
		return u
	}
	u.def = d
	u.fn.URL, u.fn.Title = d.url, d.title
	if quote == "" {
		quote = d.quote
	}
	u.fn.Quote = strings.TrimSpace(quote)
	u.fn.Status = c.verify(u, d)
	return u
}

// rescue finds the evidence a quote that is not on the page stands for: the
// evidence a footnote cites by id, whatever quote was written with it, or
// the evidence of that page the quote restates.
func (c *checker) rescue(d *def, doc Doc, written string) (Evidence, bool) {
	if d.evidence {
		return Evidence{Quote: d.quote, Title: d.title, URL: d.url}, d.quote != ""
	}
	if c.opts.EvidenceAt == nil {
		return Evidence{}, false
	}
	return restated(c.matcher, doc, written, c.opts.EvidenceAt(doc.URL))
}

func (c *checker) verify(u *unit, d *def) Status {
	if d.url == "" {
		return NoURL
	}
	doc, ok := c.lookup(d.url)
	if !ok {
		return NotRetrieved
	}
	if doc.URL != "" && doc.URL != d.url {
		// the page's one URL, not the alias the model wrote
		d.url, d.moved = doc.URL, true
		u.fn.URL = doc.URL
	}
	if u.fn.Title == "" {
		u.fn.Title = doc.Title
	}
	if u.fn.Quote == "" {
		return NoQuote
	}
	if foldedLen(u.fn.Quote) < c.opts.MinQuoteRunes {
		return QuoteTooShort
	}
	m, ok := c.matcher.Find(doc, u.fn.Quote)
	if !ok {
		u.fn.Written = u.fn.Quote
		if e, ok := c.rescue(d, doc, u.fn.Quote); ok {
			if m, ok := c.matcher.Find(doc, e.Quote); ok {
				u.match, u.fn.Quote, u.rescued = m, m.Quote, true
				return Verified
			}
		}
		return QuoteNotFound
	}
	u.match = m
	if !m.Exact {
		u.fn.Written, u.fn.Quote = u.fn.Quote, m.Quote
	}
	return Verified
}

// defLine is the footnote definition of a kept citation: as written when
// its quote was the footnote's own and exact, else rebuilt around the quote
// that was verified.
func (c *checker) defLine(u *unit) string {
	d := u.def
	var line string
	switch {
	case d == nil:
		line = fmt.Sprintf("[^%d]: %s", u.number, u.fn.Label)
	case !u.fn.Inline && u.fn.Written == "" && u.fn.Quote != "" && !d.evidence && !d.moved:
		line = fmt.Sprintf("[^%d]: %s", u.number, strings.TrimSpace(d.text))
	default:
		var b strings.Builder
		fmt.Fprintf(&b, "[^%d]: ", u.number)
		if q := strings.Trim(collapseSpace(u.fn.Quote), " ,;:、，"); q != "" {
			switch {
			case c.opts.Language == "ja" && !strings.ContainsAny(q, "「」"):
				b.WriteString("「" + q + "」 — ")
			case strings.Contains(q, "\""):
				b.WriteString("“" + strings.NewReplacer("“", "‘", "”", "’").Replace(q) + "” — ")
			default:
				b.WriteString("\"" + q + "\" — ")
			}
		}
		if t := cleanTitle(u.fn.Title); t != "" && t != d.url {
			b.WriteString(t + ", ")
		}
		b.WriteString(d.url)
		line = strings.TrimSpace(b.String())
	}
	if !u.ok() {
		line += " (unverified: " + string(u.fn.Status) + ")"
	}
	return line
}

// cleanTitle keeps a page title on one line, without markdown link syntax.
func cleanTitle(t string) string {
	t = strings.Join(strings.Fields(printable(t)), " ")
	return strings.NewReplacer("[", "(", "]", ")").Replace(t)
}

// printable drops control characters and bidirectional overrides, which
// text from the web must not carry into a report (or a terminal).
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case unicode.IsControl(r), r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return -1
		}
		return r
	}, s)
}

// collapseSpace puts a text on one line: runs of white space become one
// space, or none between two Japanese characters.
func collapseSpace(s string) string {
	fs := strings.Fields(s)
	if len(fs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(fs[0])
	for i := 1; i < len(fs); i++ {
		l, _ := utf8.DecodeLastRuneInString(fs[i-1])
		r, _ := utf8.DecodeRuneInString(fs[i])
		if !wide(l) || !wide(r) {
			b.WriteByte(' ')
		}
		b.WriteString(fs[i])
	}
	return b.String()
}

// wide reports a Japanese (or other CJK) character or full-width sign.
func wide(r rune) bool {
	return isCJK(r) || unicode.In(r, unicode.Han) || r >= 0x3000 && r <= 0x303f || r >= 0xff00 && r <= 0xffef
}

// balanceQuotes removes quotation marks a span of the page leaves open
// (it may start inside a quotation of the page).
func balanceQuotes(s string) string {
	if strings.Count(s, "\"")%2 == 1 {
		s = strings.ReplaceAll(s, "\"", "")
	}
	for _, p := range [][2]string{{"“", "”"}, {"「", "」"}, {"『", "』"}, {"«", "»"}} {
		if strings.Count(s, p[0]) != strings.Count(s, p[1]) {
			s = strings.NewReplacer(p[0], "", p[1], "").Replace(s)
		}
	}
	return s
}

// innerQuote keeps quotation marks inside a repaired quote from closing it.
func innerQuote(q, open string) string {
	q = balanceQuotes(q)
	switch open {
	case "\"":
		return strings.ReplaceAll(q, "\"", "'")
	case "“":
		return strings.NewReplacer("“", "‘", "”", "’").Replace(q)
	case "「":
		return strings.NewReplacer("「", "『", "」", "』").Replace(q)
	}
	return q
}

func unverifiedMark(lang string) string {
	if lang == "ja" {
		return "（未検証）"
	}
	return " (unverified)"
}

// guessLanguage says "ja" for a report written in Japanese: with kana,
// and more Japanese characters than half its Latin letters (an English
// report may quote a Japanese page).
func guessLanguage(s string) string {
	kana, cjk, latin := 0, 0, 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Hiragana, unicode.Katakana):
			kana++
			cjk++
		case unicode.Is(unicode.Han, r):
			cjk++
		case r < 0x80 && unicode.IsLetter(r):
			latin++
		}
	}
	if kana > 0 && 2*cjk > latin {
		return "ja"
	}
	return "en"
}

func within(ranges [][2]int, i int) bool {
	for _, r := range ranges {
		if i >= r[0] && i < r[1] {
			return true
		}
	}
	return false
}

// contextBefore returns up to 80 runes of text before offset i on its line.
func contextBefore(text string, i int) string {
	start := strings.LastIndex(text[:i], "\n") + 1
	s := markerRE.ReplaceAllString(text[start:i], "")
	s = strings.TrimSpace(strings.TrimLeft(s, "-*# "))
	r := []rune(s)
	if len(r) > 80 {
		r = append([]rune("…"), r[len(r)-80:]...)
	}
	return string(r)
}

// unquote takes the quotation marks off a claim's context: a quote that
// was not verified must not come back as a quotation where the claim is
// named.
func unquote(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\"", "", "“", "", "”", "", "「", "", "」", "", "『", "", "』", "", "«", "", "»", "").Replace(s))
}

func dropEmptyRefHeading(body []string) []string {
	out := body[:0:0]
	for i, ln := range body {
		if refHdrRE.MatchString(strings.TrimSpace(ln)) {
			empty := true
			for _, rest := range body[i+1:] {
				if t := strings.TrimSpace(rest); t != "" {
					empty = strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "####")
					break
				}
			}
			if empty {
				continue
			}
		}
		out = append(out, ln)
	}
	return out
}

// fences returns the byte ranges of fenced code blocks.
func fences(text string) [][2]int {
	var out [][2]int
	open := -1
	pos := 0
	for _, ln := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(ln), "```") {
			if open < 0 {
				open = pos
			} else {
				out = append(out, [2]int{open, pos + len(ln)})
				open = -1
			}
		}
		pos += len(ln)
	}
	if open >= 0 {
		out = append(out, [2]int{open, len(text)})
	}
	return out
}
