package killtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage"
)

func TestKillSQLite(t *testing.T) {
	killTest(t, "sqlite", "", 1)
}

func TestKillPostgres(t *testing.T) {
	killTest(t, "postgres", pgURL(t), 2)
}

// killPlan sizes a kill test: runs started by mentions, SIGKILLs while they
// run, and how long the whole thing may take before it is a failure.
type killPlan struct {
	runs, kills    int
	minGap, maxGap time.Duration // between kills
	deadline       time.Duration
}

func planFor() killPlan {
	p := killPlan{runs: 6, kills: 6, minGap: 400 * time.Millisecond, maxGap: 2 * time.Second, deadline: 3 * time.Minute}
	if long() {
		p = killPlan{runs: 50, kills: 150, minGap: 500 * time.Millisecond, maxGap: 4 * time.Second, deadline: 30 * time.Minute}
	}
	// CHAOS_RUNS and CHAOS_KILLS override the sizes (debugging).
	if n, err := strconv.Atoi(os.Getenv("CHAOS_RUNS")); err == nil && n > 0 {
		p.runs = n
	}
	if n, err := strconv.Atoi(os.Getenv("CHAOS_KILLS")); err == nil && n >= 0 {
		p.kills = n
	}
	if d, err := time.ParseDuration(os.Getenv("CHAOS_DEADLINE")); err == nil && d > 0 {
		p.deadline = d
	}
	return p
}

// maxPickups is the bot's bound on how often a run is picked up since its
// last input (bot's maxRunAttempts): a run picked up more often is failed
// as one that kills its process, so the killer keeps every run below it.
const maxPickups = 5

type mention struct {
	tag, user, ch string
	sent          slackfake.Sent
}

// clickLog records the approval clicks per interrupt (button value).
type clickLog struct {
	mu       sync.Mutex
	first    map[string]time.Time // first click of an interrupt
	last     map[string]time.Time
	clicks   map[string]int
	reclicks int                  // clicks repeated because nothing happened for a while
	seen     map[string]time.Time // approval message ts → first seen
}

func killTest(t *testing.T, engine, dbURL string, procs int) {
	plan := planFor()
	seed := uint64(time.Now().UnixNano())
	rnd := rand.New(rand.NewPCG(seed, 7))
	var rndMu sync.Mutex
	randDur := func(lo, hi time.Duration) time.Duration {
		rndMu.Lock()
		defer rndMu.Unlock()
		return lo + time.Duration(rnd.Int64N(int64(hi-lo)+1))
	}
	t.Logf("%s: seed %d, %d runs, %d processes, %d kills planned", engine, seed, plan.runs, procs, plan.kills)

	w := newWorld(t, 250*time.Millisecond, dbURL)
	w.env["DEEPRESEARCH_APPROVE_DRAFT"] = "true"
	fl := newFleet(t, w, procs)
	for i := range procs {
		fl.start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), plan.deadline)
	defer cancel()
	if err := w.slack.WaitConnections(ctx, 1); err != nil {
		t.Fatalf("no serve process connected: %v", err)
	}
	// The bot's records, read while the processes run: a run that ended
	// without its report ends the wait (the checks below say why), and the
	// killer keeps within the bot's bound on pickups per run.
	store, closeStore := openBotStore(t, engine, dbURL, w.env["DEEPRESEARCH_DATA_DIR"])
	defer closeStore()

	// Mentions arrive over the first part of the test, while kills happen.
	var mu sync.Mutex
	var mentions []mention
	var sendWG sync.WaitGroup
	sendWG.Go(func() {
		for i := range plan.runs {
			// A few channels: the bot paces its posts to about one a second
			// per channel (split among the live processes), which one busy
			// channel would make the test wait on.
			m := mention{tag: fmt.Sprintf("RUNTAG-%03d", i), user: fmt.Sprintf("U%03d", i), ch: fmt.Sprintf("C%d", 1+i%3)}
			sctx, scancel := context.WithTimeout(ctx, time.Minute)
			sent, err := w.slack.SendAppMention(sctx, slackfake.AppMention{User: m.user, Channel: m.ch,
				Text: m.tag + " What does the EU AI Act require?"})
			scancel()
			if err != nil {
				t.Errorf("mention %d: %v", i, err)
				return
			}
			m.sent = sent
			mu.Lock()
			mentions = append(mentions, m)
			mu.Unlock()
			time.Sleep(randDur(100*time.Millisecond, 1200*time.Millisecond))
		}
	})
	snapshot := func() []mention {
		mu.Lock()
		defer mu.Unlock()
		return append([]mention(nil), mentions...)
	}
	allDone := func() bool {
		ms := snapshot()
		if len(ms) < plan.runs {
			return false
		}
		for _, m := range ms {
			v := inspect(w.slack, m.ch, m.sent.TS)
			if v.Reports == 0 || v.Finals == 0 {
				return false
			}
		}
		return true
	}
	// gaveUp reports a run that ended failed or cancelled: it will never
	// get its report, so waiting longer only delays the failure.
	gaveUp := func() bool {
		for _, m := range snapshot() {
			key := slackstate.ThreadKey{Team: w.slack.TeamID(), Channel: m.ch, ThreadTS: m.sent.TS}
			r, err := store.LatestRun(ctx, key.ThreadID())
			if err == nil && (r.State == research.StateFailed || r.State == research.StateCancelled) {
				t.Logf("%s: run %s ended %s (%s)", m.tag, r.ID, r.State, r.Error)
				return true
			}
		}
		return false
	}
	// atBound reports a run picked up so often that killing the process
	// in slot could take it past the bot's bound (maxPickups): the bot
	// would then fail it by design, as a run that kills its process. A run
	// leased to another live process is safe from this kill.
	atBound := func(slot int) bool {
		rs, err := store.ListRuns(ctx, research.RunFilter{States: []research.RunState{research.StateQueued, research.StateRunning}})
		if err != nil {
			return true // unknown: do not kill
		}
		for _, r := range rs {
			if r.Attempt < maxPickups-1 {
				continue
			}
			safe := r.State == research.StateRunning && time.Now().Before(r.LeaseUntil)
			if safe {
				safe = false
				for other := range procs {
					if pid := fl.pid(other); other != slot && pid != 0 && strings.Contains(r.Owner, fmt.Sprintf("-%d-", pid)) {
						safe = true
					}
				}
			}
			if !safe {
				return true
			}
		}
		return false
	}

	// The clicker approves drafts like a person: a little after the approval
	// appears; every other one with a double click; again if nothing
	// happened for a long while.
	cl := &clickLog{first: map[string]time.Time{}, last: map[string]time.Time{}, clicks: map[string]int{}, seen: map[string]time.Time{}}
	clickCtx, stopClicks := context.WithCancel(ctx)
	var clickWG sync.WaitGroup
	clickWG.Go(func() {
		for clickCtx.Err() == nil {
			for i, m := range snapshot() {
				v := inspect(w.slack, m.ch, m.sent.TS)
				if v.Reports > 0 {
					continue
				}
				for _, msg := range v.Pending {
					val := msg.ButtonValue("dr_approve")
					cl.mu.Lock()
					seen, ok := cl.seen[msg.TS]
					if !ok {
						cl.seen[msg.TS] = time.Now()
					}
					n, last := cl.clicks[val], cl.last[val]
					cl.mu.Unlock()
					if !ok || time.Since(seen) < 400*time.Millisecond {
						continue
					}
					if n > 0 && time.Since(last) < 15*time.Second {
						continue
					}
					times := 1
					if n == 0 && i%2 == 1 {
						times = 2 // a double click
					}
					for range times {
						cctx, ccancel := context.WithTimeout(clickCtx, time.Minute)
						_, err := w.slack.SendBlockAction(cctx, slackfake.BlockAction{User: m.user, Channel: m.ch, MessageTS: msg.TS,
							ActionID: "dr_approve", Value: val})
						ccancel()
						if err != nil {
							if clickCtx.Err() == nil {
								t.Errorf("click: %v", err)
							}
							return
						}
					}
					cl.mu.Lock()
					if n == 0 {
						cl.first[val] = time.Now()
					} else {
						cl.reclicks++
						t.Logf("re-click on %s (%s): nothing happened for 15s", m.tag, val)
					}
					cl.clicks[val] += times
					cl.last[val] = time.Now()
					cl.mu.Unlock()
				}
			}
			select {
			case <-clickCtx.Done():
			case <-time.After(150 * time.Millisecond):
			}
		}
	})

	// The killer: SIGKILL a random process at random moments, restart it
	// after a random pause.
	killed, spared := 0, 0
	for killed < plan.kills && ctx.Err() == nil && !allDone() && !gaveUp() {
		time.Sleep(randDur(plan.minGap, plan.maxGap))
		slot := int(randDur(0, time.Duration(procs-1)))
		if atBound(slot) {
			spared++
			continue
		}
		if fl.kill(slot) {
			killed++
		}
		time.Sleep(randDur(0, 700*time.Millisecond))
		fl.start(slot)
	}
	killPhaseEnd := time.Now()
	sendWG.Wait()

	// Let everything finish.
	for !allDone() && !gaveUp() {
		if ctx.Err() != nil {
			for _, m := range snapshot() {
				v := inspect(w.slack, m.ch, m.sent.TS)
				if v.Reports > 0 && v.Finals > 0 {
					continue
				}
				t.Logf("%s: reports %d finals %d status %d pending approvals %d", m.tag, v.Reports, v.Finals, v.Status, len(v.Pending))
				for _, msg := range w.slack.Thread(m.ch, m.sent.TS) {
					t.Logf("    %s bot=%v text=%.80q edits=%d files=%v", msg.TS, msg.IsBot(), msg.Text, len(msg.Edits), msg.Files)
					for _, e := range msg.Edits[max(len(msg.Edits)-6, 0):] {
						t.Logf("        was at %s: %.60q", e.At.Format("15:04:05.000"), e.Text)
					}
				}
				key := slackstate.ThreadKey{Team: w.slack.TeamID(), Channel: m.ch, ThreadTS: m.sent.TS}
				for _, l := range fl.logLines(key.ThreadID()) {
					t.Logf("    log %s", l)
				}
			}
			t.Fatalf("%s: not every run finished within %s", engine, plan.deadline)
		}
		time.Sleep(200 * time.Millisecond)
	}
	doneAt := time.Now()
	// Give late duplicates a chance to show up, then stop cleanly.
	time.Sleep(3 * time.Second)
	stopClicks()
	clickWG.Wait()
	fl.stop()

	// Per thread: one report, one final message, no failure.
	ms := snapshot()
	var dupReports, dupFinals, lostRuns, failed, staleStatus, extraApprovalMsgs int
	var streams, openStreams, overlaps int
	for _, m := range ms {
		v := inspect(w.slack, m.ch, m.sent.TS)
		switch {
		case v.Reports == 0:
			lostRuns++
			t.Errorf("%s: no report", m.tag)
		case v.Reports > 1:
			dupReports += v.Reports - 1
			t.Errorf("%s: %d reports %v", m.tag, v.Reports, v.ReportNames)
		}
		if v.Finals != 1 {
			dupFinals += max(v.Finals-1, 0)
			t.Errorf("%s: %d final status messages", m.tag, v.Finals)
		}
		if v.Failed > 0 {
			failed += v.Failed
			t.Errorf("%s: %d failed/cancelled status messages", m.tag, v.Failed)
		}
		staleStatus += v.Stale
		extraApprovalMsgs += max(v.Approvals-1, 0)
		streams += v.Streams
		openStreams += v.OpenStreams
		overlaps += v.Overlaps
		if v.OpenStreams > 0 {
			t.Errorf("%s: %d streams left open", m.tag, v.OpenStreams)
		}
		if v.Overlaps > 0 {
			t.Errorf("%s: %d streams started while another of the run was live", m.tag, v.Overlaps)
		}
	}
	if p := w.slack.Pings(); len(p) > 0 {
		t.Errorf("the bot pinged: %+v", p)
	}

	// Approvals: every run was approved once, by its requester, and the
	// first click was the one applied.
	lostApprovals := 0
	for _, m := range ms {
		key := slackstate.ThreadKey{Team: w.slack.TeamID(), Channel: m.ch, ThreadTS: m.sent.TS}
		r, err := store.LatestRun(context.Background(), key.ThreadID())
		if err != nil {
			t.Errorf("%s: run: %v", m.tag, err)
			continue
		}
		if r.State != research.StateDone {
			t.Errorf("%s: run %s is %s (%s)", m.tag, r.ID, r.State, r.Error)
		}
		if r.Decision == nil || r.Interrupt == nil || r.Decision.InterruptID != r.Interrupt.ID || r.Decision.Action != research.ActionApprove || r.Decision.By != m.user {
			t.Errorf("%s: decision %+v on interrupt %+v", m.tag, r.Decision, r.Interrupt)
			continue
		}
		val := r.ID + "|" + r.Interrupt.ID
		cl.mu.Lock()
		first, clicked := cl.first[val]
		cl.mu.Unlock()
		if !clicked {
			t.Errorf("%s: decided but never clicked (%s)", m.tag, val)
			continue
		}
		if r.Decision.At.Sub(first) > 5*time.Second {
			lostApprovals++
			t.Errorf("%s: the first click (%s) was lost; the decision came from a later click at %s", m.tag,
				first.Format("15:04:05.000"), r.Decision.At.Format("15:04:05.000"))
		}
	}

	// LLM calls: none that completed (and so was stored) was made again,
	// except where a kill landed right after its answer, before the answer
	// could be stored.
	const window = 2 * time.Second
	kills := fl.killTimes()
	rs := analyse(w.llm.Calls(), kills, window)
	for _, u := range rs.Unexplained {
		t.Errorf("repeated LLM call not explained by a kill: %s", u)
	}
	// The scripted plan's three subtasks call the model at the same time,
	// so one kill can land after up to three answers not yet stored.
	const inFlight = 3
	if rs.NearKill > inFlight*len(kills) {
		t.Errorf("%d repeated LLM calls but only %d kills (at most %d calls in flight each)", rs.NearKill, len(kills), inFlight)
	}
	for _, e := range fl.unexpectedExits() {
		t.Errorf("%s", e)
	}
	clicks := 0
	for _, n := range cl.clicks {
		clicks += n
	}
	t.Logf("FIGURES %s: runs %d, processes %d, lives %d, kills %d (%.1f per run; %d rounds spared a run at %d pickups), kill phase %s, all done after %s",
		engine, len(ms), procs, fl.lives(), len(kills), float64(len(kills))/float64(max(len(ms), 1)), spared, maxPickups-1,
		killPhaseEnd.Sub(w.slackStart()).Round(time.Second), doneAt.Sub(w.slackStart()).Round(time.Second))
	t.Logf("FIGURES %s: duplicate reports %d, duplicate final messages %d, lost runs %d, failed runs %d, stale status messages %d, extra approval messages %d",
		engine, dupReports, dupFinals, lostRuns, failed, staleStatus, extraApprovalMsgs)
	t.Logf("FIGURES %s: streams %d (%.1f per run), left open %d, two live at once %d",
		engine, streams, float64(streams)/float64(max(len(ms), 1)), openStreams, overlaps)
	t.Logf("FIGURES %s: approvals: %d clicks on %d interrupts (%d double clicks), %d re-clicks, lost %d, applied twice 0 (one decision, one report per run)",
		engine, clicks, len(cl.clicks), (len(ms))/2, cl.reclicks, lostApprovals)
	t.Logf("FIGURES %s: LLM calls %d (completed %d, untagged %d); repeated completed calls %d, all within %s after a kill: %d, unexplained %d; pings %d",
		engine, rs.Calls, rs.Completed, rs.Untagged, rs.Repeats, window, rs.NearKill, len(rs.Unexplained), len(w.slack.Pings()))
	if rs.Untagged > 0 {
		t.Logf("note: %d LLM requests carried no run tag and were not attributed", rs.Untagged)
	}
}

func (w *world) slackStart() time.Time {
	if w.start.IsZero() {
		return time.Now()
	}
	return w.start
}

// openBotStore opens the run store in the database the processes used.
func openBotStore(t *testing.T, engine, dbURL, dataDir string) (research.Store, func()) {
	t.Helper()
	cfg := storage.Config{DataDir: dataDir}
	if engine != "sqlite" {
		cfg.DatabaseURL = dbURL
	}
	db, err := storage.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return db.Runs(), func() { db.Close() }
}
