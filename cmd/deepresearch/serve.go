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
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/slack-go/slack"

	"deepresearch/agent"
	"deepresearch/bot"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/schedule/slackui"
	"deepresearch/storage"
)

// serveConfig is everything serve reads from the environment (and flags).
type serveConfig struct {
	BotToken, AppToken, APIURL string
	HTTPAddr                   string // /healthz and /metrics; "" disables
	LogLevel                   slog.Level
	Channels, Approvers        []string
	MaxRunsPerUser             int
	MaxConcurrentRuns          int
	ApprovePlan, ApproveDraft  bool
	DigestTick                 time.Duration // how often the digest scheduler looks for due firings
	Lease                      time.Duration // run lease; 0: the bot's default (30s)
	UpdatesPerMinute           int           // chat.update budget of the workspace, split among the live replicas; negative: unlimited
	UpdateBurst                int           // chat.update burst of the workspace, split likewise
}

// configError names a setting that is missing or wrong; it is printed as one line.
type configError struct{ name, msg string }

func (e configError) Error() string { return e.name + ": " + e.msg }

const serveUsage = `usage: deepresearch serve [flags]

Runs the Slack bot (Socket Mode) until interrupted. Configuration comes
from the environment: SLACK_BOT_TOKEN (xoxb-…) and SLACK_APP_TOKEN (xapp-…),
the model (OPENAI_API_KEY, OPENAI_BASE_URL, DEEPRESEARCH_MODEL), search
(TAVILY_API_KEY, SEARXNG_URL, DEEPRESEARCH_DOCS_DIR), the database
(DATABASE_URL or DEEPRESEARCH_DATA_DIR); see README.md and bot/README.md
for the full list. /healthz answers 503 with the reason while the model
endpoint is not usable.

flags:`

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

	c := serveConfig{
		BotToken: strings.TrimSpace(e("SLACK_BOT_TOKEN")),
		AppToken: strings.TrimSpace(e("SLACK_APP_TOKEN")),
		APIURL:   strings.TrimSpace(e("SLACK_API_URL")),
		HTTPAddr: orDefault(e("DEEPRESEARCH_HTTP_ADDR"), ":9090"),
	}
	switch {
	case c.BotToken == "":
		return c, configError{"SLACK_BOT_TOKEN", "not set; set it to the app's Bot User OAuth Token (xoxb-…)"}
	case !strings.HasPrefix(c.BotToken, "xoxb-"):
		return c, configError{"SLACK_BOT_TOKEN", "must be a bot token starting with xoxb- (OAuth & Permissions → Bot User OAuth Token)"}
	case c.AppToken == "":
		return c, configError{"SLACK_APP_TOKEN", "not set; set it to an app-level token (xapp-…) with the connections:write scope"}
	case !strings.HasPrefix(c.AppToken, "xapp-"):
		return c, configError{"SLACK_APP_TOKEN", "must be an app-level token starting with xapp- (Basic Information → App-Level Tokens, scope connections:write)"}
	}
	if c.APIURL != "" {
		u, err := url.Parse(c.APIURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return c, configError{"SLACK_API_URL", fmt.Sprintf("%q is not an http(s) URL; unset it to use Slack's own API", c.APIURL)}
		}
	}
	if set["http"] {
		c.HTTPAddr = *httpFlag
	}
	if strings.EqualFold(c.HTTPAddr, "off") {
		c.HTTPAddr = ""
	}
	if lv := e("DEEPRESEARCH_LOG_LEVEL"); lv != "" {
		if err := c.LogLevel.UnmarshalText([]byte(lv)); err != nil {
			return c, configError{"DEEPRESEARCH_LOG_LEVEL", fmt.Sprintf("%q is not debug, info, warn or error", lv)}
		}
	}
	c.Channels = splitList(e("DEEPRESEARCH_SLACK_CHANNELS"))
	c.Approvers = splitList(e("DEEPRESEARCH_SLACK_APPROVERS"))
	var err error
	if c.MaxRunsPerUser, err = intVar(e, "DEEPRESEARCH_MAX_RUNS_PER_USER", 3); err != nil {
		return c, err
	}
	if c.MaxConcurrentRuns, err = intVar(e, "DEEPRESEARCH_MAX_CONCURRENT_RUNS", 8); err != nil {
		return c, err
	}
	if set["max-runs"] {
		c.MaxConcurrentRuns = *maxRuns
	}
	if c.ApprovePlan, err = boolVar(e, "DEEPRESEARCH_APPROVE_PLAN", false); err != nil {
		return c, err
	}
	if c.ApproveDraft, err = boolVar(e, "DEEPRESEARCH_APPROVE_DRAFT", true); err != nil {
		return c, err
	}
	if v := strings.TrimSpace(e("DEEPRESEARCH_RUN_LEASE")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return c, configError{"DEEPRESEARCH_RUN_LEASE", fmt.Sprintf("%q is not a duration of at least 100ms (e.g. 30s)", v)}
		}
		c.Lease = d
	}
	// Slack's chat.update budget (Tier 3) is per workspace: these are the
	// workspace's, the same on every replica; the replicas on one database
	// split it among themselves by how many are live (bot.Options).
	if c.UpdatesPerMinute, err = nonZeroIntVar(e, "DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE", 50); err != nil {
		return c, err
	}
	if c.UpdateBurst, err = nonZeroIntVar(e, "DEEPRESEARCH_SLACK_UPDATE_BURST", 20); err != nil {
		return c, err
	}
	if v := strings.TrimSpace(e("DEEPRESEARCH_DIGEST_TICK")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, configError{"DEEPRESEARCH_DIGEST_TICK", fmt.Sprintf("%q is not a positive duration such as 30s", v)}
		}
		c.DigestTick = d
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

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, f)
	}
	return out
}

func intVar(e env, name string, def int) (int, error) {
	v := strings.TrimSpace(e(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, configError{name, fmt.Sprintf("%q is not a whole number", v)}
	}
	return n, nil
}

// nonZeroIntVar reads a whole number that is positive, or negative for
// "unlimited".
func nonZeroIntVar(e env, name string, def int) (int, error) {
	n, err := intVar(e, name, def)
	if err == nil && n == 0 {
		return 0, configError{name, "0 is not allowed; use a positive number, or -1 for no limit"}
	}
	return n, err
}

func boolVar(e env, name string, def bool) (bool, error) {
	v := strings.TrimSpace(e(name))
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, configError{name, fmt.Sprintf("%q is not true or false", v)}
	}
	return b, nil
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
	parts, err := serveDeps(ctx, e, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := parts.close(); err != nil {
			log.Warn("serve: closing storage", "err", err)
		}
	}()
	ext, stopDigests, err := serveDigests(ctx, cfg, parts, log)
	if err != nil {
		return err
	}
	// Deferred after parts.close, so it runs first: the scheduler hands
	// its firings in flight back while the database is still open.
	defer stopDigests()
	// The model endpoint is checked before the bot says it is ready, then
	// again in the background; while it is unusable the bot tells whoever
	// mentions it why instead of researching, and /healthz says not ready.
	parts.health.runCheck(ctx)
	hctx, stopHealth := context.WithCancel(ctx)
	defer stopHealth()
	go parts.health.loop(hctx)
	withHealth := func(o *bot.Options) { o.Health = parts.health.Health }
	return serveBot(ctx, cfg, parts.res, parts.store, log, ext, dbPoolMetrics(parts.db), withHealth)
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
}

// serveDigests starts the digest scheduler on the same database
// and returns the bot extensions for /research schedule(s), its buttons and
// modals, and the App Home section. The scheduler stops with ctx or stop,
// which returns once it has stopped; a firing in flight is handed to another
// process. Call stop before closing the database.
func serveDigests(ctx context.Context, cfg serveConfig, p serveParts, log *slog.Logger) (ext func(*bot.Options), stop func(), err error) {
	st := p.db.Schedules()
	log = log.With("component", "digests")
	// Digests call Slack through the bot (its retries, pacing and budgets)
	// and check their channels with it: the bot attaches itself when it is
	// built, and the scheduler starts then.
	runner := &schedule.DigestRunner{Researcher: p.res}
	sched := &schedule.Scheduler{
		Store:  st,
		Logger: log,
		Runner: runner,
	}
	if cfg.DigestTick > 0 {
		sched.Interval = cfg.DigestTick
	}
	mgr := &schedule.Manager{Store: st, Scheduler: sched, Admins: cfg.Approvers}
	ui := &slackui.UI{Logger: log, AckErrors: true, Manager: mgr}
	sched.Approvals = ui
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	var mu sync.Mutex
	started := false
	start := func() {
		mu.Lock()
		defer mu.Unlock()
		if started || ctx.Err() != nil {
			return
		}
		started = true
		go func() {
			defer close(stopped)
			if err := sched.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("serve: digest scheduler stopped", "err", err)
			}
		}()
	}
	stop = func() {
		cancel()
		mu.Lock()
		wait := started
		started = true // never starts after this
		mu.Unlock()
		if wait {
			<-stopped
		}
	}
	attach := func(b *bot.Bot) {
		ui.API = b
		runner.Poster = &slackui.Poster{API: b}
		runner.Channels = b
		mgr.Channels = b
		start()
	}
	return func(o *bot.Options) {
		o.Attach = attach
		o.Subcommands = map[string]bot.SlashHandler{"schedule": ui.SlashSchedule, "schedules": ui.SlashSchedules}
		o.Interactions = map[string]bot.InteractionHandler{slackui.Prefix: ui.HandleInteraction}
		o.HomeSections = []bot.HomeSection{ui.HomeSection}
		o.ViewAcks = map[string]func(slack.InteractionCallback) any{slackui.Prefix: func(cb slack.InteractionCallback) any {
			if r := ui.ViewSubmissionResponse(cb); r != nil {
				return r
			}
			return nil
		}}
	}, stop, nil
}

// serveDeps builds the Researcher and the Store that serve runs with: the
// research agent from the environment (the same collaborators as ask: LLM,
// search, fetcher, sandbox) with its checkpoints in the database chosen by
// DATABASE_URL / DEEPRESEARCH_DATA_DIR, behind bot/agentrun; and the bot's
// records in the same database. A missing or wrong variable is an error
// naming it.
func serveDeps(ctx context.Context, e env, log *slog.Logger) (serveParts, error) {
	var db *storage.DB
	open := func(ctx context.Context, e env) (*storage.DB, error) {
		var err error
		db, err = storage.Open(ctx, storage.ConfigFromEnv(e))
		return db, err
	}
	every := defaultCheckEvery
	if v := strings.TrimSpace(e("DEEPRESEARCH_LLM_CHECK_EVERY")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return serveParts{}, configError{"DEEPRESEARCH_LLM_CHECK_EVERY", fmt.Sprintf("%q is not a positive duration such as 30s", v)}
		}
		every = d
	}
	health := newModelHealth(log, every)
	deps, client, closeAll, err := agentDeps(ctx, e, log, open, depHooks{notice: health.notice, note: func(s string) { log.Info("serve: " + s) }})
	if err != nil {
		return serveParts{}, err
	}
	health.check = client.Check
	closeDeps := func() error {
		closeAll() // closes the database too, logging a failure
		return nil
	}
	a, err := agent.New(deps, agent.Options{})
	if err != nil {
		closeDeps()
		return serveParts{}, err
	}
	log.Info("serve: storage", "kind", db.Kind(), "location", db.Location())
	return serveParts{res: research.NewRunner(a, research.RunnerOptions{Logger: log}), store: db.Runs(), db: db, close: closeDeps, health: health}, nil
}

// serveBot runs a bot with the given researcher and store, plus the
// /healthz and /metrics server, until ctx ends. This is the constructor the
// lead's wiring (and tests) use.
func serveBot(ctx context.Context, cfg serveConfig, res bot.Researcher, store research.Store, log *slog.Logger, extend ...func(*bot.Options)) error {
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
		Lease:             cfg.Lease,
		UpdatesPerMinute:  cfg.UpdatesPerMinute,
		UpdateBurst:       cfg.UpdateBurst,
		RecoverEvery:      recoverEvery(cfg.Lease),
		Logger:            log,
		Registerer:        reg,
	}
	for _, f := range extend {
		f(&bo)
	}
	b, err := bot.New(res, store, bo)
	if err != nil {
		return err
	}
	var srv *http.Server
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return configError{"DEEPRESEARCH_HTTP_ADDR", fmt.Sprintf("cannot listen on %s: %v", cfg.HTTPAddr, err)}
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
