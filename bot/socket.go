package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"deepresearch/clock"
	"deepresearch/slackstate"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// intake is the bot's Socket Mode side: it keeps the connection up, makes
// every envelope with work durable in the inbox before acking it, hands it
// to a pool of handlers, renews the leases of the entries it holds, and
// takes over entries whose holder's lease ran out (a process that died).
type intake struct {
	sm       *socketmode.Client
	store    slackstate.Store
	log      *slog.Logger
	metrics  *Metrics
	clk      clock.Clock
	spans    *spans
	instance string        // Options.InstanceID: the inbox lease owner
	grace    time.Duration // Options.InboxGrace
	id       *identity     // the bot's workspace and app (foreign envelopes are dropped)
	handlers envelopeHandler
	workCtx  context.Context // parent of event handlers, set by Run before the loops start

	held      heldEntries // inbox entries queued or being handled by this process
	connected atomic.Bool
	skipWork  atomic.Bool // tests: store and ack envelopes, handle none (as if dead after the ack)
}

// envelopeHandler handles the work of envelopes (handlers.go, slash.go).
type envelopeHandler interface {
	handleEvent(ctx context.Context, outer slackevents.EventsAPIEvent, redo bool)
	handleInteraction(ctx context.Context, cb slack.InteractionCallback)
	handleSlash(ctx context.Context, cmd slack.SlashCommand)
	// ackPayload is the response an envelope's ack carries (nil: none).
	ackPayload(ev socketmode.Event) any
}

// identity is who the bot is in Slack, learned at start-up (auth.test,
// bots.info).
type identity struct {
	botUserID    string
	teamID       string
	botID        string
	enterpriseID string // an org-wide install: envelopes come from the org's workspaces
	appID        string // expected api_app_id ("" unknown)
}

// ownFileShare reports whether m is a message this bot posted: its user is
// the bot's user and its bot_id, when it has one, the bot's. Another app's
// message sharing a file of the same name is not the bot's report.
func (id identity) ownFileShare(m slack.Message) bool {
	if id.botUserID == "" || m.User != id.botUserID {
		return false
	}
	return m.BotID == "" || id.botID == "" || m.BotID == id.botID
}

// socketLoop keeps the Socket Mode connection up. slack-go's RunContext
// reconnects by itself on disconnect requests and dead connections; it
// returns only when it cannot connect, and then we try again with a backoff,
// unless the app token was rejected.
func (sk *intake) socketLoop(ctx context.Context) error {
	backoff := clock.Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second}
	for attempt := 1; ; attempt++ {
		err := sk.sm.RunContext(ctx)
		sk.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		switch errorCode(err) {
		case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "not_allowed_token_type":
			return fmt.Errorf("%w: apps.connections.open answered %s; check SLACK_APP_TOKEN (an app-level token, xapp-, with connections:write)", ErrAuth, errorCode(err))
		}
		wait := backoff.Delay(attempt)
		sk.log.Warn("bot: socket mode stopped; reconnecting", "err", err, "backoff", wait)
		sk.metrics.reconnects.Inc()
		if clock.Sleep(ctx, sk.clk, wait) != nil {
			return nil
		}
	}
}

// received is a Socket Mode envelope with work in it, on its way from the
// dispatch loop to the ingest loop.
type received struct {
	ev socketmode.Event
	at time.Time // when the dispatch loop got it (ack latency)
}

// dispatchLoop drains the client's events promptly. Envelopes with work
// (events, interactions, slash commands) go to the ingest loop, which
// stores them in the inbox before acking them; everything else is handled
// here with no I/O other than an ack, so pings are never held up.
func (sk *intake) dispatchLoop(ctx context.Context, in chan<- received) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-sk.sm.Events:
			start := sk.clk.Now()
			if !sk.dispatch(ctx, ev, start) {
				continue
			}
			select {
			case in <- received{ev: ev, at: start}:
			case <-ctx.Done():
				return // not acked: Slack delivers it again, to another connection
			}
		}
	}
}

// dispatch handles a connection event or an envelope without work (acking
// it) and reports whether ev is an envelope with work, for the ingest loop.
func (sk *intake) dispatch(ctx context.Context, ev socketmode.Event, start time.Time) bool {
	switch ev.Type {
	case socketmode.EventTypeConnected:
		sk.connected.Store(true)
		sk.log.Info("bot: connected")
	case socketmode.EventTypeConnecting:
		sk.log.Debug("bot: connecting")
	case socketmode.EventTypeConnectionError:
		sk.connected.Store(false)
		sk.log.Warn("bot: connection error", "err", fmt.Sprint(ev.Data))
	case socketmode.EventTypeInvalidAuth:
		sk.log.Error("bot: socket mode auth rejected; check SLACK_APP_TOKEN")
	case socketmode.EventTypeHello:
		sk.connected.Store(true)
	case socketmode.EventTypeDisconnect:
		sk.log.Info("bot: disconnect requested")
	case socketmode.EventTypeIncomingError:
		sk.log.Warn("bot: incoming error", "err", fmt.Sprint(ev.Data))
	case socketmode.EventTypeErrorBadMessage:
		// Ack what we could not parse so Slack does not redeliver it forever.
		bad, _ := ev.Data.(*socketmode.ErrorBadMessage)
		if bad != nil {
			var env struct {
				EnvelopeID string `json:"envelope_id"`
				Type       string `json:"type"`
			}
			if json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
				sk.ack(ctx, env.EnvelopeID, nil, start)
			}
			sk.log.Warn("bot: malformed envelope acked and dropped", "envelope_type", env.Type, "err", bad.Cause)
		}
		sk.metrics.events.WithLabelValues("malformed").Inc()
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		return ev.Request != nil
	default:
		if ev.Request != nil && ev.Request.EnvelopeID != "" {
			sk.ack(ctx, ev.Request.EnvelopeID, nil, start)
		}
	}
	return false
}

// ingestLoop stores received envelopes in the inbox, acks them and hands
// them to the pool, in the order they arrived. Envelopes that arrive while
// a write is in flight are stored together by the next one (one
// transaction, one commit), so a burst costs a few writes, not one each.
func (sk *intake) ingestLoop(ctx context.Context, in <-chan received, p *pool) {
	batch := make([]received, 0, maxIngestBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-in:
			batch = append(batch[:0], r)
		}
	more:
		for len(batch) < maxIngestBatch {
			select {
			case r := <-in:
				batch = append(batch, r)
			default:
				break more
			}
		}
		sk.ingest(ctx, p, batch)
	}
}

// ingest makes envelopes durable, then acks them, then hands them to the
// pool. The one write both stores the envelopes and detects redeliveries
// (an entry's key is its event id). Envelopes that could not be stored are
// not acked, so Slack delivers them again; one the pool has no room for
// stays in the inbox until recovery takes it over (after
// Options.InboxGrace).
func (sk *intake) ingest(ctx context.Context, p *pool, batch []received) {
	now := sk.clk.Now()
	es := make([]slackstate.InboxEntry, len(batch))
	for i, r := range batch {
		req := r.ev.Request
		es[i] = slackstate.InboxEntry{
			Key: eventKey(*req), Type: req.Type, EnvelopeID: req.EnvelopeID, Payload: storablePayload(req.Type, req.Payload),
			ReceivedAt: now, Owner: sk.instance, LeaseUntil: now.Add(sk.grace),
		}
	}
	pctx, cancel := context.WithTimeout(ctx, inboxPutTimeout)
	stored, err := sk.store.PutInbox(pctx, es)
	cancel()
	if err != nil {
		sk.metrics.inboxErrors.Add(float64(len(es)))
		sk.log.Error("bot: could not store envelopes; not acking them, so Slack delivers them again", "count", len(es), "err", err)
		return
	}
	for i, r := range batch {
		ev, e := r.ev, es[i]
		sk.ack(ctx, e.EnvelopeID, sk.handlers.ackPayload(ev), r.at)
		sk.metrics.events.WithLabelValues(string(ev.Type)).Inc()
		switch {
		case !stored[i]:
			sk.metrics.duplicates.Inc()
			sk.log.Info("bot: duplicate envelope acked and ignored", "key", e.Key, "envelope_id", e.EnvelopeID, "retry_attempt", ev.Request.RetryAttempt)
		case sk.skipWork.Load():
			// Tests: as if the process died right after the ack.
		case !sk.held.add(e.Key, e.LeaseUntil):
			// Recovery here claimed it already (its lease ran out before
			// the ack): it is queued once.
		case !p.submit(func() { sk.work(e, ev) }):
			sk.held.remove(e.Key)
			sk.metrics.deferred.Inc()
			sk.log.Warn("bot: handler queue full; the envelope waits in the inbox for recovery", "key", e.Key, "envelope_id", e.EnvelopeID, "type", ev.Type)
		}
	}
}

// Inbox tuning.
const (
	maxIngestBatch    = 64              // envelopes stored in one write, at most
	inboxPutTimeout   = 2 * time.Second // a slower store misses Slack's 3s ack deadline anyway
	maxInboxAttempts  = 5               // takeovers of an entry before it is given up (a poison envelope)
	inboxRecoverBatch = 64              // entries taken over per recovery pass, at most
)

func (sk *intake) ack(ctx context.Context, envelopeID string, payload any, start time.Time) {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sk.sm.AckCtx(actx, envelopeID, payload); err != nil {
		sk.log.Warn("bot: ack failed", "envelope_id", envelopeID, "err", err)
		return
	}
	sk.metrics.ackLatency.Observe(sk.clk.Now().Sub(start).Seconds())
	sk.spans.traceAck(ctx, envelopeID, start)
}

// work handles an inbox entry this process holds, in a pool worker, and
// marks it done. The lease is renewed while the handler runs. A handler cut
// short by shutdown leaves the entry to be handled again.
func (sk *intake) work(e slackstate.InboxEntry, ev socketmode.Event) {
	defer sk.held.remove(e.Key)
	ctx := sk.workCtx
	owner := sk.instance
	if sk.clk.Now().After(e.LeaseUntil.Add(-sk.grace / 2)) {
		// It waited in the queue for most of its lease: renew it first, so
		// that recovery elsewhere does not take it over while we work.
		if err := sk.store.ExtendInbox(ctx, e.Key, owner, sk.clk.Now(), sk.grace); err != nil {
			sk.log.Info("bot: inbox entry no longer ours; skipped", "key", e.Key, "err", err)
			return
		}
	}
	sk.held.running(e.Key)
	release := sk.holdInbox(ctx, e.Key)
	sk.handle(ctx, ev, e.Attempts > 1)
	release()
	if ctx.Err() != nil {
		return
	}
	sk.finishInbox(ctx, e.Key)
}

func (sk *intake) finishInbox(ctx context.Context, key string) {
	if err := sk.store.FinishInbox(ctx, key, sk.instance, sk.clk.Now()); err != nil {
		sk.log.Warn("bot: mark inbox entry done", "key", key, "err", err)
	}
}

// holdInbox renews this process's lease on an inbox entry every third of
// Options.InboxGrace until release is called.
func (sk *intake) holdInbox(ctx context.Context, key string) (release func()) {
	every := sk.grace / 3
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := sk.clk.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C():
			}
			if err := sk.store.ExtendInbox(ctx, key, sk.instance, sk.clk.Now(), sk.grace); err != nil {
				sk.log.Warn("bot: renew inbox lease", "key", key, "err", err)
				if errors.Is(err, slackstate.ErrLeaseLost) || errors.Is(err, slackstate.ErrNotFound) {
					return
				}
			}
			t.Reset(every)
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// recoverInbox takes over inbox entries whose holder's lease ran out (it
// died, or its queue was full) and hands them to the pool, as many as the
// queue has room for.
func (sk *intake) recoverInbox(ctx context.Context, p *pool) {
	if sk.skipWork.Load() {
		return
	}
	sk.renewQueued(ctx)
	n := min(p.free(), inboxRecoverBatch)
	if n <= 0 {
		return
	}
	es, err := sk.store.ClaimInbox(ctx, sk.instance, sk.clk.Now(), sk.grace, n)
	if err != nil {
		if ctx.Err() == nil {
			sk.log.Warn("bot: claim inbox entries", "err", err)
		}
		return
	}
	for _, e := range es {
		if !sk.held.add(e.Key, e.LeaseUntil) {
			// Its lease ran out while it waited in this process's queue or
			// while its handler here was slow to renew: this process is
			// handling it already. The claim renewed the lease; it is not
			// a takeover, so it neither runs twice nor counts as an attempt
			// (which would give a slow envelope up as poison).
			continue
		}
		log := sk.log.With("key", e.Key, "envelope_id", e.EnvelopeID, "type", e.Type, "attempts", e.Attempts, "received_at", e.ReceivedAt)
		if e.Attempts > maxInboxAttempts {
			sk.held.remove(e.Key)
			log.Error("bot: giving up on an envelope whose handling never finished")
			sk.metrics.dropped.Inc()
			sk.finishInbox(ctx, e.Key)
			continue
		}
		ev, err := parseEnvelope(e)
		if err != nil {
			sk.held.remove(e.Key)
			log.Error("bot: unreadable envelope in the inbox; dropped", "err", err)
			sk.metrics.dropped.Inc()
			sk.finishInbox(ctx, e.Key)
			continue
		}
		log.Info("bot: handling an envelope from the inbox")
		sk.metrics.recovered.Inc()
		if !p.submit(func() { sk.work(e, ev) }) {
			sk.held.remove(e.Key)
			log.Warn("bot: handler queue full; the envelope stays in the inbox")
		}
	}
}

// renewQueued renews the leases of the entries waiting in this process's
// queue that would run out within half a grace: an entry waits behind busy
// workers without other processes, or this one's recovery, taking it over.
// One that another process took over meanwhile is skipped by its handler.
func (sk *intake) renewQueued(ctx context.Context) {
	now := sk.clk.Now()
	for _, key := range sk.held.due(now.Add(sk.grace / 2)) {
		if err := sk.store.ExtendInbox(ctx, key, sk.instance, now, sk.grace); err != nil {
			if ctx.Err() == nil {
				sk.log.Warn("bot: renew the lease of a queued envelope", "key", key, "err", err)
			}
			continue
		}
		sk.held.renewed(key, now.Add(sk.grace))
	}
}

// parseEnvelope rebuilds the event of a stored envelope as slack-go's
// Socket Mode client parses it.
func parseEnvelope(e slackstate.InboxEntry) (socketmode.Event, error) {
	req := &socketmode.Request{Type: e.Type, EnvelopeID: e.EnvelopeID, Payload: json.RawMessage(e.Payload)}
	switch e.Type {
	case socketmode.RequestTypeEventsAPI:
		outer, err := slackevents.ParseEvent(e.Payload, slackevents.OptionNoVerifyToken())
		if err != nil {
			return socketmode.Event{}, fmt.Errorf("parsing Events API event: %w", err)
		}
		return socketmode.Event{Type: socketmode.EventTypeEventsAPI, Data: outer, Request: req}, nil
	case socketmode.RequestTypeInteractive:
		var cb slack.InteractionCallback
		if err := json.Unmarshal(e.Payload, &cb); err != nil {
			return socketmode.Event{}, fmt.Errorf("parsing interaction callback: %w", err)
		}
		return socketmode.Event{Type: socketmode.EventTypeInteractive, Data: cb, Request: req}, nil
	case socketmode.RequestTypeSlashCommands:
		var cmd slack.SlashCommand
		if err := json.Unmarshal(e.Payload, &cmd); err != nil {
			return socketmode.Event{}, fmt.Errorf("parsing slash command: %w", err)
		}
		return socketmode.Event{Type: socketmode.EventTypeSlashCommand, Data: cmd, Request: req}, nil
	}
	return socketmode.Event{}, fmt.Errorf("unknown envelope type %q", e.Type)
}

// handle runs one envelope's work in a pool worker. Redeliveries never get
// here (the inbox refused them); handling the same envelope again after a
// crash must be harmless, which the handlers see to (runs have ids derived
// from their message, decisions are compare-and-set). redo is true when the
// envelope is handled again: its inbox entry was taken over after its first
// handler's lease ran out.
func (sk *intake) handle(ctx context.Context, ev socketmode.Event, redo bool) {
	defer func() {
		if r := recover(); r != nil {
			envelopeID := ""
			if ev.Request != nil {
				envelopeID = ev.Request.EnvelopeID
			}
			sk.log.Error("bot: handler panic", "panic", fmt.Sprint(r), "envelope_id", envelopeID)
		}
	}()
	if why := sk.id.foreign(ev); why != "" {
		envelopeID := ""
		if ev.Request != nil {
			envelopeID = ev.Request.EnvelopeID
		}
		sk.log.Warn("bot: envelope for another workspace or app dropped", "from", why, "envelope_id", envelopeID)
		sk.metrics.events.WithLabelValues("foreign").Inc()
		return
	}
	switch data := ev.Data.(type) {
	case slackevents.EventsAPIEvent:
		sk.handlers.handleEvent(ctx, data, redo)
	case slack.InteractionCallback:
		sk.handlers.handleInteraction(ctx, data)
	case slack.SlashCommand:
		sk.handlers.handleSlash(ctx, data)
	}
}

// eventKey is the dedup key of an envelope: the event_id of an Events API
// envelope, which Slack keeps across redeliveries, or the envelope id.
func eventKey(req socketmode.Request) string {
	var p struct {
		EventID string `json:"event_id"`
	}
	if json.Unmarshal(req.Payload, &p) == nil && p.EventID != "" {
		return "ev:" + p.EventID
	}
	return "env:" + req.EnvelopeID
}

// pool is a fixed set of workers with a bounded queue.
type pool struct {
	jobs chan func()
	wg   sync.WaitGroup
	mu   sync.RWMutex
	shut bool
}

func newPool(workers, queue int) *pool {
	p := &pool{jobs: make(chan func(), queue)}
	for range workers {
		p.wg.Go(func() {
			for job := range p.jobs {
				job()
			}
		})
	}
	return p
}

// free is how many more jobs the queue has room for (a hint: others may
// submit at the same time).
func (p *pool) free() int { return cap(p.jobs) - len(p.jobs) }

// submit queues a job; false when the queue is full or the pool closed.
func (p *pool) submit(job func()) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.shut {
		return false
	}
	select {
	case p.jobs <- job:
		return true
	default:
		return false
	}
}

// close stops taking jobs and waits for the queued ones.
func (p *pool) close() {
	p.mu.Lock()
	if !p.shut {
		p.shut = true
		close(p.jobs)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// learnAppID sets the app id envelopes must carry: appID (Options.AppID), or the
// one bots.info reports for the bot. Without either, envelopes are checked
// by workspace only.
func (id *identity) learnAppID(ctx context.Context, c *slackClient, appID string, log *slog.Logger) {
	id.appID = appID
	if id.appID != "" || id.botID == "" {
		return
	}
	var info *slack.Bot
	err := c.call(ctx, "bots.info", true, func(ctx context.Context) error {
		var err error
		info, err = c.api.GetBotInfoContext(ctx, slack.GetBotInfoParameters{Bot: id.botID})
		return err
	})
	if err != nil || info == nil || info.AppID == "" {
		log.Info("bot: app id unknown; envelopes are checked by workspace only (set the app id to check it too)", "err", err)
		return
	}
	id.appID = info.AppID
}

// foreign says why an envelope is not for this bot ("" when it is): its
// team_id is another workspace's (unless the app is installed org-wide),
// or its api_app_id another app's. Slack only sends an app its own
// envelopes; one that is not is forged or misrouted, and is dropped.
func (id *identity) foreign(ev socketmode.Event) string {
	var team, app string
	switch d := ev.Data.(type) {
	case slackevents.EventsAPIEvent:
		team, app = d.TeamID, d.APIAppID
	case slack.InteractionCallback:
		team, app = d.Team.ID, d.APIAppID
		if team == "" {
			team = d.User.TeamID
		}
	case slack.SlashCommand:
		team, app = d.TeamID, d.APIAppID
	}
	switch {
	case team != "" && id.teamID != "" && team != id.teamID && id.enterpriseID == "":
		return "team " + team
	case app != "" && id.appID != "" && app != id.appID:
		return "app " + app
	}
	return ""
}

// heldEntries are the inbox entries this process has queued or is
// handling. Recovery claims entries by their lease alone, so a lease of this
// process's own must not run out while an entry waits behind busy workers:
// recovery renews the leases of queued entries (a running handler renews
// its own, see holdInbox), and skips an entry it claims anyway (a renewal
// came late) instead of queueing it a second time.
type heldEntries struct {
	mu   sync.Mutex
	keys map[string]time.Time // key -> end of its lease while queued; zero once its handler runs
}

// add marks key held, queued with a lease until until; false if it was
// held already.
func (h *heldEntries) add(key string, until time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.keys[key]; ok {
		return false
	}
	if h.keys == nil {
		h.keys = map[string]time.Time{}
	}
	h.keys[key] = until
	return true
}

// running records that key's handler started: it renews its own lease.
func (h *heldEntries) running(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.keys[key]; ok {
		h.keys[key] = time.Time{}
	}
}

// renewed records a queued entry's new lease.
func (h *heldEntries) renewed(key string, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if u, ok := h.keys[key]; ok && !u.IsZero() {
		h.keys[key] = until
	}
}

// due returns the queued entries whose lease ends before by.
func (h *heldEntries) due(by time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for k, u := range h.keys {
		if !u.IsZero() && u.Before(by) {
			out = append(out, k)
		}
	}
	return out
}

func (h *heldEntries) remove(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, key)
}

// recoverInbox takes over the inbox entries whose holder's lease ran out
// (runs.go's recovery loop asks, between its passes over the runs).
func (b *Bot) recoverInbox(ctx context.Context, p *pool) { b.intake.recoverInbox(ctx, p) }
