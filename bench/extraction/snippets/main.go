// Command snippets scores deepresearch's extractor beside go-trafilatura and
// readeck's go-readability on a corpus labelled with snippets rather than
// whole bodies: for each page, strings its main text must hold ("with") and
// strings it must not ("without"). This is how trafilatura's own evaluation
// set is labelled (as redistributed by
// github.com/markusmobius/content-extractor-benchmark: data.go plus
// files/*.html); none of it is in this repository. Point -dir at a checkout:
//
//	cd bench/extraction && go run ./snippets -dir /path/to/content-extractor-benchmark
//
// The metric is that set's: a "with" snippet found is a true positive, one
// missing a false negative; a "without" snippet found is a false positive.
// Precision, recall and F1 pool the snippets of all pages. Whitespace runs
// are collapsed on both sides before matching, for every extractor alike.
//
// Caveat when reading the figures: trafilatura (and so go-trafilatura) was
// developed against this very set, so it is a flattering peer here; for
// deepresearch the pages are unseen.
package main

import (
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"deepresearch/bench/extraction/peers"
	"deepresearch/tools/extract/extractbench"
)

type entry struct {
	URL, File     string
	With, Without []string
	html          []byte
}

type extractor struct {
	name string
	fn   extractbench.ExtractFunc
}

type counts struct{ tp, fn, fp, tn int }

func (c *counts) add(o counts) { c.tp += o.tp; c.fn += o.fn; c.fp += o.fp; c.tn += o.tn }

func (c counts) line() string {
	tp, fn, fp := float64(c.tp), float64(c.fn), float64(c.fp)
	p, r := tp/(tp+fp), tp/(tp+fn)
	return fmt.Sprintf("precision=%.3f recall=%.3f f1=%.3f", p, r, 2*tp/(2*tp+fp+fn))
}

func main() {
	dir := flag.String("dir", "", "checkout of content-extractor-benchmark (data.go and files/)")
	tsv := flag.String("tsv", "", "write per-page counts of each extractor to this file")
	half := flag.String("half", "all", "which pages: tune (one half, by a hash of the file name, for looking at pages), check (the other half, for figures only) or all")
	dump := flag.String("dump", "", "write each extractor's text of each page under this directory")
	tunings := flag.Bool("tunings", false, "also score deepresearch under each alternative tuning of extractbench.Tunings")
	second := flag.Bool("second", false, "also score readeck as a second opinion to deepresearch under each rule of extractbench.Rules")
	flag.Parse()
	if err := run(context.Background(), *dir, *tsv, *half, *dump, *second, *tunings); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, tsv, half, dump string, second, tunings bool) error {
	if dir == "" {
		return fmt.Errorf("snippets: -dir is required (a checkout of content-extractor-benchmark)")
	}
	entries, err := load(dir)
	if err != nil {
		return err
	}
	if entries, err = halfOf(entries, half); err != nil {
		return err
	}
	exs := []extractor{
		{"deepresearch", extractbench.Ours},
		{"go-trafilatura", peers.Trafilatura(true)},
		{"readeck", peers.Readeck},
	}
	if tunings {
		for _, t := range extractbench.Tunings() {
			exs = append(exs, extractor{fmt.Sprintf("%+v", t), extractbench.WithTuning(t)})
		}
	}
	per := make([][]counts, len(exs))
	texts := make([][]string, len(exs))
	for i, ex := range exs {
		if err := ctx.Err(); err != nil {
			return err
		}
		var total counts
		start := time.Now()
		for _, e := range entries {
			text, _ := ex.fn(e.html, e.URL)
			if dump != "" {
				d := filepath.Join(dump, ex.name)
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, e.File+".txt"), []byte(text), 0o644); err != nil {
					return err
				}
			}
			c := score(e, text)
			per[i] = append(per[i], c)
			if second {
				texts[i] = append(texts[i], text)
			}
			total.add(c)
		}
		ms := float64(time.Since(start).Microseconds()) / 1000 / float64(len(entries))
		fmt.Printf("%-15s %s ms/page=%.2f pages=%d\n", ex.name, total.line(), ms, len(entries))
	}
	if second {
		secondOpinion(entries, texts[0], texts[2])
	}
	if tsv == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("file")
	for _, ex := range exs {
		fmt.Fprintf(&b, "\t%s_tp\t%s_fn\t%s_fp", ex.name, ex.name, ex.name)
	}
	b.WriteString("\n")
	for j, e := range entries {
		b.WriteString(e.File)
		for i := range exs {
			c := per[i][j]
			fmt.Fprintf(&b, "\t%d\t%d\t%d", c.tp, c.fn, c.fp)
		}
		b.WriteString("\n")
	}
	return os.WriteFile(tsv, []byte(b.String()), 0o644)
}

// halfOf splits the pages in two by an FNV hash of the file name: "tune"
// pages may be looked at one by one while developing, "check" pages only
// ever give a pooled figure, so that a change tuned on the first half is
// judged on pages no one looked at.
func halfOf(entries []entry, half string) ([]entry, error) {
	if half == "all" {
		return entries, nil
	}
	if half != "tune" && half != "check" {
		return nil, fmt.Errorf("snippets: -half must be tune, check or all, not %q", half)
	}
	var out []entry
	for _, e := range entries {
		h := fnv.New32a()
		h.Write([]byte(e.File))
		if (h.Sum32()%2 == 0) == (half == "tune") {
			out = append(out, e)
		}
	}
	return out, nil
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

func score(e entry, text string) counts {
	text = normalize(text)
	var c counts
	for _, s := range e.With {
		if text != "" && strings.Contains(text, normalize(s)) {
			c.tp++
		} else {
			c.fn++
		}
	}
	for _, s := range e.Without {
		if text != "" && strings.Contains(text, normalize(s)) {
			c.fp++
		} else {
			c.tn++
		}
	}
	return c
}

// load reads data.go's comparisonData literal with go/parser and the HTML
// files it names. Entries whose file is missing are skipped.
func load(dir string) ([]entry, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "data.go"), nil, 0)
	if err != nil {
		return nil, fmt.Errorf("snippets: parse data.go: %w", err)
	}
	var out []entry
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if _, isArray := lit.Type.(*ast.ArrayType); isArray {
			return true
		}
		e, ok := entryOf(lit)
		if ok {
			out = append(out, e)
		}
		return false
	})
	kept := out[:0]
	for _, e := range out {
		raw, err := os.ReadFile(filepath.Join(dir, "files", e.File))
		if err != nil {
			continue
		}
		e.html = raw
		kept = append(kept, e)
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].File < kept[j].File })
	return kept, nil
}

func entryOf(lit *ast.CompositeLit) (entry, bool) {
	var e entry
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			continue
		}
		switch key.Name {
		case "URL":
			e.URL = stringOf(kv.Value)
		case "File":
			e.File = stringOf(kv.Value)
		case "With":
			e.With = stringsOf(kv.Value)
		case "Without":
			e.Without = stringsOf(kv.Value)
		}
	}
	return e, e.File != "" && len(e.With)+len(e.Without) > 0
}

func stringOf(x ast.Expr) string {
	b, ok := x.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(b.Value)
	if err != nil {
		return ""
	}
	return s
}

func stringsOf(x ast.Expr) []string {
	lit, ok := x.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range lit.Elts {
		if s := stringOf(el); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// secondOpinion prints, for each rule, the pooled figures of ours with
// readeck's text taken where the rule says so, and on how many pages.
func secondOpinion(entries []entry, ours, other []string) {
	for _, r := range extractbench.Rules() {
		var total counts
		taken := 0
		for j, e := range entries {
			text := ours[j]
			if r.Take(ours[j], other[j]) {
				text = other[j]
				taken++
			}
			total.add(score(e, text))
		}
		fmt.Printf("second %-40s %s taken=%d\n", r, total.line(), taken)
	}
}
