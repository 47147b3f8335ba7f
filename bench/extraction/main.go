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
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"deepresearch/bench/extraction/peers"
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
		extractbench.Contender{Name: "go-trafilatura", Fn: peers.Trafilatura(true)},
		extractbench.Contender{Name: "readeck", Fn: peers.Readeck})
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
