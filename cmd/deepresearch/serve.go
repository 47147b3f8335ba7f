package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"deepresearch/agent"
	"deepresearch/bot"
	"deepresearch/mcpserver"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
	"deepresearch/storage"
)

const serveUsage = `usage: deepresearch serve [flags]

Runs the Slack bot (Socket Mode) until interrupted. Configuration comes
from the environment: SLACK_BOT_TOKEN (xoxb-…) and SLACK_APP_TOKEN (xapp-…),
the model (OPENAI_API_KEY, OPENAI_BASE_URL, DEEPRESEARCH_MODEL), search
(TAVILY_API_KEY, SEARXNG_URL, DEEPRESEARCH_DOCS_DIR), the database
(DATABASE_URL or DEEPRESEARCH_DATA_DIR); see README.md and bot/README.md
for the full list. /healthz answers 503 with the reason while the model
endpoint is not usable.

flags:`

// loadServeConfig reads serve's flags, then the configuration, which the
// flags override; serve needs the Slack tokens.
func loadServeConfig(args []string, e env, stderr io.Writer) (serveConfig, error) {
	// Flags first: --help needs no configuration.
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	httpFlag := fs.String("http", "", "address of /healthz and /metrics (env DEEPRESEARCH_HTTP_ADDR, default :9090; off disables)")
	maxRuns := fs.Int("max-runs", 0, "runs this process works on at once (env DEEPRESEARCH_MAX_CONCURRENT_RUNS, default 8)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return serveConfig{}, err
		}
		return serveConfig{}, flagError(err)
	}
	if fs.NArg() > 0 {
		return serveConfig{}, usageError{msg: "unexpected arguments: " + strings.Join(fs.Args(), " ")}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	c, err := loadConfig(e)
	if err != nil {
		return c, err
	}
	if err := c.Slack.check(); err != nil {
		return c, err
	}
	if set["http"] {
		c.HTTPAddr = *httpFlag
		if strings.EqualFold(c.HTTPAddr, "off") {
			c.HTTPAddr = ""
		}
	}
	if set["max-runs"] {
		c.MaxConcurrentRuns = *maxRuns
	}
	return c, nil
}

// recoverEvery is how often serve looks for queued runs and expired leases:
// the bot's default (5s), or half a shorter lease, so a dead process's runs
// are taken over about one lease after it died.
func recoverEvery(lease time.Duration) time.Duration {
	if lease > 0 && lease/2 < 5*time.Second {
		return lease / 2
	}
	return 0
}

// runServe runs the Slack bot until ctx ends.
func runServe(ctx context.Context, args []string, e env, _ io.Reader, _, stderr io.Writer) error {
	cfg, err := loadServeConfig(args, e, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	tr, stopTracing, err := startTracing(ctx, e, stderr)
	if err != nil {
		return err
	}
	defer stopTracing()
	cfg.Tracing = tr
	parts, err := serveDeps(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := parts.close(); err != nil {
			log.Warn("serve: closing storage", "err", err)
		}
	}()
	digests := serveDigests(ctx, cfg, parts, log)
	// Deferred after parts.close, so it runs first: the scheduler hands
	// its firings in flight back while the database is still open.
	defer digests.stop()
	// The model endpoint is checked before the bot says it is ready, then
	// again in the background; while it is unusable the bot tells whoever
	// mentions it why instead of researching, and /healthz says not ready.
	parts.health.runCheck(ctx)
	hctx, stopHealth := context.WithCancel(ctx)
	defer stopHealth()
	go parts.health.loop(hctx)
	stopMCP, err := serveMCP(ctx, cfg, parts.agent, log)
	if err != nil {
		return err
	}
	defer stopMCP()
	withHealth := func(o *bot.Options) { o.Health = parts.health.Health }
	withFeedback := func(o *bot.Options) { o.Feedback, o.Reports = parts.db.Feedback(), parts.db.Reports() }
	withShared := func(o *bot.Options) {
		o.Client = parts.slack
		if parts.workspace != nil {
			o.SharedBudgets = append(o.SharedBudgets, parts.workspace)
		}
	}
	return serveBot(ctx, cfg, parts.res, parts.store, parts.db.Slack(), log, digests.start, digests.options, dbPoolMetrics(parts.db), withHealth, withFeedback, withShared)
}

// serveParts is what serve runs with.
type serveParts struct {
	res   *research.Runner
	store research.Store
	db    *storage.DB
	close func() error
	// health is the model endpoint's state (Check, re-checked); nil in
	// tests that build parts by hand.
	health *modelHealth
	// workspace is the researcher's workspace search, whose budget the
	// replicas split (nil: off)
	workspace *bot.WorkspaceSearch
	// slack is the process's one Slack client (the bot's and workspace's);
	// nil in tests that build parts by hand: the bot makes its own
	slack *bot.Client
	// agent runs the research (the MCP endpoint's runs too)
	agent *agent.Agent
}

// serveDigests prepares the digest scheduler on the same database and
// returns the bot extension for /research schedule(s), its buttons and
// modals, and the App Home section (Options.Digests). bot.New hands the
// extension the bot's digest UI, and the scheduler and manager are built
// around it at once, every field set; start runs the scheduler once
// the bot is built, and stop, which returns once it has stopped, hands a
// firing in flight to another process. Call stop before closing the
// database.
func serveDigests(ctx context.Context, cfg serveConfig, p serveParts, log *slog.Logger) *digestService {
	ctx, cancel := context.WithCancel(ctx)
	return &digestService{ctx: ctx, cancel: cancel, cfg: cfg, parts: p, log: log.With("component", "digests"), stopped: make(chan struct{})}
}

// digestService is the digest scheduler of serve: built by the bot's
// Options.Digests, run by start, stopped by stop.
type digestService struct {
	ctx    context.Context
	cancel context.CancelFunc
	cfg    serveConfig
	parts  serveParts
	log    *slog.Logger

	mu      sync.Mutex
	sched   *schedule.Scheduler // set once, by build
	started bool
	stopped chan struct{}
}

// options makes the bot serve the digests.
func (s *digestService) options(o *bot.Options) { o.Digests = s.build }

// build is Options.Digests: the scheduler and its manager around ui, which
// checks channels and hands each firing's run to the bot's run service
// (whose presenter shows digest runs with the digest face: it posts and
// asks for approval through ui); approvals are recorded as the runs'
// decisions.
func (s *digestService) build(ui *bot.Digests) *schedule.Manager {
	st := s.parts.db.Schedules()
	sched := &schedule.Scheduler{Store: st, Runs: ui, Channels: ui, Logger: s.log, Interval: s.cfg.DigestTick}
	s.mu.Lock()
	s.sched = sched
	s.mu.Unlock()
	return &schedule.Manager{Store: st, Scheduler: sched, Decider: s.parts.store, Channels: ui, Admins: s.cfg.Approvers}
}

// start runs the scheduler bot.New built, in the background, until stop.
func (s *digestService) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.sched == nil || s.ctx.Err() != nil {
		return
	}
	s.started = true
	sched := s.sched
	go func() {
		defer close(s.stopped)
		if err := sched.Run(s.ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Error("serve: digest scheduler stopped", "err", err)
		}
	}()
}

// stop stops the scheduler and waits for it.
func (s *digestService) stop() {
	s.cancel()
	s.mu.Lock()
	wait := s.started
	s.started = true // never starts after this
	s.mu.Unlock()
	if wait {
		<-s.stopped
	}
}

// serveDeps builds the Researcher and the Store that serve runs with: the
// research agent of cfg (the same collaborators as ask: LLM, search,
// fetcher, sandbox) with its checkpoints in cfg's database, behind
// research.Runner; and the bot's records in the same database. A missing or
// wrong setting is an error naming its variable.
func serveDeps(ctx context.Context, cfg config, log *slog.Logger) (serveParts, error) {
	var db *storage.DB
	open := func(ctx context.Context, c storage.Config) (*storage.DB, error) {
		var err error
		db, err = storage.Open(ctx, c)
		return db, err
	}
	health := newModelHealth(log, cfg.CheckEvery)
	deps, client, closeAll, err := agentDeps(ctx, cfg, log, open, depHooks{notice: health.notice, note: func(s string) { log.Info("serve: " + s) }})
	if err != nil {
		return serveParts{}, err
	}
	health.check = client.Check
	closeDeps := func() error {
		closeAll() // closes the database too, logging a failure
		return nil
	}
	// One Slack client for the process: the bot's and the workspace search's.
	slackClient := bot.NewClient(bot.ClientOptions{BotToken: cfg.BotToken, AppToken: cfg.AppToken, APIURL: cfg.APIURL})
	var ws *bot.WorkspaceSearch
	if cfg.WorkspaceSearch && cfg.BotToken != "" {
		// Only with the requester's action_token, which comes with their
		// message (bot.Options.WorkspaceSearch).
		ws, err = bot.NewWorkspaceSearch(bot.WorkspaceSearchOptions{Client: slackClient, Logger: log})
		if err != nil {
			_ = closeDeps() // the error that stopped serve is the one to report
			return serveParts{}, configError{envSlackBotToken, err.Error()}
		}
		deps.Workspace = ws
	}
	a, err := agent.New(deps, traced(agent.Options{TeamSize: cfg.TeamSize}, cfg.Tracing))
	if err != nil {
		_ = closeDeps() // the error that stopped serve is the one to report
		return serveParts{}, err
	}
	log.Info("serve: storage", "kind", db.Kind(), "location", db.Location())
	return serveParts{res: research.NewRunner(a, research.RunnerOptions{Logger: log}), store: db.Runs(), db: db, close: closeDeps, health: health, workspace: ws, slack: slackClient, agent: a}, nil
}

// serveBot runs a bot with the given researcher and stores, plus the
// /healthz and /metrics server, until ctx ends. This is the constructor the
// lead's wiring (and tests) use.
func serveBot(ctx context.Context, cfg serveConfig, res bot.Researcher, store research.Store, records slackstate.Store, log *slog.Logger, built func(), extend ...func(*bot.Options)) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bo := bot.Options{
		BotToken:          cfg.BotToken,
		AppToken:          cfg.AppToken,
		APIURL:            cfg.APIURL,
		AllowedChannels:   cfg.Channels,
		Approvers:         cfg.Approvers,
		MaxRunsPerUser:    cfg.MaxRunsPerUser,
		MaxConcurrentRuns: cfg.MaxConcurrentRuns,
		RunOptions:        research.RunOptions{ApprovePlan: cfg.ApprovePlan, ApproveDraft: cfg.ApproveDraft},
		WorkspaceSearch:   cfg.WorkspaceSearch,
		Lease:             cfg.Lease,
		UpdatesPerMinute:  cfg.UpdatesPerMinute,
		UpdateBurst:       cfg.UpdateBurst,
		RecoverEvery:      recoverEvery(cfg.Lease),
		Logger:            log,
		Registerer:        reg,
	}
	if cfg.Tracing != nil {
		bo.TracerProvider = cfg.Tracing.Provider
	}
	for _, f := range extend {
		f(&bo)
	}
	b, err := bot.New(res, store, records, bo)
	if err != nil {
		return err
	}
	if built != nil {
		built() // what runs beside the bot (the digest scheduler) starts
	}
	var srv *http.Server
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return configError{envHTTPAddr, fmt.Sprintf("cannot listen on %s: %v", cfg.HTTPAddr, err)}
		}
		srv = &http.Server{Handler: healthHandler(b.Handler(reg), bo.Health), ReadHeaderTimeout: 5 * time.Second}
		log.Info("serve: health and metrics", "addr", ln.Addr().String())
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("serve: http", "err", err)
			}
		}()
	}
	runErr := b.Run(ctx)
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
	}
	return runErr
}

// healthHandler serves /healthz as not ready (503, with the reason) while
// health reports an error, and hands everything else, and /healthz when
// healthy, to next (the bot's /healthz says whether Slack is connected).
func healthHandler(next http.Handler, health func(context.Context) error) http.Handler {
	if health == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			if err := health(r.Context()); err != nil {
				msg := err.Error()
				if d := errors.Unwrap(err); d != nil { // the operator's detail
					msg += ": " + d.Error()
				}
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "not ready: %s\n", termSafe(msg))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// serveMCP serves deep research over MCP's streamable HTTP on
// DEEPRESEARCH_MCP_ADDR to clients with DEEPRESEARCH_MCP_TOKEN (off when
// the address is unset). stop shuts the endpoint down and waits for the
// runs it started in the background (they stop with ctx; their
// checkpoints let get_report carry them on later).
func serveMCP(ctx context.Context, cfg serveConfig, a *agent.Agent, log *slog.Logger) (stop func(), err error) {
	if cfg.MCPAddr == "" || a == nil {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", cfg.MCPAddr)
	if err != nil {
		return nil, configError{envMCPAddr, fmt.Sprintf("cannot listen on %s: %v", cfg.MCPAddr, err)}
	}
	s := mcpserver.New(a, mcpserver.Options{Logger: log.With("component", "mcp"), Version: versionString()})
	ctx, cancelRuns := context.WithCancel(ctx)
	srv := &http.Server{Handler: s.HTTPHandler(ctx, cfg.MCPToken), ReadHeaderTimeout: 5 * time.Second}
	log.Info("serve: MCP endpoint", "addr", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serve: mcp http", "err", err)
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		cancelRuns()
		s.Wait()
	}, nil
}
