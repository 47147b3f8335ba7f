// Command extraction compares deepresearch's extractor (package
// deepresearch/tools/extract) with go-trafilatura on the same pages in the
// same run, scoring both with the Scrapinghub benchmark metric per source
// and page type, pooled and cross-validated by site.
//
// It is a separate module so that go-trafilatura stays out of the main
// module's dependencies:
//
//	cd bench/extraction && go run . [-repeat N] [-k K] [-grid] [-worst N] [DIR...]
//
// DIR defaults to the scrapinghub and wcxb-dev folders of
// ../../../shared/bench/extraction.
package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"

	readability "codeberg.org/readeck/go-readability"
	"github.com/markusmobius/go-trafilatura"

	"deepresearch/tools/extract/extractbench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	args := os.Args[1:]
	if !hasDir(args) {
		// Run from bench/extraction: the repository root is two levels up.
		for _, d := range extractbench.DefaultDirs {
			args = append(args, filepath.Join("..", "..", d))
		}
	}
	err := extractbench.RunCLI(ctx, args, os.Stdout, os.Stderr,
		extractbench.Contender{Name: "go-trafilatura", Fn: trafilaturaFunc(true)},
		extractbench.Contender{Name: "readeck", Fn: readeckFunc})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// hasDir reports whether args name a directory (an argument that is not a
// flag or a flag's value).
func hasDir(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-second", "--second", "-repeat", "--repeat", "-k", "--k", "-worst", "--worst", "-page", "--page", "-only", "--only", "-train", "--train", "-dump", "--dump":
			i++
			continue
		}
		if len(a) > 0 && a[0] != '-' {
			return true
		}
	}
	return false
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

// readeckFunc runs readeck's port of Readability.js as the upstream
// benchmark does: the article's text content, soft hyphens kept (the
// scorer strips them).
func readeckFunc(html []byte, pageURL string) (string, error) {
	u, _ := url.Parse(pageURL)
	a, err := readability.FromReader(bytes.NewReader(html), u)
	if err != nil {
		return "", err
	}
	return a.TextContent, nil
}
