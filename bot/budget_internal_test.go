package bot

import (
	"context"
	"errors"
	"testing"
	"time"

	"deepresearch/clock"
)

// newManualClock returns a manual clock at a fixed time.
func newManualClock() *clock.Manual {
	return clock.NewManual(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
}

// waitTimer waits until a pending timer of clk is set for at (a goroutine
// is sleeping until then).
func waitTimer(t *testing.T, clk *clock.Manual, at time.Time) {
	t.Helper()
	select {
	case <-clk.WaitForTimer(at):
	case <-time.After(10 * time.Second):
		t.Fatalf("no timer set for %v", at)
	}
}

// waitRearmed waits until the clock's only pending timer fires within
// (lo, hi]: a waiter woken by a change of rate has put its new timer in
// place of the old. Advancing the clock before that races the waiter,
// whose timer would then start from the advanced time and never fire.
func waitRearmed(t *testing.T, clk *clock.Manual, lo, hi time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := clk.Deadlines()
		if len(d) == 1 && d[0].After(lo) && !d[0].After(hi) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timers pending at %v, want one in (%v, %v]", d, lo, hi)
		}
		time.Sleep(time.Millisecond)
	}
}

func queued(u *updateBudget) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.queue)
}

func waitQueued(t *testing.T, u *updateBudget, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for queued(u) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d finals queued, want %d", queued(u), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Progress edits leave the reserve to finals: with a burst of 4 (reserve
// 2) two progress edits go through, the third is skipped, and two finals
// still go through at once.
func TestUpdateBudgetProgressKeepsReserve(t *testing.T) {
	clk := newManualClock()
	u := newUpdateBudget(60, 4, clk)
	if first, second := u.tryProgress(), u.tryProgress(); !first || !second {
		t.Fatal("progress edits refused with a full bucket")
	}
	if u.tryProgress() || u.progressAvailable() {
		t.Fatal("a progress edit took a token from the finals' reserve")
	}
	ctx := context.Background()
	for i := range 2 {
		done := make(chan error, 1)
		go func() { done <- u.wait(ctx) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("final %d waited although the reserve had a token", i)
		}
	}
	// Refilled to the reserve and one more, progress may go again.
	clk.Advance(2 * time.Second)
	if u.tryProgress() {
		t.Fatal("progress took a token with only the reserve refilled")
	}
	clk.Advance(time.Second)
	if !u.tryProgress() {
		t.Fatal("progress refused with a token beyond the reserve")
	}
	if d := u.retryIn(10 * time.Millisecond); d != time.Second {
		t.Errorf("retryIn = %v, want 1s (one token beyond the reserve, at 1/s)", d)
	}
	if d := u.retryIn(5 * time.Second); d != 5*time.Second {
		t.Errorf("retryIn = %v, want at least the given 5s", d)
	}
}

// Finals queue in arrival order and are served before any progress edit:
// while one waits, progress is skipped even when tokens come in.
func TestUpdateBudgetFinalsFirst(t *testing.T) {
	clk := newManualClock()
	u := newUpdateBudget(60, 2, clk)
	ctx := context.Background()
	for range 2 {
		if err := u.wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	order := make(chan string, 2)
	start := clk.Now()
	go func() {
		if u.wait(ctx) == nil {
			order <- "A"
		}
	}()
	waitQueued(t, u, 1)
	waitTimer(t, clk, start.Add(time.Second))
	go func() {
		if u.wait(ctx) == nil {
			order <- "B"
		}
	}()
	waitQueued(t, u, 2)

	// One token: the head's. (Served finals send to order after leaving
	// the queue, so two served at once could report in either order; the
	// clock hands out one token at a time to see the queue's order.)
	clk.Advance(time.Second)
	if u.tryProgress() {
		t.Fatal("a progress edit went ahead of queued finals")
	}
	if got := <-order; got != "A" {
		t.Fatalf("first final served: %s, want A", got)
	}
	waitTimer(t, clk, start.Add(2*time.Second))
	select {
	case got := <-order:
		t.Fatalf("final %s served without a token", got)
	default:
	}
	clk.Advance(4 * time.Second) // tokens for B and more
	if got := <-order; got != "B" {
		t.Fatalf("second final served: %s, want B", got)
	}
	waitQueued(t, u, 0)
	// The bucket refilled to its burst (2) and B took one: what is left is
	// the finals' reserve.
	if u.tryProgress() {
		t.Fatal("progress took the finals' reserve")
	}

	// A final whose context ends leaves the queue; the next one is served.
	u2 := newUpdateBudget(60, 1, clk)
	if err := u2.wait(ctx); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { gone <- u2.wait(cctx) }()
	waitQueued(t, u2, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled final = %v", err)
	}
	waitQueued(t, u2, 0)
	clk.Advance(time.Second)
	if err := u2.wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// A 429's Retry-After pauses every waiter, and the bucket refills from
// empty afterwards.
func TestUpdateBudgetPause(t *testing.T) {
	clk := newManualClock()
	u := newUpdateBudget(60, 10, clk)
	start := clk.Now()
	u.pause(3 * time.Second)
	if u.tryProgress() {
		t.Fatal("progress during a pause")
	}
	ctx := context.Background()
	done := make(chan string, 2)
	for _, name := range []string{"A", "B"} {
		go func() {
			if u.wait(ctx) == nil {
				done <- name
			}
		}()
		waitQueued(t, u, map[string]int{"A": 1, "B": 2}[name])
	}
	// The head sleeps until the pause ends plus one token's refill (1s).
	waitTimer(t, clk, start.Add(4*time.Second))
	clk.Advance(3 * time.Second)
	select {
	case n := <-done:
		t.Fatalf("final %s went during the pause", n)
	default:
	}
	// A second 429 extends the pause for everyone.
	u.pause(2 * time.Second)
	waitTimer(t, clk, start.Add(6*time.Second))
	clk.Advance(3 * time.Second) // t+6s: one token
	if got := <-done; got != "A" {
		t.Fatalf("first after the pause: %s", got)
	}
	waitTimer(t, clk, start.Add(7*time.Second))
	clk.Advance(time.Second)
	if got := <-done; got != "B" {
		t.Fatalf("second after the pause: %s", got)
	}
	if u.tryProgress() {
		t.Fatal("progress right after the pause: the bucket should refill from empty")
	}
}

// A nil budget (negative UpdatesPerMinute) never waits nor skips.
func TestUpdateBudgetUnlimited(t *testing.T) {
	u := newUpdateBudget(-1, 20, clock.Real{})
	if u != nil {
		t.Fatal("want nil for a negative rate")
	}
	for range 1000 {
		if !u.tryProgress() || u.wait(context.Background()) != nil {
			t.Fatal("unlimited budget refused")
		}
	}
	u.pause(time.Hour)
}

// Posts in a channel go in a burst, then one per interval; channels are
// independent.
func TestPostPacer(t *testing.T) {
	clk := newManualClock()
	p := newPostPacer(time.Second, 3, clk)
	ctx := context.Background()
	start := clk.Now()
	for i := range 3 {
		if err := p.wait(ctx, "C1"); err != nil {
			t.Fatalf("post %d of the burst: %v", i, err)
		}
	}
	done := make(chan int, 2)
	for i := range 2 {
		go func() {
			if p.wait(ctx, "C1") == nil {
				done <- i
			}
		}()
		waitTimer(t, clk, start.Add(time.Duration(i+1)*time.Second))
	}
	if err := p.wait(ctx, "C2"); err != nil {
		t.Fatal("another channel waited")
	}
	clk.Advance(999 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("a post went before its slot")
	default:
	}
	clk.Advance(time.Millisecond)
	<-done
	clk.Advance(time.Second)
	<-done

	// A cancelled wait gives its slot back.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- p.wait(cctx, "C1") }()
	waitTimer(t, clk, clk.Now().Add(time.Second))
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait = %v", err)
	}
	clk.Advance(time.Second)
	if err := p.wait(ctx, "C1"); err != nil {
		t.Fatal(err)
	}
	// A free slot does not wait, so an ended context does not refuse it.
	if err := p.wait(cctx, "C3"); err != nil {
		t.Errorf("free slot with an ended context = %v, want nil", err)
	}
	if newPostPacer(-1, 3, clk) != nil {
		t.Error("a negative interval should disable pacing")
	}
}

// One user's repeated refusals: the first of a kind in the thread, five
// more privately, then dropped; other kinds, users and channels, and the
// next window, start afresh.
func TestRefusalGate(t *testing.T) {
	clk := newManualClock()
	g := newRefusalGate(30*time.Second, clk)
	var got []refusalRoute
	for range 8 {
		got = append(got, g.route("U1", "C1", "limit"))
	}
	want := []refusalRoute{refuseInThread, refuseEphemeral, refuseEphemeral, refuseEphemeral, refuseEphemeral, refuseLast, refuseDropped, refuseDropped}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("routes %v, want %v", got, want)
		}
	}
	for _, c := range []struct{ user, channel, kind string }{{"U1", "C1", "busy"}, {"U2", "C1", "limit"}, {"U1", "C2", "limit"}} {
		if r := g.route(c.user, c.channel, c.kind); r != refuseInThread {
			t.Errorf("%v: %s, want thread", c, r)
		}
	}
	clk.Advance(30 * time.Second)
	if r := g.route("U1", "C1", "limit"); r != refuseInThread {
		t.Errorf("next window: %s, want thread", r)
	}
	off := newRefusalGate(-1, clk)
	for range 3 {
		if r := off.route("U1", "C1", "limit"); r != refuseInThread {
			t.Fatalf("disabled gate: %s", r)
		}
	}
}

// A share of the workspace's chat.update budget: rate and burst divided by
// the live replicas (tokens beyond the new burst dropped, the reserve half
// the new burst), and back to the full budget when the others leave.
// Finals waiting while the share changes keep their order and are served
// at the new rate.
func TestUpdateBudgetShare(t *testing.T) {
	clk := newManualClock()
	u := newUpdateBudget(60, 20, clk)
	if pm, b := u.current(); pm != 60 || b != 20 {
		t.Fatalf("full budget = %v/min, burst %d; want 60, 20", pm, b)
	}
	u.setShare(3)
	if pm, b := u.current(); pm != 20 || b != 6 {
		t.Fatalf("a third = %v/min, burst %d; want 20, 6", pm, b)
	}
	// 20 tokens clamped to 6, of which 3 are the finals' reserve.
	for i := range 3 {
		if !u.tryProgress() {
			t.Fatalf("progress edit %d refused", i)
		}
	}
	if u.tryProgress() {
		t.Fatal("a progress edit took the reserve: tokens were not clamped to the new burst")
	}
	ctx := context.Background()
	for range 3 {
		if err := u.wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Empty: the next final waits one token at 20/min, 3s.
	start := clk.Now()
	order := make(chan string, 3)
	final := func(name string) {
		if u.wait(ctx) == nil {
			order <- name
		}
	}
	go final("A")
	waitQueued(t, u, 1)
	waitTimer(t, clk, start.Add(3*time.Second))
	go final("B")
	waitQueued(t, u, 2)
	clk.Advance(time.Second) // 1/3 of a token earned at the old rate
	// The others left: 60/min again. A needs 2/3 of a token, 0.67s.
	u.setShare(1)
	if pm, b := u.current(); pm != 60 || b != 20 {
		t.Fatalf("back to the full budget = %v/min, burst %d; want 60, 20", pm, b)
	}
	waitRearmed(t, clk, start.Add(1600*time.Millisecond), start.Add(1700*time.Millisecond))
	clk.Advance(700 * time.Millisecond)
	if got := <-order; got != "A" {
		t.Fatalf("first final served: %s, want A", got)
	}
	select {
	case got := <-order:
		t.Fatalf("final %s served without a token", got)
	default:
	}
	// The share shrinks again while B waits: B's wait grows with it (one
	// token at 30/min: 2s, minus the 0.03 token left over).
	waitQueued(t, u, 1)
	u.setShare(2)
	if pm, b := u.current(); pm != 30 || b != 10 {
		t.Fatalf("a half = %v/min, burst %d; want 30, 10", pm, b)
	}
	waitRearmed(t, clk, start.Add(3600*time.Millisecond), start.Add(3700*time.Millisecond))
	clk.Advance(time.Second)
	select {
	case got := <-order:
		t.Fatalf("final %s served at the old rate", got)
	default:
	}
	clk.Advance(time.Second)
	if got := <-order; got != "B" {
		t.Fatalf("second final served: %s, want B", got)
	}
	waitQueued(t, u, 0)

	// Shares of a small burst keep at least one token; an unlimited
	// budget has no share.
	v := newUpdateBudget(50, 2, clk)
	v.setShare(5)
	if pm, b := v.current(); pm != 10 || b != 1 {
		t.Errorf("a fifth of 50/min, burst 2 = %v/min, burst %d; want 10, 1", pm, b)
	}
	var off *updateBudget
	off.setShare(3)
	if pm, _ := off.current(); pm != -1 {
		t.Errorf("unlimited budget's rate = %v, want -1", pm)
	}
}

// A share of the channel pace: one post per interval × live, bursts of
// burst/live (at least 1); back to the full pace when the others leave.
func TestPostPacerShare(t *testing.T) {
	clk := newManualClock()
	p := newPostPacer(time.Second, 3, clk)
	ctx := context.Background()
	if err := p.wait(ctx, "C1"); err != nil { // C1: 2 of 3 tokens left
		t.Fatal(err)
	}
	p.setShare(3)
	if d, b := p.current(); d != 3*time.Second || b != 1 {
		t.Fatalf("a third = %v, burst %d; want 3s, 1", d, b)
	}
	// C1 clamped to the new burst: one post now, the next 3s later.
	start := clk.Now()
	if err := p.wait(ctx, "C1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		if p.wait(ctx, "C1") == nil {
			close(done)
		}
	}()
	waitTimer(t, clk, start.Add(3*time.Second))
	clk.Advance(2 * time.Second)
	select {
	case <-done:
		t.Fatal("a post went before its slot at the shared pace")
	default:
	}
	clk.Advance(time.Second)
	<-done
	// A new channel gets the shared burst too.
	if err := p.wait(ctx, "C2"); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan struct{})
	go func() {
		if p.wait(ctx, "C2") == nil {
			close(blocked)
		}
	}()
	waitTimer(t, clk, clk.Now().Add(3*time.Second))
	clk.Advance(3 * time.Second)
	<-blocked
	p.setShare(1)
	if d, b := p.current(); d != time.Second || b != 3 {
		t.Fatalf("full pace = %v, burst %d; want 1s, 3", d, b)
	}
	clk.Advance(3 * time.Second) // C3 idle; C1, C2 refill to 3
	for i := range 3 {
		if err := p.wait(ctx, "C1"); err != nil {
			t.Fatalf("post %d of the full burst: %v", i, err)
		}
	}
	// More replicas than the burst: still one post at a time.
	p.setShare(10)
	if d, b := p.current(); d != 10*time.Second || b != 1 {
		t.Errorf("a tenth = %v, burst %d; want 10s, 1", d, b)
	}
	var off *postPacer
	off.setShare(2)
	if d, _ := off.current(); d != -1 {
		t.Errorf("unpaced pacer's interval = %v, want -1", d)
	}
}

// The per-channel edit spacing grows with the live replicas.
func TestChannelLimiterShare(t *testing.T) {
	clk := newManualClock()
	l := newChannelLimiter(20*time.Millisecond, clk)
	l.setShare(3)
	if d := l.every(); d != 60*time.Millisecond {
		t.Fatalf("a third: every %v, want 60ms", d)
	}
	ctx := context.Background()
	start := clk.Now()
	if err := l.wait(ctx, "C1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.wait(ctx, "C1") }()
	waitTimer(t, clk, start.Add(60*time.Millisecond))
	if err := l.wait(ctx, "C2"); err != nil { // another channel does not wait
		t.Fatal(err)
	}
	clk.Advance(59 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("second edit in the channel before its slot")
	default:
	}
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A due slot is taken even with an ended context; a wait is not.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.wait(cctx, "C3"); err != nil {
		t.Errorf("due slot with an ended context = %v, want nil", err)
	}
	if err := l.wait(cctx, "C3"); !errors.Is(err, context.Canceled) {
		t.Errorf("waiting with an ended context = %v, want context.Canceled", err)
	}
	l.setShare(0)
	if d := l.every(); d != 20*time.Millisecond {
		t.Errorf("full: every %v, want 20ms", d)
	}
}

// TestUpdateBudgetGiveBack: a token given back can be taken again, and
// giving back never lifts the bucket above its burst.
func TestUpdateBudgetGiveBack(t *testing.T) {
	u := newUpdateBudget(20, 4, newManualClock()) // burst 4, reserve 2: two progress tokens
	if first, second, third := u.tryProgress(), u.tryProgress(), u.tryProgress(); !first || !second || third {
		t.Fatal("want exactly two progress tokens from a full bucket")
	}
	u.giveBack()
	if !u.tryProgress() {
		t.Fatal("the token given back is not available")
	}
	for range 10 {
		u.giveBack()
	}
	if _, burst := u.current(); u.tokens != float64(burst) {
		t.Errorf("tokens %v after giving back more than was taken, want the burst %d", u.tokens, burst)
	}
	var unlimited *updateBudget
	unlimited.giveBack() // a nil budget is unlimited
}
