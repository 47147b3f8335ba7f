package extractbench

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"sort"
	"strings"
)

// Contender is one extractor under comparison.
type Contender struct {
	Name string
	Fn   ExtractFunc
}

// Group is a named subset of the pages a report summarises: all pages, one
// directory, one source or one page type.
type Group struct {
	Name string
	In   func(Page) bool
}

// Groups lists the groups of pages: all, each directory (set=), each source
// (source=) when a directory mixes sources, and each page type (type=), in a
// stable order. Pages without a type are grouped as type=untyped.
func Groups(pages []Page) []Group {
	sets, sources, types := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range pages {
		sets[p.Set] = true
		sources[p.Source] = true
		types[typeOf(p)] = true
	}
	gs := []Group{{Name: "all", In: func(Page) bool { return true }}}
	for _, s := range sortedKeys(sets) {
		gs = append(gs, Group{Name: "set=" + s, In: func(p Page) bool { return p.Set == s }})
	}
	for _, s := range sortedKeys(sources) {
		if sets[s] {
			continue // the same pages as the set of that name
		}
		gs = append(gs, Group{Name: "source=" + s, In: func(p Page) bool { return p.Source == s }})
	}
	if len(types) > 1 {
		for _, t := range sortedKeys(types) {
			gs = append(gs, Group{Name: "type=" + t, In: func(p Page) bool { return typeOf(p) == t }})
		}
	}
	return gs
}

func typeOf(p Page) string {
	if p.Type == "" {
		return "untyped"
	}
	return p.Type
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Fold assigns a site to one of k folds by a hash of its name, so that all
// pages of a site fall in the same fold and the assignment never changes.
func Fold(site string, k int) int {
	h := fnv.New32a()
	h.Write([]byte(site))
	return int(h.Sum32() % uint32(k))
}

// summarizeWhere summarises the scores of the pages for which keep is true.
func summarizeWhere(pages []Page, r Result, keep func(i int) bool) Summary {
	var scores []PageScore
	for i := range pages {
		if keep(i) {
			scores = append(scores, r.Pages[i].Score)
		}
	}
	return Summarize(scores, 0)
}

// HeldOut is a cross-validated figure: the mean over folds of the F1,
// precision and recall of the pages of each held-out fold, the spread of
// the fold F1s and the number of folds with pages. Worst is the lowest F1
// of a fold holding at least MinFoldPages of the group's pages (the
// figure to trust: the mean hides a corpus or a site that does badly),
// WorstFold names it; both are zero when no fold is that large.
type HeldOut struct {
	F1, Precision, Recall, F1Std float64
	Folds, Pages                 int
	Worst                        float64
	WorstFold                    string
}

// MinFoldPages is the fewest pages a fold needs for its F1 to count as
// the worst fold: a fold of two pages says nothing.
const MinFoldPages = 10

// Folding splits pages into folds for cross-validation. Of gives the
// held-out fold of a page; Train reports whether a page may be learnt
// from when fold f is held out (folds by site and source hold out both
// the fold's sites and its source).
type Folding struct {
	Name  string
	Folds []string
	Of    func(Page) int
	Train func(p Page, f int) bool
}

// BySite folds pages by a hash of their site into k folds (see Fold).
func BySite(k int) Folding {
	fo := Folding{Name: fmt.Sprintf("site, %d folds", k),
		Of:    func(p Page) int { return Fold(p.Site, k) },
		Train: func(p Page, f int) bool { return Fold(p.Site, k) != f }}
	for f := range k {
		fo.Folds = append(fo.Folds, fmt.Sprintf("site%d", f))
	}
	return fo
}

// BySource holds out one source corpus at a time (scrapinghub,
// readability, wcxb, …): what a rule learnt on the other corpora does on
// pages of a kind it never saw.
func BySource(pages []Page) Folding {
	srcs := sources(pages)
	return Folding{Name: "source corpus, leave one out", Folds: srcs,
		Of:    func(p Page) int { return slices.Index(srcs, p.Source) },
		Train: func(p Page, f int) bool { return p.Source != srcs[f] }}
}

// BySiteAndSource crosses the two: a fold is the pages of one source in
// one site fold, and a rule for it is learnt only on pages of the other
// sources in the other site folds.
func BySiteAndSource(pages []Page, k int) Folding {
	srcs := sources(pages)
	fo := Folding{Name: fmt.Sprintf("site (%d folds) and source corpus", k),
		Of: func(p Page) int { return slices.Index(srcs, p.Source)*k + Fold(p.Site, k) },
		Train: func(p Page, f int) bool {
			return p.Source != srcs[f/k] && Fold(p.Site, k) != f%k
		}}
	for _, s := range srcs {
		for f := range k {
			fo.Folds = append(fo.Folds, fmt.Sprintf("%s/site%d", s, f))
		}
	}
	return fo
}

// sources lists the pages' sources, sorted.
func sources(pages []Page) []string {
	m := map[string]bool{}
	for _, p := range pages {
		m[p.Source] = true
	}
	return sortedKeys(m)
}

// CrossValidate scores a result fold by fold: for each of k folds (pages
// grouped by site, see Fold) it summarises the pages of group g in that
// fold, and it returns the mean over the folds that hold such pages.
func CrossValidate(pages []Page, r Result, g Group, k int) HeldOut {
	return CrossValidateBy(pages, r, g, BySite(k))
}

// CrossValidateBy is CrossValidate over the folds of fo.
func CrossValidateBy(pages []Page, r Result, g Group, fo Folding) HeldOut {
	var f1s []float64
	var h HeldOut
	for f := range fo.Folds {
		s := summarizeWhere(pages, r, func(i int) bool {
			return g.In(pages[i]) && fo.Of(pages[i]) == f
		})
		if s.Pages == 0 {
			continue
		}
		f1s = append(f1s, s.F1)
		h.Precision += s.Precision
		h.Recall += s.Recall
		h.Pages += s.Pages
		if s.Pages >= MinFoldPages && (h.WorstFold == "" || s.F1 < h.Worst) {
			h.Worst, h.WorstFold = s.F1, fo.Folds[f]
		}
	}
	h.Folds = len(f1s)
	if h.Folds == 0 {
		return h
	}
	n := float64(h.Folds)
	for _, f := range f1s {
		h.F1 += f
	}
	h.F1 /= n
	h.Precision /= n
	h.Recall /= n
	h.F1Std = std(f1s)
	return h
}

// SelectByFold builds the result of choosing among candidates by
// cross-validation: for each fold, the candidate with the best F1 over the
// pages of the other folds (ties to the earlier candidate) supplies the
// scores of that fold's pages. It also returns the candidate chosen for
// each fold. Scores of the returned result are therefore held-out scores:
// no page's score comes from a choice made while looking at it.
func SelectByFold(name string, pages []Page, candidates []Result, k int) (Result, []string) {
	return SelectBy(name, pages, candidates, BySite(k))
}

// SelectBy is SelectByFold over the folds of fo: the candidate for fold f
// is chosen on the pages fo.Train allows for f.
func SelectBy(name string, pages []Page, candidates []Result, fo Folding) (Result, []string) {
	out := Result{Name: name, Pages: make([]PageResult, len(pages))}
	chosen := make([]string, len(fo.Folds))
	for f := range fo.Folds {
		best, bestF1 := 0, -1.0
		for c, r := range candidates {
			s := summarizeWhere(pages, r, func(i int) bool { return fo.Train(pages[i], f) })
			if s.F1 > bestF1 {
				best, bestF1 = c, s.F1
			}
		}
		chosen[f] = candidates[best].Name
		for i, p := range pages {
			if fo.Of(p) == f {
				out.Pages[i] = candidates[best].Pages[i]
			}
		}
	}
	var scores []PageScore
	for _, pr := range out.Pages {
		scores = append(scores, pr.Score)
		if pr.Err != nil {
			out.Errors++
		}
	}
	out.Summary = Summarize(scores, 0)
	if len(candidates) > 0 {
		out.PerPage = candidates[0].PerPage
	}
	return out, chosen
}

// Compare evaluates every contender on pages (see Evaluate).
func Compare(ctx context.Context, pages []Page, contenders []Contender, repeat int) ([]Result, error) {
	var rs []Result
	for _, c := range contenders {
		r, err := Evaluate(ctx, c.Name, pages, c.Fn, repeat)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// WriteReport prints, for every group of pages, each result's pooled
// precision, recall and F1 side by side, then the same groups
// cross-validated by site with k folds (mean of the held-out folds), then
// by each folding (site, source corpus, both) with the spread and the
// worst fold, then each result's time per page.
func WriteReport(w io.Writer, pages []Page, results []Result, k int) {
	groups := Groups(pages)
	header := func(title string, width int) {
		fmt.Fprintf(w, "%s\n%-22s %5s", title, "group", "pages")
		for _, r := range results {
			fmt.Fprintf(w, "  %-*s", width, truncName(r.Name, width))
		}
		fmt.Fprintln(w)
	}
	header("# pooled over pages: F1 (precision/recall)", 24)
	for _, g := range groups {
		n := 0
		for _, p := range pages {
			if g.In(p) {
				n++
			}
		}
		fmt.Fprintf(w, "%-22s %5d", g.Name, n)
		for _, r := range results {
			s := summarizeWhere(pages, r, func(i int) bool { return g.In(pages[i]) })
			fmt.Fprintf(w, "  %.3f (%.3f/%.3f)      ", s.F1, s.Precision, s.Recall)
		}
		fmt.Fprintln(w)
	}
	header(fmt.Sprintf("# cross-validated by site, %d folds: held-out mean F1 ±sd (precision/recall)", k), 24)
	for _, g := range groups {
		fmt.Fprintf(w, "%-22s %5s", g.Name, "")
		for _, r := range results {
			h := CrossValidate(pages, r, g, k)
			fmt.Fprintf(w, "  %.3f±%.3f (%.3f/%.3f)", h.F1, h.F1Std, h.Precision, h.Recall)
		}
		fmt.Fprintln(w)
	}
	for _, fo := range []Folding{BySite(k), BySource(pages), BySiteAndSource(pages, k)} {
		header(fmt.Sprintf("# folds by %s: held-out mean F1 ±sd, worst fold of ≥%d pages", fo.Name, MinFoldPages), 36)
		for _, g := range groups {
			fmt.Fprintf(w, "%-22s %5s", g.Name, "")
			for _, r := range results {
				h := CrossValidateBy(pages, r, g, fo)
				worst := "-"
				if h.WorstFold != "" {
					worst = fmt.Sprintf("%.3f %s", h.Worst, h.WorstFold)
				}
				fmt.Fprintf(w, "  %.3f±%.3f %-24s", h.F1, h.F1Std, truncName(worst, 24))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w, "# ms/page (serial)")
	for _, r := range results {
		fmt.Fprintln(w, r.Line())
	}
}

func truncName(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// pageF1 is one page's F1.
func pageF1(s PageScore) float64 {
	p, _ := s.Precision()
	rc, _ := s.Recall()
	if p+rc == 0 {
		return 0
	}
	return 2 * p * rc / (p + rc)
}

// WriteWorst prints the n pages with the lowest F1 for result r, with the
// other results' F1 on the same page, to show where r loses. With behind
// set it prints instead the pages where r trails the best other result
// the most.
func WriteWorst(w io.Writer, pages []Page, results []Result, r, n int, behind bool) {
	idx := make([]int, len(pages))
	for i := range idx {
		idx[i] = i
	}
	f1 := pageF1
	key := func(i int) float64 {
		if !behind {
			return f1(results[r].Pages[i].Score)
		}
		best := 0.0
		for j, o := range results {
			if j != r {
				best = max(best, f1(o.Pages[i].Score))
			}
		}
		return f1(results[r].Pages[i].Score) - best
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		da := key(a)
		db := key(b)
		switch {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return 0
	})
	for _, i := range idx[:min(n, len(idx))] {
		p := pages[i]
		pr, _ := results[r].Pages[i].Score.Precision()
		rc, _ := results[r].Pages[i].Score.Recall()
		var others []string
		for j, o := range results {
			if j != r {
				others = append(others, fmt.Sprintf("%s=%.3f", o.Name, f1(o.Pages[i].Score)))
			}
		}
		id := p.ID
		if len(id) == 64 {
			id = id[:12] // a content hash: its head is unique enough
		}
		fmt.Fprintf(w, "%.3f p=%.3f r=%.3f %-10s %-12s %s %s %s\n", f1(results[r].Pages[i].Score), pr, rc,
			typeOf(p), id, truncName(p.URL, 70), strings.Join(others, " "), p.Set)
	}
}

// Gap thresholds (see WriteGaps): a page is cut short when our recall is
// below gapOurs and a peer's is at least gapPeer, flooded when the same
// holds of precision.
const (
	gapOurs = 0.8
	gapPeer = 0.95
)

// WriteGaps prints the pages where another result keeps the body and
// result r does not: cut short (r's recall below 0.8 where another's is
// 0.95 or more, and a better F1) or flooded (the same of precision), with every result's
// precision and recall on the page, cut-short pages first.
func WriteGaps(w io.Writer, pages []Page, results []Result, r int) {
	for _, kind := range []string{"cut", "flood"} {
		measure := PageScore.Recall
		if kind == "flood" {
			measure = PageScore.Precision
		}
		for i, p := range pages {
			ours, ok := measure(results[r].Pages[i].Score)
			if !ok || ours >= gapOurs {
				continue
			}
			var peers []string
			for j, o := range results {
				if j == r {
					continue
				}
				if v, ok := measure(o.Pages[i].Score); ok && v >= gapPeer && pageF1(o.Pages[i].Score) > pageF1(results[r].Pages[i].Score) {
					peers = append(peers, o.Name)
				}
			}
			if len(peers) == 0 {
				continue
			}
			var cols []string
			for _, o := range results {
				pr, _ := o.Pages[i].Score.Precision()
				rc, _ := o.Pages[i].Score.Recall()
				cols = append(cols, fmt.Sprintf("%s=%.2f/%.2f", o.Name, pr, rc))
			}
			id := p.ID
			if len(id) == 64 {
				id = id[:12]
			}
			fmt.Fprintf(w, "%-5s %-10s %-12s %-11s %s peers:%s %s\n", kind, typeOf(p), p.Source, id,
				strings.Join(cols, " "), strings.Join(peers, ","), truncName(p.URL, 70))
		}
	}
}
