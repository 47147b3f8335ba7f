package extractbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"deepresearch/tools/extract"
)

// Page is one benchmark page: its id, original URL, true article body and
// raw (decompressed) HTML, and the labels the report groups by.
type Page struct {
	ID    string
	URL   string
	Truth string
	HTML  []byte
	// Set is the base name of the directory the page came from.
	Set string
	// Source is the ground truth's "source" (the benchmark the page comes
	// from), or Set when absent.
	Source string
	// Type is the ground truth's "page_type" (article, forum, listing, …),
	// or "" when the source does not label pages.
	Type string
	// Site groups pages for cross-validation: the ground truth's "domain",
	// else the URL's host without "www.", else the page id.
	Site string
}

// LoadDir reads a directory in the Scrapinghub layout: ground-truth.json
// mapping ids to {"articleBody", "url"} (optionally "source", "page_type",
// "domain") and html/<id>.html.gz. Pages are returned sorted by id.
func LoadDir(dir string) ([]Page, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		return nil, fmt.Errorf("extractbench: read ground truth: %w", err)
	}
	var gt map[string]struct {
		ArticleBody string `json:"articleBody"`
		URL         string `json:"url"`
		Source      string `json:"source"`
		PageType    string `json:"page_type"`
		Domain      string `json:"domain"`
	}
	if err := json.Unmarshal(raw, &gt); err != nil {
		return nil, fmt.Errorf("extractbench: parse ground truth: %w", err)
	}
	set := filepath.Base(filepath.Clean(dir))
	pages := make([]Page, 0, len(gt))
	for id, e := range gt {
		html, err := readGz(filepath.Join(dir, "html", id+".html.gz"))
		if err != nil {
			return nil, fmt.Errorf("extractbench: page %s: %w", id, err)
		}
		p := Page{ID: id, URL: e.URL, Truth: e.ArticleBody, HTML: html, Set: set,
			Source: e.Source, Type: e.PageType, Site: siteOf(e.Domain, e.URL, id)}
		if p.Source == "" {
			p.Source = set
		}
		pages = append(pages, p)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].ID < pages[j].ID })
	return pages, nil
}

// LoadDirs loads several directories (see LoadDir) into one list.
func LoadDirs(dirs []string) ([]Page, error) {
	var all []Page
	for _, d := range dirs {
		pages, err := LoadDir(d)
		if err != nil {
			return nil, err
		}
		all = append(all, pages...)
	}
	return all, nil
}

// siteOf names the site a page belongs to, for grouping folds.
func siteOf(domain, pageURL, id string) string {
	if d := strings.ToLower(strings.TrimSpace(domain)); d != "" {
		return strings.TrimPrefix(d, "www.")
	}
	if u, err := url.Parse(pageURL); err == nil && u.Hostname() != "" {
		return strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	}
	return id
}

func readGz(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// ExtractFunc turns one page's HTML into its main text.
type ExtractFunc func(html []byte, pageURL string) (string, error)

// Ours is the ExtractFunc of package extract with default options.
func Ours(html []byte, pageURL string) (string, error) {
	a, err := extract.Extract(bytes.NewReader(html), pageURL, extract.Options{})
	if err != nil {
		return "", err
	}
	return a.Text, nil
}

// PageResult is the outcome for one page.
type PageResult struct {
	ID    string
	URL   string
	Score PageScore
	Pred  string
	Err   error
}

// Result is the outcome of one extractor over a set of pages.
type Result struct {
	Name    string
	Summary Summary
	Pages   []PageResult
	Errors  int
	// PerPage is the mean wall time of one extraction (serial, one goroutine).
	PerPage time.Duration
}

// Line formats the result as one line: name, P, R, F1, accuracy, ms/page.
func (r Result) Line() string {
	s := r.Summary
	return fmt.Sprintf("%-26s precision=%.3f recall=%.3f f1=%.3f (±%.3f) accuracy=%.3f ms/page=%.2f pages=%d errors=%d",
		r.Name, s.Precision, s.Recall, s.F1, s.F1Std, s.Accuracy,
		float64(r.PerPage.Microseconds())/1000, s.Pages, r.Errors)
}

// Evaluate runs fn over pages serially, repeat times for timing (the first
// run is scored), and summarises the scores with 1000 bootstrap resamples.
func Evaluate(ctx context.Context, name string, pages []Page, fn ExtractFunc, repeat int) (Result, error) {
	repeat = max(repeat, 1)
	res := Result{Name: name, Pages: make([]PageResult, len(pages))}
	scores := make([]PageScore, len(pages))
	var total time.Duration
	for i, p := range pages {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("extractbench: %w", err)
		}
		var pred string
		var perr error
		start := time.Now()
		for k := range repeat {
			out, err := fn(p.HTML, p.URL)
			if k == 0 {
				pred, perr = out, err
			}
		}
		total += time.Since(start)
		if perr != nil {
			res.Errors++
		}
		scores[i] = ScorePage(p.Truth, pred)
		res.Pages[i] = PageResult{ID: p.ID, URL: p.URL, Score: scores[i], Pred: pred, Err: perr}
	}
	if len(pages) > 0 {
		res.PerPage = total / time.Duration(len(pages)*repeat)
	}
	res.Summary = Summarize(scores, 1000)
	return res, nil
}

// DefaultDirs are the benchmark directories, relative to the repository
// root: the Scrapinghub article pages and the broad corpus of page types.
// The data is kept beside the repository, not in it.
var DefaultDirs = []string{
	"../shared/bench/extraction/scrapinghub",
	"../shared/bench/extraction/wcxb-dev",
}

// Tunings returns the alternatives to the default tuning that -grid puts
// to cross-validation: each threshold a step either side of its default.
func Tunings() []extract.Tuning {
	return []extract.Tuning{
		{BlockCost: 5}, {BlockCost: 15}, {BlockCost: 20},
		{DescendPercent: 75}, {DescendPercent: 85}, {DescendPercent: 90}, {DescendPercent: 100},
		{BroadPercent: 15}, {BroadPercent: 35}, {BroadPercent: 50},
		{MinItemLink: 10}, {MinItemLink: 25},
		{MinContent: 125}, {MinContent: 500}, {MinContent: 1000},
	}
}

// WithTuning is the ExtractFunc of package extract with tuning t.
func WithTuning(t extract.Tuning) ExtractFunc {
	return func(html []byte, pageURL string) (string, error) {
		a, err := extract.Extract(bytes.NewReader(html), pageURL, extract.Options{Tuning: t})
		if err != nil {
			return "", err
		}
		return a.Text, nil
	}
}

// RunCLI runs the benchmark for
// `extract-bench [-v] [-repeat N] [-k K] [-grid] [-gaps] [-second NAME] [-worst N [-behind] [-train F]] [-page ID] [DIR...]`:
// it scores package extract, and the other contenders given, on the pages
// of the directories (default DefaultDirs) and prints F1, precision and
// recall per directory, source and page type, pooled and cross-validated
// by site (k folds), side by side. With -grid the tunings of Tunings are
// chosen fold by fold on the training folds, so the cross-validated figures
// of "deepresearch/cv" are held-out scores of the selection.
func RunCLI(ctx context.Context, args []string, stdout, stderr io.Writer, others ...Contender) error {
	o, err := parseCLI(args, stderr)
	if err != nil {
		return err
	}
	if o.compare {
		if len(o.dirs) != 2 {
			return errors.New("extract-bench: -compare takes two dump files, BASE NEXT")
		}
		return WriteComparison(stdout, o.dirs[0], o.dirs[1], o.k)
	}
	pages, err := LoadDirs(o.dirs)
	if err != nil {
		return err
	}
	pages = onlyPages(pages, o.only)
	if o.page != "" {
		return explainPages(stdout, pages, o.page)
	}
	ours, err := Evaluate(ctx, "deepresearch", pages, Ours, o.repeat)
	if err != nil {
		return err
	}
	if o.dump != "" {
		if err := dumpTo(o.dump, pages, ours); err != nil {
			return err
		}
	}
	results := []Result{ours}
	if o.grid {
		sel, err := gridResults(ctx, stdout, pages, ours, o.k)
		if err != nil {
			return err
		}
		results = append(results, sel...)
	}
	for _, c := range others {
		r, err := Evaluate(ctx, c.Name, pages, c.Fn, o.repeat)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if o.second != "" {
		sel, err := secondResults(stdout, pages, ours, results, o.second, o.k)
		if err != nil {
			return err
		}
		results = append(results, sel...)
	}
	if o.verbose {
		WritePageTable(stdout, ours)
	}
	if o.gaps {
		WriteGaps(stdout, pages, results, 0)
	}
	if o.worst > 0 {
		wp, wr := pages, results
		if o.train >= 0 {
			wp, wr = trainingPages(pages, results, o.train, o.k)
		}
		WriteWorst(stdout, wp, wr, 0, o.worst, o.behind)
	}
	WriteReport(stdout, pages, results, o.k)
	return nil
}

// cliOptions are the flags and arguments of RunCLI.
type cliOptions struct {
	verbose, grid, behind, compare, gaps bool
	repeat, k, worst, train              int
	page, only, dump, second             string
	// dirs are the directories to load (default DefaultDirs), or with
	// -compare the two dump files.
	dirs []string
}

// parseCLI parses RunCLI's arguments.
func parseCLI(args []string, stderr io.Writer) (cliOptions, error) {
	var o cliOptions
	fs := flag.NewFlagSet("extract-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.verbose, "v", false, "print per-page scores of package extract, worst first")
	fs.IntVar(&o.repeat, "repeat", 1, "extract each page N times for steadier timing")
	fs.StringVar(&o.page, "page", "", "explain one page (id prefix): text missed and text extra")
	fs.IntVar(&o.k, "k", 5, "folds of the cross-validation by site")
	fs.BoolVar(&o.grid, "grid", false, "choose among alternative tunings by cross-validation")
	fs.IntVar(&o.worst, "worst", 0, "print the N pages where package extract scores lowest")
	fs.BoolVar(&o.gaps, "gaps", false, "print the pages another contender keeps and package extract cuts short or floods (precision/recall columns)")
	fs.BoolVar(&o.behind, "behind", false, "with -worst: the pages where package extract trails another contender most")
	fs.StringVar(&o.only, "only", "", "keep only pages whose type, source or set is this")
	fs.IntVar(&o.train, "train", -1, "with -worst: list only pages outside held-out fold F (of -k), to find rules on training folds")
	fs.StringVar(&o.dump, "dump", "", "write package extract's per-page scores to this file (for -compare)")
	fs.StringVar(&o.second, "second", "", "take the contender of this name as a second opinion, by a rule chosen by cross-validation (see Rules)")
	fs.BoolVar(&o.compare, "compare", false, "compare two dumps, BASE NEXT, fold by fold (the arguments are the dump files)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extract-bench [-v] [-repeat N] [-k K] [-grid] [-gaps] [-worst N [-behind] [-train F]] [-page ID] [-only NAME] [-dump FILE] [DIR...]\n       extract-bench -compare [-k K] BASE NEXT")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.k < 2 {
		return o, errors.New("extract-bench: -k must be at least 2")
	}
	o.dirs = fs.Args()
	if len(o.dirs) == 0 && !o.compare {
		o.dirs = DefaultDirs
	}
	return o, nil
}

// onlyPages keeps the pages whose type, source or set is only (all when
// only is empty).
func onlyPages(pages []Page, only string) []Page {
	if only == "" {
		return pages
	}
	kept := pages[:0]
	for _, p := range pages {
		if p.Type == only || p.Source == only || p.Set == only {
			kept = append(kept, p)
		}
	}
	return kept
}

// explainPages prints, for the pages whose id starts with prefix, the text
// package extract missed and the text it added (see Explain).
func explainPages(w io.Writer, pages []Page, prefix string) error {
	for _, p := range pages {
		if strings.HasPrefix(p.ID, prefix) {
			pred, err := Ours(p.HTML, p.URL)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "== %s %s %s\n", p.ID, typeOf(p), p.URL)
			Explain(w, p.Truth, pred)
		}
	}
	return nil
}

// dumpTo writes r's per-page scores to the file path (see WriteDump).
func dumpTo(path string, pages []Page, r Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("extract-bench: %w", err)
	}
	werr := WriteDump(f, pages, r)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("extract-bench: write %s: %w", path, werr)
	}
	return nil
}

// gridResults runs the tunings of Tunings and returns the selections among
// them and ours chosen fold by fold, by site and by site and source.
func gridResults(ctx context.Context, stdout io.Writer, pages []Page, ours Result, k int) ([]Result, error) {
	cands := []Result{ours}
	for _, t := range Tunings() {
		name := fmt.Sprintf("deepresearch%+v", t)
		r, err := Evaluate(ctx, name, pages, WithTuning(t), 1)
		if err != nil {
			return nil, err
		}
		cands = append(cands, r)
	}
	sel, chosen := SelectByFold("deepresearch/cv", pages, cands, k)
	for f, c := range chosen {
		fmt.Fprintf(stdout, "fold %d: chose %s\n", f, c)
	}
	// Chosen without the held-out fold's sites nor its corpus.
	fo := BySiteAndSource(pages, k)
	sel2, chosen2 := SelectBy("deepresearch/cv-site+src", pages, cands, fo)
	for f, c := range chosen2 {
		fmt.Fprintf(stdout, "fold %s: chose %s\n", fo.Folds[f], c)
	}
	return []Result{sel, sel2}, nil
}

// secondResults combines ours with the result named second by each rule
// of Rules and returns the selections among the rules chosen fold by fold,
// by site and by site and source.
func secondResults(stdout io.Writer, pages []Page, ours Result, results []Result, second string, k int) ([]Result, error) {
	var other *Result
	for i := range results {
		if results[i].Name == second {
			other = &results[i]
		}
	}
	if other == nil {
		return nil, fmt.Errorf("extract-bench: -second %s: no such contender", second)
	}
	var cands []Result
	for _, r := range Rules() {
		cands = append(cands, Combine(pages, ours, *other, r))
	}
	var out []Result
	for _, fo := range []Folding{BySite(k), BySiteAndSource(pages, k)} {
		sel, chosen := SelectBy("deepresearch+"+second+"/cv by "+fo.Name, pages, cands, fo)
		for f, c := range chosen {
			fmt.Fprintf(stdout, "second opinion, fold %s: %s\n", fo.Folds[f], c)
		}
		sel.PerPage = ours.PerPage + other.PerPage
		out = append(out, sel)
	}
	return out, nil
}

// trainingPages keeps the pages, and their results, whose site is not in
// fold f of k.
func trainingPages(pages []Page, results []Result, f, k int) ([]Page, []Result) {
	var kept []Page
	out := make([]Result, len(results))
	for j, r := range results {
		out[j] = r
		out[j].Pages = nil
	}
	for i, p := range pages {
		if Fold(p.Site, k) == f {
			continue
		}
		kept = append(kept, p)
		for j, r := range results {
			out[j].Pages = append(out[j].Pages, r.Pages[i])
		}
	}
	return kept, out
}

// WritePageTable prints each page's F1, precision and recall, worst F1 first.
func WritePageTable(w io.Writer, r Result) {
	rows := append([]PageResult(nil), r.Pages...)
	f1 := func(s PageScore) float64 {
		p, _ := s.Precision()
		rc, _ := s.Recall()
		if p+rc == 0 {
			return 0
		}
		return 2 * p * rc / (p + rc)
	}
	sort.SliceStable(rows, func(i, j int) bool { return f1(rows[i].Score) < f1(rows[j].Score) })
	for _, p := range rows {
		pr, _ := p.Score.Precision()
		rc, _ := p.Score.Recall()
		errs := ""
		if p.Err != nil {
			errs = " err=" + strings.ReplaceAll(p.Err.Error(), "\n", " ")
		}
		id := p.ID
		if len(id) == 64 {
			id = id[:12] // a content hash: its head is unique enough
		}
		fmt.Fprintf(w, "%.3f p=%.3f r=%.3f %s %s%s\n", f1(p.Score), pr, rc, id, p.URL, errs)
	}
}

// Explain prints the runs of predicted tokens not in the truth ("+") and of
// true tokens not predicted ("-"), judged by shingles.
func Explain(w io.Writer, truth, pred string) {
	sc := ScorePage(truth, pred)
	p, _ := sc.Precision()
	r, _ := sc.Recall()
	fmt.Fprintf(w, "precision=%.3f recall=%.3f\n", p, r)
	runs := func(sign string, a, b []string) {
		bs := shinglesOf(b)
		covered := make([]bool, len(a))
		for i := 0; i+ShingleSize <= len(a) || (i == 0 && len(a) > 0); i++ {
			end := min(i+ShingleSize, len(a))
			k := strings.Join(a[i:end], "\x00")
			if bs[k] > 0 {
				bs[k]--
				for j := i; j < end; j++ {
					covered[j] = true
				}
			}
		}
		for i := 0; i < len(a); {
			if covered[i] {
				i++
				continue
			}
			j := i
			for j < len(a) && !covered[j] {
				j++
			}
			fmt.Fprintf(w, "%s [%d] %s\n", sign, j-i, strings.Join(a[i:j], " "))
			i = j
		}
	}
	tt, pt := Tokenize(strings.ReplaceAll(truth, "\u00ad", "")), Tokenize(strings.ReplaceAll(pred, "\u00ad", ""))
	runs("+", pt, tt)
	runs("-", tt, pt)
}
