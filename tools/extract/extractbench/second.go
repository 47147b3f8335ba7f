package extractbench

import (
	"fmt"
)

// A second opinion: another extractor's text for the same page, taken in
// place of ours by a rule on what the two texts look like side by side
// (their lengths and how much of each the other holds). The rule's
// thresholds are chosen by cross-validation (see SelectBy), so the
// combined figures are held-out ones.

// Rule chooses between our text and the other extractor's on one page.
// It takes the other's text when that is Longer times ours or more and
// holds at least Cover of our shingles (ours cut short: the other found
// the same text and more), or when it is at most 1/Shorter of ours and
// ours holds at least Cover of its shingles (ours flooded: the other kept
// only part of what we kept). A zero Longer or Shorter switches that half
// off; the zero Rule never takes the other's text. With Short set, the
// first half asks no cover but only applies while ours has fewer than
// Short shingles: ours is unsure (next to nothing found), and the other
// found Longer times as much, whatever it is.
type Rule struct {
	Longer, Shorter float64
	Cover           float64
	Short           int
}

func (r Rule) String() string {
	if r.Short > 0 {
		return fmt.Sprintf("short<%d longer≥%g", r.Short, r.Longer)
	}
	return fmt.Sprintf("longer≥%g shorter≤1/%g cover≥%g", r.Longer, r.Shorter, r.Cover)
}

// Take reports whether r takes other in place of ours.
func (r Rule) Take(ours, other string) bool {
	if r.Longer == 0 && r.Shorter == 0 {
		return false
	}
	so, sx := Shingles(ours), Shingles(other)
	no, nx := count(so), count(sx)
	switch {
	case nx == 0:
		return false
	case no == 0:
		return r.Longer > 0
	}
	if r.Short > 0 {
		return no < r.Short && float64(nx) >= r.Longer*float64(no)
	}
	common := 0
	for k, c := range so {
		common += min(c, sx[k])
	}
	if r.Longer > 0 && float64(nx) >= r.Longer*float64(no) && float64(common) >= r.Cover*float64(no) {
		return true
	}
	return r.Shorter > 0 && float64(nx)*r.Shorter <= float64(no) && float64(common) >= r.Cover*float64(nx)
}

func count(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// Rules are the rules cross-validation chooses among: never, and each
// half on its own and together over a grid of thresholds.
func Rules() []Rule {
	rules := []Rule{{}}
	for _, cover := range []float64{0.7, 0.8, 0.9, 0.95} {
		for _, l := range []float64{1.5, 2, 3, 5} {
			rules = append(rules, Rule{Longer: l, Cover: cover})
			for _, s := range []float64{2, 3, 5} {
				rules = append(rules, Rule{Longer: l, Shorter: s, Cover: cover})
			}
		}
		for _, s := range []float64{1.5, 2, 3, 5} {
			rules = append(rules, Rule{Shorter: s, Cover: cover})
		}
	}
	for _, short := range []int{50, 100, 150, 200, 300} {
		for _, l := range []float64{2, 3, 5} {
			rules = append(rules, Rule{Short: short, Longer: l})
		}
	}
	return rules
}

// Combine builds the result of rule r over ours and other (same pages,
// same order): each page's text and score are other's where r takes it.
func Combine(pages []Page, ours, other Result, r Rule) Result {
	out := Result{Name: "deepresearch+" + other.Name + " " + r.String(), Pages: make([]PageResult, len(pages)), PerPage: ours.PerPage}
	var scores []PageScore
	for i := range pages {
		pr := ours.Pages[i]
		if r.Take(ours.Pages[i].Pred, other.Pages[i].Pred) {
			pr = other.Pages[i]
		}
		out.Pages[i] = pr
		scores = append(scores, pr.Score)
	}
	out.Summary = Summarize(scores, 0)
	return out
}
