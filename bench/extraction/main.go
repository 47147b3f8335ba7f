// Command extraction compares deepresearch's extractor (package
// deepresearch/tools/extract) with go-trafilatura on the same pages in the
// same run, scoring both with the Scrapinghub benchmark metric.
//
// It is a separate module so that go-trafilatura stays out of the main
// module's dependencies:
//
//	cd bench/extraction && go run . [-repeat N] [-v] [DIR]
//
// DIR defaults to ../../../shared/bench/extraction/scrapinghub.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"

	"github.com/markusmobius/go-trafilatura"

	"deepresearch/tools/extract/extractbench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	repeat := flag.Int("repeat", 1, "extract each page N times for steadier timing")
	verbose := flag.Bool("v", false, "print per-page scores, worst first")
	flag.Parse()
	dir := "../../../shared/bench/extraction/scrapinghub"
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	pages, err := extractbench.LoadDir(dir)
	if err != nil {
		return err
	}
	type contender struct {
		name string
		fn   extractbench.ExtractFunc
	}
	contenders := []contender{
		{"deepresearch", extractbench.Ours},
		{"go-trafilatura", trafilaturaFunc(true)},
		{"go-trafilatura/nofallback", trafilaturaFunc(false)},
	}
	var lines []string
	for _, c := range contenders {
		res, err := extractbench.Evaluate(ctx, c.name, pages, c.fn, *repeat)
		if err != nil {
			return err
		}
		if *verbose {
			fmt.Println("==", c.name)
			extractbench.WritePageTable(os.Stdout, res)
		}
		lines = append(lines, res.Line())
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	return nil
}

// trafilaturaFunc runs go-trafilatura as the upstream benchmark does:
// comments excluded, optionally with its readability/dom-distiller fallback.
func trafilaturaFunc(fallback bool) extractbench.ExtractFunc {
	return func(html []byte, pageURL string) (string, error) {
		opts := trafilatura.Options{EnableFallback: fallback, ExcludeComments: true}
		if u, err := url.Parse(pageURL); err == nil {
			opts.OriginalURL = u
		}
		res, err := trafilatura.Extract(bytes.NewReader(html), opts)
		if err != nil {
			return "", err
		}
		return res.ContentText, nil
	}
}
