package bot

import (
	"context"
	"errors"
	"time"
)

// Slack's rate limits are per workspace (chat.update) and per channel
// (chat.postMessage, edits), not per process: replicas sharing a workspace
// must split them. Each process announces itself in the store's instance
// registry every Options.PresenceEvery, counts the instances seen within
// the last presenceWindow periods, and keeps 1/live of each budget. A
// process that stops cleanly leaves the registry, so the others take its
// share back on their next round; one that dies is no longer counted once
// its last announcement is older than the window.

// presenceWindow is how many periods an instance stays counted after its
// last announcement: a late round or two (a busy database, a paused
// process) does not make the others spend its share.
const presenceWindow = 3

// presenceTimeout bounds one round of store calls.
const presenceTimeout = 5 * time.Second

// presenceLoop announces this instance and recounts the replicas every
// PresenceEvery until ctx ends.
func (b *Bot) presenceLoop(ctx context.Context) {
	t := b.clk.NewTimer(b.opts.PresenceEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		b.presence(ctx)
		t.Reset(b.opts.PresenceEvery)
	}
}

// presence is one round: touch this instance, count the live ones, and
// split the budgets by the count. When the store fails, the last count is
// kept (logged once until the store answers again).
func (b *Bot) presence(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, presenceTimeout)
	defer cancel()
	now := b.now()
	err := b.store.TouchInstance(ctx, b.opts.InstanceID, now)
	n := 0
	if err == nil {
		n, err = b.store.LiveInstances(ctx, now.Add(-presenceWindow*b.opts.PresenceEvery))
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return // shutting down
		}
		if !b.presenceFailing {
			b.presenceFailing = true
			b.log.Warn("bot: cannot count the live replicas; keeping the last count for the Slack budgets", "live", b.live.Load(), "err", err)
		}
		b.presenceRecovering = 0
		return
	}
	n = max(n, 1)
	if b.presenceFailing {
		// The others' announcements may have expired during the outage
		// (theirs failed too): until every live replica has had a window
		// to announce itself again, a lower count is not believed.
		b.presenceFailing = false
		b.presenceRecovering = presenceWindow
		b.log.Info("bot: counting the live replicas again", "live", n)
	}
	if b.presenceRecovering > 0 {
		b.presenceRecovering--
		n = max(n, int(b.live.Load()))
	}
	b.setShare(n, b.weight(ctx, n, now))
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
func (b *Bot) weight(ctx context.Context, n int, now time.Time) float64 {
	even := 1 / float64(max(n, 1))
	if n <= 1 {
		return even
	}
	mine, all, err := b.store.HeldRuns(ctx, b.opts.InstanceID, now)
	if err != nil {
		b.log.Debug("bot: count held runs; Slack budgets stay split evenly", "err", err)
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
func (b *Bot) setShare(n int, f float64) {
	old := int(b.live.Swap(int32(n)))
	b.updates.setFraction(f)
	b.appends.setFraction(f)
	b.streamStops.setFraction(f)
	b.posts.setShare(n)
	b.limiter.setShare(n)
	b.streamStarts.setShare(n)
	for _, sb := range b.opts.SharedBudgets {
		sb.SetFraction(f)
	}
	b.metrics.liveInstances.Set(float64(n))
	if old != n {
		perMinute, burst := b.updates.current()
		interval, _ := b.posts.current()
		b.log.Info("bot: live replicas changed; Slack budgets split among them", "live", n, "was", old,
			"updates_per_minute", perMinute, "update_burst", burst, "post_interval", interval.String(), "edit_interval", b.limiter.every().String())
	}
}

// leave removes this instance from the registry at a clean shutdown, so
// that the other replicas take its share back at once.
func (b *Bot) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), presenceTimeout)
	defer cancel()
	if err := b.store.LeaveInstance(ctx, b.opts.InstanceID); err != nil {
		b.log.Warn("bot: leave the instance registry (the others count this process until it expires)", "err", err)
	}
}
