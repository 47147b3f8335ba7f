// Command deepresearch runs deep research for teams: as a Slack bot
// (`serve`), in a terminal (`ask`), and offers the tools it is built from
// (`extract`, `migrate`).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"deepresearch/tools/extract"
	"deepresearch/tools/extract/extractbench"
	"deepresearch/tools/sandbox"
)

// env is how commands read configuration; tests pass a map.
type env func(string) string

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, e env, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands is filled by each command's file in init-free style: see commandTable.
func commandTable() map[string]command {
	return map[string]command{
		"migrate": {"apply the database migrations and exit", runMigrate},
		"ask":     {"run one research in the terminal (ask [flags] \"question\")", runAsk},
		"serve":   {"run the Slack bot (Socket Mode) until interrupted", runServe},
		"extract": {"print the main text of an HTML page (extract [--url URL] [--json] FILE|-)", func(ctx context.Context, args []string, _ env, stdin io.Reader, stdout, stderr io.Writer) error {
			return extract.RunCLI(ctx, args, stdin, stdout, stderr)
		}},
		"extract-bench": {"score content extraction on a benchmark directory (precision, recall, F1, ms/page)", func(ctx context.Context, args []string, _ env, _ io.Reader, stdout, stderr io.Writer) error {
			return extractbench.RunCLI(ctx, args, stdout, stderr)
		}},
		"version": {"print the version", func(_ context.Context, _ []string, _ env, _ io.Reader, stdout, _ io.Writer) error {
			fmt.Fprintln(stdout, "deepresearch", version)
			return nil
		}},
	}
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// usageError is a mistake on the command line: it prints usage and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	// The sandbox re-executes this binary as its worker for the coding action.
	if len(os.Args) > 1 && os.Args[1] == sandbox.WorkerCommand {
		os.Exit(sandbox.WorkerMain(context.Background(), os.Stdin, os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: deepresearch <command> [flags]\n\ncommands:")
	cmds := commandTable()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'deepresearch <command> -h' for a command's flags.")
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, e env, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commandTable()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "deepresearch: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(ctx, args[1:], e, stdin, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "deepresearch %s: %s\n", args[0], ue.msg)
		return 2
	default:
		fmt.Fprintf(stderr, "deepresearch %s: %v\n", args[0], err)
		return 1
	}
}
