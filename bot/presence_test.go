package bot_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage/sqlstore"
)

// registryStore is a shared sqlstore.Slack whose instance registry can
// fail (a database outage) and whose LeaveInstance can be skipped (a
// process that dies instead of stopping cleanly).
type registryStore struct {
	*sqlstore.Slack
	failing atomic.Bool
	noLeave atomic.Bool
}

var errRegistryDown = errors.New("registry down")

func (s *registryStore) TouchInstance(ctx context.Context, id string, now time.Time) error {
	if s.failing.Load() {
		return errRegistryDown
	}
	return s.Slack.TouchInstance(ctx, id, now)
}

func (s *registryStore) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	if s.failing.Load() {
		return 0, errRegistryDown
	}
	return s.Slack.LiveInstances(ctx, since)
}

func (s *registryStore) LeaveInstance(ctx context.Context, id string) error {
	if s.noLeave.Load() {
		return nil
	}
	return s.Slack.LeaveInstance(ctx, id)
}

// Replicas on one store split the workspace's Slack budgets: each counts
// the live instances in the store's registry and keeps 1/N of the
// chat.update rate and burst, N times the chat.postMessage and edit
// intervals and 1/N of the post burst. One that stops cleanly gives its
// share back at once; one that dies, once the registry window has passed;
// a registry outage keeps the last count.
func TestReplicasSplitSlackBudgets(t *testing.T) {
	h := newHarness(t)
	store := &registryStore{Slack: h.records}
	const every = 100 * time.Millisecond
	budget := func(o *bot.Options) {
		o.PresenceEvery = every
		o.UpdatesPerMinute, o.UpdateBurst = 60, 20
		o.PostInterval, o.PostBurst = time.Second, 3
		o.ProgressInterval = 20 * time.Millisecond
	}
	full := bot.Shares{Live: 1, UpdatesPerMinute: 60, UpdateBurst: 20, PostInterval: time.Second, PostBurst: 3, EditInterval: 20 * time.Millisecond}
	half := bot.Shares{Live: 2, UpdatesPerMinute: 30, UpdateBurst: 10, PostInterval: 2 * time.Second, PostBurst: 1, EditInterval: 40 * time.Millisecond}
	third := bot.Shares{Live: 3, UpdatesPerMinute: 20, UpdateBurst: 6, PostInterval: 3 * time.Second, PostBurst: 1, EditInterval: 60 * time.Millisecond}
	ctx := testCtx(t)
	waitShares := func(what string, want bot.Shares, bs ...*runningBot) {
		t.Helper()
		h.waitFor(ctx, what, func() bool {
			for _, b := range bs {
				if bot.SharesOf(b.Bot) != want {
					return false
				}
			}
			return true
		})
	}

	registered := func(want int) {
		t.Helper()
		if n, err := store.LiveInstances(ctx, time.Now().Add(-time.Minute)); err != nil || n != want {
			t.Fatalf("registry: %d instances seen in the last minute, %v; want %d", n, err, want)
		}
	}

	a := h.startOnRecords(store, budget)
	h.waitFor(ctx, "bot A registered", func() bool { n, _ := store.LiveInstances(ctx, time.Now().Add(-time.Minute)); return n == 1 })
	if got := bot.SharesOf(a.Bot); got != full {
		t.Fatalf("alone: %+v, want the full budget %+v", got, full)
	}
	// B counts A before it handles anything; A sees B on its next round.
	b := h.startOnRecords(store, budget)
	waitShares("both replicas at half the budget", half, a, b)

	// A registry outage keeps the last count, however long it lasts.
	store.failing.Store(true)
	time.Sleep(presenceWindow * every * 2)
	for _, r := range []*runningBot{a, b} {
		if got := bot.SharesOf(r.Bot); got != half {
			t.Fatalf("during a registry outage: %+v, want the last count's %+v", got, half)
		}
	}
	store.failing.Store(false)
	// After the outage every announcement has expired: the first round
	// that works counts one replica, which is not believed until the
	// others have had a window to announce themselves again.
	for end := time.Now().Add(2 * presenceWindow * every); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		for _, r := range []*runningBot{a, b} {
			if got := bot.SharesOf(r.Bot); got != half {
				t.Fatalf("after a registry outage: %+v, want %+v", got, half)
			}
		}
	}

	// A third replica takes a third; it stops cleanly and the two others
	// take its share back at once.
	c := h.startOnRecords(store, budget)
	waitShares("three replicas at a third", third, a, b, c)
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}
	registered(2) // C left the registry as it stopped
	waitShares("two replicas at half after one left", half, a, b)

	// B dies without leaving the registry: A takes the whole budget once
	// B's last announcement is older than the window.
	store.noLeave.Store(true)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	store.noLeave.Store(false)
	registered(2) // B is still in the registry
	waitShares("A alone with the full budget after B died", full, a)

	// B's replacement restarts; when it stops cleanly A is back to the
	// full budget.
	d := h.startOnRecords(store, budget)
	waitShares("two replicas at half", half, a, d)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	waitShares("A alone with the full budget after D left", full, a)
	registered(2) // A, and B until its row is pruned
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	registered(1) // B
}

// presenceWindow mirrors the bot's: an instance is counted for three
// rounds after its last announcement.
const presenceWindow = 3

// TestBusyReplicaGetsMoreOfTheBudget: the budgets whose calls follow the
// runs a replica holds (chat.update among them) are split by held runs
// plus one each, so the replica working on most runs gets most of them,
// and together the replicas stay within the workspace's budget; with no
// runs held the split is even.
func TestBusyReplicaGetsMoreOfTheBudget(t *testing.T) {
	h := newHarness(t)
	store := &registryStore{Slack: h.records}
	budget := func(o *bot.Options) {
		o.PresenceEvery = 50 * time.Millisecond
		o.UpdatesPerMinute, o.UpdateBurst = 60, 20
	}
	ctx := testCtx(t)
	a := h.startOnRecords(store, budget) // instance "bot-A"
	b := h.startOnRecords(store, budget)
	h.waitFor(ctx, "an even split", func() bool {
		return bot.SharesOf(a.Bot).UpdatesPerMinute == 30 && bot.SharesOf(b.Bot).UpdatesPerMinute == 30
	})
	// A works on eight runs (held under a long lease), B on none. They are
	// runs of a kind these bots do not take over (a terminal's), so that
	// neither bot's recovery picks one up between its creation and its
	// acquisition here; held runs of every kind count toward the split.
	for i := range 8 {
		id := fmt.Sprintf("ask:held%d", i)
		k := slackstate.ThreadKey{Team: "T1", Channel: "C1", ThreadTS: fmt.Sprintf("%d.0", 100+i)}
		if err := h.store.CreateRun(ctx, research.Run{ID: id, ThreadID: k.ThreadID(), Requester: fmt.Sprintf("U%d", i),
			Question: "q", CreatedAt: time.Now(), UpdatedAt: time.Now()}, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := h.store.AcquireRun(ctx, id, "bot-A", time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	// A: 0.95 × 9/10 of 60 a minute; B: 0.95 × 1/10.
	h.waitFor(ctx, "a split by held runs", func() bool {
		sa, sb := bot.SharesOf(a.Bot), bot.SharesOf(b.Bot)
		return math.Abs(sa.UpdatesPerMinute-51.3) < 0.01 && math.Abs(sb.UpdatesPerMinute-5.7) < 0.01
	})
	sa, sb := bot.SharesOf(a.Bot), bot.SharesOf(b.Bot)
	if sum := sa.UpdatesPerMinute + sb.UpdatesPerMinute; sum > 60 || sa.UpdateBurst+sb.UpdateBurst > 20 {
		t.Errorf("together %.1f a minute with bursts %d+%d; the workspace allows 60 and 20", sum, sa.UpdateBurst, sb.UpdateBurst)
	}
	if sa.PostInterval != sb.PostInterval {
		t.Errorf("per-channel pacing %s and %s; it stays split evenly", sa.PostInterval, sb.PostInterval)
	}
}

// The workspace search's calls a minute (assistant.search.context's limit
// is the workspace's) are split among the live replicas with the bot's own
// budgets, by the runs each holds.
func TestReplicasShareTheWorkspaceSearchBudget(t *testing.T) {
	h := newHarness(t)
	store := &registryStore{Slack: h.records}
	var ws []*bot.WorkspaceSearch
	shared := func(o *bot.Options) {
		o.PresenceEvery = 50 * time.Millisecond
		w, err := bot.NewWorkspaceSearch(bot.WorkspaceSearchOptions{Client: bot.NewClient(bot.ClientOptions{BotToken: h.fake.BotToken(), APIURL: h.fake.APIURL()})})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		o.SharedBudgets = []bot.SharedBudget{w}
	}
	ctx := testCtx(t)
	h.startOnRecords(store, shared)
	if perMinute, burst := bot.WorkspaceSearchRate(ws[0]); perMinute != 10 || burst != 10 {
		t.Fatalf("one replica alone: %.1f a minute, burst %d; want the workspace's 10 and 10", perMinute, burst)
	}
	h.startOnRecords(store, shared)
	h.waitFor(ctx, "the workspace search split between two replicas", func() bool {
		a, _ := bot.WorkspaceSearchRate(ws[0])
		b, _ := bot.WorkspaceSearchRate(ws[1])
		return a == 5 && b == 5
	})
	ra, ba := bot.WorkspaceSearchRate(ws[0])
	rb, bb := bot.WorkspaceSearchRate(ws[1])
	if ra+rb > 10 || ba+bb > 10 {
		t.Errorf("together %.1f a minute with bursts %d+%d; the workspace allows 10", ra+rb, ba, bb)
	}
}
