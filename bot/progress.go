package bot

import (
	"context"
	"errors"
	"sync"
	"time"

	"deepresearch/clock"
	"deepresearch/research"

	"github.com/slack-go/slack"
)

// channelLimiter spaces message edits in one channel at least interval
// apart (Slack allows about one update per second per channel). With n
// replicas editing in the same channels, each spaces its own edits n
// intervals apart (setShare).
type channelLimiter struct {
	clk      clock.Clock
	full     time.Duration // the interval of the whole workspace
	mu       sync.Mutex
	interval time.Duration // this process's: full × share
	next     map[string]time.Time
}

func newChannelLimiter(interval time.Duration, clk clock.Clock) *channelLimiter {
	return &channelLimiter{clk: clk, full: interval, interval: interval, next: map[string]time.Time{}}
}

// setShare spaces this process's edits in a channel n intervals apart (n
// at least 1), from the slots handed out next.
func (l *channelLimiter) setShare(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.interval = l.full * time.Duration(max(n, 1))
}

// every returns the current spacing of edits in a channel.
func (l *channelLimiter) every() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.interval
}

// wait reserves the channel's next slot and sleeps until it.
func (l *channelLimiter) wait(ctx context.Context, channel string) error {
	l.mu.Lock()
	now := l.clk.Now()
	at := l.next[channel]
	if at.Before(now) {
		at = now
	}
	l.next[channel] = at.Add(l.interval)
	if len(l.next) > 4096 { // forget idle channels
		for ch, t := range l.next {
			if t.Before(now) {
				delete(l.next, ch)
			}
		}
	}
	l.mu.Unlock()
	d := at.Sub(l.clk.Now())
	if d <= 0 {
		return nil // a slot that is due does not wait, even for an ended ctx
	}
	return clock.Sleep(ctx, l.clk, d)
}

// statusMessage keeps a run's status message up to date: Set records the
// newest picture and an updater goroutine edits the message, never more
// often than the channel limiter allows, always with the newest picture
// (intermediate ones are coalesced away).
type statusMessage struct {
	b        *Bot
	channel  string
	threadTS string // where a final message goes if the status message was never posted
	ts       string
	// posted, if set, is told the ts of a final message posted because the
	// status message could not be edited (the run records it, so the
	// outcome can be found where it is shown). It returns the status
	// message the run has recorded, if another was recorded meanwhile.
	posted func(ctx context.Context, ts string) (recorded string)
	// recorded, if set, returns the status message recorded for the run
	// now (another process may have recorded one since this one started).
	recorded func(ctx context.Context) string

	*updater
	mu    sync.Mutex
	view  statusView
	dirty bool
}

// updater is how a status picture's goroutine is driven: kicks coalesce
// into one pending wake-up; halt stops the goroutine once and waits for it.
type updater struct {
	kick, stop, done chan struct{}
	halting          sync.Once
}

func newUpdater() *updater {
	return &updater{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// poke wakes the goroutine, or leaves the wake-up already pending.
func (u *updater) poke() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// halt stops the goroutine and waits for it.
func (u *updater) halt() {
	u.halting.Do(func() { close(u.stop) })
	<-u.done
}

func (st *statuses) newStatusMessage(channel, threadTS, ts string, v statusView) *statusMessage {
	s := &statusMessage{b: st.bot, channel: channel, threadTS: threadTS, ts: ts, view: v, updater: newUpdater()}
	go s.loop()
	return s
}

// Progress records a new progress snapshot (the ProgressSink).
func (s *statusMessage) Progress(p research.Progress) {
	s.mu.Lock()
	s.view.Progress = p
	s.view.State = research.StateRunning
	s.dirty = true
	s.mu.Unlock()
	s.poke()
}

func (s *statusMessage) snapshot() (statusView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, d := s.view, s.dirty
	s.dirty = false
	return v, d
}

// loop renders progress pictures. A picture the chat.update budget has no
// token for (it keeps a reserve for final pictures) stays dirty and is
// tried again later, so under load progress edits become rare and always
// show the newest picture.
func (s *statusMessage) loop() {
	defer close(s.done)
	ctx := s.b.workCtx
	var retry <-chan time.Time
	stopRetry := func() bool { return false }
	defer func() { stopRetry() }()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		case <-retry:
		}
		stopRetry()
		retry = nil
		if s.b.slackClient.updates.progressAvailable() {
			if err := s.waitSlot(ctx); err != nil {
				return
			}
			v, dirty := s.snapshot()
			if !dirty {
				continue
			}
			if err := s.render(ctx, v, editProgress); !errors.Is(err, errEditSkipped) {
				continue
			}
			s.redirty()
		} else {
			s.b.metrics.updateSkipped.Inc()
		}
		t := s.b.slackClient.clk.NewTimer(s.b.slackClient.updates.retryIn(s.b.slackClient.limiter.every()))
		retry, stopRetry = t.C(), t.Stop
	}
}

// waitSlot waits for the channel's next edit slot, giving up when the
// updater is stopped: a final picture must not queue behind a progress edit
// waiting in a busy channel.
func (s *statusMessage) waitSlot(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return s.b.slackClient.limiter.wait(ctx, s.channel)
}

// redirty marks the picture as not shown yet.
func (s *statusMessage) redirty() {
	s.mu.Lock()
	s.dirty = true
	s.mu.Unlock()
}

func (s *statusMessage) render(ctx context.Context, v statusView, kind editKind) error {
	if s.ts == "" {
		return nil
	}
	return s.b.slackClient.edits.apply(ctx, s.channel+"/"+s.ts, func(ctx context.Context) error {
		v.Now = s.b.slackClient.now()
		text, blocks := statusBlocks(v)
		if v.State == research.StateDone {
			blocks = s.b.ratings.ratingBlocks(blocks, v.RunID)
		}
		err := s.b.slackClient.editMessage(ctx, kind, s.channel, s.ts, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
		if err != nil && !errors.Is(err, errEditSkipped) {
			s.b.log.Warn("bot: status update", "channel", s.channel, "ts", s.ts, "err", err)
		}
		return err
	})
}

// Final stops the updater and renders the last picture with state and
// note. When the status message cannot be edited (it was never posted, was
// deleted, or Slack refuses the edit) the picture is posted as a new
// message in the thread, so the outcome always reaches it. It returns an
// error only when neither worked.
func (s *statusMessage) Final(ctx context.Context, state research.RunState, note string) error {
	s.halt()
	s.mu.Lock()
	s.view.State, s.view.Note = state, note
	v := s.view
	s.mu.Unlock()
	if s.ts == "" && s.recorded != nil {
		s.ts = s.recorded(ctx)
	}
	if s.ts != "" {
		// A final edit waits for a chat.update token ahead of progress
		// edits, then for the channel's edit slot.
		err := s.render(ctx, v, editFinal)
		if err == nil || !uneditable(err) {
			return err
		}
	}
	// Posting the status message failed earlier (Slack 5xx or a dead
	// connection) or it is gone: the outcome still has to reach the
	// thread. A rare duplicate on a 5xx that did post beats a run that
	// ends silently.
	v.Now = s.b.slackClient.now()
	text, blocks := statusBlocks(v)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)}
	if s.threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(s.threadTS))
	}
	ts, err := s.b.slackClient.post(ctx, s.channel, true, opts...)
	if err != nil {
		s.b.log.Error("bot: could not post the run's final message", "channel", s.channel, "err", err)
		return err
	}
	if s.posted == nil {
		return nil
	}
	if rec := s.posted(ctx, ts); rec != "" && rec != ts {
		// A status message was recorded while this one was posted (the
		// run's creator recorded its own late): the outcome goes where the
		// run says it is, and the message just posted is removed, so the
		// thread shows it once.
		s.ts = rec
		if err := s.render(ctx, v, editFinal); err != nil {
			s.b.log.Warn("bot: show the outcome in the recorded status message; the final message posted stays", "channel", s.channel, "ts", rec, "err", err)
			return nil
		}
		s.b.deleteExtra(ctx, s.channel, ts, s.b.log)
	}
	return nil
}

// uneditable reports whether err means the message can never be edited.
func uneditable(err error) bool {
	switch errorCode(err) {
	case "message_not_found", "cant_update_message", "edit_window_closed", "msg_too_long":
		return true
	}
	return false
}

// editOrder keeps the edits of one message in the order their pictures
// were taken: an edit waits for the one before it (including its retries)
// and is dropped when a newer picture has already been shown, so a slow or
// retried old picture never overwrites a newer one.
type editOrder struct {
	mu   sync.Mutex
	msgs map[string]*msgEdits
}

type msgEdits struct {
	mu      sync.Mutex // held while an edit of the message is in flight
	issued  uint64
	applied uint64
	users   int
}

// apply takes a ticket for key now and runs edit in ticket order, unless a
// later ticket was applied first.
func (o *editOrder) apply(ctx context.Context, key string, edit func(context.Context) error) error {
	o.mu.Lock()
	if o.msgs == nil {
		o.msgs = map[string]*msgEdits{}
	}
	m := o.msgs[key]
	if m == nil {
		m = &msgEdits{}
		o.msgs[key] = m
	}
	m.issued++
	ticket := m.issued
	m.users++
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		if m.users--; m.users == 0 {
			delete(o.msgs, key)
		}
		o.mu.Unlock()
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.applied > ticket {
		return nil
	}
	if err := edit(ctx); err != nil {
		return err
	}
	m.applied = ticket
	return nil
}

// lastProgress returns the newest snapshot.
func (s *statusMessage) lastProgress() research.Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view.Progress
}
