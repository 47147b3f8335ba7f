package killtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/schedule"
	"deepresearch/storage"
)

// TestReplicasPostgres runs three serve processes on one Postgres. The fake
// Slack delivers each envelope to one of their connections; every mention
// must be handled once (one status message, one report, one final message
// per thread), and every digest firing must run once across the three.
func TestReplicasPostgres(t *testing.T) {
	const (
		procs           = 3
		mentionChannels = 10
	)
	mentions, schedules := 40, 3
	if long() {
		mentions, schedules = 200, 6
	}
	dbURL := pgURL(t)
	w := newWorld(t, 20*time.Millisecond, dbURL)
	w.env["DEEPRESEARCH_APPROVE_DRAFT"] = "false"
	w.env["DEEPRESEARCH_DIGEST_TICK"] = "1s"
	// The fake does not enforce Slack's rate limits here, and the bot's
	// own chat.update budget would only pace the final edits: budgets and
	// their split among replicas are TestLoadReplicasPostgres's subject.
	w.env["DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE"] = "-1"
	fl := newFleet(t, w, procs)
	for i := range procs {
		fl.start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := w.slack.WaitConnections(ctx, procs); err != nil {
		t.Fatalf("not every serve process connected: %v", err)
	}

	// Digest schedules, due every minute and active since before the last
	// minute began: the due time just past is caught up once at the next
	// tick, and the next minute fires too if the test is still running.
	db, err := storage.Open(ctx, storage.Config{DatabaseURL: dbURL})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.Schedules()
	now := time.Now()
	for i := range schedules {
		// The digest channel exists, with the bot and the owner in it: a
		// firing checks that before researching.
		w.slack.AddChannel(slackfake.Channel{ID: fmt.Sprintf("CD%02d", i), Name: fmt.Sprintf("digests-%02d", i),
			Members: []string{"UOWNER", w.slack.BotUserID()}})
		s := schedule.Schedule{ID: fmt.Sprintf("sch%02d", i), Team: w.slack.TeamID(), Channel: fmt.Sprintf("CD%02d", i), Owner: "UOWNER",
			Topic: fmt.Sprintf("RUNTAG-9%02d competitor news", i), Spec: "* * * * *", TZ: "UTC", Enabled: true,
			ActiveSince: now.Add(-90 * time.Second), CreatedAt: now, UpdatedAt: now}
		if err := st.CreateSchedule(ctx, s, 100); err != nil {
			t.Fatalf("create schedule: %v", err)
		}
	}

	// Mentions from many users, several at once, over a few channels (the
	// bot paces its posts to about one a second per channel, as Slack
	// asks, so one channel would make the test wait on that pace).
	type sent struct {
		tag, ch, ts string
	}
	var mu sync.Mutex
	var all []sent
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				tag, ch := fmt.Sprintf("RUNTAG-%03d", i), fmt.Sprintf("C%d", 1+i%mentionChannels)
				s, err := w.slack.SendAppMention(ctx, slackfake.AppMention{User: fmt.Sprintf("U%03d", i), Channel: ch, Text: tag + " What does the EU AI Act require?"})
				if err != nil {
					t.Errorf("mention %d: %v", i, err)
					continue
				}
				mu.Lock()
				all = append(all, sent{tag, ch, s.TS})
				mu.Unlock()
			}
		})
	}
	for i := range mentions {
		next <- i
	}
	close(next)
	wg.Wait()

	finished := func() bool {
		for _, s := range all {
			v := inspect(w.slack, s.ch, s.ts)
			if v.Reports == 0 || v.Finals == 0 {
				return false
			}
		}
		return true
	}
	digestsDone := func() bool {
		for i := range schedules {
			fs, err := st.ListFirings(ctx, fmt.Sprintf("sch%02d", i), 100)
			if err != nil || len(fs) == 0 {
				return false
			}
			for _, f := range fs {
				if f.State == schedule.FiringRunning {
					return false
				}
			}
		}
		return true
	}
	start := time.Now()
	for !finished() || !digestsDone() {
		if ctx.Err() != nil {
			t.Fatalf("not everything finished: mentions %v, digests %v", finished(), digestsDone())
		}
		time.Sleep(250 * time.Millisecond)
	}
	elapsed := time.Since(start)
	time.Sleep(3 * time.Second) // late duplicates
	fl.stop()

	var dupStatus, dupReports, dupFinals, lost int
	for _, s := range all {
		v := inspect(w.slack, s.ch, s.ts)
		if v.Reports != 1 || v.Finals != 1 || v.Status != 1 || v.Failed != 0 {
			t.Errorf("%s: reports %d, final %d, status messages %d, failed %d", s.tag, v.Reports, v.Finals, v.Status, v.Failed)
		}
		dupStatus += max(v.Status-1, 0)
		dupReports += max(v.Reports-1, 0)
		dupFinals += max(v.Finals-1, 0)
		if v.Reports == 0 {
			lost++
		}
	}
	if len(all) != mentions {
		t.Errorf("%d of %d mentions delivered", len(all), mentions)
	}
	// Digests: one firing per due time (the key), each done and posted
	// once in its channel.
	var firings, doneFirings, skippedFirings, digestMsgs int
	for i := range schedules {
		id, ch := fmt.Sprintf("sch%02d", i), fmt.Sprintf("CD%02d", i)
		fs, err := st.ListFirings(ctx, id, 100)
		if err != nil {
			t.Fatal(err)
		}
		dues := map[time.Time]int{}
		done := 0
		for _, f := range fs {
			firings++
			dues[f.Due.UTC()]++
			switch f.State {
			case schedule.FiringDone:
				done++
			case schedule.FiringSkipped: // an older missed due time, superseded by the one caught up
				skippedFirings++
			default:
				t.Errorf("%s firing %s: %s %s", id, f.Due, f.State, f.Error)
			}
		}
		for d, n := range dues {
			if n > 1 {
				t.Errorf("%s: due time %s has %d firings", id, d, n)
			}
		}
		top := 0
		for _, m := range w.slack.Messages(ch) {
			if m.IsBot() && (m.ThreadTS == "" || m.ThreadTS == m.TS) {
				top++
			}
		}
		digestMsgs += top
		doneFirings += done
		if top != done {
			t.Errorf("%s: %d firings done but %d digest messages in %s", id, done, top, ch)
		}
	}
	if p := w.slack.Pings(); len(p) > 0 {
		t.Errorf("the bot pinged: %+v", p)
	}
	for _, e := range fl.unexpectedExits() {
		t.Errorf("%s", e)
	}
	// Who did the work: runs created and digests run per process.
	created := fl.grepLogs(`"msg":"bot: run created"`)
	var share []string
	for slot := range procs {
		share = append(share, fmt.Sprintf("%d", created[slot]))
	}
	acked, redelivered := ackCounts(w.slack)
	t.Logf("FIGURES replicas: %d processes on one Postgres, %d mentions handled in %s; runs created per process [%s]; envelopes acked %d (%d more than once)",
		procs, len(all), elapsed.Round(time.Second), strings.Join(share, " "), acked, redelivered)
	t.Logf("FIGURES replicas: duplicate status messages %d, duplicate reports %d, duplicate final messages %d, lost %d, pings %d",
		dupStatus, dupReports, dupFinals, lost, len(w.slack.Pings()))
	t.Logf("FIGURES replicas: digests: %d schedules, %d firings (%d done, %d skipped as superseded catch-ups), %d digest messages, duplicates %d",
		schedules, firings, doneFirings, skippedFirings, digestMsgs, max(digestMsgs-doneFirings, 0))
}
