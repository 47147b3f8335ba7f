// Command deepresearch runs deep research for teams: as a Slack bot
// (`serve`), in a terminal (`ask`), and offers the tools it is built from
// (`extract`, `migrate`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"syscall"

	"go.opentelemetry.io/otel"

	"deepresearch/redact"
	"deepresearch/tracing"

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
		"mcp":     {"serve deep research to an MCP client on stdio (tools deep_research, get_report)", runMCP},
		"extract": {"print the main text of an HTML page (extract [--url URL] [--json] FILE|-)", func(ctx context.Context, args []string, _ env, stdin io.Reader, stdout, stderr io.Writer) error {
			// Page text goes to a terminal: no control characters from the web.
			return extract.RunCLI(ctx, args, stdin, newTermWriter(stdout), newTermWriter(stderr))
		}},
		"extract-bench": {"score content extraction on a benchmark directory (precision, recall, F1, ms/page)", func(ctx context.Context, args []string, _ env, _ io.Reader, stdout, stderr io.Writer) error {
			return extractbench.RunCLI(ctx, args, stdout, stderr)
		}},
		"version": {"print the version (also --version)", func(_ context.Context, _ []string, _ env, _ io.Reader, stdout, _ io.Writer) error {
			fmt.Fprintln(stdout, "deepresearch", versionString())
			return nil
		}},
	}
}

// version is set at build time with -ldflags "-X main.version=..."; when it
// is not, versionString reads the module version and VCS stamp that go
// build records in the binary.
var version = "dev"

// versionString is the version to print: version if set at build time,
// else the module version (go install …@v1.2.3) or the VCS revision with
// its commit time and "+dirty" for a modified tree.
func versionString() string {
	if version != "dev" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return version + " (" + bi.GoVersion + ")"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	if at != "" {
		rev += " " + at
	}
	return "dev " + rev + " (" + bi.GoVersion + ")"
}

// usageError is a mistake on the command line: it prints usage and exits 2.
// printed: the flag package already printed the message and the usage.
type usageError struct {
	msg     string
	printed bool
}

func (e usageError) Error() string { return e.msg }

// flagError maps a flag.FlagSet.Parse error: nil for -h/--help (the usage
// was printed; exit 0), else a usageError the flag package already printed.
func flagError(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return usageError{msg: err.Error(), printed: true}
}

// exitError ends a command that did its work with a distinct exit status
// and one line saying why (e.g. ask's report written without the model).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func main() {
	// The sandbox re-executes this binary as its worker for the coding action.
	if len(os.Args) > 1 && os.Args[1] == sandbox.WorkerCommand {
		os.Exit(sandbox.WorkerMain(context.Background(), os.Stdin, os.Stdout))
	}
	// The OpenTelemetry SDK reports failed exports through its global
	// error handler: one line on stderr, with no control characters (a
	// receiver's answer may hold anything) and no secret of the endpoint.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		var secrets []string
		for _, k := range []string{tracing.EnvEndpoint, tracing.EnvTracesEndpoint} {
			secrets = append(secrets, redact.Secrets(os.Getenv(k))...)
		}
		fmt.Fprintf(os.Stderr, "deepresearch: tracing: %s\n", termSafe(redact.Text(err.Error(), secrets...)))
	}))
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
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	cmd, ok := commandTable()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "deepresearch: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(ctx, args[1:], e, stdin, stdout, stderr)
	if err == nil {
		return 0
	}
	// The one line goes to a terminal: no control characters (a server's
	// or a page's text can be in it), no secret of DATABASE_URL (a
	// driver's error can quote it).
	line := termSafe(redact.Text(err.Error(), redact.Secrets(e(envDatabaseURL))...))
	var ue usageError
	var xe exitError
	switch {
	case errors.As(err, &ue):
		if !ue.printed {
			fmt.Fprintf(stderr, "deepresearch %s: %s\n", args[0], line)
		}
		return 2
	case errors.As(err, &xe):
		fmt.Fprintf(stderr, "deepresearch %s: %s\n", args[0], line)
		return xe.code
	default:
		fmt.Fprintf(stderr, "deepresearch %s: %s\n", args[0], line)
		return 1
	}
}
