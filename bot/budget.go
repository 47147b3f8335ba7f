package bot

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"deepresearch/clock"
)

// This file keeps the bot within Slack's Web API rate limits when many runs
// share a workspace and a channel:
//
//   - updateBudget: chat.update is Tier 3 (about 50 a minute per workspace
//     and app, bursts tolerated). Final pictures wait for a token ahead of
//     progress edits; a progress edit only takes a token that is free beyond
//     a reserve kept for finals, and is skipped otherwise.
//   - postPacer: chat.postMessage allows about one message per second per
//     channel with short bursts.
//   - refusalGate: one user's flood of mentions gets one refusal of a kind
//     in the channel per window; repeats go to that user alone.
//
// updateBudget and postPacer are given the workspace's budget and keep this
// process's share of it: setShare(n) splits it among n live replicas (the
// bot counts them in the store's instance registry, see presence.go).

// errEditSkipped is returned for a progress edit that the chat.update
// budget did not allow; the picture stays dirty for a later tick.
var errEditSkipped = errors.New("progress edit skipped: chat.update budget reserved for final pictures")

// tokenEps absorbs floating-point error in refills.
const tokenEps = 1e-9

// updateBudget is this process's token bucket for chat.update. Finals (a
// run's last picture, a decided approval) wait for a token in arrival
// order; progress edits never wait: tryProgress takes a token only when no
// final is waiting and more than reserve tokens are left. A 429 from Slack
// pauses the bucket for its Retry-After, for every waiter. A nil
// *updateBudget is unlimited.
type updateBudget struct {
	clk       clock.Clock
	perMinute float64 // the workspace's rate
	fullBurst int     // the workspace's burst

	mu      sync.Mutex
	share   float64 // this process's part of the workspace's budget (0 < share ≤ 1)
	rate    float64 // this process's tokens per second: perMinute/60*share
	burst   float64 // this process's burst: fullBurst*share, at least 1
	reserve float64 // tokens progress edits leave for finals: half the burst
	tokens  float64
	last    time.Time // tokens were counted up to here (later than now during a pause)
	paused  time.Time // no token before this
	queue   []*budgetWaiter
	changed chan struct{} // closed and replaced when the queue or the pause changes
}

// budgetWaiter is a final waiting in the queue. It is not zero-sized, so
// that every waiter has its own address.
type budgetWaiter struct{ _ byte }

// newUpdateBudget returns a bucket of burst tokens refilled at perMinute
// (the whole workspace's budget: a share of 1); nil (unlimited) when
// perMinute is negative. The reserve for finals is half the burst, rounded
// down.
func newUpdateBudget(perMinute, burst int, clk clock.Clock) *updateBudget {
	if perMinute < 0 {
		return nil
	}
	u := &updateBudget{
		clk:       clk,
		perMinute: float64(max(perMinute, 1)),
		fullBurst: max(burst, 1),
		last:      clk.Now(),
		changed:   make(chan struct{}),
	}
	u.applyShareLocked(1)
	u.tokens = u.burst
	return u
}

func (u *updateBudget) applyShareLocked(f float64) {
	u.share = f
	u.rate = u.perMinute / 60 * f
	b := max(int(float64(u.fullBurst)*f+1e-9), 1)
	u.burst = float64(b)
	u.reserve = float64(b / 2)
}

// setShare makes the bucket this process's share of the workspace's budget
// when n replicas (at least 1) split it: the rate and the burst divided by
// n (the burst rounded down, at least 1), the reserve half the new burst.
// Tokens earned so far count at the old rate; tokens beyond the new burst
// are dropped. Queued finals keep their places and recompute their wait.
func (u *updateBudget) setShare(n int) {
	u.setFraction(1 / float64(max(n, 1)))
}

// setFraction makes the bucket the part f (0 < f ≤ 1) of the workspace's
// budget, as setShare does for an even split.
func (u *updateBudget) setFraction(f float64) {
	if u == nil {
		return
	}
	f = min(max(f, 1e-3), 1)
	u.mu.Lock()
	defer u.mu.Unlock()
	if math.Abs(f-u.share) < 1e-9 {
		return
	}
	u.refillLocked(u.clk.Now())
	u.applyShareLocked(f)
	u.tokens = min(u.tokens, u.burst)
	u.notifyLocked()
}

// current returns the bucket's rate (a minute) and burst; -1 and 0 when
// unlimited.
func (u *updateBudget) current() (perMinute float64, burst int) {
	if u == nil {
		return -1, 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.perMinute * u.share, int(u.burst)
}

func (u *updateBudget) refillLocked(now time.Time) {
	if now.After(u.last) {
		u.tokens = min(u.burst, u.tokens+now.Sub(u.last).Seconds()*u.rate)
		u.last = now
	}
}

func (u *updateBudget) notifyLocked() {
	close(u.changed)
	u.changed = make(chan struct{})
}

// readyAtLocked is when the next token is available (now or later).
func (u *updateBudget) readyAtLocked(now time.Time) time.Time {
	at := now
	if u.paused.After(at) {
		at = u.paused
	}
	if u.tokens < 1-tokenEps {
		if u.last.After(at) {
			at = u.last
		}
		secs := (1 - u.tokens) / u.rate
		at = at.Add(time.Duration(math.Ceil(secs * float64(time.Second))))
	}
	return at
}

// tryProgress takes a token for a progress edit if one is free beyond the
// reserve and no final is waiting; it never blocks.
func (u *updateBudget) tryProgress() bool {
	if u == nil {
		return true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.progressFreeLocked() {
		return false
	}
	u.tokens--
	return true
}

// giveBack returns a token taken by tryProgress and not used (the run it
// was taken for was refused), up to the burst.
func (u *updateBudget) giveBack() {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.refillLocked(u.clk.Now())
	u.tokens = min(u.burst, u.tokens+1)
	u.notifyLocked()
}

// progressAvailable reports, without taking it, whether tryProgress would
// find a token now: a progress loop looks before it waits for a channel slot.
func (u *updateBudget) progressAvailable() bool {
	if u == nil {
		return true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.progressFreeLocked()
}

// progressFreeLocked refills the bucket and reports whether a token is free
// for a progress edit: one beyond the reserve, with no final waiting and no
// pause in force.
func (u *updateBudget) progressFreeLocked() bool {
	now := u.clk.Now()
	u.refillLocked(now)
	return len(u.queue) == 0 && !now.Before(u.paused) && u.tokens >= 1+u.reserve-tokenEps
}

// wait takes a token for a final picture, waiting behind earlier finals
// (and any pause) until one is available or ctx ends.
func (u *updateBudget) wait(ctx context.Context) error {
	if u == nil {
		return nil
	}
	me := new(budgetWaiter)
	u.mu.Lock()
	u.queue = append(u.queue, me)
	for {
		now := u.clk.Now()
		u.refillLocked(now)
		var timer <-chan time.Time // nil: not the head, wait for a change
		stop := func() bool { return false }
		if u.queue[0] == me {
			at := u.readyAtLocked(now)
			if !at.After(now) {
				u.tokens--
				u.queue = u.queue[1:]
				u.notifyLocked()
				u.mu.Unlock()
				return nil
			}
			t := u.clk.NewTimer(at.Sub(now))
			timer, stop = t.C(), t.Stop
		}
		changed := u.changed
		u.mu.Unlock()
		select {
		case <-ctx.Done():
			stop()
			u.mu.Lock()
			if i := slices.Index(u.queue, me); i >= 0 {
				u.queue = slices.Delete(u.queue, i, i+1)
			}
			u.notifyLocked()
			u.mu.Unlock()
			return ctx.Err()
		case <-changed:
		case <-timer:
		}
		stop()
		u.mu.Lock()
	}
}

// pause stops handing out tokens for d (Slack's Retry-After) and starts
// refilling from empty afterwards: Slack's bucket is emptier than ours.
func (u *updateBudget) pause(d time.Duration) {
	if u == nil || d <= 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clk.Now()
	u.refillLocked(now)
	if until := now.Add(d); until.After(u.paused) {
		u.paused = until
	}
	u.tokens = 0
	if u.paused.After(u.last) {
		u.last = u.paused
	}
	u.notifyLocked()
}

// retryIn is how long until a progress edit could get a token, at least
// min: when to look again after a skip.
func (u *updateBudget) retryIn(least time.Duration) time.Duration {
	if u == nil {
		return least
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clk.Now()
	u.refillLocked(now)
	from := now
	if u.last.After(from) {
		from = u.last
	}
	need := max(0, 1+u.reserve-u.tokens)
	d := from.Sub(now) + time.Duration(need/u.rate*float64(time.Second))
	return max(d, least)
}

// postPacer spaces chat.postMessage calls per channel: burst at once, then
// one per interval. A nil *postPacer does not pace.
type postPacer struct {
	clk          clock.Clock
	fullInterval time.Duration // the workspace's pace in a channel
	fullBurst    int

	mu       sync.Mutex
	share    int           // replicas the pace is split among
	interval time.Duration // this process's: fullInterval × share
	burst    float64       // this process's: fullBurst/share, at least 1
	chans    map[string]*paceState
}

type paceState struct {
	tokens float64 // negative: callers are waiting for future slots
	last   time.Time
}

// newPostPacer returns a pacer; nil (no pacing) when interval is negative.
func newPostPacer(interval time.Duration, burst int, clk clock.Clock) *postPacer {
	if interval < 0 {
		return nil
	}
	if interval == 0 {
		interval = time.Second
	}
	burst = max(burst, 1)
	return &postPacer{clk: clk, fullInterval: interval, fullBurst: burst,
		share: 1, interval: interval, burst: float64(burst), chans: map[string]*paceState{}}
}

// setShare makes the pace this process's share when n replicas (at least
// 1) post in the same channels: one message per interval × n, bursts of
// burst/n (at least 1). Slots earned so far count at the old pace; slots
// already handed out (posts sleeping until theirs) stay as they are.
func (p *postPacer) setShare(n int) {
	if p == nil {
		return
	}
	n = max(n, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if n == p.share {
		return
	}
	now := p.clk.Now()
	for _, st := range p.chans {
		p.refillLocked(st, now)
	}
	p.share = n
	p.interval = p.fullInterval * time.Duration(n)
	p.burst = float64(max(p.fullBurst/n, 1))
	for _, st := range p.chans {
		st.tokens = min(st.tokens, p.burst)
	}
}

// current returns the pacer's interval and burst; -1 and 0 when unpaced.
func (p *postPacer) current() (time.Duration, int) {
	if p == nil {
		return -1, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.interval, int(p.burst)
}

func (p *postPacer) refillLocked(st *paceState, now time.Time) {
	if now.After(st.last) {
		st.tokens = min(p.burst, st.tokens+float64(now.Sub(st.last))/float64(p.interval))
		st.last = now
	}
}

// wait reserves the channel's next slot and sleeps until it.
func (p *postPacer) wait(ctx context.Context, channel string) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	now := p.clk.Now()
	st := p.chans[channel]
	if st == nil {
		if len(p.chans) >= 4096 { // forget idle channels
			for ch, s := range p.chans {
				if p.refillLocked(s, now); s.tokens >= p.burst-tokenEps {
					delete(p.chans, ch)
				}
			}
		}
		st = &paceState{tokens: p.burst, last: now}
		p.chans[channel] = st
	}
	p.refillLocked(st, now)
	st.tokens--
	var d time.Duration
	if st.tokens < -tokenEps {
		d = time.Duration(math.Ceil(-st.tokens * float64(p.interval)))
	}
	p.mu.Unlock()
	if d <= 0 {
		return nil // a free slot is taken even when ctx has ended
	}
	if err := clock.Sleep(ctx, p.clk, d); err != nil {
		p.mu.Lock()
		st.tokens = min(p.burst, st.tokens+1) // give the slot back
		p.mu.Unlock()
		return err
	}
	return nil
}

// refusalRoute is how a refusal reply is delivered.
type refusalRoute string

const (
	refuseInThread  refusalRoute = "thread"    // a message in the thread
	refuseEphemeral refusalRoute = "ephemeral" // to the user alone (Tier 4, not paced per channel)
	refuseLast      refusalRoute = "last"      // to the user alone, saying repeats go unanswered for a while
	refuseDropped   refusalRoute = "dropped"   // not answered (logged and counted)
)

// maxEphemeralRefusals is how many repeats of a refusal a user is told
// privately per window before the rest are dropped.
const maxEphemeralRefusals = 5

// refusalGate keeps one user's flood of mentions from monopolising a
// channel: the first refusal of a kind (busy, limit, too long, help) per
// user and channel in a window is posted in the thread; the next
// maxEphemeralRefusals are shown to the user alone; the rest are dropped.
// A nil *refusalGate posts every refusal in the thread.
type refusalGate struct {
	clk    clock.Clock
	window time.Duration

	mu   sync.Mutex
	seen map[string]*refusalState
}

type refusalState struct {
	since time.Time
	n     int
}

// newRefusalGate returns a gate; nil when window is negative.
func newRefusalGate(window time.Duration, clk clock.Clock) *refusalGate {
	if window < 0 {
		return nil
	}
	return &refusalGate{clk: clk, window: window, seen: map[string]*refusalState{}}
}

// route counts a refusal of kind to user in channel and says how to deliver it.
func (g *refusalGate) route(user, channel, kind string) refusalRoute {
	if g == nil {
		return refuseInThread
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clk.Now()
	key := user + "\x00" + channel + "\x00" + kind
	st := g.seen[key]
	if st == nil || now.Sub(st.since) >= g.window {
		if len(g.seen) >= 4096 {
			for k, s := range g.seen {
				if now.Sub(s.since) >= g.window {
					delete(g.seen, k)
				}
			}
		}
		g.seen[key] = &refusalState{since: now, n: 1}
		return refuseInThread
	}
	st.n++
	switch {
	case st.n < 1+maxEphemeralRefusals:
		return refuseEphemeral
	case st.n == 1+maxEphemeralRefusals:
		return refuseLast
	}
	return refuseDropped
}
