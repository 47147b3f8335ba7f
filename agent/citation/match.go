package citation

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// folded is a text reduced to what a quote's words are made of: lower-case
// letters and digits after NFKC (full-width and half-width forms unified).
// Punctuation, quotation marks, ellipses and white space are gone, so a
// quote that differs from the page only in those matches exactly. Each rune
// remembers the bytes of the original text it came from, so a match can be
// turned back into the exact span that was read.
type folded struct {
	r     []rune
	start []int32 // byte offset in the original where rune i's segment starts
	end   []int32 // and ends
	wordB []bool  // rune i begins a word (Latin word or one CJK character)
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 'ー'
}

func fold(s string) folded {
	f := folded{r: make([]rune, 0, len(s)), start: make([]int32, 0, len(s)), end: make([]int32, 0, len(s)), wordB: make([]bool, 0, len(s))}
	gap := true // a separator since the last kept rune
	var buf []byte
	for i := 0; i < len(s); {
		n := 1
		if s[i] >= 0x80 || (i+1 < len(s) && s[i+1] >= 0x80) {
			n = norm.NFKC.NextBoundaryInString(s[i:], true)
			if n <= 0 {
				n = len(s) - i
			}
		}
		seg := s[i : i+n]
		if s[i] >= 0x80 {
			buf = norm.NFKC.AppendString(buf[:0], seg)
			seg = string(buf)
		}
		for _, r := range seg {
			if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
				if !unicode.IsMark(r) {
					gap = true
				}
				continue
			}
			cjk := isCJK(r)
			wb := gap || cjk || (len(f.r) > 0 && isCJK(f.r[len(f.r)-1]))
			f.r = append(f.r, unicode.ToLower(r))
			f.start = append(f.start, int32(i))
			f.end = append(f.end, int32(i+n))
			f.wordB = append(f.wordB, wb)
			gap = false
		}
		i += n
	}
	return f
}

// words splits folded runes [a, b) into words.
func (f *folded) words(a, b int) []string {
	var out []string
	w := a
	for i := a + 1; i <= b; i++ {
		if i == b || f.wordB[i] {
			out = append(out, string(f.r[w:i]))
			w = i
		}
	}
	return out
}

const shingle = 5 // runes per anchor shingle

// pageIndex is a folded page with its shingles sorted by hash: a quote's
// rare shingles find where on the page it may be, so only a few short
// windows are aligned, however long the page.
type pageIndex struct {
	text string
	f    folded
	keys []uint64 // hash<<32 | position, sorted
}

func shingleHash(rs []rune) uint64 {
	h := uint64(14695981039346656037)
	for _, r := range rs {
		h ^= uint64(r)
		h *= 1099511628211
	}
	return h >> 32
}

func newPageIndex(text string) *pageIndex {
	p := &pageIndex{text: text, f: fold(text)}
	n := len(p.f.r) - shingle + 1
	if n > 0 {
		p.keys = make([]uint64, n)
		for i := 0; i < n; i++ {
			p.keys[i] = shingleHash(p.f.r[i:i+shingle])<<32 | uint64(i)
		}
		slices.Sort(p.keys)
	}
	return p
}

// positions returns where on the page the shingle hash h occurs.
func (p *pageIndex) positions(h uint64) []uint64 {
	lo, _ := slices.BinarySearch(p.keys, h<<32)
	hi, _ := slices.BinarySearch(p.keys, (h+1)<<32)
	return p.keys[lo:hi]
}

// Limits of the approximate search.
const (
	maxCommon     = 64   // a shingle seen more often than this is no anchor
	maxCandidates = 4    // windows aligned per quote part
	maxAlignRunes = 1200 // longer quote parts must match exactly
	maxStarts     = 8    // first-word starts aligned per window
)

// span is a match of (part of) a quote on the page, in folded runes.
type span struct {
	a, b int // [a, b)
	dist int
}

// align finds the substring of t closest to q by edit distance (q whole, t
// free at both ends, or only at its end) and returns its bounds in t and the distance. Two rows
// of the dynamic programme are kept; each cell carries where its path
// started in t.
func align(q, t []rune, freeStart bool) (int, int, int) {
	m, n := len(q), len(t)
	prev := make([]int, n+1)
	cur := make([]int, n+1)
	prevS := make([]int, n+1)
	curS := make([]int, n+1)
	for j := 0; j <= n; j++ {
		prevS[j] = j
		if !freeStart {
			prev[j], prevS[j] = j, 0
		}
	}
	for i := 1; i <= m; i++ {
		cur[0], curS[0] = i, 0
		for j := 1; j <= n; j++ {
			c := prev[j-1]
			if q[i-1] != t[j-1] {
				c++
			}
			s := prevS[j-1]
			if d := prev[j] + 1; d < c {
				c, s = d, prevS[j]
			}
			if d := cur[j-1] + 1; d < c {
				c, s = d, curS[j-1]
			}
			cur[j], curS[j] = c, s
		}
		prev, cur = cur, prev
		prevS, curS = curS, prevS
	}
	best, end := m+1, 0
	for j := 0; j <= n; j++ {
		if prev[j] < best {
			best, end = prev[j], j
		}
	}
	return prevS[end], end, best
}

// find looks for the folded quote part q on the page at or after folded
// position from: exactly first, then around the diagonals its rare
// shingles vote for.
func (p *pageIndex) find(qf *folded, from int) []span {
	q := qf.r
	if len(q) == 0 || from >= len(p.f.r) {
		return nil
	}
	if s, ok := p.exact(q, from); ok {
		return []span{s}
	}
	if len(q) > maxAlignRunes || len(q) < shingle {
		return nil
	}
	band := max(12, len(q)/4)
	var out []span
	for k, diag := range p.diagonals(q, from) {
		if k == maxCandidates {
			break
		}
		lo := max(from, diag-band)
		hi := min(len(p.f.r), diag+len(q)+band+diagBucket)
		if lo >= hi {
			continue
		}
		out = append(out, p.alignAround(qf, lo, hi)...)
	}
	slices.SortFunc(out, func(x, y span) int {
		if x.dist != y.dist {
			return x.dist - y.dist
		}
		return x.a - y.a
	})
	return out
}

// exact finds q on the page at or after from as whole words.
func (p *pageIndex) exact(q []rune, from int) (span, bool) {
	for at := from; at < len(p.f.r); {
		i := indexRunes(p.f.r[at:], q)
		if i < 0 {
			break
		}
		if s := (span{at + i, at + i + len(q), 0}); p.whole(s) {
			return s, true
		}
		at += i + 1
	}
	return span{}, false
}

// diagBucket is the width of the diagonals the shingles vote for.
const diagBucket = 8

// diagonals are the page offsets (at or after from) where q may start, as
// its rare shingles vote for them, most votes first.
func (p *pageIndex) diagonals(q []rune, from int) []int {
	votes := map[int]int{}
	for i := 0; i+shingle <= len(q); i++ {
		pos := p.positions(shingleHash(q[i : i+shingle]))
		if len(pos) > maxCommon {
			continue
		}
		for _, k := range pos {
			at := int(uint32(k))
			if at < from {
				continue
			}
			votes[(at-i)/diagBucket]++
		}
	}
	type cand struct{ diag, n int }
	var cs []cand
	for d, n := range votes {
		cs = append(cs, cand{d * diagBucket, n})
	}
	slices.SortFunc(cs, func(x, y cand) int {
		if x.n != y.n {
			return y.n - x.n
		}
		return x.diag - y.diag
	})
	diags := make([]int, len(cs))
	for i, c := range cs {
		diags[i] = c.diag
	}
	return diags
}

// alignAround aligns the quote with the page between lo and hi: freely,
// and from each place the quote's first word starts (the cheapest path may
// trade a missing first word for a changed one).
func (p *pageIndex) alignAround(qf *folded, lo, hi int) []span {
	q := qf.r
	a, b, d := align(q, p.f.r[lo:hi], true)
	out := []span{p.snap(q, span{lo + a, lo + b, d})}
	w := 1
	for w < len(q) && !qf.wordB[w] {
		w++
	}
	for at, tries := lo, 0; at+w <= hi && tries < maxStarts; at++ {
		if at != lo+a && p.f.wordB[at] && slices.Equal(p.f.r[at:at+w], q[:w]) {
			tries++
			_, b, d := align(q, p.f.r[at:hi], false)
			out = append(out, p.snap(q, span{at, at + b, d}))
		}
	}
	return out
}

// wordBounds is i when a word boundary, else the boundaries around it.
func (p *pageIndex) wordBounds(i int) []int {
	if i <= 0 || i >= len(p.f.r) || p.f.wordB[i] {
		return []int{i}
	}
	lo, hi := i, i
	for lo > 0 && !p.f.wordB[lo] {
		lo--
	}
	for hi < len(p.f.r) && !p.f.wordB[hi] {
		hi++
	}
	return []int{lo, hi}
}

// whole reports whether a span cuts no word in two.
func (p *pageIndex) whole(s span) bool {
	return p.f.wordB[s.a] && (s.b == len(p.f.r) || p.f.wordB[s.b])
}

// snap moves the ends of a span that cut a word to the nearest word
// boundaries, where the quote is closest: an alignment free at its ends may
// stop inside a word ("future re|use").
func (p *pageIndex) snap(q []rune, s span) span {
	starts, ends := p.wordBounds(s.a), p.wordBounds(s.b)
	if len(starts) == 1 && len(ends) == 1 {
		return s
	}
	best := span{dist: -1}
	for _, a := range starts {
		for _, b := range ends {
			if b <= a {
				continue
			}
			if d := EditDistance(q, p.f.r[a:b]); best.dist < 0 || d < best.dist {
				best = span{a, b, d}
			}
		}
	}
	if best.dist < 0 {
		return s
	}
	return best
}

// EditDistance is the Levenshtein distance between two sequences (runes,
// bytes or words).
func EditDistance[T comparable](a, b []T) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func indexRunes(s, sub []rune) int {
	if len(sub) == 0 || len(sub) > len(s) {
		return -1
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i] == sub[0] && slices.Equal(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// close reports whether a page span is the quote part with at most a word
// or two changed: the same numbers in the same order, the same negations,
// few word edits and a small character distance. A quote that changes a
// figure or turns a statement around is not repaired.
func (p *pageIndex) close(qf *folded, s span, qOrig string) bool {
	if s.dist == 0 {
		return true
	}
	m := len(qf.r)
	if s.dist*10 > m*3 {
		return false
	}
	// the edits are inside: the span starts and ends as the quote does,
	// and cuts no word in two
	if qf.r[0] != p.f.r[s.a] || qf.r[m-1] != p.f.r[s.b-1] {
		return false
	}
	if !p.whole(s) {
		return false
	}
	if !slices.Equal(digitRuns(qf.r), digitRuns(p.f.r[s.a:s.b])) {
		return false
	}
	// Japanese negates with a suffix: look a few characters past the span
	e := s.b
	for e < len(p.f.r) && e < s.b+3 && isCJK(p.f.r[e]) && p.f.start[e] == p.f.end[e-1] {
		e++
	}
	if negations(qOrig) != negations(p.text[p.f.start[s.a]:p.f.end[e-1]]) {
		return false
	}
	qw := qf.words(0, m)
	pw := p.f.words(s.a, s.b)
	if !slices.Equal(numberWords(qw), numberWords(pw)) {
		return false
	}
	return EditDistance(qw, pw) <= 2+len(qw)/12
}

// numberWordSet holds the words that state a quantity: a repair that
// changes one ("one third" → "two thirds", 「四割」 → 「五割」) changes
// what the quote says.
var numberWordSet = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`zero one two three four five six seven eight nine ten eleven twelve
		thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy
		eighty ninety hundred hundreds thousand thousands million millions billion billions trillion dozen dozens
		half halves third thirds quarter quarters fourth fourths fifth fifths tenth tenths once twice thrice
		double doubled triple tripled quadruple quadrupled percent majority minority most all none few several
		〇 一 二 三 四 五 六 七 八 九 十 百 千 万 億 兆 半 倍 割 両 全 約 過 数`) {
		m[w] = true
	}
	return m
}()

func numberWords(ws []string) []string {
	var out []string
	for i, w := range ws {
		switch {
		case numberWordSet[w]:
			out = append(out, w)
		case (w == "a" || w == "an") && i+1 < len(ws) && unitWords[ws[i+1]]:
			out = append(out, "one") // "a third" is "one third"
		}
	}
	return out
}

var unitWords = map[string]bool{"third": true, "quarter": true, "fifth": true, "tenth": true, "half": true, "dozen": true,
	"hundred": true, "thousand": true, "million": true, "billion": true, "trillion": true}

func digitRuns(rs []rune) []string {
	var out []string
	cur := -1
	for i, r := range rs {
		if unicode.IsDigit(r) {
			if cur < 0 {
				cur = i
			}
			continue
		}
		if cur >= 0 {
			out = append(out, string(rs[cur:i]))
			cur = -1
		}
	}
	if cur >= 0 {
		out = append(out, string(rs[cur:]))
	}
	return out
}

var (
	enNegations = map[string]bool{"not": true, "no": true, "never": true, "none": true, "nor": true, "neither": true,
		"cannot": true, "without": true, "nobody": true, "nothing": true, "nowhere": true}
	jaNegations = []string{"ない", "なく", "なかっ", "ず", "ぬ", "ません", "未", "不", "無", "非", "否"}
)

// negations counts the words that turn a statement around.
func negations(s string) int {
	s = strings.ToLower(norm.NFKC.String(s))
	n := 0
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\'' && r != '’'
	}) {
		w = strings.ReplaceAll(w, "’", "'")
		if enNegations[w] || strings.HasSuffix(w, "n't") || contractions[w] {
			n++
		}
	}
	for _, neg := range jaNegations {
		n += strings.Count(s, neg)
	}
	return n
}

var contractions = map[string]bool{"dont": true, "doesnt": true, "didnt": true, "isnt": true, "arent": true, "wasnt": true,
	"werent": true, "cant": true, "couldnt": true, "wont": true, "wouldnt": true, "shouldnt": true, "hasnt": true,
	"havent": true, "hadnt": true, "mustnt": true, "neednt": true, "aint": true}

// Match is a quote found on a page.
type Match struct {
	// Quote is the exact text of the page that the quote stands for
	// (white space collapsed; parts skipped with an ellipsis joined by
	// " … ").
	Quote string
	// Exact is true when the quote was on the page as written (up to
	// case, width, white space and quotation marks); false when it was
	// repaired.
	Exact bool
}

// match matches a whole quote, whose parts separated by an ellipsis must
// appear in order.
func (p *pageIndex) match(quote string) (Match, bool) {
	parts := splitEllipsis(quote)
	if len(parts) == 0 {
		return Match{}, false
	}
	var spans []span
	var used []string // the parts with words, one per span
	exact := true
	from := 0
	for _, part := range parts {
		qf := fold(part)
		if len(qf.r) == 0 {
			continue
		}
		var got *span
		for _, s := range p.find(&qf, from) {
			if p.close(&qf, s, part) {
				got = &s
				break
			}
		}
		if got == nil {
			return Match{}, false
		}
		noQ := func(s string) string { return strings.ReplaceAll(Normalize(s), "\"", "") }
		if got.dist > 0 || !strings.Contains(noQ(p.text[p.f.start[got.a]:p.f.end[got.b-1]]), strings.Trim(noQ(part), "'.,;:、。")) {
			exact = false
		}
		spans = append(spans, *got)
		used = append(used, part)
		from = got.b
	}
	if len(spans) == 0 {
		return Match{}, false
	}
	var texts []string
	for i, s := range spans {
		e := int(p.f.end[s.b-1])
		// a quote that ends a sentence keeps the page's full stop
		last, _ := utf8.DecodeLastRuneInString(strings.TrimSpace(used[i]))
		if r, n := utf8.DecodeRuneInString(p.text[e:]); n > 0 && r == last && strings.ContainsRune(".!?。！？", r) {
			e += n
		}
		texts = append(texts, balanceQuotes(collapseSpace(printable(p.text[p.f.start[s.a]:e]))))
	}
	return Match{Quote: strings.Join(texts, " … "), Exact: exact}, true
}

// splitEllipsis splits a quote at its ellipses and drops empty parts.
func splitEllipsis(q string) []string {
	q = strings.ReplaceAll(q, "\u2026", "...")
	var out []string
	for _, part := range strings.Split(q, "...") {
		if strings.TrimSpace(part) != "" {
			out = append(out, part)
		}
	}
	return out
}

// Matcher finds quotes on the pages of one check, folding and indexing each
// page once.
type Matcher struct {
	pages map[string]*pageIndex
}

// NewMatcher returns an empty Matcher.
func NewMatcher() *Matcher { return &Matcher{pages: map[string]*pageIndex{}} }

// Find looks for quote in doc's text: verbatim up to case, width, white
// space and punctuation, or with a word or two different or missing. It
// never accepts a quote whose numbers or negations differ from the page.
func (m *Matcher) Find(doc Doc, quote string) (Match, bool) {
	key := doc.URL + "\x00" + doc.Text
	if doc.URL != "" {
		key = doc.URL
	}
	p := m.pages[key]
	if p == nil {
		p = newPageIndex(doc.Text)
		m.pages[key] = p
	}
	return p.match(quote)
}

// foldedLen is the length of a quote in letters and digits.
func foldedLen(q string) int {
	return len(fold(q).r)
}
