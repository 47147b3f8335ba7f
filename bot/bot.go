// Package bot is the Slack face of deepresearch: a Socket Mode bot that maps
// each Slack thread to a graph thread, runs research as durable jobs with a
// lease, shows live progress in one edited status message, asks for plan and
// draft approval with Block Kit buttons, and uploads the final report as a
// markdown file.
//
// The bot depends on two small interfaces defined here: Researcher (the
// agent) and Store (durable records shared by replicas). Build one with New
// and run it with Run:
//
//	b, err := bot.New(researcher, db.Runs(), db.Slack(), bot.Options{BotToken: ..., AppToken: ...})
//	err = b.Run(ctx) // until ctx ends; runs in flight are left resumable
package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"deepresearch/clock"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Bot. Client, or BotToken and AppToken, are required;
// every other field has a default.
type Options struct {
	// Client is the process's Slack client (NewClient), shared with what
	// else calls Slack (the researcher's WorkspaceSearch). nil: New makes
	// one of BotToken, AppToken, APIURL and HTTPClient.
	Client   *Client
	BotToken string // xoxb-…
	AppToken string // xapp-… with connections:write
	APIURL   string // Slack Web API base, e.g. "https://slack.com/api/"; "" for Slack's own
	// AppID is the app's id (A…): envelopes for another api_app_id are
	// refused. Default: learned at start-up (bots.info); when neither is
	// known only the workspace is checked (auth.test's team_id).
	AppID string

	// InstanceID names this process as a lease owner; default host-pid-random.
	InstanceID string

	Workers           int           // event handler goroutines (default 16)
	QueueSize         int           // events waiting for a handler; more wait in the inbox for recovery (default 1024)
	InboxGrace        time.Duration // lease on a received envelope: how long before another process may handle it instead (default Lease: a click held by a process that died is taken over as soon as its run is)
	MaxConcurrentRuns int           // runs this process works on at once (default 8)
	Lease             time.Duration // run lease (default 30s)
	HeartbeatEvery    time.Duration // lease renewal period (default Lease/3)
	RecoverEvery      time.Duration // how often to look for queued runs and expired leases (default 5s)
	PresenceEvery     time.Duration // how often to announce this process in the store and count the live replicas (default 2s; see UpdatesPerMinute)
	ProgressInterval  time.Duration // minimum time between edits in one channel for the workspace; N live replicas each keep N× it (default 1s)
	StatusRefresh     time.Duration // assistant.threads.setStatus refresh period (default 90s; Slack clears it after ~2min)
	EventTTL          time.Duration // how long processed event ids are remembered (default 24h)
	ShutdownTimeout   time.Duration // how long Run waits for handlers and runs to stop (default 10s)
	SlackRetries      int           // retries of a Slack call on 429/5xx (default 4)

	// UpdatesPerMinute and UpdateBurst are the workspace's budget for
	// chat.update (Slack Tier 3: about 50 a minute per workspace and app).
	// The replicas on one store split it among themselves automatically:
	// each announces itself in the store every PresenceEvery, counts those
	// seen in the last three periods (N), and keeps 1/N of the rate and of
	// the burst (at least 1), so the fleet stays within the budget as it
	// scales. Final pictures wait for a token ahead of progress edits;
	// progress edits leave half the burst to finals and are skipped (shown
	// later, coalesced) when the budget is short. Defaults 50 and 20;
	// negative: unlimited.
	UpdatesPerMinute int
	UpdateBurst      int
	// PostBurst and PostInterval pace chat.postMessage per channel for
	// the whole workspace: a burst, then one message per interval (Slack:
	// about 1/s per channel). With N live replicas each posts one message
	// per N intervals, in bursts of PostBurst/N (at least 1); edits in a
	// channel are likewise spaced ProgressInterval × N apart. Defaults 3
	// and 1s; a negative PostInterval disables pacing.
	PostBurst    int
	PostInterval time.Duration
	// RefusalWindow caps refusal replies (busy, per-user limit, too long,
	// help) under a flood: the first of a kind per user and channel in the
	// window is posted in the thread, the next 5 are shown to the user
	// alone, the rest are dropped. Default 30s; negative: always post.
	RefusalWindow time.Duration

	// AllowedChannels limits where the bot works (channel ids); empty
	// allows every channel. DMs are always allowed.
	AllowedChannels []string
	// Approvers may decide on any run's interrupts and cancel any run,
	// besides its requester.
	Approvers []string
	// MaxRunsPerUser limits a user's active runs (default 3; negative: no limit).
	MaxRunsPerUser int
	// MaxQuestionLen limits a question, in characters (default 10,000);
	// a longer one is answered with a reply asking to shorten it.
	MaxQuestionLen int
	// RunOptions are the options of every new run (approval steps, depth).
	RunOptions research.RunOptions
	// Reports, when set, keeps every report the bot posts as a source for
	// later questions, cited by the permalink of its thread (reports.go).
	Reports research.ReportStore
	// WorkspaceSearch lets a run asked for by a message search the
	// workspace's messages its author can see (the researcher needs a
	// WorkspaceSearch; the app the search:read scopes of manifest.yaml).
	WorkspaceSearch bool
	// SharedBudgets are other per-workspace Slack budgets of this process
	// that the live replicas split, as the bot's own: each is told this
	// process's fraction (weighted by the runs it holds) on every heartbeat.
	// The WorkspaceSearch the researcher uses is one.
	SharedBudgets []SharedBudget
	// Health, when set, is asked before a new research starts; an error
	// (the model endpoint refuses the key, does not answer, does not serve
	// the model) is told to the person who asked, in plain words, instead
	// of starting a research that could only fail. It should be cheap: the
	// caller caches its last answer.
	Health func(ctx context.Context) error

	// Subcommands extends /research with more subcommands (digests:
	// "schedule", "schedules"). The key is the first word.
	Subcommands map[string]SlashHandler
	// Interactions handles block actions and view submissions whose
	// action_id or callback_id starts with the key (e.g. "sched_").
	Interactions map[string]InteractionHandler
	// Digests, when set, makes the bot serve scheduled digests (digests.go):
	// /research schedule(s), the schedule modal and buttons, the App Home
	// section. New calls it once with the bot's digest UI, which posts
	// digests, asks for approvals, checks channels and hands the firings'
	// runs to the bot's run service (schedule.Poster,
	// ApprovalRequester, ChannelChecker, Runs), and serves the
	// manager it returns: the caller builds its scheduler and manager
	// around the UI, every field set at once, and runs the scheduler once
	// New has returned.
	Digests func(ui *Digests) *schedule.Manager
	// Feedback, when set, puts feedback buttons under every report and
	// digest and keeps the clicks (one per user and run) with what was
	// wrong; /research status shows the tally.
	Feedback research.FeedbackStore

	Logger     *slog.Logger          // default: discard
	Registerer prometheus.Registerer // where metrics are registered; default a private registry
	HTTPClient *http.Client          // for the Web API and response_urls; default a client with a 30s timeout
	Clock      clock.Clock           // time and timers; default clock.Real{}
	// TracerProvider traces report uploads (in the research turn's trace)
	// and Socket Mode envelopes (their ack latency); nil or no-op: none.
	TracerProvider trace.TracerProvider
}

// SlashHandler runs a /research subcommand. args is the text after the
// subcommand word. The returned text is shown to the user (ephemeral).
type SlashHandler func(ctx context.Context, cmd slack.SlashCommand, args string) (reply string, err error)

// InteractionHandler handles an interactive payload (block_actions,
// view_submission) routed to it by prefix.
type InteractionHandler func(ctx context.Context, cb slack.InteractionCallback) error

func (o *Options) defaults() {
	o.defaultTimes()
	o.defaultLimits()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.InstanceID == "" {
		host, _ := os.Hostname()
		o.InstanceID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomID(3))
	}
}

// defaultTimes sets the periods and timeouts left zero.
func (o *Options) defaultTimes() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Lease, 30*time.Second)
	def(&o.InboxGrace, o.Lease)
	def(&o.HeartbeatEvery, o.Lease/3)
	def(&o.RecoverEvery, 5*time.Second)
	def(&o.PresenceEvery, 2*time.Second)
	def(&o.ProgressInterval, time.Second)
	def(&o.StatusRefresh, 90*time.Second)
	def(&o.EventTTL, 24*time.Hour)
	def(&o.ShutdownTimeout, 10*time.Second)
	if o.PostInterval == 0 {
		o.PostInterval = time.Second
	}
	if o.RefusalWindow == 0 {
		o.RefusalWindow = 30 * time.Second
	}
}

// defaultLimits sets the sizes, counts and budgets left zero.
func (o *Options) defaultLimits() {
	def := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	def(&o.Workers, 16)
	def(&o.QueueSize, 1024)
	def(&o.MaxConcurrentRuns, 8)
	def(&o.SlackRetries, 4)
	if o.UpdateBurst < 0 {
		o.UpdatesPerMinute = -1
	}
	if o.UpdatesPerMinute == 0 {
		o.UpdatesPerMinute = 50
	}
	def(&o.UpdateBurst, 20)
	def(&o.PostBurst, 3)
	if o.MaxRunsPerUser == 0 {
		o.MaxRunsPerUser = 3
	}
	def(&o.MaxQuestionLen, 10000)
}

// ErrAuth is returned by Run when Slack rejects the tokens at start-up.
var ErrAuth = errors.New("slack rejected the token")

// Bot is a running Slack bot. Create it with New.
type Bot struct {
	slackClient *slackClient // the one Slack Web API client, its budgets and pacing
	statuses    *statuses    // the runs' status streams and messages (stream.go, progress.go)
	spans       *spans       // traces of envelopes and uploads (trace.go)

	opts    Options
	log     *slog.Logger
	res     Researcher
	store   research.Store
	records slackstate.Store // Slack's own records: threads, inbox, replicas, the runs' places
	metrics *Metrics

	identity identity // who the bot is in Slack (learned by Run)
	intake   *intake  // Socket Mode and the durable inbox (socket.go)

	allowed   map[string]bool
	approvers map[string]bool

	replicas *replicas // the live replicas the Slack budgets are split among (presence.go)

	runs   *research.Service // the runs' lifecycle; this bot is its Slack face (runview.go)
	tokens workspaceTokens   // action_tokens of runs created here, until started

	workCtx    context.Context // parent of event handlers
	workCancel context.CancelFunc

	registry *prometheus.Registry // the private registry when Options.Registerer is nil

	started atomic.Bool

	digests *Digests // nil unless Options.Digests is set
	// digestFace shows the digest runs (RunOptions.Digest): nil unless
	// Options.Digests is set.
	digestFace research.Presenter

	assistant *assistantState // assistant threads (assistant.go)
	ratings   *ratings        // feedback on reports and digests (rating.go)
}

// New returns a Bot that answers with researcher, keeps the runs in store
// and its own records (threads, inbox, replicas, the runs' places in Slack)
// in records. It does not contact Slack; Run does.
func New(researcher Researcher, store research.Store, records slackstate.Store, opts Options) (*Bot, error) {
	if researcher == nil || store == nil || records == nil {
		return nil, errors.New("bot: New needs a Researcher, a research.Store and a slackstate.Store")
	}
	if opts.Client != nil {
		opts.BotToken, opts.AppToken, opts.HTTPClient = opts.Client.botToken, opts.Client.appToken, opts.Client.http
	}
	if !strings.HasPrefix(opts.BotToken, "xoxb-") {
		return nil, errors.New("bot: the bot token must start with xoxb-")
	}
	if !strings.HasPrefix(opts.AppToken, "xapp-") {
		return nil, errors.New("bot: the app-level token must start with xapp-")
	}
	opts.defaults()
	if opts.Client == nil {
		opts.Client = NewClient(ClientOptions{BotToken: opts.BotToken, AppToken: opts.AppToken, APIURL: opts.APIURL, HTTPClient: opts.HTTPClient})
	}
	reg := opts.Registerer
	var private *prometheus.Registry
	if reg == nil {
		private = prometheus.NewRegistry()
		reg = private
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	log := opts.Logger.With("instance", opts.InstanceID)
	b := &Bot{
		slackClient: newSlackClient(opts.Client, opts, log, m),
		opts:        opts,
		log:         log,
		res:         researcher,
		store:       store,
		records:     records,
		metrics:     m,
		spans:       &spans{tracer: tracerOf(opts.TracerProvider), clock: opts.Clock},
		allowed:     set(opts.AllowedChannels),
		approvers:   set(opts.Approvers),
		registry:    private,
	}
	b.replicas = &replicas{registry: records, runs: store, instance: opts.InstanceID, every: opts.PresenceEvery, shared: opts.SharedBudgets,
		slack: b.slackClient, log: log, metrics: m}
	ender, _ := researcher.(RunEnder)
	b.statuses = &statuses{bot: b}
	m.sampler = func(ctx context.Context) map[research.RunState]int {
		runs, err := store.ListRuns(ctx, research.RunFilter{States: []research.RunState{research.StateQueued, research.StateRunning, research.StateWaiting}})
		if err != nil {
			return nil
		}
		counts := map[research.RunState]int{}
		for _, r := range runs {
			counts[r.State]++
		}
		return counts
	}
	m.liveInstances.Set(1)
	b.intake = &intake{
		// Never socketmode.OptionDebug: it logs payloads and forces reconnects.
		sm:    socketmode.New(b.slackClient.api, socketmode.OptionLog(slogPrinter{b.log})),
		store: records, log: log, metrics: m, clk: opts.Clock, spans: b.spans,
		instance: opts.InstanceID, grace: opts.InboxGrace, id: &b.identity,
	}
	b.assistant = newAssistantState(b.slackClient, store, records, log, b)
	b.res = titlingResearcher{Researcher: b.res, a: b.assistant}
	if opts.Digests != nil {
		b.digests = newDigests(b, opts.Digests)
	}
	kinds := []string{""} // the conversations' runs
	if b.digests != nil {
		b.opts.Subcommands = with(with(b.opts.Subcommands, "schedule", b.digests.SlashSchedule), "schedules", b.digests.SlashSchedules)
		b.opts.Interactions = with(b.opts.Interactions, SchedPrefix, b.digests.HandleInteraction)
		b.digestFace = &schedule.Face{Store: b.digests.mgr.Store, Poster: b.digests, Status: records, Logger: log}
		kinds = append(kinds, schedule.RunKind) // and the digests' firings
	}
	b.runs = research.NewService(store, b.res, slackRuns{b}, research.ServiceOptions{
		Owner: opts.InstanceID, Kinds: kinds, Lease: opts.Lease, HeartbeatEvery: opts.HeartbeatEvery, Slots: opts.MaxConcurrentRuns,
		MaxAttempts: maxRunAttempts, Ender: ender, Logger: log, LogPrefix: "bot: ", Clock: opts.Clock,
	})
	b.ratings = &ratings{feedback: opts.Feedback, store: store, records: records, slack: b.slackClient, log: log, metrics: m,
		maxLen: opts.MaxQuestionLen, digests: b.digests}
	if opts.Feedback != nil {
		b.opts.Interactions = with(b.opts.Interactions, ratingPrefix, b.ratings.onRating)
	}
	b.intake.handlers = &handlers{slack: b.slackClient, store: store, records: records, opts: &b.opts, log: log, id: &b.identity,
		allowed: b.allowed, approvers: b.approvers, runs: b, digests: b.digests, ratings: b.ratings, assistant: b.assistant}
	return b, nil
}

// with is m with key set to v; m itself (the caller's) is not changed.
func with[V any](m map[string]V, key string, v V) map[string]V {
	m = maps.Clone(m)
	if m == nil {
		m = map[string]V{}
	}
	m[key] = v
	return m
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			m[x] = true
		}
	}
	return m
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RunService is the run service the bot works on runs with (the digest
// scheduler creates its firings' runs there).
func (b *Bot) RunService() *research.Service { return b.runs }

// Metrics returns the bot's metrics (for tests and the lead's wiring).
func (b *Bot) Metrics() *Metrics { return b.metrics }

// Run checks the tokens (auth.test), connects over Socket Mode and serves
// until ctx ends. Then it stops taking events, lets handlers finish, and
// hands the runs it was working on back to the store as queued, so another
// process (or this one, restarted) continues them. It returns an error
// wrapping ErrAuth when the bot token is rejected, and nil after a clean
// shutdown.
func (b *Bot) Run(ctx context.Context) error {
	if !b.started.CompareAndSwap(false, true) {
		return errors.New("bot: Run called twice")
	}
	if err := b.authenticate(ctx); err != nil {
		return err
	}
	b.log.Info("bot: starting", "bot_user", b.identity.botUserID, "team", b.identity.teamID)

	// Count the replicas before the first event, so that this process
	// starts with its share of the workspace's Slack budgets.
	b.replicas.round(ctx)

	b.workCtx, b.workCancel = context.WithCancel(context.WithoutCancel(ctx))
	b.runs.Begin(b.workCtx)
	b.intake.workCtx = b.workCtx
	p := newPool(b.opts.Workers, b.opts.QueueSize)

	var loops sync.WaitGroup
	sockCtx, sockCancel := context.WithCancel(ctx)
	defer sockCancel()
	fatal := make(chan error, 1)
	loops.Go(func() {
		if err := b.intake.socketLoop(sockCtx); err != nil {
			fatal <- err
		}
	})
	in := make(chan received, maxIngestBatch)
	loops.Go(func() { b.intake.dispatchLoop(sockCtx, in) })
	loops.Go(func() { b.intake.ingestLoop(sockCtx, in, p) })
	loops.Go(func() { b.recoveryLoop(sockCtx, p) })
	loops.Go(func() { b.replicas.loop(sockCtx) })

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-fatal:
	}
	b.log.Info("bot: shutting down")
	sockCancel()
	loops.Wait()

	// Let event handlers finish, then stop runs (they release their leases).
	stopped := make(chan struct{})
	go func() { p.close(); close(stopped) }()
	select {
	case <-stopped:
	case <-b.slackClient.clk.After(b.opts.ShutdownTimeout):
		b.log.Warn("bot: handlers still busy at shutdown")
	}
	if !b.runs.Shutdown(b.opts.ShutdownTimeout) {
		b.log.Warn("bot: runs still busy at shutdown; their leases will expire")
	}
	b.workCancel()
	b.replicas.leave(ctx)
	b.log.Info("bot: stopped")
	return runErr
}

func (b *Bot) authenticate(ctx context.Context) error {
	var resp *slack.AuthTestResponse
	err := b.slackClient.call(ctx, "auth.test", true, func(ctx context.Context) error {
		var err error
		resp, err = b.slackClient.api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		code := errorCode(err)
		switch code {
		case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "not_allowed_token_type":
			return fmt.Errorf("%w: auth.test answered %s; check SLACK_BOT_TOKEN (a bot token, xoxb-, of an installed app)", ErrAuth, code)
		}
		return fmt.Errorf("bot: auth.test: %w", err)
	}
	b.identity.botUserID, b.identity.teamID = resp.UserID, resp.TeamID
	b.identity.botID, b.identity.enterpriseID = resp.BotID, resp.EnterpriseID
	b.identity.learnAppID(ctx, b.slackClient, b.opts.AppID, b.log)
	return nil
}

// Handler serves /healthz and /metrics. gatherer is what /metrics exposes:
// the registry given as Options.Registerer (plus anything else on it); nil
// uses the bot's private registry.
func (b *Bot) Handler(gatherer prometheus.Gatherer) http.Handler {
	if gatherer == nil {
		if b.registry != nil {
			gatherer = b.registry
		} else {
			gatherer = prometheus.DefaultGatherer
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !b.intake.connected.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintln(w, "not connected")
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.Handle("/metrics", metricsHandler(gatherer, b.metrics))
	return mux
}

// slogPrinter adapts slog to socketmode's logger.
type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Output(_ int, s string) error {
	p.l.Debug("socketmode: " + strings.TrimSpace(s))
	return nil
}
