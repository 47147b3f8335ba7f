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
// the fold F1s and the number of folds with pages.
type HeldOut struct {
	F1, Precision, Recall, F1Std float64
	Folds, Pages                 int
}

// CrossValidate scores a result fold by fold: for each of k folds (pages
// grouped by site, see Fold) it summarises the pages of group g in that
// fold, and it returns the mean over the folds that hold such pages.
func CrossValidate(pages []Page, r Result, g Group, k int) HeldOut {
	var f1s []float64
	var h HeldOut
	for f := range k {
		s := summarizeWhere(pages, r, func(i int) bool {
			return g.In(pages[i]) && Fold(pages[i].Site, k) == f
		})
		if s.Pages == 0 {
			continue
		}
		f1s = append(f1s, s.F1)
		h.Precision += s.Precision
		h.Recall += s.Recall
		h.Pages += s.Pages
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
	out := Result{Name: name, Pages: make([]PageResult, len(pages))}
	chosen := make([]string, k)
	for f := range k {
		best, bestF1 := 0, -1.0
		for c, r := range candidates {
			s := summarizeWhere(pages, r, func(i int) bool { return Fold(pages[i].Site, k) != f })
			if s.F1 > bestF1 {
				best, bestF1 = c, s.F1
			}
		}
		chosen[f] = candidates[best].Name
		for i, p := range pages {
			if Fold(p.Site, k) == f {
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
// each result's time per page.
func WriteReport(w io.Writer, pages []Page, results []Result, k int) {
	groups := Groups(pages)
	header := func(title string) {
		fmt.Fprintf(w, "%s\n%-22s %5s", title, "group", "pages")
		for _, r := range results {
			fmt.Fprintf(w, "  %-24s", truncName(r.Name, 24))
		}
		fmt.Fprintln(w)
	}
	header("# pooled over pages: F1 (precision/recall)")
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
	header(fmt.Sprintf("# cross-validated by site, %d folds: held-out mean F1 ±sd (precision/recall)", k))
	for _, g := range groups {
		fmt.Fprintf(w, "%-22s %5s", g.Name, "")
		for _, r := range results {
			h := CrossValidate(pages, r, g, k)
			fmt.Fprintf(w, "  %.3f±%.3f (%.3f/%.3f)", h.F1, h.F1Std, h.Precision, h.Recall)
		}
		fmt.Fprintln(w)
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
