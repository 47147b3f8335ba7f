package bot_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage/sqlstore"
)

// These tests cover the inbox: every envelope is stored before it is acked
// and handled from the store, so that no acked envelope is lost when a
// process dies before handling it, a redelivery is handled once, and a full
// handler queue only delays an envelope.

const testGrace = 500 * time.Millisecond

func withGrace(o *bot.Options) { o.InboxGrace = testGrace }

// startAckOnly runs a bot that stores and acks envelopes but handles none,
// as a process that dies right after each ack would.
func (h *harness) startAckOnly() *runningBot {
	h.t.Helper()
	a := h.start(withGrace)
	bot.StopHandling(a.Bot)
	return a
}

// envelope returns what the fake sent as envelope id.
func (h *harness) envelope(id string) slackfake.Envelope {
	h.t.Helper()
	for _, e := range h.fake.Envelopes() {
		if e.ID == id {
			return e
		}
	}
	h.t.Fatalf("no envelope %s", id)
	return slackfake.Envelope{}
}

// inboxKey is the inbox key of an envelope: its event id, or its envelope id.
func (h *harness) inboxKey(envelopeID string) string {
	var p struct {
		EventID string `json:"event_id"`
	}
	if json.Unmarshal(h.envelope(envelopeID).Payload, &p) == nil && p.EventID != "" {
		return "ev:" + p.EventID
	}
	return "env:" + envelopeID
}

func (h *harness) waitDone(ctx context.Context, key string) slackstate.InboxEntry {
	h.t.Helper()
	var e slackstate.InboxEntry
	h.waitFor(ctx, "inbox entry "+key+" done", func() bool {
		var err error
		e, err = h.records.InboxEntry(ctx, key)
		return err == nil && e.Done()
	})
	return e
}

func (h *harness) statusCount(channel, threadTS string) int {
	n := 0
	for _, m := range h.botMessages(channel, threadTS) {
		if isStatus(m) {
			n++
		}
	}
	return n
}

func (h *harness) acksOf(envelopeID string) int {
	n := 0
	for _, a := range h.fake.Acks() {
		if a.EnvelopeID == envelopeID {
			n++
		}
	}
	return n
}

// oneRun checks, after a moment for wrongly repeated work to show, that the
// thread has exactly one run (the message's), one status message and no
// refusal or help text.
func (h *harness) oneRun(ctx context.Context, channel, threadTS string) {
	h.t.Helper()
	time.Sleep(2 * testGrace)
	runs, err := h.store.ListRuns(ctx, research.RunFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(runs) != 1 {
		h.t.Errorf("%d runs, want 1", len(runs))
	}
	if want := bot.MessageRunID(h.fake.TeamID(), channel, threadTS); len(runs) > 0 && runs[0].ID != want {
		h.t.Errorf("run id = %s, want %s (derived from the message)", runs[0].ID, want)
	}
	if n := h.statusCount(channel, threadTS); n != 1 {
		h.t.Errorf("%d status messages, want 1", n)
	}
	for _, m := range h.botMessages(channel, threadTS) {
		if strings.Contains(m.Text, "still working") || strings.Contains(m.Text, "research runs in progress") {
			h.t.Errorf("a refusal was posted: %q", m.Text)
		}
	}
	for _, e := range h.fake.Ephemerals() {
		h.t.Errorf("an ephemeral was shown: %q", e.Text)
	}
}

// metric reads a counter or gauge without labels from a bot's /metrics.
func metric(t *testing.T, b *bot.Bot, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	b.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("metric %s not exposed", name)
	return 0
}

// A process stores and acks a mention, then dies before handling it (or
// in the middle, after storing the thread): the next process on the store
// handles it, once, as the thread's first question.
func TestAckedMentionSurvivesCrash(t *testing.T) {
	tests := []struct {
		name       string
		leftBehind func(t *testing.T, h *harness, sent slackfake.Sent) // what the dead process wrote besides the inbox entry
	}{
		{"before handling", func(*testing.T, *harness, slackfake.Sent) {}},
		{"after storing the thread", func(t *testing.T, h *harness, sent slackfake.Sent) {
			key := slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}
			if _, err := h.records.PutThread(testCtx(t), slackstate.Thread{Key: key, ThreadID: key.ThreadID(), Requester: "U1", CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			a := h.startAckOnly()
			ctx := testCtx(t)
			h.connected(ctx, 1)
			sent := h.mention(ctx, "U1", "C1", "survive a crash right after the ack", "")
			key := h.inboxKey(sent.EnvelopeID)
			e, err := h.records.InboxEntry(ctx, key)
			if err != nil || e.Done() || e.Owner != "bot-A" || e.Attempts != 1 || e.Type != "events_api" || len(e.Payload) == 0 {
				t.Fatalf("inbox entry after the ack = %+v, %v", e, err)
			}
			if err := a.stop(); err != nil {
				t.Fatal(err)
			}
			if runs, _ := h.store.ListRuns(ctx, research.RunFilter{}); len(runs) != 0 {
				t.Fatalf("the stopped process created %d runs", len(runs))
			}
			tc.leftBehind(t, h, sent)
			h.waitFor(ctx, "old connection gone", func() bool { return len(h.fake.Connections()) == 0 })

			b := h.start(withGrace) // the next process
			h.withButton(ctx, "C1", sent.TS, "dr_approve")
			r := h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
			if r.FollowUp {
				t.Error("the thread's first question was run as a follow-up")
			}
			e = h.waitDone(ctx, key)
			if e.Attempts != 2 || len(e.Payload) != 0 {
				t.Errorf("done entry = %+v, want 2 attempts and no payload", e)
			}
			h.oneRun(ctx, "C1", sent.TS)
			if n := metric(t, b.Bot, "deepresearch_bot_inbox_recovered_total"); n != 1 {
				t.Errorf("recovered = %v, want 1", n)
			}
			if n := h.acksOf(sent.EnvelopeID); n != 1 {
				t.Errorf("%d acks, want 1", n)
			}
		})
	}
}

// A click acked by a process that dies before handling it is applied by
// the next process: the decision is not lost either. Without a grace of its
// own the envelope's lease is the run lease (the harness's 2s), so the
// click is taken over as soon as a run would be, well before the 30s
// default lease of a run.
func TestAckedClickSurvivesCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit []func(*bot.Options)
	}{
		{"with a grace of its own", []func(*bot.Options){withGrace}},
		{"with the run lease", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			a := h.start(tc.edit...)
			ctx := testCtx(t)
			sent := h.mention(ctx, "U1", "C1", "approve me after a crash", "")
			approval, val := h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
			bot.StopHandling(a.Bot)
			click := h.click(ctx, "U1", "C1", approval, "dr_approve", val)
			if err := a.stop(); err != nil {
				t.Fatal(err)
			}
			if r := h.runOf(ctx, "C1", sent.TS); r.State != research.StateWaiting || r.Decision != nil {
				t.Fatalf("the stopped process handled the click: %+v", r)
			}
			h.start(tc.edit...)
			// (a lease of 30s, not the run's, runs this context out)
			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			h.waitReports(wctx, "C1", sent.TS, 1)
			h.waitState(ctx, "C1", sent.TS, research.StateDone)
			h.waitDone(ctx, h.inboxKey(click.EnvelopeID))
			h.oneRun(ctx, "C1", sent.TS)
		})
	}
}

// Slack redelivers an envelope that was stored and acked, to another
// replica, while the first still holds it: the redelivery is acked and
// ignored, and the envelope is handled once.
func TestRedeliveryAfterInboxWriteHandledOnce(t *testing.T) {
	h := newHarness(t)
	a := h.startAckOnly()
	ctx := testCtx(t)
	h.connected(ctx, 1)
	sent := h.mention(ctx, "U1", "C1", "delivered twice, handled once", "")
	b := h.start(withGrace) // a replica
	h.connected(ctx, 2)
	for range 2 { // round-robin: at least one goes to the replica
		if err := h.fake.Redeliver(ctx, sent.EnvelopeID, "timeout"); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFor(ctx, "redeliveries acked", func() bool { return h.acksOf(sent.EnvelopeID) == 3 })
	key := h.inboxKey(sent.EnvelopeID)
	if e, err := h.records.InboxEntry(ctx, key); err != nil || e.Owner != "bot-A" || e.Attempts != 1 {
		t.Fatalf("entry after redeliveries = %+v, %v; want held by bot-A, 1 attempt", e, err)
	}
	if dup := metric(t, a.Bot, "deepresearch_bot_duplicate_events_total") + metric(t, b.Bot, "deepresearch_bot_duplicate_events_total"); dup != 2 {
		t.Errorf("%v duplicates counted, want 2", dup)
	}
	// The first process dies; the replica takes the envelope over.
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	h.withButton(ctx, "C1", sent.TS, "dr_approve")
	h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	if e := h.waitDone(ctx, key); e.Attempts != 2 {
		t.Errorf("attempts = %d, want 2", e.Attempts)
	}
	h.oneRun(ctx, "C1", sent.TS)
}

// Handling a message again finds the run it created: after a crash between
// creating the run and marking the envelope done (its entry is taken over),
// and when the same message comes as a second event (another event id).
// Neither creates a run, posts a status message or refuses.
func TestMessageHandledAgainFindsItsRun(t *testing.T) {
	tests := []struct {
		name   string
		repeat func(t *testing.T, h *harness, env slackfake.Envelope)
	}{
		{"taken over after a crash", takenOverAfterCrash},
		{"second event of the message", sendSecondEvent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, ctx := started(t, withGrace)
			sent := h.mention(ctx, "U1", "C1", "one message, one run", "")
			h.waitApproval(ctx, "C1", sent.TS, "dr_approve")
			tc.repeat(t, h, h.envelope(sent.EnvelopeID))
			h.oneRun(ctx, "C1", sent.TS)
			if n := len(h.botMessages("C1", sent.TS)); n != 2 { // status, approval
				t.Errorf("%d bot messages in the thread, want 2", n)
			}
		})
	}
}

// takenOverAfterCrash leaves env in the inbox as a process that died
// while handling it would, and waits for recovery to handle it again.
func takenOverAfterCrash(t *testing.T, h *harness, env slackfake.Envelope) {
	t.Helper()
	past := time.Now().Add(-time.Minute)
	ok, err := h.records.PutInbox(testCtx(t), []slackstate.InboxEntry{{Key: "ev:crashed", Type: env.Type, EnvelopeID: "E-crashed",
		Payload: env.Payload, ReceivedAt: past, Owner: "dead", LeaseUntil: past.Add(testGrace)}})
	if err != nil || !ok[0] {
		t.Fatalf("put: %v %v", ok, err)
	}
	if e := h.waitDone(testCtx(t), "ev:crashed"); e.Attempts != 2 {
		t.Errorf("attempts = %d, want 2", e.Attempts)
	}
}

// sendSecondEvent sends env's event again under a new event id, as Slack
// does for a message that is both a mention and a message, and waits for
// it to be handled.
func sendSecondEvent(t *testing.T, h *harness, env slackfake.Envelope) {
	t.Helper()
	var p struct {
		Event map[string]any `json:"event"`
	}
	if err := json.Unmarshal(env.Payload, &p); err != nil {
		t.Fatal(err)
	}
	id, err := h.fake.SendEvent(testCtx(t), p.Event)
	if err != nil {
		t.Fatal(err)
	}
	h.waitDone(testCtx(t), h.inboxKey(id))
}

// An answer that starts no run (here the help text) is claimed once per
// message: a second event of the message is not answered again, but a
// handling taken over after a crash is, since the crash may have come
// between the claim and the post.
func TestAnswerRepeatedOnlyWhenHandledAgain(t *testing.T) {
	tests := []struct {
		name   string
		repeat func(t *testing.T, h *harness, env slackfake.Envelope)
		want   int // help replies in the thread
	}{
		{"second event of the message", sendSecondEvent, 1},
		{"taken over after a crash", takenOverAfterCrash, 2},
	}
	helps := func(h *harness, ts string) int {
		n := 0
		for _, m := range h.botMessages("C1", ts) {
			if strings.Contains(m.Text, "/research ask") {
				n++
			}
		}
		return n
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.start(withGrace, func(o *bot.Options) { o.RefusalWindow = -1 }) // every answer in the thread
			ctx := testCtx(t)
			sent := h.mention(ctx, "U1", "C1", "", "")
			h.waitDone(ctx, h.inboxKey(sent.EnvelopeID))
			if n := helps(h, sent.TS); n != 1 {
				t.Fatalf("%d help replies after the first handling, want 1", n)
			}
			tc.repeat(t, h, h.envelope(sent.EnvelopeID))
			if n := helps(h, sent.TS); n != tc.want {
				t.Errorf("%d help replies, want %d", n, tc.want)
			}
		})
	}
}

// blocking is an interaction handler for "block_" buttons that waits in
// each call until release is closed, counting the calls by action id.
type blocking struct {
	release chan struct{}
	entered chan string // each call's action id, as it starts
	mu      sync.Mutex
	calls   map[string]int
}

func newBlocking() *blocking {
	return &blocking{release: make(chan struct{}), entered: make(chan string, 16), calls: map[string]int{}}
}

func (b *blocking) handle(ctx context.Context, cb slack.InteractionCallback) error {
	id := cb.ActionCallback.BlockActions[0].ActionID
	b.mu.Lock()
	b.calls[id]++
	b.mu.Unlock()
	b.entered <- id
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return nil
}

func (b *blocking) ran(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[id]
}

// With the handler queue full, an envelope is still acked: it waits in the
// inbox and recovery hands it to a worker once there is room. A handler
// that runs longer than the grace keeps its entry (the lease is renewed).
func TestQueueFullEnvelopeWaitsInInbox(t *testing.T) {
	h := newHarness(t)
	blocker := newBlocking()
	a := h.start(withGrace, func(o *bot.Options) {
		o.Workers, o.QueueSize = 1, 1
		o.Interactions = map[string]bot.InteractionHandler{"block_": blocker.handle}
	})
	ctx := testCtx(t)
	h.connected(ctx, 1)
	h.click(ctx, "U1", "C1", slackfake.Message{}, "block_1", "x") // the one worker waits in it
	select {
	case <-blocker.entered:
	case <-ctx.Done():
		t.Fatal("the blocking handler never ran")
	}
	h.click(ctx, "U1", "C1", slackfake.Message{}, "block_2", "x") // fills the queue
	sent := h.mention(ctx, "U1", "C1", "wait for a free worker", "")
	// The ack comes before the hand-over, and the two envelopes may reach
	// the queue in either order: one of them waits in the inbox.
	h.waitFor(ctx, "an envelope deferred", func() bool {
		return metric(t, a.Bot, "deepresearch_bot_deferred_events_total") == 1
	})
	time.Sleep(3 * testGrace) // longer than the lease: the busy handler renews it
	if runs, _ := h.store.ListRuns(ctx, research.RunFilter{}); len(runs) != 0 {
		t.Fatalf("%d runs while every worker is busy", len(runs))
	}
	close(blocker.release)
	h.withButton(ctx, "C1", sent.TS, "dr_approve")
	h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	h.waitDone(ctx, h.inboxKey(sent.EnvelopeID))
	h.oneRun(ctx, "C1", sent.TS)
	for _, id := range []string{"block_1", "block_2"} {
		if n := blocker.ran(id); n != 1 {
			t.Errorf("handler of %s ran %d times, want once", id, n)
		}
	}
	if n := metric(t, a.Bot, "deepresearch_bot_dropped_events_total"); n != 0 {
		t.Errorf("dropped = %v", n)
	}
}

// failingInbox is a store whose inbox writes fail a number of times (the
// database is down).
type failingInbox struct {
	*sqlstore.Slack
	fails atomic.Int32
}

func (f *failingInbox) PutInbox(ctx context.Context, es []slackstate.InboxEntry) ([]bool, error) {
	if f.fails.Add(-1) >= 0 {
		return nil, errors.New("database is down")
	}
	return f.Slack.PutInbox(ctx, es)
}

// An envelope that cannot be stored is not acked: Slack delivers it again,
// and once it is stored it is acked and handled once.
func TestEnvelopeNotStoredIsNotAcked(t *testing.T) {
	h := newHarness(t, slackfake.WithRedelivery(300*time.Millisecond, 5))
	store := &failingInbox{Slack: h.records}
	store.fails.Store(2)
	b := h.startOnRecords(store, withGrace)
	ctx := testCtx(t)
	h.connected(ctx, 1)
	sent, err := h.fake.SendAppMention(ctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "store me before the ack"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := h.fake.WaitAck(sent.EnvelopeID, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Attempt != 2 {
		t.Errorf("first ack answers delivery attempt %d, want 2 (the first two were not stored)", ack.Attempt)
	}
	h.withButton(ctx, "C1", sent.TS, "dr_approve")
	h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
	h.oneRun(ctx, "C1", sent.TS)
	if n := metric(t, b.Bot, "deepresearch_bot_inbox_errors_total"); n != 2 {
		t.Errorf("inbox errors = %v, want 2", n)
	}
}

// lateRenewals is a store whose inbox lease renewals are lost (they come
// too late), so the leases of this process's entries run out while it
// handles them.
type lateRenewals struct{ *sqlstore.Slack }

func (lateRenewals) ExtendInbox(context.Context, string, string, time.Time, time.Duration) error {
	return nil
}

// An inbox entry this process holds is not taken over by its own recovery
// when its lease runs out: not while it waits in the queue behind a busy
// worker (recovery renews its lease), nor while its handler runs with its
// renewals late (recovery skips an entry the process holds). The handler
// runs once, and the envelope is not given up as poison. (Before, recovery
// claimed the expired entry again and again and queued it each time: a
// queued click was dropped after five claims, and a running one ran twice.)
func TestEnvelopeNotTakenOverByItsOwnProcess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		late     bool // lose the lease renewals
		workers  int
		clicks   []string
		wantRuns map[string]int
	}{
		{"queued behind a busy worker", false, 1, []string{"block_1", "block_2"}, map[string]int{"block_1": 1, "block_2": 1}},
		{"handled with late renewals", true, 2, []string{"block_1"}, map[string]int{"block_1": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			blocker := newBlocking()
			var store slackstate.Store = h.records
			if tc.late {
				store = lateRenewals{h.records}
			}
			a := h.startOnRecords(store, withGrace, func(o *bot.Options) {
				o.Workers, o.QueueSize = tc.workers, 8 // the queue has room: recovery may claim
				o.Interactions = map[string]bot.InteractionHandler{"block_": blocker.handle}
			})
			ctx := testCtx(t)
			h.connected(ctx, 1)
			var keys []string
			for i, id := range tc.clicks {
				c := h.click(ctx, "U1", "C1", slackfake.Message{}, id, "x")
				keys = append(keys, h.inboxKey(c.EnvelopeID))
				if i == 0 { // the first worker waits in it
					select {
					case <-blocker.entered:
					case <-ctx.Done():
						t.Fatal("the blocking handler never ran")
					}
				}
			}
			// Many leases long, with recovery every 100ms: more than the
			// takeovers after which an envelope is given up as poison.
			time.Sleep(8 * testGrace)
			close(blocker.release)
			for _, k := range keys {
				// Queued entries keep their lease: none was claimed, so a
				// later takeover (after a crash) is not near the poison cap.
				if e := h.waitDone(ctx, k); !tc.late && e.Attempts != 1 {
					t.Errorf("entry %s: %d attempts, want 1", k, e.Attempts)
				}
			}
			time.Sleep(2 * testGrace) // a second copy, if queued, runs now
			for id, want := range tc.wantRuns {
				if got := blocker.ran(id); got != want {
					t.Errorf("handler of %s ran %d times, want %d", id, got, want)
				}
			}
			if n := metric(t, a.Bot, "deepresearch_bot_dropped_events_total"); n != 0 {
				t.Errorf("dropped = %v", n)
			}
			if n := metric(t, a.Bot, "deepresearch_bot_inbox_recovered_total"); n != 0 {
				t.Errorf("recovered = %v: the process took over an envelope it held", n)
			}
		})
	}
}
