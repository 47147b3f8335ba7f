package bot_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/sqlitetest"
	"deepresearch/storage/sqlstore"
)

// harness is a fake Slack workspace, a shared database (the run store and
// the bot's own records) and a scripted researcher; start runs a real bot
// (slack-go's Socket Mode client) on them.
type harness struct {
	t       *testing.T
	fake    *slackfake.Server
	store   *sqlstore.Runs
	records *sqlstore.Slack
	res     *fakeResearcher
	n       int
}

// stores returns the run store and the Slack store of a fresh SQLite
// database.
func stores(t testing.TB) (*sqlstore.Runs, *sqlstore.Slack) {
	db := sqlitetest.Open(t)
	return sqlite.NewRuns(db), sqlite.NewSlack(db)
}

func newHarness(t *testing.T, opts ...slackfake.Option) *harness {
	t.Helper()
	// The tests of the edited status message run in a workspace without
	// streaming; streaming tests pass slackfake.WithoutStreaming("").
	fake := slackfake.New(append([]slackfake.Option{slackfake.WithPingInterval(200 * time.Millisecond), slackfake.WithoutStreaming("unknown_method")}, opts...)...)
	t.Cleanup(fake.Close)
	store, records := stores(t)
	return &harness{t: t, fake: fake, store: store, records: records, res: newFakeResearcher()}
}

type runningBot struct {
	*bot.Bot
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// stop shuts the bot down (gracefully) and returns Run's error.
func (r *runningBot) stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(20 * time.Second):
			r.err = errors.New("bot did not stop within 20s")
		}
	})
	return r.err
}

// testWriter sends logs to t.Log until the test ends.
type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && testing.Verbose() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (h *harness) options() bot.Options {
	return bot.Options{
		BotToken:         h.fake.BotToken(),
		AppToken:         h.fake.AppToken(),
		APIURL:           h.fake.APIURL(),
		Lease:            2 * time.Second,
		HeartbeatEvery:   50 * time.Millisecond,
		RecoverEvery:     100 * time.Millisecond,
		ProgressInterval: 20 * time.Millisecond,
		ShutdownTimeout:  5 * time.Second,
		RunOptions:       research.RunOptions{ApproveDraft: true},
	}
}

// start runs a bot instance; edit adjusts its options.
func (h *harness) start(edit ...func(*bot.Options)) *runningBot {
	h.t.Helper()
	return h.startWith(h.res, edit...)
}

// startWith runs a bot with another researcher than the harness's own.
func (h *harness) startWith(res bot.Researcher, edit ...func(*bot.Options)) *runningBot {
	h.t.Helper()
	return h.run(res, h.store, edit...)
}

// startOnRecords runs a bot instance on the harness's run store and
// records instead of its Slack store.
func (h *harness) startOnRecords(records slackstate.Store, edit ...func(*bot.Options)) *runningBot {
	h.t.Helper()
	return h.runOn(h.res, h.store, records, edit...)
}

// startOn runs a bot instance on store instead of the harness's store.
func (h *harness) startOn(store research.Store, edit ...func(*bot.Options)) *runningBot {
	h.t.Helper()
	return h.run(h.res, store, edit...)
}

// run runs a bot instance on res and store (with the harness's Slack
// store) until the test ends.
func (h *harness) run(res bot.Researcher, store research.Store, edit ...func(*bot.Options)) *runningBot {
	h.t.Helper()
	return h.runOn(res, store, h.records, edit...)
}

// runOn runs a bot instance on res, store and records until the test ends.
func (h *harness) runOn(res bot.Researcher, store research.Store, records slackstate.Store, edit ...func(*bot.Options)) *runningBot {
	h.t.Helper()
	h.n++
	o := h.options()
	o.InstanceID = "bot-" + string(rune('A'+h.n-1))
	w := &testWriter{t: h.t}
	o.Logger = slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})).With("test_instance", o.InstanceID)
	for _, e := range edit {
		e(&o)
	}
	b, err := bot.New(res, store, records, o)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningBot{Bot: b, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- b.Run(ctx) }()
	h.t.Cleanup(func() {
		if err := r.stop(); err != nil {
			h.t.Errorf("bot stop: %v", err)
		}
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return r
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls until cond holds.
func (h *harness) waitFor(ctx context.Context, what string, cond func() bool) {
	h.t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			h.t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// botMessages returns the bot's messages in a thread.
func (h *harness) botMessages(channel, threadTS string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range h.fake.Thread(channel, threadTS) {
		if m.IsBot() {
			out = append(out, m)
		}
	}
	return out
}

// withButton waits for a bot message in the thread, other than those with
// the ts in not, that has a button with actionID, and returns it with the
// button's value.
func (h *harness) withButton(ctx context.Context, channel, threadTS, actionID string, not ...string) (slackfake.Message, string) {
	h.t.Helper()
	var msg slackfake.Message
	var val string
	h.waitFor(ctx, "a message with "+actionID, func() bool {
		for _, m := range h.botMessages(channel, threadTS) {
			if v := m.ButtonValue(actionID); v != "" && !slices.Contains(not, m.TS) {
				msg, val = m, v
				return true
			}
		}
		return false
	})
	return msg, val
}

// statusMessage returns the bot's status message of the thread (the first
// bot message whose text or edits carry the status).
func (h *harness) statusMessage(channel, threadTS string, n int) (slackfake.Message, bool) {
	seen := 0
	for _, m := range h.botMessages(channel, threadTS) {
		if isStatus(m) {
			seen++
			if seen == n {
				return m, true
			}
		}
	}
	return slackfake.Message{}, false
}

func isStatus(m slackfake.Message) bool {
	if strings.Contains(string(m.Blocks), `"dr_status"`) {
		return true
	}
	for _, e := range m.Edits {
		if strings.Contains(string(e.Blocks), `"dr_status"`) {
			return true
		}
	}
	return strings.Contains(string(m.Blocks), "sources read")
}

func (h *harness) files(channel, threadTS string) []slackfake.File {
	var out []slackfake.File
	for _, f := range h.fake.Files() {
		if f.Completed && len(f.Channels) > 0 && f.Channels[0] == channel && f.ThreadTS == threadTS {
			out = append(out, f)
		}
	}
	return out
}

func (h *harness) runOf(ctx context.Context, channel, threadTS string) research.Run {
	h.t.Helper()
	key := slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: channel, ThreadTS: threadTS}
	r, err := h.store.LatestRun(ctx, key.ThreadID())
	if err != nil {
		h.t.Fatalf("latest run of %v: %v", key, err)
	}
	return r
}

// placeOf returns the place of run id in Slack (its status message,
// whether it is a stream); the zero place when it has none.
func (h *harness) placeOf(ctx context.Context, id string) slackstate.Place {
	h.t.Helper()
	p, err := h.records.Place(ctx, id)
	if err != nil && !errors.Is(err, slackstate.ErrNotFound) {
		h.t.Fatalf("place of %s: %v", id, err)
	}
	return p
}

func (h *harness) waitState(ctx context.Context, channel, threadTS string, st research.RunState) research.Run {
	h.t.Helper()
	key := slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: channel, ThreadTS: threadTS}
	var r research.Run
	h.waitFor(ctx, "run state "+string(st), func() bool {
		var err error
		r, err = h.store.LatestRun(ctx, key.ThreadID())
		return err == nil && r.State == st
	})
	return r
}

func (h *harness) noPings() {
	h.t.Helper()
	if p := h.fake.Pings(); len(p) > 0 {
		for _, x := range p {
			h.t.Errorf("bot output pings people: %s %s: %.300s", x.Where, x.TS, x.Content)
		}
	}
}

func (h *harness) mention(ctx context.Context, user, channel, text, threadTS string) slackfake.Sent {
	h.t.Helper()
	return h.acked(h.fake.SendAppMention(ctx, slackfake.AppMention{User: user, Channel: channel, Text: text, ThreadTS: threadTS}))
}

func (h *harness) click(ctx context.Context, user, channel string, m slackfake.Message, actionID, value string) slackfake.Sent {
	h.t.Helper()
	return h.acked(h.fake.SendBlockAction(ctx, slackfake.BlockAction{User: user, Channel: channel, MessageTS: m.TS, ActionID: actionID, Value: value}))
}

// acked fails the test unless the envelope was sent and the bot acked it.
func (h *harness) acked(sent slackfake.Sent, err error) slackfake.Sent {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.fake.WaitAck(sent.EnvelopeID, 5*time.Second); err != nil {
		h.t.Fatal(err)
	}
	return sent
}

func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}

var _ = readAll

// waitApproval waits for a bot message in the thread with a button
// actionID (other than those with the ts in not) and for the run to wait
// on it; it returns the message and the button's value.
func (h *harness) waitApproval(ctx context.Context, channel, threadTS, actionID string, not ...string) (slackfake.Message, string) {
	h.t.Helper()
	m, val := h.withButton(ctx, channel, threadTS, actionID, not...)
	h.waitState(ctx, channel, threadTS, research.StateWaiting)
	return m, val
}

// waitReports waits until the thread has n report files.
func (h *harness) waitReports(ctx context.Context, channel, threadTS string, n int) {
	h.t.Helper()
	h.waitFor(ctx, fmt.Sprintf("%d report files", n), func() bool { return len(h.files(channel, threadTS)) == n })
}

// approveAndWait approves by clicking the button of m, then waits for the
// report and the run done.
func (h *harness) approveAndWait(ctx context.Context, user, channel, threadTS string, m slackfake.Message, val string) research.Run {
	h.t.Helper()
	h.click(ctx, user, channel, m, "dr_approve", val)
	h.waitReports(ctx, channel, threadTS, 1)
	return h.waitState(ctx, channel, threadTS, research.StateDone)
}

// waitBotText waits for a bot message in the thread whose text has s.
func (h *harness) waitBotText(ctx context.Context, channel, threadTS, s string) {
	h.t.Helper()
	h.waitFor(ctx, "a reply with "+s, func() bool {
		for _, m := range h.botMessages(channel, threadTS) {
			if strings.Contains(m.Text, s) {
				return true
			}
		}
		return false
	})
}

// message sends a plain message event.
func (h *harness) message(ctx context.Context, ev slackfake.MessageEvent) slackfake.Sent {
	h.t.Helper()
	sent, err := h.fake.SendMessage(ctx, ev)
	if err != nil {
		h.t.Fatal(err)
	}
	return sent
}

// resumes counts the researcher's resumes of a thread.
func (h *harness) resumes(threadID string) int {
	n := 0
	for _, c := range h.res.Calls() {
		if c == "resume:"+threadID {
			n++
		}
	}
	return n
}

// holdRuns makes the researcher's calls wait until release (or their
// context ends); the test's end releases them too.
func (h *harness) holdRuns() (release func()) {
	hold := make(chan struct{})
	h.res.setHold(hold)
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	h.t.Cleanup(release)
	return release
}

// connected waits until the fake has n Socket Mode connections.
func (h *harness) connected(ctx context.Context, n int) {
	h.t.Helper()
	if err := h.fake.WaitConnections(ctx, n); err != nil {
		h.t.Fatal(err)
	}
}

// started is a harness with a bot running on it, and the test's context.
func started(t *testing.T, edit ...func(*bot.Options)) (*harness, context.Context) {
	t.Helper()
	h := newHarness(t)
	h.start(edit...)
	return h, testCtx(t)
}
