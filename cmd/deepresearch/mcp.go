package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent"
	"deepresearch/mcpserver"
)

const mcpUsage = `usage: deepresearch mcp [flags]

Serves deep research to an MCP client on stdin/stdout (the client starts
this command): the tool deep_research (required: question) returns a
cited report, with progress notifications while it works, or with
wait=false a run id at once; get_report fetches a run's report by id and
carries on a run a restart stopped; resume_research answers an approval
step. Runs use the same LLM, search and storage settings as ask (the same
database: a run is durable). Logs go to stderr.

flags:`

// runMCP is `deepresearch mcp`.
func runMCP(ctx context.Context, args []string, e env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, mcpUsage)
		fs.PrintDefaults()
	}
	depth := fs.String("depth", "standard", "depth of a run that names none: quick, standard or deep")
	budget := fs.Int("tokens", 0, "token budget of a run (default 1,000,000)")
	timeBudget := fs.Duration("time", 0, "wall-clock budget of a run (default 15m)")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return usageError{msg: "mcp takes no arguments"}
	}
	switch agent.Depth(*depth) {
	case agent.DepthQuick, agent.DepthStandard, agent.DepthDeep:
	default:
		return usageError{msg: fmt.Sprintf("--depth %q: want quick, standard or deep", *depth)}
	}
	cfg, err := loadConfig(e)
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if e(envLogLevel) != "" {
		level = cfg.LogLevel
	}
	// stdout is the protocol's: everything else goes to stderr
	logger := slog.New(slog.NewTextHandler(newTermWriter(stderr), &slog.HandlerOptions{Level: level}))
	deps, _, closeAll, err := askDeps(ctx, cfg, logger, depHooks{note: func(s string) { logger.Warn(s) }})
	if err != nil {
		return err
	}
	defer closeAll()
	a, err := agent.New(deps, agent.Options{TokenBudget: *budget, TimeBudget: *timeBudget, TeamSize: cfg.TeamSize})
	if err != nil {
		return err
	}
	s := mcpserver.New(a, mcpserver.Options{Logger: logger, Version: versionString(), Depth: agent.Depth(*depth)})
	err = s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
