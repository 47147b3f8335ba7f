package agent

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Team research: with a team size above 1 each subtask is researched by
// that many researchers at once, each with its own strategy, all within
// the run's limits (the token budget and its reserve, the run's model
// calls and host fetches are the run's, shared by the whole team). Their
// findings are merged and cross-checked: a statement that sites
// independent of each other make is marked corroborated; a quantity they
// state differently is reported as a disagreement citing both.

// MaxTeamSize is the largest team: one researcher per strategy.
const MaxTeamSize = 4

// strategy is how one member of a team researches a subtask.
type strategy struct {
	name string
	// suffix rephrases the planned queries of the first try, by the
	// question's language (en for any other).
	suffix map[string]string
	// hint is what the member's select step is told to do differently.
	hint string
}

// strategies are the members' strategies, member 0 first: the plan as it
// is, primary sources, independent reporting, sources from elsewhere.
var strategies = []strategy{
	{name: "planned"},
	{name: "primary", suffix: map[string]string{"en": "official data", "ja": "公式 統計"},
		hint: "Prefer primary sources: official publications, statistics offices, regulators, the organisations concerned. Phrase queries as such a source titles its documents."},
	{name: "independent", suffix: map[string]string{"en": "news analysis", "ja": "報道 解説"},
		hint: "Prefer independent secondary sources: news reports, analyses, reviews, critics. Phrase queries as a journalist's question."},
	{name: "elsewhere", suffix: map[string]string{"en": "international comparison", "ja": "海外 比較"},
		hint: "Prefer sources from other countries and in another language than the question's (English for a non-English question, the language of the place concerned otherwise)."},
}

// teamSize is the run's team size: the request's, else the option's,
// within 1 and MaxTeamSize.
func (a *core) teamSize(r Request) int {
	n := r.TeamSize
	if n <= 0 {
		n = a.opts.TeamSize
	}
	return min(max(n, 1), MaxTeamSize)
}

// strategyOf is a team member's strategy.
func strategyOf(member int) strategy { return strategies[member%len(strategies)] }

// memberQueries rephrases the planned queries of a subtask for a member's
// strategy (member 0 keeps them).
func memberQueries(qs []string, member int, lang string) []string {
	st := strategyOf(member)
	if member == 0 || len(st.suffix) == 0 {
		return qs
	}
	sfx, ok := st.suffix[lang]
	if !ok {
		sfx = st.suffix["en"]
	}
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = strings.TrimSpace(q) + " " + sfx
	}
	return out
}

// CrossCheck is what the findings of a run say together: statements that
// independent sites make alike, and quantities they state differently.
type CrossCheck struct {
	Corroborated  []Corroboration `json:"corroborated,omitempty"`
	Disagreements []Disagreement  `json:"disagreements,omitempty"`
}

// Corroboration is a statement made alike by findings from different sites.
type Corroboration struct {
	Claim    string   `json:"claim"`
	Sites    []string `json:"sites"`
	Findings []string `json:"findings"` // finding ids, one per site
}

// Disagreement is one quantity two sites state differently.
type Disagreement struct {
	A Stated `json:"a"`
	B Stated `json:"b"`
}

// Stated is what one site says in a disagreement.
type Stated struct {
	Site    string   `json:"site"`
	Quote   string   `json:"quote"`
	Finding string   `json:"finding"` // finding id
	Figures []string `json:"figures"`
}

// Limits of a cross-check: the shortest statement compared (in terms), how
// alike two statements must be to be about the same thing, and how many of
// each kind are reported.
const (
	minTerms        = 3
	sameStatement   = 0.5
	maxCrossChecked = 8
)

// checked is a finding prepared for the cross-check.
type checked struct {
	f       Finding
	site    string
	terms   map[string]bool
	figures []string // sorted, years excluded
}

// crossCheck compares the verified findings pairwise. Two findings are
// about the same thing when their claims share most terms (years count as
// terms: 2023's figure does not contradict 2024's); from different sites
// they corroborate each other when they state the same figures (or one
// states a part of the other's), and disagree when both state figures and
// share none. Claims whose figures
// their quotes do not hold are left out (their numbers are not sourced).
func crossCheck(fs []Finding) CrossCheck {
	cs := checkable(fs)
	// union the findings that agree into groups
	groups := newUnionFind(len(cs))
	var disagree []pair
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			if !sameThing(cs[i], cs[j]) {
				continue
			}
			switch figuresAgree(cs[i].figures, cs[j].figures) {
			case agree:
				groups.union(i, j)
			case differ:
				disagree = append(disagree, pair{i, j})
			}
		}
	}
	return CrossCheck{Corroborated: corroborations(cs, groups), Disagreements: disagreements(cs, groups, disagree)}
}

// checkable are the findings a cross-check compares: verified, sourced
// and not computed, with figures their quotes hold, and claims of enough
// terms.
func checkable(fs []Finding) []checked {
	var cs []checked
	for _, f := range fs {
		if !f.Verified || f.Kind == FindingComputed || f.URL == "" || len(unstatedFigures(f.Claim, f.Quote)) > 0 {
			continue
		}
		terms, figs := claimTerms(f.Claim)
		if len(terms) < minTerms {
			continue
		}
		cs = append(cs, checked{f: f, site: siteOf(f.URL), terms: terms, figures: figs})
	}
	return cs
}

// sameThing reports whether two findings from different sites state
// something about the same thing (most terms shared, no other years).
func sameThing(a, b checked) bool {
	return a.site != b.site && jaccard(a.terms, b.terms) >= sameStatement && !otherYears(a.terms, b.terms)
}

// pair is two findings by index.
type pair struct{ i, j int }

// unionFind groups indexes (with path halving).
type unionFind []int

func newUnionFind(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = i
	}
	return u
}

// find is the root of i's group.
func (u unionFind) find(i int) int {
	for u[i] != i {
		u[i] = u[u[i]]
		i = u[i]
	}
	return i
}

// union puts j's group under i's root.
func (u unionFind) union(i, j int) { u[u.find(j)] = u.find(i) }

// corroborations are the groups of findings from two sites or more, in
// the order of their first finding, one finding a site, at most
// maxCrossChecked.
func corroborations(cs []checked, u unionFind) []Corroboration {
	groups := map[int][]int{}
	var roots []int
	for i := range cs {
		r := u.find(i)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], i)
	}
	var out []Corroboration
	for _, r := range roots {
		var co Corroboration
		for _, i := range groups[r] {
			if !slices.Contains(co.Sites, cs[i].site) {
				co.Sites = append(co.Sites, cs[i].site)
				co.Findings = append(co.Findings, cs[i].f.ID)
			}
		}
		if len(co.Sites) < 2 || len(out) == maxCrossChecked {
			continue
		}
		co.Claim = cs[groups[r][0]].f.Claim
		out = append(out, co)
	}
	return out
}

// disagreements are the pairs whose figures differ, one a pair of groups,
// at most maxCrossChecked.
func disagreements(cs []checked, u unionFind, disagree []pair) []Disagreement {
	var out []Disagreement
	seen := map[pair]bool{}
	side := func(c checked) Stated {
		return Stated{Site: c.site, Quote: c.f.Quote, Finding: c.f.ID, Figures: c.figures}
	}
	for _, p := range disagree {
		k := pair{u.find(p.i), u.find(p.j)}
		if k.i > k.j {
			k.i, k.j = k.j, k.i
		}
		if seen[k] || len(out) == maxCrossChecked {
			continue
		}
		seen[k] = true
		out = append(out, Disagreement{A: side(cs[p.i]), B: side(cs[p.j])})
	}
	return out
}

// How the figures of two statements about the same thing compare.
const (
	unrelated = iota // some shared, some not: neither
	agree            // the same, or one's are all among the other's (none: the same words)
	differ           // both state figures and share none
)

func figuresAgree(a, b []string) int {
	shared := 0
	for _, f := range a {
		if slices.Contains(b, f) {
			shared++
		}
	}
	switch {
	case shared == min(len(a), len(b)) && (len(a) == len(b) || shared > 0):
		return agree
	case shared == 0 && len(a) > 0 && len(b) > 0:
		return differ
	}
	return unrelated
}

// claimTerms splits a claim into the terms that say what it is about —
// words of three letters or more (pairs of characters in scripts written
// without spaces) and years — and the other figures it states, sorted.
func claimTerms(claim string) (map[string]bool, []string) {
	text := strings.ToLower(norm.NFKC.String(claim))
	terms := map[string]bool{}
	var figs []string
	for _, fg := range figures(text) {
		if y, err := strconv.Atoi(fg); err == nil && y >= 1900 && y <= 2100 {
			terms["year:"+fg] = true
			continue
		}
		if !slices.Contains(figs, fg) {
			figs = append(figs, fg)
		}
	}
	slices.Sort(figs)
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) })
	for _, w := range words {
		rs := []rune(w)
		if spaceless(rs[0]) {
			for i := 0; i+1 < len(rs); i++ {
				terms[string(rs[i:i+2])] = true
			}
			continue
		}
		if len(rs) >= 3 && !stopword[w] {
			terms[w] = true
		}
	}
	return terms, figs
}

// spaceless reports whether r is of a script written without spaces.
func spaceless(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai)
}

var stopword = map[string]bool{}

func init() {
	for _, w := range strings.Fields("the and for are was were has have had that this with from into its their which who claim per cent percent than more less about over under some") {
		stopword[w] = true
	}
}

// otherYears reports whether two statements are about different years:
// both name years and none in common.
func otherYears(a, b map[string]bool) bool {
	ya, yb, both := 0, 0, 0
	for t := range a {
		if strings.HasPrefix(t, "year:") {
			ya++
			if b[t] {
				both++
			}
		}
	}
	for t := range b {
		if strings.HasPrefix(t, "year:") {
			yb++
		}
	}
	return ya > 0 && yb > 0 && both == 0
}

func jaccard(a, b map[string]bool) float64 {
	both := 0
	for t := range a {
		if b[t] {
			both++
		}
	}
	all := len(a) + len(b) - both
	if all == 0 {
		return 0
	}
	return float64(both) / float64(all)
}

// siteOf is the site a URL is on: its host without "www.".
func siteOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
}

// crossCheckHeading is the report section the cross-check writes.
func crossCheckHeading(lang string) string {
	return label(lang, "## Cross-checked Claims", "## 情報源の照合")
}

// withCrossCheck puts the cross-check into a draft as its own section,
// citing the evidence by id (the citation check turns the ids into
// footnotes), in place of the section an earlier version had.
func withCrossCheck(draft string, cc CrossCheck, ix evidenceIndex, lang string) string {
	head := crossCheckHeading(lang)
	draft = dropSection(draft, head)
	cite := func(id string) string {
		if n, ok := ix.num[id]; ok {
			return "[E" + strconv.Itoa(n) + "]"
		}
		return ""
	}
	var items []string
	for _, co := range cc.Corroborated {
		var refs strings.Builder
		for _, id := range co.Findings {
			refs.WriteString(cite(id))
		}
		items = append(items, label(lang,
			"Corroborated by "+strconv.Itoa(len(co.Sites))+" independent sites ("+strings.Join(co.Sites, ", ")+"): "+co.Claim+" "+refs.String(),
			strconv.Itoa(len(co.Sites))+"つの独立した情報源（"+strings.Join(co.Sites, "、")+"）が裏付け: "+co.Claim+" "+refs.String()))
	}
	for _, d := range cc.Disagreements {
		items = append(items, label(lang,
			"Sources disagree: "+d.A.Site+" says “"+d.A.Quote+"” "+cite(d.A.Finding)+"; "+d.B.Site+" says “"+d.B.Quote+"” "+cite(d.B.Finding)+". Both are reported; neither is picked.",
			"情報源の間で食い違い: "+d.A.Site+"は「"+d.A.Quote+"」"+cite(d.A.Finding)+"、"+d.B.Site+"は「"+d.B.Quote+"」"+cite(d.B.Finding)+"。どちらか一方を採らず、両方を示す。"))
	}
	if len(items) == 0 {
		return draft
	}
	return insertSection(draft, head, items)
}

// disagreementLines tell the writer which figures the sources state
// differently, by evidence id.
func disagreementLines(cc CrossCheck, ix evidenceIndex) []string {
	var out []string
	for _, d := range cc.Disagreements {
		na, oka := ix.num[d.A.Finding]
		nb, okb := ix.num[d.B.Finding]
		if !oka || !okb {
			continue
		}
		out = append(out, fmt.Sprintf("[E%d] %s: %q vs [E%d] %s: %q", na, d.A.Site, d.A.Quote, nb, d.B.Site, d.B.Quote))
	}
	return out
}

// dropSection removes a "## " section by its heading, up to the next one.
func dropSection(report, heading string) string {
	i := strings.Index(report, heading+"\n")
	if i < 0 {
		return report
	}
	rest := report[i+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		return report[:i] + strings.TrimLeft(rest[j+1:], "\n")
	}
	return strings.TrimRight(report[:i], "\n") + "\n"
}

// teamCompleted reports whether another member of r's team completed
// r's subtask: then r's gaps are not the subtask's.
func teamCompleted(s State, r SubtaskResult) bool {
	for _, o := range s.Results {
		if o.Turn == r.Turn && o.Round == r.Round && o.Index == r.Index && o.Member != r.Member && o.Completed {
			return true
		}
	}
	return false
}

// mergeMembers is the result of a subtask two members of a team returned:
// done when either finished it, with both answers' statements.
func mergeMembers(a, b SubtaskResult) SubtaskResult {
	out := a
	out.Answer = strings.TrimSpace(a.Answer + "\n" + b.Answer)
	out.Statements = append(slices.Clip(a.Statements), b.Statements...)
	out.Completed = a.Completed || b.Completed
	out.Gaps = nil
	if !out.Completed {
		out.Gaps = append(slices.Clip(a.Gaps), b.Gaps...)
	}
	out.Findings += b.Findings
	out.Tries = max(a.Tries, b.Tries)
	out.Searches += b.Searches
	out.Read = append(slices.Clip(a.Read), b.Read...)
	if out.Stopped == "" {
		out.Stopped = b.Stopped
	}
	return out
}
