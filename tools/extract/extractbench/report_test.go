package extractbench

import (
	"fmt"
	"strings"
	"testing"
)

func TestSiteOf(t *testing.T) {
	tests := []struct{ domain, url, id, want string }{
		{"Example.org", "https://other.net/x", "p1", "example.org"},
		{"", "https://www.example.com/a/b", "p2", "example.com"},
		{"", "", "readability-001", "readability-001"},
		{"", "::bad", "p3", "p3"},
	}
	for _, tt := range tests {
		if got := siteOf(tt.domain, tt.url, tt.id); got != tt.want {
			t.Errorf("siteOf(%q, %q, %q) = %q, want %q", tt.domain, tt.url, tt.id, got, tt.want)
		}
	}
}

func TestFoldIsStableAndSpread(t *testing.T) {
	counts := make([]int, 5)
	for i := range 1000 {
		site := strings.Repeat("s", i%7) + string(rune('a'+i%26)) + ".example"
		f := Fold(site, 5)
		if f != Fold(site, 5) {
			t.Fatalf("Fold(%q) changed between calls", site)
		}
		counts[f]++
	}
	for f, n := range counts {
		if n == 0 {
			t.Errorf("fold %d empty: %v", f, counts)
		}
	}
}

// scored builds a result whose page i has the given precision-free score:
// TP share tp[i], the rest false negatives.
func scored(name string, tp []float64) Result {
	r := Result{Name: name}
	for _, v := range tp {
		r.Pages = append(r.Pages, PageResult{Score: PageScore{TP: v, FN: 1 - v}})
	}
	return r
}

func TestSelectByFoldUsesOnlyTrainingFolds(t *testing.T) {
	// Two sites in different folds. Candidate "a" is perfect on site x and
	// useless on y; "b" the reverse. Each fold must be scored by the
	// candidate that wins on the other fold, so the held-out result is the
	// worse candidate on every page.
	x, y := "x.example", ""
	for i := range 100 {
		y = string(rune('a'+i%26)) + strings.Repeat("y", i/26) + ".example"
		if Fold(y, 2) != Fold(x, 2) {
			break
		}
	}
	pages := []Page{{ID: "1", Site: x}, {ID: "2", Site: y}}
	a := scored("a", []float64{1, 0.1})
	b := scored("b", []float64{0.1, 1})
	sel, chosen := SelectByFold("cv", pages, []Result{a, b}, 2)
	if sel.Pages[0].Score.TP != 0.1 || sel.Pages[1].Score.TP != 0.1 {
		t.Errorf("held-out scores %+v, want the other fold's winner (0.1 each)", sel.Pages)
	}
	if chosen[Fold(x, 2)] != "b" || chosen[Fold(y, 2)] != "a" {
		t.Errorf("chosen = %v", chosen)
	}
}

func TestCrossValidateMeansFolds(t *testing.T) {
	pages := []Page{{ID: "1", Site: "one.example", Type: "forum"}, {ID: "2", Site: "two.example", Type: "forum"},
		{ID: "3", Site: "one.example", Type: "article"}}
	r := scored("r", []float64{1, 0.5, 0.2})
	g := Group{Name: "type=forum", In: func(p Page) bool { return p.Type == "forum" }}
	h := CrossValidate(pages, r, g, 5)
	if h.Pages != 2 {
		t.Fatalf("pages = %d, want 2", h.Pages)
	}
	if Fold("one.example", 5) != Fold("two.example", 5) {
		// Recall 1 and 0.5 in two folds (precision of a page without
		// predicted shingles is undefined and left out).
		if h.Folds != 2 || !near(h.Recall, 0.75) {
			t.Errorf("held-out %+v, want 2 folds with mean recall 0.75", h)
		}
	}
	names := []string{}
	for _, g := range Groups(pages) {
		names = append(names, g.Name)
	}
	if got := strings.Join(names, ","); got != "all,set=,type=article,type=forum" {
		t.Errorf("groups = %s", got)
	}
}

func TestFoldingsHoldOutSiteAndSource(t *testing.T) {
	var pages []Page
	for i := range 40 {
		src := []string{"news", "shops"}[i%2]
		pages = append(pages, Page{ID: fmt.Sprint(i), Site: fmt.Sprintf("s%d.example", i/2), Source: src})
	}
	bs := BySiteAndSource(pages, 4)
	if len(bs.Folds) != 8 {
		t.Fatalf("folds = %v, want 2 sources × 4 site folds", bs.Folds)
	}
	for _, p := range pages {
		f := bs.Of(p)
		if bs.Folds[f] != fmt.Sprintf("%s/site%d", p.Source, Fold(p.Site, 4)) {
			t.Errorf("page %s in fold %s", p.ID, bs.Folds[f])
		}
		for _, q := range pages {
			// A page trains fold f only if it shares neither its
			// source nor its site fold.
			want := q.Source != p.Source && Fold(q.Site, 4) != Fold(p.Site, 4)
			if got := bs.Train(q, f); got != want {
				t.Fatalf("Train(%s, fold of %s) = %v, want %v", q.ID, p.ID, got, want)
			}
		}
	}
	src := BySource(pages)
	if strings.Join(src.Folds, ",") != "news,shops" || src.Train(pages[0], src.Of(pages[0])) {
		t.Errorf("by source: folds %v; a page trains its own source's fold", src.Folds)
	}
}

func TestCrossValidateWorstFold(t *testing.T) {
	// Source "a": 12 pages of recall 1; source "b": 12 pages of recall
	// 0.5 and, alone in its fold, "c": 2 pages of recall 0 (too few to
	// count as the worst fold).
	var pages []Page
	var tp []float64
	for i := range 26 {
		src, v := "a", 1.0
		switch {
		case i >= 24:
			src, v = "c", 0
		case i >= 12:
			src, v = "b", 0.5
		}
		pages = append(pages, Page{ID: fmt.Sprint(i), Site: fmt.Sprintf("s%d", i), Source: src})
		tp = append(tp, v)
	}
	r := scored("r", tp)
	all := Group{Name: "all", In: func(Page) bool { return true }}
	h := CrossValidateBy(pages, r, all, BySource(pages))
	if h.Folds != 3 || h.WorstFold != "b" || !near(h.Worst, 2*0.5/1.5) {
		t.Errorf("held out by source: %+v, want 3 folds, worst b (F1 of P 1 and R 0.5)", h)
	}
}

func TestWriteGaps(t *testing.T) {
	pages := []Page{
		{ID: "cut", Source: "s"}, {ID: "flood", Source: "s"}, {ID: "both-bad", Source: "s"}, {ID: "fine", Source: "s"},
	}
	ours := Result{Name: "ours", Pages: []PageResult{
		{Score: PageScore{TP: 0.2, FN: 0.8}},
		{Score: PageScore{TP: 0.3, FP: 0.7}},
		{Score: PageScore{TP: 0.2, FN: 0.8}},
		{Score: PageScore{TP: 1}},
	}}
	peer := Result{Name: "peer", Pages: []PageResult{
		{Score: PageScore{TP: 1}},
		{Score: PageScore{TP: 0.97, FN: 0.03}},
		// A peer that keeps everything but floods does not count as
		// keeping a body we cut short unless its F1 is better.
		{Score: PageScore{TP: 0.2, FP: 0.8}},
		{Score: PageScore{TP: 1}},
	}}
	var b strings.Builder
	WriteGaps(&b, pages, []Result{ours, peer}, 0)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "cut ") || !strings.Contains(lines[0], " cut ") ||
		!strings.HasPrefix(lines[1], "flood ") || !strings.Contains(lines[1], "peers:peer") {
		t.Errorf("WriteGaps =\n%s", b.String())
	}
}
