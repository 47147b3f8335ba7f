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
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"deepresearch/tools/extract"
)

// Page is one benchmark page: its id, original URL, true article body and
// raw (decompressed) HTML.
type Page struct {
	ID    string
	URL   string
	Truth string
	HTML  []byte
}

// LoadDir reads a directory in the Scrapinghub layout: ground-truth.json
// mapping ids to {"articleBody", "url"} and html/<id>.html.gz. Pages are
// returned sorted by id.
func LoadDir(dir string) ([]Page, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		return nil, fmt.Errorf("extractbench: read ground truth: %w", err)
	}
	var gt map[string]struct {
		ArticleBody string `json:"articleBody"`
		URL         string `json:"url"`
	}
	if err := json.Unmarshal(raw, &gt); err != nil {
		return nil, fmt.Errorf("extractbench: parse ground truth: %w", err)
	}
	pages := make([]Page, 0, len(gt))
	for id, e := range gt {
		html, err := readGz(filepath.Join(dir, "html", id+".html.gz"))
		if err != nil {
			return nil, fmt.Errorf("extractbench: page %s: %w", id, err)
		}
		pages = append(pages, Page{ID: id, URL: e.URL, Truth: e.ArticleBody, HTML: html})
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].ID < pages[j].ID })
	return pages, nil
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

// DefaultDir is where the benchmark data lives relative to the repository
// root (the shared folder beside the clone).
const DefaultDir = "../shared/bench/extraction/scrapinghub"

// RunCLI runs the benchmark for `extract-bench [-v] [-repeat N] [DIR]` and
// prints one result line for package extract. With -v it also prints each
// page's precision and recall, worst first.
func RunCLI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("extract-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "print per-page scores, worst first")
	repeat := fs.Int("repeat", 1, "extract each page N times for steadier timing")
	page := fs.String("page", "", "explain one page (id prefix): text missed and text extra")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extract-bench [-v] [-repeat N] [DIR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return errors.New("extract-bench: at most one directory")
	}
	dir := DefaultDir
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	pages, err := LoadDir(dir)
	if err != nil {
		return err
	}
	if *page != "" {
		for _, p := range pages {
			if strings.HasPrefix(p.ID, *page) {
				pred, err := Ours(p.HTML, p.URL)
				if err != nil {
					return err
				}
				Explain(stdout, p.Truth, pred)
			}
		}
		return nil
	}
	res, err := Evaluate(ctx, "deepresearch", pages, Ours, *repeat)
	if err != nil {
		return err
	}
	if *verbose {
		WritePageTable(stdout, res)
	}
	fmt.Fprintln(stdout, res.Line())
	return nil
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
		if len(id) > 12 {
			id = id[:12]
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
	tt, pt := Tokenize(truth), Tokenize(strings.ReplaceAll(pred, "\u00ad", ""))
	runs("+", pt, tt)
	runs("-", tt, pt)
}
