// Command extractbench scores package extract on a directory in the
// Scrapinghub article-extraction benchmark layout.
//
//	go run ./tools/extract/cmd/extractbench [-v] [-repeat N] [DIR]
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
