// Package citation checks, deterministically, that every footnote of a
// markdown report points at a document retrieved during the run and carries
// a quote that appears in the text that was read. Footnotes that fail are
// dropped (their markers removed from the text) or flagged, and the rest are
// renumbered in order of first use.
//
// The footnote format is the one the writer is asked for:
//
//	[^3]: "exact quote" — Title, https://example.org/page
//
// Quotes may use “curly”, 「Japanese」 or "straight" quotation marks.
package citation

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// Status is the outcome for one footnote.
type Status string

// Outcomes.
const (
	Verified      Status = "verified"
	NoURL         Status = "no_url"          // the footnote names no URL
	NotRetrieved  Status = "not_retrieved"   // the URL was not read in this run
	NoQuote       Status = "no_quote"        // the footnote carries no quote
	QuoteTooShort Status = "quote_too_short" // a quote too short to prove anything
	QuoteNotFound Status = "quote_not_found" // the quote is not in the text read
	Undefined     Status = "undefined"       // a marker in the text with no footnote
	Unused        Status = "unused"          // a footnote never referenced
)

// Footnote is the check of one footnote.
type Footnote struct {
	Label  string `json:"label"`            // as written by the model
	Number int    `json:"number,omitempty"` // after renumbering (0 when dropped)
	URL    string `json:"url,omitempty"`
	Title  string `json:"title,omitempty"`
	Quote  string `json:"quote,omitempty"`
	Status Status `json:"status"`
	// Context is the text just before the first marker, to say which claim
	// lost its source.
	Context string `json:"context,omitempty"`
}

// Report is the outcome of a check.
type Report struct {
	Cited     int        `json:"cited"`    // distinct footnotes referenced in the text or defined
	Verified  int        `json:"verified"` // kept
	Dropped   int        `json:"dropped"`  // removed (or flagged)
	Footnotes []Footnote `json:"footnotes,omitempty"`
}

// Failed returns the footnotes that did not verify.
func (r Report) Failed() []Footnote {
	var out []Footnote
	for _, f := range r.Footnotes {
		if f.Status != Verified {
			out = append(out, f)
		}
	}
	return out
}

// Mode says what happens to a failing footnote.
type Mode int

const (
	// Drop removes the footnote and its markers.
	Drop Mode = iota
	// Flag keeps the footnote but marks it "(unverified)".
	Flag
)

// Options tune a check.
type Options struct {
	Mode Mode
	// MinQuoteRunes is the shortest quote accepted (default 8 runes of
	// content after normalisation; Japanese carries more per rune, so 8 is
	// about a short clause in either language).
	MinQuoteRunes int
	// ReferencesHeading is the heading put above the footnotes
	// (default "## References").
	ReferencesHeading string
}

var (
	defRE    = regexp.MustCompile(`^\s{0,3}\[\^([^\]\s]+)\]:\s?(.*)$`)
	markerRE = regexp.MustCompile(`\[\^([^\]\s]+)\]`)
	urlRE    = regexp.MustCompile(`(?:https?|doc)://[^\s<>()\[\]"“”「」]+`)
	refHdrRE = regexp.MustCompile(`(?i)^#{1,6}\s*(references|sources|参考文献|出典|参照)\s*$`)
)

// quote pairs tried in order.
var quotePairs = [][2]string{{"\"", "\""}, {"“", "”"}, {"「", "」"}, {"『", "』"}, {"„", "“"}, {"«", "»"}}

// parseDef splits a footnote's text into quote, title and URL.
func parseDef(text string) (quote, title, url string) {
	if m := urlRE.FindString(text); m != "" {
		url = strings.TrimRight(m, ".,;:)>」』")
	}
	rest := text
	for _, p := range quotePairs {
		i := strings.Index(text, p[0])
		if i < 0 {
			continue
		}
		j := strings.LastIndex(text[i+len(p[0]):], p[1])
		if j < 0 {
			continue
		}
		quote = text[i+len(p[0]) : i+len(p[0])+j]
		rest = text[i+len(p[0])+j+len(p[1]):]
		break
	}
	// title: what is between the quote and the URL, without separators
	if url != "" {
		if k := strings.Index(rest, url); k >= 0 {
			rest = rest[:k]
		}
	}
	title = strings.Trim(strings.TrimSpace(rest), " —–-,:、，<>")
	return strings.TrimSpace(quote), title, url
}

type def struct {
	label string
	text  string
	line  int
}

// Check verifies every footnote of report against the documents found by
// lookup and returns the rewritten report (failed footnotes dropped or
// flagged, the rest renumbered 1..n in order of first use, all definitions
// gathered under one References heading at the end) and the outcome.
func Check(report string, lookup Lookup, opts Options) (string, Report) {
	if opts.MinQuoteRunes <= 0 {
		opts.MinQuoteRunes = 8
	}
	if opts.ReferencesHeading == "" {
		opts.ReferencesHeading = "## References"
	}
	lines := strings.Split(strings.ReplaceAll(report, "\r\n", "\n"), "\n")

	// Footnote definitions (with continuation lines indented by 4) and the
	// body (everything else, without an empty References heading).
	defs := map[string]*def{}
	var order []string
	var body []string
	inFence := false
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if strings.HasPrefix(strings.TrimSpace(ln), "```") {
			inFence = !inFence
		}
		if !inFence {
			if m := defRE.FindStringSubmatch(ln); m != nil {
				d := &def{label: m[1], text: m[2], line: i}
				for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") && strings.TrimSpace(lines[i+1]) != "" {
					i++
					d.text += " " + strings.TrimSpace(lines[i])
				}
				if _, dup := defs[d.label]; !dup {
					defs[d.label] = d
					order = append(order, d.label)
				}
				continue
			}
		}
		body = append(body, ln)
	}
	// Drop a References heading left with nothing under it.
	body = dropEmptyRefHeading(body)

	// Markers in order of first use.
	text := strings.Join(body, "\n")
	var used []string
	contexts := map[string]string{}
	for _, m := range markerRE.FindAllStringSubmatchIndex(text, -1) {
		if inCode(text, m[0]) {
			continue
		}
		label := text[m[2]:m[3]]
		if !slices.Contains(used, label) {
			used = append(used, label)
			contexts[label] = contextBefore(text, m[0])
		}
	}

	var rep Report
	status := map[string]*Footnote{}
	normCache := map[string]string{}
	for _, label := range used {
		f := &Footnote{Label: label, Context: contexts[label]}
		status[label] = f
		d := defs[label]
		if d == nil {
			f.Status = Undefined
			continue
		}
		f.Quote, f.Title, f.URL = parseDef(d.text)
		f.Status = verify(f, lookup, opts, normCache)
	}
	for _, label := range order {
		if status[label] == nil {
			q, t, u := parseDef(defs[label].text)
			status[label] = &Footnote{Label: label, Quote: q, Title: t, URL: u, Status: Unused}
			used = append(used, label)
		}
	}

	// Renumber and rewrite.
	next := 1
	newLabel := map[string]string{}
	for _, label := range used {
		f := status[label]
		if f.Status == Verified || (opts.Mode == Flag && f.Status != Undefined && f.Status != Unused) {
			f.Number = next
			newLabel[label] = strconv.Itoa(next)
			next++
		}
	}
	text = replaceOutsideCode(text, func(m string) string {
		label := m[2 : len(m)-1]
		if n, ok := newLabel[label]; ok {
			return "[^" + n + "]"
		}
		return "\x00"
	})
	text = strings.ReplaceAll(strings.ReplaceAll(text, " \x00", ""), "\x00", "")

	var refs []string
	for _, label := range used {
		f := status[label]
		rep.Footnotes = append(rep.Footnotes, *f)
		if f.Status == Unused {
			continue // never referenced: neither cited nor dropped
		}
		rep.Cited++
		if f.Status == Verified {
			rep.Verified++
		} else {
			rep.Dropped++
		}
		if f.Number == 0 {
			continue
		}
		line := fmt.Sprintf("[^%d]: %s", f.Number, strings.TrimSpace(defs[label].text))
		if f.Status != Verified {
			line += " (unverified: " + string(f.Status) + ")"
		}
		refs = append(refs, line)
	}
	out := strings.TrimRight(text, "\n \t")
	if len(refs) > 0 {
		out += "\n\n" + opts.ReferencesHeading + "\n\n" + strings.Join(refs, "\n") + "\n"
	} else {
		out += "\n"
	}
	return out, rep
}

func verify(f *Footnote, lookup Lookup, opts Options, cache map[string]string) Status {
	if f.URL == "" {
		return NoURL
	}
	doc, ok := lookup(f.URL)
	if !ok {
		return NotRetrieved
	}
	if f.Title == "" {
		f.Title = doc.Title
	}
	if f.Quote == "" {
		return NoQuote
	}
	if quoteLen(f.Quote) < opts.MinQuoteRunes {
		return QuoteTooShort
	}
	nt, ok := cache[doc.URL]
	if !ok {
		nt = Normalize(doc.Text)
		cache[doc.URL] = nt
	}
	if !Contains(nt, f.Quote) {
		return QuoteNotFound
	}
	return Verified
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

func inCode(text string, i int) bool {
	for _, f := range fences(text) {
		if i >= f[0] && i < f[1] {
			return true
		}
	}
	return false
}

// replaceOutsideCode replaces footnote markers outside fenced code.
func replaceOutsideCode(text string, fn func(string) string) string {
	var b strings.Builder
	last := 0
	for _, f := range fences(text) {
		b.WriteString(markerRE.ReplaceAllStringFunc(text[last:f[0]], fn))
		b.WriteString(text[f[0]:f[1]])
		last = f[1]
	}
	b.WriteString(markerRE.ReplaceAllStringFunc(text[last:], fn))
	return b.String()
}
