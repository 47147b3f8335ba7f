package bot_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
)

// ackBurst sends n mentions at once (from 8 goroutines) to a running bot
// and returns the ack latencies the fake measured (delivery to ack).
func ackBurst(tb testing.TB, n int) []time.Duration {
	runs, records := stores(tb)
	return ackBurstOn(tb, runs, records, n)
}

// ackBurstOn is ackBurst with the runs in store and the bot's records in
// records.
func ackBurstOn(tb testing.TB, store research.Store, records slackstate.Store, n int) []time.Duration {
	fake := slackfake.New(slackfake.WithPingInterval(time.Second))
	defer fake.Close()
	res := newFakeResearcher()
	b, err := bot.New(res, store, records, bot.Options{
		BotToken: fake.BotToken(), AppToken: fake.AppToken(), APIURL: fake.APIURL(),
		MaxRunsPerUser: -1, ProgressInterval: 50 * time.Millisecond,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	if err := fake.WaitConnections(wctx, 1); err != nil {
		tb.Fatal(err)
	}
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				sent, err := fake.SendAppMention(wctx, slackfake.AppMention{User: fmt.Sprintf("U%03d", i), Channel: "C1", Text: fmt.Sprintf("question %d", i)})
				if err != nil {
					tb.Error(err)
					return
				}
				ids <- sent.EnvelopeID
			}
		})
	}
	wg.Wait()
	close(ids)
	for id := range ids {
		if _, err := fake.WaitAck(id, 30*time.Second); err != nil {
			tb.Fatal(err)
		}
	}
	lat := fake.AckLatencies()
	slices.Sort(lat)
	return lat
}

func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	i := int(float64(len(lat)-1) * p)
	return lat[i]
}

// BenchmarkAckBurst200 reports ack latency percentiles for a burst of 200
// mentions: go test -run '^$' -bench AckBurst ./bot/
func BenchmarkAckBurst200(b *testing.B) {
	var all []time.Duration
	for b.Loop() {
		all = append(all, ackBurst(b, 200)...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(pct(all, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(all, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
}

// TestAckLatencyBurst prints the figures when DEEPRESEARCH_BENCH=1. It makes
// no timing assertions (CI machines vary); the target is p99 < 50ms.
func TestAckLatencyBurst(t *testing.T) {
	if os.Getenv("DEEPRESEARCH_BENCH") == "" {
		t.Skip("set DEEPRESEARCH_BENCH=1 to measure ack latency for a burst of 200 mentions")
	}
	lat := ackBurst(t, 200)
	if len(lat) != 200 {
		t.Fatalf("%d acks", len(lat))
	}
	fmt.Printf("ack latency, burst of 200 mentions: p50=%v p90=%v p99=%v max=%v (target p99 < 50ms)\n",
		pct(lat, .5), pct(lat, .9), pct(lat, .99), lat[len(lat)-1])
}
