package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// socketLoop keeps the Socket Mode connection up. slack-go's RunContext
// reconnects by itself on disconnect requests and dead connections; it
// returns only when it cannot connect, and then we try again with a backoff,
// unless the app token was rejected.
func (b *Bot) socketLoop(ctx context.Context) error {
	backoff := 500 * time.Millisecond
	for {
		err := b.sm.RunContext(ctx)
		b.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		switch errorCode(err) {
		case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "not_allowed_token_type":
			return fmt.Errorf("%w: apps.connections.open answered %s; check SLACK_APP_TOKEN (an app-level token, xapp-, with connections:write)", ErrAuth, errorCode(err))
		}
		b.log.Warn("bot: socket mode stopped; reconnecting", "err", err, "backoff", backoff)
		b.metrics.reconnects.Inc()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// dispatchLoop drains the client's events promptly: it acknowledges every
// envelope at once, then hands the work to the pool. It never does I/O other
// than the ack, so pings are never held up.
func (b *Bot) dispatchLoop(ctx context.Context, p *pool) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-b.sm.Events:
			b.dispatch(ctx, p, ev)
		}
	}
}

func (b *Bot) dispatch(ctx context.Context, p *pool, ev socketmode.Event) {
	start := time.Now()
	switch ev.Type {
	case socketmode.EventTypeConnected:
		b.connected.Store(true)
		b.log.Info("bot: connected")
		return
	case socketmode.EventTypeConnecting:
		b.log.Debug("bot: connecting")
		return
	case socketmode.EventTypeConnectionError:
		b.connected.Store(false)
		b.log.Warn("bot: connection error", "err", fmt.Sprint(ev.Data))
		return
	case socketmode.EventTypeInvalidAuth:
		b.log.Error("bot: socket mode auth rejected; check SLACK_APP_TOKEN")
		return
	case socketmode.EventTypeHello:
		b.connected.Store(true)
		return
	case socketmode.EventTypeDisconnect:
		b.log.Info("bot: disconnect requested")
		return
	case socketmode.EventTypeIncomingError:
		b.log.Warn("bot: incoming error", "err", fmt.Sprint(ev.Data))
		return
	case socketmode.EventTypeErrorBadMessage:
		// Ack what we could not parse so Slack does not redeliver it forever.
		bad, _ := ev.Data.(*socketmode.ErrorBadMessage)
		if bad != nil {
			var env struct {
				EnvelopeID string `json:"envelope_id"`
				Type       string `json:"type"`
			}
			if json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
				b.ack(ctx, env.EnvelopeID, nil, start)
			}
			b.log.Warn("bot: malformed envelope acked and dropped", "envelope_type", env.Type, "err", bad.Cause)
		}
		b.metrics.events.WithLabelValues("malformed").Inc()
		return
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
	default:
		if ev.Request != nil && ev.Request.EnvelopeID != "" {
			b.ack(ctx, ev.Request.EnvelopeID, nil, start)
		}
		return
	}
	if ev.Request == nil {
		return
	}
	req := *ev.Request
	b.ack(ctx, req.EnvelopeID, b.ackPayload(ev), start)
	b.metrics.events.WithLabelValues(string(ev.Type)).Inc()
	if !p.submit(func() { b.handle(ev, req) }) {
		b.metrics.dropped.Inc()
		b.log.Error("bot: handler queue full; event dropped", "envelope_id", req.EnvelopeID, "type", ev.Type)
	}
}

func (b *Bot) ack(ctx context.Context, envelopeID string, payload any, start time.Time) {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.sm.AckCtx(actx, envelopeID, payload); err != nil {
		b.log.Warn("bot: ack failed", "envelope_id", envelopeID, "err", err)
		return
	}
	b.metrics.ackLatency.Observe(time.Since(start).Seconds())
}

// handle runs one envelope's work in a pool worker.
func (b *Bot) handle(ev socketmode.Event, req socketmode.Request) {
	ctx := b.workCtx
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("bot: handler panic", "panic", fmt.Sprint(r), "envelope_id", req.EnvelopeID)
		}
	}()
	switch ev.Type {
	case socketmode.EventTypeEventsAPI:
		outer, ok := ev.Data.(slackevents.EventsAPIEvent)
		if !ok {
			return
		}
		key := eventKey(req)
		if first, err := b.store.ClaimEvent(ctx, key, b.now()); err != nil {
			b.log.Error("bot: claim event", "key", key, "err", err)
			return
		} else if !first {
			b.metrics.duplicates.Inc()
			b.log.Info("bot: duplicate event ignored", "key", key, "retry_attempt", req.RetryAttempt)
			return
		}
		b.handleEvent(ctx, outer)
	case socketmode.EventTypeInteractive:
		cb, ok := ev.Data.(slack.InteractionCallback)
		if !ok {
			return
		}
		if first, err := b.store.ClaimEvent(ctx, "env:"+req.EnvelopeID, b.now()); err != nil || !first {
			if !first {
				b.metrics.duplicates.Inc()
			}
			return
		}
		b.handleInteraction(ctx, cb)
	case socketmode.EventTypeSlashCommand:
		cmd, ok := ev.Data.(slack.SlashCommand)
		if !ok {
			return
		}
		if first, err := b.store.ClaimEvent(ctx, "env:"+req.EnvelopeID, b.now()); err != nil || !first {
			if !first {
				b.metrics.duplicates.Inc()
			}
			return
		}
		b.handleSlash(ctx, cmd)
	}
}

// eventKey is the dedup key of an Events API envelope: its event_id, which
// Slack keeps across redeliveries, or the envelope id.
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

var errShutdown = errors.New("bot: shutting down")
