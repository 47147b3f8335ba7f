// Package extractbench measures main-content extractors against the
// Scrapinghub article-extraction benchmark layout (html/<id>.html.gz plus
// ground-truth.json) with the upstream evaluate.py metric: 4-token shingles
// compared as multisets, per-page precision and recall averaged over pages,
// and F1 of the two means. Reports (see RunCLI and WriteReport) give the
// figures per directory, source and page type, pooled and cross-validated
// by site: pages are split into k folds by a hash of their site, and the
// thresholds of package extract can be chosen on the training folds and
// scored on the held-out one (SelectByFold).
package extractbench

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
)

// ShingleSize is the number of consecutive tokens in a shingle.
const ShingleSize = 4

// Tokenize splits text into the runs of letters, numbers and '_' that
// Python's Unicode \w+ matches. Tokens are case-sensitive.
func Tokenize(text string) []string {
	var toks []string
	start := -1
	for i, r := range text {
		if isWord(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			toks = append(toks, text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		toks = append(toks, text[start:])
	}
	return toks
}

func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// Shingles returns the multiset of ShingleSize-token shingles of text. A text
// with fewer tokens than ShingleSize (but at least one) yields a single
// shorter shingle; a text without tokens yields none. Keys are the tokens
// joined with U+0000.
func Shingles(text string) map[string]int {
	return shinglesOf(Tokenize(text))
}

func shinglesOf(toks []string) map[string]int {
	m := make(map[string]int)
	if len(toks) == 0 {
		return m
	}
	n := max(1, len(toks)-ShingleSize+1)
	for i := range n {
		end := min(i+ShingleSize, len(toks))
		m[strings.Join(toks[i:end], "\x00")]++
	}
	return m
}

// PageScore is one page's normalised true positives, false positives and
// false negatives (they sum to 1 unless both texts are empty).
type PageScore struct {
	TP, FP, FN float64
	// Exact reports whether the token sequences are identical.
	Exact bool
}

// Precision is TP/(TP+FP); ok is false when the prediction has no shingle.
func (s PageScore) Precision() (p float64, ok bool) {
	if s.TP+s.FP == 0 {
		return 0, false
	}
	return s.TP / (s.TP + s.FP), true
}

// Recall is TP/(TP+FN); ok is false when the truth has no shingle.
func (s PageScore) Recall() (r float64, ok bool) {
	if s.TP+s.FN == 0 {
		return 0, false
	}
	return s.TP / (s.TP + s.FN), true
}

// ScorePage compares a predicted text with the true one. Soft hyphens
// (U+00AD) are stripped from both first: upstream's runners strip them
// from the Go extractors' output, and a truth that keeps them (a few
// pages' do) would otherwise split words the prediction joins. Nothing
// else is normalised. When neither text has a shingle the score is all
// zero, so the page counts in neither mean (as upstream's evaluate.py),
// though its tokens match exactly.
func ScorePage(truth, pred string) PageScore {
	truth = strings.ReplaceAll(truth, "\u00ad", "")
	pred = strings.ReplaceAll(pred, "\u00ad", "")
	tt, pt := Tokenize(truth), Tokenize(pred)
	ts, ps := shinglesOf(tt), shinglesOf(pt)
	var tp, fp, fn float64
	for k, pc := range ps {
		tc := ts[k]
		tp += float64(min(tc, pc))
		fp += float64(max(0, pc-tc))
	}
	for k, tc := range ts {
		fn += float64(max(0, tc-ps[k]))
	}
	s := PageScore{Exact: slices.Equal(tt, pt)}
	if sum := tp + fp + fn; sum > 0 {
		s.TP, s.FP, s.FN = tp/sum, fp/sum, fn/sum
	}
	return s
}

// Summary aggregates page scores the way upstream evaluate.py does.
type Summary struct {
	Pages             int
	Precision, Recall float64
	F1, Accuracy      float64
	PrecisionStd      float64 // bootstrap standard deviations
	RecallStd, F1Std  float64
	AccuracyStd       float64
	PrecisionPages    int // pages with at least one predicted shingle
	RecallPages       int // pages with at least one true shingle
}

// Summarize averages page scores: precision over pages with a predicted
// shingle, recall over pages with a true shingle, F1 of the two means, and
// accuracy as the share of exact token matches. It also computes bootstrap
// standard deviations with bootstrap resamples (0 skips them) from a fixed
// seed, so results are reproducible.
func Summarize(scores []PageScore, bootstrap int) Summary {
	s := summarize(scores)
	if bootstrap <= 0 || len(scores) == 0 {
		return s
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sample := make([]PageScore, len(scores))
	var ps, rs, fs, as []float64
	for range bootstrap {
		for i := range sample {
			sample[i] = scores[rng.IntN(len(scores))]
		}
		b := summarize(sample)
		ps, rs, fs, as = append(ps, b.Precision), append(rs, b.Recall), append(fs, b.F1), append(as, b.Accuracy)
	}
	s.PrecisionStd, s.RecallStd, s.F1Std, s.AccuracyStd = std(ps), std(rs), std(fs), std(as)
	return s
}

func summarize(scores []PageScore) Summary {
	s := Summary{Pages: len(scores)}
	var psum, rsum float64
	exact := 0
	for _, sc := range scores {
		if p, ok := sc.Precision(); ok {
			psum += p
			s.PrecisionPages++
		}
		if r, ok := sc.Recall(); ok {
			rsum += r
			s.RecallPages++
		}
		if sc.Exact {
			exact++
		}
	}
	if s.PrecisionPages > 0 {
		s.Precision = psum / float64(s.PrecisionPages)
	}
	if s.RecallPages > 0 {
		s.Recall = rsum / float64(s.RecallPages)
	}
	if s.Precision+s.Recall > 0 {
		s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
	}
	if len(scores) > 0 {
		s.Accuracy = float64(exact) / float64(len(scores))
	}
	return s
}

func std(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v / float64(len(xs)))
}
