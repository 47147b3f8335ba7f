package killtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/bot/slackfake"
	"deepresearch/chaos/faults"
)

// TestLoadReplicasPostgres: many concurrent research runs across three
// serve processes on one Postgres, with simulated LLM latency — 30 runs in
// the short version, 1,000 with CHAOS_LONG=1 — sent at once over 20
// channels by many users. While they run, each process's RSS, goroutines and
// database connections (its pgxpool on /metrics, and its sessions in
// pg_stat_activity) are sampled every 250 ms. Asserted: every thread ends
// with exactly one report and one Done status message, nothing failed or
// pinged anyone, no process held more connections than its pool size, and
// each process's goroutines return near their pre-load baseline. Printed
// (FIGURES load3): peak concurrent runs, RSS, goroutines, connections, LLM
// calls and the Slack call rates (per method, and chat.update /
// chat.postMessage per channel) with the 429s the fake answered. The fake
// enforces Slack's tier limits (chat.update 50/min with bursts of 20 per
// workspace, chat.postMessage 1/s with bursts of 5 per channel); each
// process is given the whole workspace's budget and the three split it
// among themselves (bot.Options.UpdatesPerMinute), so the fleet should get
// no 429, or very few. The one-process version is chaos/faults TestLoad.
func TestLoadReplicasPostgres(t *testing.T) {
	const (
		procs    = 3
		poolMax  = 8 // pool_max_conns of each process (three processes share the test server's 100 connections with other packages' tests)
		channels = 20
		maxDelay = 400 * time.Millisecond // simulated latency of one LLM call, at most
	)
	// Short: 30 runs, ~10 a process, more than each pool's 8 connections and
	// the chat.update burst of 20.
	runs, margin := 30, 4*time.Minute
	if long() {
		runs, margin = 1000, 25*time.Minute
	}
	// Slack's chat.update allowance is per workspace (Tier 3, ~50/min with
	// bursts of ~20); the fake enforces it. CHAOS_SLACK_UPDATES_PER_MINUTE
	// sets another workspace budget, for the fake and the bot alike. Every
	// process is given the workspace's budget: the replicas count each
	// other in the store and split it.
	updatesPerMinute := 50
	if v, err := strconv.Atoi(os.Getenv("CHAOS_SLACK_UPDATES_PER_MINUTE")); err == nil && v > 0 {
		updatesPerMinute = v
	}
	// Every run ends with a final edit of its status message, and the
	// workspace allows updatesPerMinute of them: the finals alone take
	// runs×60/updatesPerMinute seconds (36 s for 30 runs at 50/min, 20
	// minutes for 1,000).
	finalsTime := time.Duration(runs*60/updatesPerMinute) * time.Second
	deadline := finalsTime + margin
	users := max(runs/2, 1)
	dbURL := pgURL(t)
	slackOpts := []slackfake.Option{slackfake.WithTierLimits(slackfake.Limits{UpdatesPerMinute: updatesPerMinute})}
	// CHAOS_SLACK_STREAMING=off: a workspace without the streaming methods,
	// where every run shows an edited status message (the bot before
	// streaming), for a before/after figure in one build.
	streaming := os.Getenv("CHAOS_SLACK_STREAMING") != "off"
	if !streaming {
		slackOpts = append(slackOpts, slackfake.WithoutStreaming("unknown_method"))
	}
	w := newWorld(t, maxDelay, dbURL, slackOpts...)
	w.env["DEEPRESEARCH_APPROVE_DRAFT"] = "false"
	// Every process may work on every run at once, so that the whole load
	// can be in flight (the mentions are spread unevenly over the three).
	w.env["DEEPRESEARCH_MAX_CONCURRENT_RUNS"] = strconv.Itoa(runs)
	// Not a kill test: a lease long enough that a busy machine does not
	// make runs change hands (takeovers are counted below all the same).
	w.env["DEEPRESEARCH_RUN_LEASE"] = "10s"
	w.env["DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE"] = strconv.Itoa(updatesPerMinute)
	t.Logf("chat.update budget: %d/min per workspace (the fake enforces it; the processes split it); finals need %s; deadline %s", updatesPerMinute, finalsTime, deadline)
	fl := newFleet(t, w, procs)

	// Each process: its own /metrics address and, in its DATABASE_URL, an
	// explicit pool size and an application_name that attributes its
	// sessions in pg_stat_activity.
	appTag := "load3_" + randomHex(4)
	fl.slotEnv = map[int]map[string]string{}
	addrs := make([]string, procs)
	for slot := range procs {
		addrs[slot] = freeAddr(t)
		fl.slotEnv[slot] = map[string]string{
			"DEEPRESEARCH_HTTP_ADDR": addrs[slot],
			"DATABASE_URL": withQuery(t, dbURL, map[string]string{
				"application_name": fmt.Sprintf("%s_%d", appTag, slot),
				"pool_max_conns":   strconv.Itoa(poolMax),
			}),
		}
	}
	for slot := range procs {
		fl.start(slot)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := w.slack.WaitConnections(ctx, procs); err != nil {
		t.Fatalf("not every serve process connected: %v", err)
	}
	scr := &scraper{client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}
	defer scr.client.CloseIdleConnections()
	for slot := range procs {
		for {
			if _, err := scr.scrape(ctx, addrs[slot]); err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("serve %d: no /metrics on %s", slot, addrs[slot])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	pgc, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pgc.Close(context.Background())

	// The baseline: the processes idle after start-up.
	time.Sleep(2 * time.Second)
	base := make([]int, procs)
	for slot := range procs {
		m, err := scr.scrape(ctx, addrs[slot])
		if err != nil {
			t.Fatalf("serve %d: /metrics: %v", slot, err)
		}
		base[slot] = int(m["go_goroutines"])
	}

	// Sampling, every 250 ms, until the runs are over.
	smp := newLoadSampler(procs)
	sctx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	for slot := range procs {
		pid := fl.pid(slot)
		sampling.Go(func() { smp.scrapeLoop(sctx, scr, slot, addrs[slot], pid) })
	}
	sampling.Go(func() { smp.pgLoop(sctx, pgc, appTag) })
	sampling.Go(func() { smp.sumLoop(sctx) })

	// The mentions: all at once from 16 senders, over the channels and
	// users.
	type sent struct{ tag, channel, ts, envelope string }
	var mu sync.Mutex
	var all []sent
	var senders sync.WaitGroup
	next := make(chan int)
	start := time.Now()
	for range 16 {
		senders.Go(func() {
			for i := range next {
				tag := fmt.Sprintf("RUNTAG-%04d", i)
				ch := fmt.Sprintf("CL%02d", i%channels)
				s, err := w.slack.SendAppMention(ctx, slackfake.AppMention{User: fmt.Sprintf("UL%04d", i%users), Channel: ch, Text: tag + " What does the EU AI Act require?"})
				if err != nil {
					t.Errorf("mention %d: %v", i, err)
					continue
				}
				mu.Lock()
				all = append(all, sent{tag, ch, s.TS, s.EnvelopeID})
				mu.Unlock()
			}
		})
	}
	for i := range runs {
		next <- i
	}
	close(next)
	senders.Wait()
	sendTime := time.Since(start)

	// Wait for every thread's report and Done message, reading the fake
	// once per round for all threads.
	views := func() map[string]threadView {
		byThread := map[string][]slackfake.File{}
		for _, f := range w.slack.Files() {
			if len(f.Channels) > 0 {
				byThread[f.Channels[0]+"/"+f.ThreadTS] = append(byThread[f.Channels[0]+"/"+f.ThreadTS], f)
			}
		}
		msgs := map[string][]slackfake.Message{}
		for c := range channels {
			ch := fmt.Sprintf("CL%02d", c)
			for _, m := range w.slack.Messages(ch) {
				root := m.ThreadTS
				if root == "" {
					root = m.TS
				}
				msgs[ch+"/"+root] = append(msgs[ch+"/"+root], m)
			}
		}
		out := map[string]threadView{}
		streams := streamsByTS(w.slack.Streams())
		for _, s := range all {
			k := s.channel + "/" + s.ts
			out[k] = viewOf(byThread[k], msgs[k], streams, s.channel, s.ts)
		}
		return out
	}
	// describe tells what the bot did about one mention: its messages in
	// the thread, whether the envelope was acked, and the log lines about
	// the thread or the envelope.
	describe := func(s sent) string {
		var b strings.Builder
		acked := 0
		for _, a := range w.slack.Acks() {
			if a.EnvelopeID == s.envelope {
				acked++
			}
		}
		fmt.Fprintf(&b, "%s (%s %s), envelope %s acked %d times\n", s.tag, s.channel, s.ts, s.envelope, acked)
		for _, m := range w.slack.Thread(s.channel, s.ts) {
			if m.IsBot() {
				fmt.Fprintf(&b, "  message %s (edited %d times): %s\n", m.TS, len(m.Edits), truncate(strings.SplitN(m.Text, "\n", 2)[0], 100))
			}
		}
		for _, l := range fl.logLines(fmt.Sprintf(`"thread_id":"slack:%s:%s:%s"`, w.slack.TeamID(), s.channel, s.ts)) {
			fmt.Fprintf(&b, "  %s\n", truncate(l, 300))
		}
		for _, l := range fl.logLines(s.envelope) {
			fmt.Fprintf(&b, "  %s\n", truncate(l, 300))
		}
		return b.String()
	}
	var finished int
	for {
		finished = 0
		for _, v := range views() {
			if v.Reports > 0 && v.Finals > 0 {
				finished++
			}
		}
		if finished == len(all) {
			break
		}
		if ctx.Err() != nil || len(fl.unexpectedExits()) > 0 {
			stopSampling()
			sampling.Wait()
			for _, e := range fl.unexpectedExits() {
				t.Errorf("%s", e)
			}
			vs, shown := views(), 0
			for _, s := range all {
				if v := vs[s.channel+"/"+s.ts]; (v.Reports == 0 || v.Finals == 0) && shown < 3 {
					shown++
					t.Logf("unfinished: reports %d, final %d, status messages %d, failed %d\n%s", v.Reports, v.Finals, v.Status, v.Failed, describe(s))
				}
			}
			t.Logf("runs created per process %v, done %v, picked up %v", fl.grepLogs(`"msg":"bot: run created"`), fl.grepLogs(`"msg":"bot: run done"`), fl.grepLogs(`"msg":"bot: picked up run"`))
			t.Fatalf("%d of %d threads finished after %s (peak active %d)", finished, len(all), time.Since(start).Round(time.Second), smp.activePeak())
		}
		time.Sleep(time.Second)
	}
	end := time.Now()
	elapsed := end.Sub(start)

	// Settle: goroutines back near their baseline (idle keep-alive
	// connections to the fakes stay open; a leak grows with the runs).
	slack := func(b int) int { return b/5 + 40 }
	after := make([]int, procs)
	settleBy := time.Now().Add(60 * time.Second)
	for {
		ok := true
		for slot := range procs {
			m, err := scr.scrape(ctx, addrs[slot])
			if err != nil {
				t.Errorf("serve %d: /metrics after the runs: %v", slot, err)
				continue
			}
			after[slot] = int(m["go_goroutines"])
			ok = ok && after[slot] <= base[slot]+slack(base[slot])
		}
		if ok && time.Since(end) > 3*time.Second || time.Now().After(settleBy) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	settled := time.Since(end)
	stopSampling()
	sampling.Wait()
	hwm := make([]int64, procs)
	for slot := range procs {
		_, hwm[slot] = faults.ProcRSS(fl.pid(slot))
	}
	vs := views() // after the settle period: late duplicates show here
	fl.stop()

	// Exactly-once outcomes.
	var dupReports, dupFinals, dupStatus, lost, failed, bad int
	var streams, openStreams, overlaps int
	for _, s := range all {
		v := vs[s.channel+"/"+s.ts]
		if v.Reports != 1 || v.Finals != 1 || v.Status != 1 || v.Failed != 0 || v.Stale != 0 || v.OpenStreams != 0 || v.Overlaps != 0 {
			t.Errorf("%s (%s %s): reports %d, final %d, status messages %d, failed %d, stale %d, streams left open %d, two live at once %d",
				s.tag, s.channel, s.ts, v.Reports, v.Finals, v.Status, v.Failed, v.Stale, v.OpenStreams, v.Overlaps)
			if bad++; bad <= 3 {
				t.Logf("%s", describe(s))
			}
		}
		dupStatus += max(v.Status-1, 0)
		dupReports += max(v.Reports-1, 0)
		dupFinals += max(v.Finals-1, 0)
		failed += v.Failed
		streams += v.Streams
		openStreams += v.OpenStreams
		overlaps += v.Overlaps
		if v.Reports == 0 {
			lost++
		}
	}
	if len(all) != runs {
		t.Errorf("%d of %d mentions delivered", len(all), runs)
	}
	if p := w.slack.Pings(); len(p) > 0 {
		t.Errorf("the bot pinged: %+v", p)
	}
	for _, e := range fl.unexpectedExits() {
		t.Errorf("%s", e)
	}
	// Bounds: connections within the pool, goroutines back to the baseline.
	for slot := range procs {
		p := smp.per[slot]
		if p.poolMax != 0 && p.poolMax != poolMax {
			t.Errorf("serve %d: pool max %d, want %d (pool_max_conns in DATABASE_URL)", slot, p.poolMax, poolMax)
		}
		if p.poolTotal > poolMax {
			t.Errorf("serve %d: %d pool connections > pool max %d", slot, p.poolTotal, poolMax)
		}
		if p.pgSessions > poolMax {
			t.Errorf("serve %d: %d sessions in pg_stat_activity > pool max %d", slot, p.pgSessions, poolMax)
		}
		if after[slot] > base[slot]+slack(base[slot]) {
			t.Errorf("serve %d: goroutines %d before the runs, %d at the peak, %d %s after them (leak)", slot, base[slot], p.goroutines, after[slot], settled.Round(time.Second))
		}
	}

	// Figures.
	perSlot := func(f func(slot int) string) string {
		var b []string
		for slot := range procs {
			b = append(b, f(slot))
		}
		return "[" + strings.Join(b, " ") + "]"
	}
	counts := func(m map[int]int) string { return perSlot(func(s int) string { return strconv.Itoa(m[s]) }) }
	created, done := fl.grepLogs(`"msg":"bot: run created"`), fl.grepLogs(`"msg":"bot: run done"`)
	pickedUp, leaseLost := fl.grepLogs(`"msg":"bot: picked up run"`), fl.grepLogs(`"msg":"bot: lease lost`)
	warns, errs := fl.grepLogs(`"level":"WARN"`), fl.grepLogs(`"level":"ERROR"`)
	llmCalls := w.llm.Calls()
	llm := analyse(llmCalls, nil, 0)
	// The tail: from the last model answer (the last research finishing)
	// to the last Done picture becoming visible in Slack.
	var lastAnswer, lastFinal time.Time
	for _, c := range llmCalls {
		if c.Complete && c.End.After(lastAnswer) {
			lastAnswer = c.End
		}
	}
	for _, v := range vs {
		if v.FinalAt.After(lastFinal) {
			lastFinal = v.FinalAt
		}
	}
	acked, redelivered := ackCounts(w.slack)
	ackLat := w.slack.AckLatencies() // first ack of each envelope; Slack retries after 3 s
	sort.Slice(ackLat, func(i, j int) bool { return ackLat[i] < ackLat[j] })
	pct := func(q float64) time.Duration {
		if len(ackLat) == 0 {
			return 0
		}
		return ackLat[min(int(q*float64(len(ackLat))), len(ackLat)-1)].Round(time.Millisecond)
	}

	calls := w.slack.CallLog("")
	var stamps []faults.CallStamp
	throttled := map[string]int{}
	for _, c := range calls {
		stamps = append(stamps, faults.CallStamp{Method: c.Method, Channel: c.Params.Get("channel"), At: c.At})
		if c.Status == http.StatusTooManyRequests {
			throttled[c.Method]++
		}
	}
	rates := faults.ComputeRates(stamps, start, end)
	upd, post := channelRates(stamps, "chat.update", start, end), channelRates(stamps, "chat.postMessage", start, end)

	t.Logf("FIGURES load3: runs=%d processes=%d channels=%d users=%d elapsed=%s send=%s settle=%s peak_active_runs=%d (per process %s; store-wide running peak %d) runs_created=%s runs_done=%s picked_up=%s lease_lost=%s",
		len(all), procs, channels, users, elapsed.Round(100*time.Millisecond), sendTime.Round(time.Millisecond), settled.Round(time.Second),
		smp.activePeak(), perSlot(func(s int) string { return strconv.Itoa(smp.per[s].active) }), smp.storeRunning,
		counts(created), counts(done), counts(pickedUp), counts(leaseLost))
	t.Logf("FIGURES load3: rss_mb vmrss_peak=%s vmhwm=%s goroutines base/peak/after=%s db_conns pool_total_peak=%s acquired_peak=%s pg_stat_activity_peak=%s pool_max=%d",
		perSlot(func(s int) string { return strconv.FormatInt(smp.per[s].rss>>20, 10) }),
		perSlot(func(s int) string { return strconv.FormatInt(hwm[s]>>20, 10) }),
		perSlot(func(s int) string { return fmt.Sprintf("%d/%d/%d", base[s], smp.per[s].goroutines, after[s]) }),
		perSlot(func(s int) string { return strconv.Itoa(smp.per[s].poolTotal) }),
		perSlot(func(s int) string { return strconv.Itoa(smp.per[s].poolAcquired) }),
		perSlot(func(s int) string { return strconv.Itoa(smp.per[s].pgSessions) }), poolMax)
	t.Logf("FIGURES load3: streaming=%t: last research answer to last final visible: %s (last answer at +%s, last final at +%s)",
		streaming, lastFinal.Sub(lastAnswer).Round(100*time.Millisecond), lastAnswer.Sub(start).Round(100*time.Millisecond), lastFinal.Sub(start).Round(100*time.Millisecond))
	t.Logf("FIGURES load3: streams=%d (runs shown by a status message instead: %d) left_open=%d two_live_at_once=%d", streams, len(all)-streams, openStreams, overlaps)
	t.Logf("FIGURES load3: outcomes: lost=%d duplicate_reports=%d duplicate_finals=%d duplicate_status_messages=%d failed=%d pings=%d; llm_calls=%d (repeats of a completed identical call %d); envelopes acked=%d redelivered=%d ack_latency p50=%s p99=%s max=%s; log lines warn=%s error=%s",
		lost, dupReports, dupFinals, dupStatus, failed, len(w.slack.Pings()), llm.Calls, llm.Repeats, acked, redelivered, pct(0.5), pct(0.99), pct(1), counts(warns), counts(errs))
	if msgs := logMessages(fl.logLines(`"level":"WARN"`), fl.logLines(`"level":"ERROR"`)); msgs != "" {
		t.Logf("load3: warnings and errors by message: %s", msgs)
	}
	t.Logf("FIGURES load3: slack calls/min over %s: %s", rates.Window.Round(time.Second), perMinute(rates))
	t.Logf("FIGURES load3: chat.update per channel: avg=%.2f/s max_channel_avg=%.2f/s peak_1s=%d peak_60s=%d, workspace peak_60s=%d; chat.postMessage per channel: avg=%.2f/s max_channel_avg=%.2f/s peak_1s=%d peak_60s=%d, workspace peak_60s=%d; 429 answers=%d %v",
		upd.avg, upd.maxAvg, upd.peak1s, upd.peak60s, upd.workspace60s, post.avg, post.maxAvg, post.peak1s, post.peak60s, post.workspace60s, total(throttled), throttled)
	t.Logf("FIGURES load3: slack tier limits enforced (chat.update %d/min bursts of 20 per workspace, chat.postMessage 1/s bursts of 5 per channel): 429 answers chat.update=%d chat.postMessage=%d all=%d; chat.update workspace peak_60s=%d (allowed %d); live replicas seen per process min/max=%s",
		updatesPerMinute, throttled["chat.update"], throttled["chat.postMessage"], total(throttled), upd.workspace60s, updatesPerMinute+20,
		perSlot(func(s int) string { return fmt.Sprintf("%d/%d", smp.per[s].liveMin, smp.per[s].liveMax) }))
	for slot := range procs {
		if p := smp.per[slot]; p.liveMin != procs || p.liveMax != procs {
			t.Errorf("serve %d: counted %d to %d live replicas during the load, want %d", slot, p.liveMin, p.liveMax, procs)
		}
	}
}

// ---------------------------------------------------------------------------
// Sampling the processes.

type slotPeaks struct {
	goroutines, active, poolTotal, poolAcquired, poolMax, pgSessions int
	rss                                                              int64
	lastActive                                                       int
	liveMin, liveMax                                                 int // deepresearch_bot_live_instances: the replicas it split the Slack budgets among
}

type loadSampler struct {
	mu           sync.Mutex
	per          []slotPeaks
	storeRunning int // deepresearch_bot_runs{state="running"}: runs running in the store, all processes
	active       int // peak of the sum of the processes' runs in progress
}

func newLoadSampler(procs int) *loadSampler { return &loadSampler{per: make([]slotPeaks, procs)} }

func (s *loadSampler) activePeak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scrapeLoop reads one process's /metrics and RSS.
func (s *loadSampler) scrapeLoop(ctx context.Context, scr *scraper, slot int, addr string, pid int) {
	every(ctx, 250*time.Millisecond, func() {
		rss, _ := faults.ProcRSS(pid)
		m, err := scr.scrape(ctx, addr)
		s.mu.Lock()
		defer s.mu.Unlock()
		p := &s.per[slot]
		p.rss = max(p.rss, rss)
		if err != nil {
			return
		}
		p.goroutines = max(p.goroutines, int(m["go_goroutines"]))
		p.lastActive = int(m["deepresearch_bot_runs_in_progress"])
		p.active = max(p.active, p.lastActive)
		p.poolTotal = max(p.poolTotal, int(m[`deepresearch_db_pool_conns{state="total"}`]))
		p.poolAcquired = max(p.poolAcquired, int(m[`deepresearch_db_pool_conns{state="acquired"}`]))
		p.poolMax = int(m["deepresearch_db_pool_max_conns"])
		if live, ok := m["deepresearch_bot_live_instances"]; ok {
			if p.liveMin == 0 || int(live) < p.liveMin {
				p.liveMin = int(live)
			}
			p.liveMax = max(p.liveMax, int(live))
		}
		s.storeRunning = max(s.storeRunning, int(m[`deepresearch_bot_runs{state="running"}`]))
	})
}

// sumLoop records the peak of the runs in progress over all processes.
func (s *loadSampler) sumLoop(ctx context.Context) {
	every(ctx, 250*time.Millisecond, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for _, p := range s.per {
			n += p.lastActive
		}
		s.active = max(s.active, n)
	})
}

// pgLoop counts each process's sessions on the server.
func (s *loadSampler) pgLoop(ctx context.Context, c *pgx.Conn, appTag string) {
	every(ctx, 250*time.Millisecond, func() {
		rows, err := c.Query(ctx, `SELECT application_name, count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE $1 GROUP BY application_name`, appTag+"_%")
		if err != nil {
			return
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var n int
			if rows.Scan(&name, &n) != nil {
				return
			}
			slot, err := strconv.Atoi(strings.TrimPrefix(name, appTag+"_"))
			if err != nil || slot < 0 || slot >= len(s.per) {
				continue
			}
			s.mu.Lock()
			s.per[slot].pgSessions = max(s.per[slot].pgSessions, n)
			s.mu.Unlock()
		}
	})
}

type scraper struct{ client *http.Client }

// scrape reads a /metrics page into "name{labels}" → value.
func (s *scraper) scrape(ctx context.Context, addr string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

func (f *fleet) pid(slot int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.slots[slot]; p != nil && p.cmd.Process != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func withQuery(t *testing.T, raw string, set map[string]string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range set {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ---------------------------------------------------------------------------
// Slack call rates.

type chanRate struct {
	avg          float64 // calls per second per channel, averaged over the channels called
	maxAvg       float64 // the busiest channel's calls per second over the window
	peak1s       int     // most calls to one channel within one wall-clock second
	peak60s      int     // most calls to one channel within any 60 seconds
	workspace60s int     // most calls (all channels) within any 60 seconds
}

func channelRates(calls []faults.CallStamp, method string, from, to time.Time) chanRate {
	var r chanRate
	byChan := map[string][]time.Time{}
	var allAt []time.Time
	for _, c := range calls {
		if c.Method != method || c.At.Before(from) || c.At.After(to) {
			continue
		}
		allAt = append(allAt, c.At)
		if c.Channel != "" {
			byChan[c.Channel] = append(byChan[c.Channel], c.At)
		}
	}
	secs := max(to.Sub(from).Seconds(), 1)
	sum := 0.0
	for _, ts := range byChan {
		rate := float64(len(ts)) / secs
		sum += rate
		r.maxAvg = max(r.maxAvg, rate)
		buckets := map[int64]int{}
		for _, at := range ts {
			buckets[at.Unix()]++
			r.peak1s = max(r.peak1s, buckets[at.Unix()])
		}
		r.peak60s = max(r.peak60s, peakWithin(ts, time.Minute))
	}
	if len(byChan) > 0 {
		r.avg = sum / float64(len(byChan))
	}
	r.workspace60s = peakWithin(allAt, time.Minute)
	return r
}

// peakWithin is the most instants within any window of length d.
func peakWithin(ts []time.Time, d time.Duration) int {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= d {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func perMinute(r faults.Rates) string {
	ms := make([]string, 0, len(r.Count))
	for m := range r.Count {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		return r.Count[ms[i]] > r.Count[ms[j]] || r.Count[ms[i]] == r.Count[ms[j]] && ms[i] < ms[j]
	})
	var b []string
	for _, m := range ms {
		b = append(b, fmt.Sprintf("%s=%d(%.0f/min)", m, r.Count[m], r.PerMethod[m]*60))
	}
	return strings.Join(b, " ")
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// logMessages counts log lines by level and message, busiest first.
func logMessages(groups ...[]string) string {
	n := map[string]int{}
	for _, lines := range groups {
		for _, l := range lines {
			_, js, _ := strings.Cut(l, "] ")
			var e struct{ Level, Msg, Err string }
			if json.Unmarshal([]byte(js), &e) != nil {
				continue
			}
			k := e.Level + " " + e.Msg
			if e.Err != "" {
				k += ": " + truncate(e.Err, 120)
			}
			n[k]++
		}
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] || n[keys[i]] == n[keys[j]] && keys[i] < keys[j] })
	var b []string
	for _, k := range keys {
		b = append(b, fmt.Sprintf("%q×%d", k, n[k]))
	}
	return strings.Join(b, ", ")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
