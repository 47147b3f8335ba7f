package faults

import (
	"context"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// sampler records peaks of goroutines, RSS and Postgres pool connections.
type sampler struct {
	mu                          sync.Mutex
	goroutines                  int
	rss                         int64
	poolTotal, poolAcq, poolMax int32
}

func (s *sampler) run(ctx context.Context, w *world) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		g := runtime.NumGoroutine()
		rss, _ := RSS()
		s.mu.Lock()
		s.goroutines = max(s.goroutines, g)
		s.rss = max(s.rss, rss)
		if w.pg != nil {
			st := w.pg.Pool().Stat()
			s.poolTotal = max(s.poolTotal, st.TotalConns())
			s.poolAcq = max(s.poolAcq, st.AcquiredConns())
			s.poolMax = st.MaxConns()
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// appGoroutines counts goroutines other than idle HTTP keep-alive
// connections (which the transports close on their own schedule).
func appGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "net/http.(*persistConn)") || strings.Contains(g, "net/http.(*conn).serve") {
			continue
		}
		n++
	}
	return n
}

// TestLoad: many concurrent runs through the whole bot in one process on
// Postgres, with simulated LLM latency: 30 in the short version (more than
// the pool's 16 connections and the chat.update burst of 20), 1,000 with
// CHAOS_LONG=1. Goroutines return to their baseline, DB connections
// stay within the pool, and status edits stay within Slack's ~1/s per
// channel on average. The three-process variant is TestLoadReplicasPostgres
// in chaos/killtest.
func TestLoad(t *testing.T) {
	runs := n(30, 1000)
	// The fake enforces Slack's limits; the bot keeps to its default budget
	// (chat.update 50/min, Tier 3), so every run needs a final edit and the
	// finals alone take runs/50 minutes.
	w := newWorld(t, config{Postgres: true, PoolMax: 16, MaxConcurrentRuns: runs, LLMLatency: 100 * time.Millisecond, LLMTimeout: 20 * time.Second, SlackLimits: true})
	ctx := context.Background()
	time.Sleep(300 * time.Millisecond)
	baseline := appGoroutines()
	rss0, _ := RSS()
	sctx, stop := context.WithCancel(ctx)
	s := &sampler{}
	var sw sync.WaitGroup
	sw.Go(func() { s.run(sctx, w) })

	start := time.Now()
	ms := w.send(ctx, questions(runs, 5, func(i int) string { return "UL" + string(rune('A'+i%26)) + string(rune('A'+i/26%26)) }))
	sendDone := time.Now()
	vs := w.settle(ctx, ms, 150*time.Second+time.Duration(runs)*1200*time.Millisecond)
	end := time.Now()
	stop()
	sw.Wait()
	counts, sum := tally(t, vs)
	if counts[outReport] != runs {
		t.Errorf("want %d reports: %s", runs, sum)
	}

	// Goroutines go back to the baseline once the runs are over.
	var after int
	deadline := time.Now().Add(30 * time.Second)
	for {
		after = appGoroutines()
		if after <= baseline+10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if after > baseline+10 {
		t.Errorf("goroutines: %d before the runs, %d after (leak)", baseline, after)
	}
	if s.poolTotal > s.poolMax {
		t.Errorf("DB connections %d > pool max %d", s.poolTotal, s.poolMax)
	}

	var stamps []CallStamp
	for _, c := range w.slack.CallLog("") {
		stamps = append(stamps, CallStamp{Method: c.Method, Channel: c.Params.Get("channel"), At: c.At})
	}
	rates := ComputeRates(stamps, start, end)
	if rates.UpdateAvgMax > 1.05 {
		t.Errorf("chat.update averages %.2f/s in one channel (Slack allows ~1/s)", rates.UpdateAvgMax)
	}
	// Workspace-wide chat.update calls in any 60 s window (Tier 3: 50 per
	// minute plus bursts).
	var upd []time.Time
	for _, c := range stamps {
		if c.Method == "chat.update" {
			upd = append(upd, c.At)
		}
	}
	sort.Slice(upd, func(i, j int) bool { return upd[i].Before(upd[j]) })
	perMin, lo := 0, 0
	for hi := range upd {
		for upd[hi].Sub(upd[lo]) >= time.Minute {
			lo++
		}
		perMin = max(perMin, hi-lo+1)
	}
	rss1, _ := RSS()
	figure(t, "load", "chat_update_workspace_max_per_60s=%d slack_429=%d (chat.update %d, chat.postMessage %d) update_skipped=%d", perMin, w.slack.RateLimited(""), w.slack.RateLimited("chat.update"), w.slack.RateLimited("chat.postMessage"),
		int(metricValue(t, w, "deepresearch_slack_update_skipped_total")))
	figure(t, "load", "runs=%d %s elapsed=%s send=%s goroutines_base=%d peak=%d after=%d rss_mb_start=%d peak=%d end=%d db_conns_peak=%d acquired_peak=%d pool_max=%d llm_calls=%d chat_update_per_channel_avg_max=%.2f/s chat_update_per_channel_peak_1s=%d slack: %s",
		runs, sum, end.Sub(start).Round(time.Millisecond), sendDone.Sub(start).Round(time.Millisecond), baseline, s.goroutines, after,
		rss0>>20, s.rss>>20, rss1>>20, s.poolTotal, s.poolAcq, s.poolMax, w.llm.Calls(), rates.UpdateAvgMax, rates.UpdatePeak, rates.Compact())
}
