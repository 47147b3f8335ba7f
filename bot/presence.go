package bot

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"deepresearch/research"
	"deepresearch/slackstate"
)

// Slack's rate limits are per workspace (chat.update) and per channel
// (chat.postMessage, edits), not per process: replicas sharing a workspace
// must split them. Each process announces itself in the store's instance
// registry every Options.PresenceEvery, counts the instances seen within
// the last presenceWindow periods, and keeps 1/live of each budget. A
// process that stops cleanly leaves the registry, so the others take its
// share back on their next round; one that dies is no longer counted once
// its last announcement is older than the window.

// replicas announces this process in the store's instance registry,
// counts the live replicas and splits the Slack client's budgets (and the
// SharedBudgets) among them.
type replicas struct {
	registry slackstate.Store // the instance registry
	runs     research.Store   // the runs held, by which the budgets are weighed
	instance string           // Options.InstanceID
	every    time.Duration    // Options.PresenceEvery
	shared   []SharedBudget
	slack    *slackClient
	log      *slog.Logger
	metrics  *Metrics

	// the loop's goroutine only:
	failing    bool // the last round failed (logged once)
	recovering int  // rounds after an outage in which the count may only grow
}

// presenceWindow is how many periods an instance stays counted after its
// last announcement: a late round or two (a busy database, a paused
// process) does not make the others spend its share.
const presenceWindow = 3

// presenceTimeout bounds one round of store calls.
const presenceTimeout = 5 * time.Second

// loop announces this instance and recounts the replicas every
// PresenceEvery until ctx ends.
func (p *replicas) loop(ctx context.Context) {
	t := p.slack.clk.NewTimer(p.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		p.round(ctx)
		t.Reset(p.every)
	}
}

// round is one round: touch this instance, count the live ones, and
// split the budgets by the count. When the store fails, the last count is
// kept (logged once until the store answers again).
func (p *replicas) round(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, presenceTimeout)
	defer cancel()
	now := p.slack.now()
	err := p.registry.TouchInstance(ctx, p.instance, now)
	n := 0
	if err == nil {
		n, err = p.registry.LiveInstances(ctx, now.Add(-presenceWindow*p.every))
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return // shutting down
		}
		if !p.failing {
			p.failing = true
			p.log.Warn("bot: cannot count the live replicas; keeping the last count for the Slack budgets", "live", p.slack.live.Load(), "err", err)
		}
		p.recovering = 0
		return
	}
	n = max(n, 1)
	if p.failing {
		// The others' announcements may have expired during the outage
		// (theirs failed too): until every live replica has had a window
		// to announce itself again, a lower count is not believed.
		p.failing = false
		p.recovering = presenceWindow
		p.log.Info("bot: counting the live replicas again", "live", n)
	}
	if p.recovering > 0 {
		p.recovering--
		n = max(n, int(p.slack.live.Load()))
	}
	p.setShare(n, p.weight(ctx, n, now))
}

// shareSafety keeps the replicas' weighted parts, each computed from its own
// reading of the store a moment apart, from adding up to more than the
// workspace's budget.
const shareSafety = 0.95

// weight is this process's part of the workspace-wide budgets whose calls
// follow the runs it holds (chat.update, chat.appendStream,
// chat.stopStream): each of n live replicas weighs its held runs plus one,
// so the replica that ends up working on most runs is not held to 1/n of
// the budget while the others' parts go unused. 1/n when alone or when the
// count fails.
func (p *replicas) weight(ctx context.Context, n int, now time.Time) float64 {
	even := 1 / float64(max(n, 1))
	if n <= 1 {
		return even
	}
	mine, all, err := p.runs.HeldRuns(ctx, p.instance, now)
	if err != nil {
		p.log.Debug("bot: count held runs; Slack budgets stay split evenly", "err", err)
		return even
	}
	all = max(all, mine)
	if all == 0 {
		return even
	}
	return shareSafety * float64(mine+1) / float64(all+n)
}

// setShare splits the workspace's Slack budgets among n live replicas:
// those that follow the runs this process holds by its weight f, starting
// streams and the per-channel pacing evenly.
func (p *replicas) setShare(n int, f float64) {
	old := int(p.slack.live.Swap(int32(n)))
	p.slack.updates.setFraction(f)
	p.slack.appends.setFraction(f)
	p.slack.streamStops.setFraction(f)
	p.slack.posts.setShare(n)
	p.slack.limiter.setShare(n)
	p.slack.streamStarts.setShare(n)
	for _, sb := range p.shared {
		sb.SetFraction(f)
	}
	p.metrics.liveInstances.Set(float64(n))
	if old != n {
		perMinute, burst := p.slack.updates.current()
		interval, _ := p.slack.posts.current()
		p.log.Info("bot: live replicas changed; Slack budgets split among them", "live", n, "was", old,
			"updates_per_minute", perMinute, "update_burst", burst, "post_interval", interval.String(), "edit_interval", p.slack.limiter.every().String())
	}
}

// leave removes this instance from the registry at a clean shutdown, so
// that the other replicas take its share back at once.
func (p *replicas) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), presenceTimeout)
	defer cancel()
	if err := p.registry.LeaveInstance(ctx, p.instance); err != nil {
		p.log.Warn("bot: leave the instance registry (the others count this process until it expires)", "err", err)
	}
}
