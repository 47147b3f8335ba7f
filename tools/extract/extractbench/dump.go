package extractbench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// A dump is one extractor's per-page scores written to a file (-dump), so
// that two variants of the extractor, built one after the other, can be
// compared fold by fold without running both in one process (-compare).

// WriteDump writes one line per page: id, set, source, type, site, TP, FP,
// FN and exact (tab-separated).
func WriteDump(w io.Writer, pages []Page, r Result) error {
	bw := bufio.NewWriter(w)
	for i, p := range pages {
		s := r.Pages[i].Score
		fmt.Fprintf(bw, "%s\t%s\t%s\t%s\t%s\t%g\t%g\t%g\t%t\n", p.ID, p.Set, p.Source, p.Type, p.Site, s.TP, s.FP, s.FN, s.Exact)
	}
	return bw.Flush()
}

// ReadDump reads a file written by WriteDump into pages (without HTML or
// truth) and a result holding their scores.
func ReadDump(path string) ([]Page, Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Result{}, fmt.Errorf("extractbench: %w", err)
	}
	defer f.Close()
	var pages []Page
	r := Result{Name: path}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for line := 1; sc.Scan(); line++ {
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) != 9 {
			return nil, Result{}, fmt.Errorf("extractbench: %s:%d: want 9 fields, got %d", path, line, len(fs))
		}
		var s PageScore
		var errs [3]error
		s.TP, errs[0] = strconv.ParseFloat(fs[5], 64)
		s.FP, errs[1] = strconv.ParseFloat(fs[6], 64)
		s.FN, errs[2] = strconv.ParseFloat(fs[7], 64)
		for _, e := range errs {
			if e != nil {
				return nil, Result{}, fmt.Errorf("extractbench: %s:%d: %w", path, line, e)
			}
		}
		s.Exact = fs[8] == "true"
		pages = append(pages, Page{ID: fs[0], Set: fs[1], Source: fs[2], Type: fs[3], Site: fs[4]})
		r.Pages = append(r.Pages, PageResult{ID: fs[0], Score: s})
	}
	if err := sc.Err(); err != nil {
		return nil, Result{}, fmt.Errorf("extractbench: %s: %w", path, err)
	}
	return pages, r, nil
}

// WriteComparison compares two dumps of the same pages, base and next:
// for every group, the F1 over each fold's training pages (the pages of
// the other folds, where a rule may be chosen) and the held-out mean, for
// both, the mean and worst fold of the folds by site and source corpus
// (see BySiteAndSource) for both, and the pages whose F1 moved. A change is worth keeping when its
// training F1 rises on the training sets, not when its held-out figure
// does: the held-out figure is only reported.
func WriteComparison(w io.Writer, base, next string, k int) error {
	bp, br, err := ReadDump(base)
	if err != nil {
		return err
	}
	np, nr, err := ReadDump(next)
	if err != nil {
		return err
	}
	// Align next to base by id.
	idx := make(map[string]int, len(np))
	for i, p := range np {
		idx[p.ID] = i
	}
	aligned := Result{Name: next, Pages: make([]PageResult, len(bp))}
	for i, p := range bp {
		j, ok := idx[p.ID]
		if !ok {
			return fmt.Errorf("extractbench: page %s of %s is not in %s", p.ID, base, next)
		}
		aligned.Pages[i] = nr.Pages[j]
	}
	if len(np) != len(bp) {
		return fmt.Errorf("extractbench: %s has %d pages, %s %d", base, len(bp), next, len(np))
	}
	fmt.Fprintf(w, "# training F1 per fold (base → next), held-out mean; %d folds\n", k)
	for _, g := range Groups(bp) {
		fmt.Fprintf(w, "%-22s", g.Name)
		up, down := 0, 0
		for f := range k {
			keep := func(i int) bool { return g.In(bp[i]) && Fold(bp[i].Site, k) != f }
			a := summarizeWhere(bp, br, keep)
			b := summarizeWhere(bp, aligned, keep)
			switch {
			case b.F1 > a.F1+1e-9:
				up++
			case b.F1 < a.F1-1e-9:
				down++
			}
			fmt.Fprintf(w, "  %.4f→%.4f", a.F1, b.F1)
		}
		ha, hb := CrossValidate(bp, br, g, k), CrossValidate(bp, aligned, g, k)
		fmt.Fprintf(w, "  | up %d down %d | held-out %.4f→%.4f\n", up, down, ha.F1, hb.F1)
	}
	fo := BySiteAndSource(bp, k)
	fmt.Fprintf(w, "# folds by %s: mean F1 / worst fold of ≥%d pages (base → next)\n", fo.Name, MinFoldPages)
	for _, g := range Groups(bp) {
		a, b := CrossValidateBy(bp, br, g, fo), CrossValidateBy(bp, aligned, g, fo)
		fmt.Fprintf(w, "× %-20s  mean %.4f→%.4f  worst %s→%s\n", g.Name, a.F1, b.F1, worstOf(a), worstOf(b))
	}
	type moved struct {
		id, typ string
		a, b    float64
	}
	var ms []moved
	for i, p := range bp {
		a, b := pageF1(br.Pages[i].Score), pageF1(aligned.Pages[i].Score)
		if a != b {
			ms = append(ms, moved{p.ID, typeOf(p), a, b})
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].b-ms[i].a < ms[j].b-ms[j].a })
	fmt.Fprintf(w, "# %d pages moved (page F1 base → next), worst first\n", len(ms))
	for _, m := range ms {
		fmt.Fprintf(w, "%+.3f  %.3f→%.3f  %-10s %s\n", m.b-m.a, m.a, m.b, m.typ, m.id)
	}
	return nil
}

// worstOf formats a cross-validated figure's worst fold ("-" when no fold
// is large enough).
func worstOf(h HeldOut) string {
	if h.WorstFold == "" {
		return "-"
	}
	return fmt.Sprintf("%.4f (%s)", h.Worst, h.WorstFold)
}
