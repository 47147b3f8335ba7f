// Command extractbench scores package extract on directories in the
// Scrapinghub article-extraction benchmark layout (default:
// extractbench.DefaultDirs), per directory, source and page type, pooled and
// cross-validated by site. Run it from the repository root;
// bench/extraction runs the same report beside go-trafilatura.
//
//	go run ./tools/extract/cmd/extractbench [-v] [-repeat N] [-k K] [-grid] [-worst N] [-page ID] [-only NAME] [DIR...]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"deepresearch/tools/extract/extractbench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := extractbench.RunCLI(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
