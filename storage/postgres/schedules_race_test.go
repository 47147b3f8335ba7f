package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/postgres"
)

// recorder counts runs per (schedule, due time) across schedulers.
type recorder struct {
	mu   sync.Mutex
	runs map[string][]string // key → owners that ran it
}

// ownedRuns is a replica's run service: it creates the firings' runs in
// its own pool and, told to start one, finishes it at once.
type ownedRuns struct {
	rec   *recorder
	owner string
	store research.Store
	clk   *clock.Manual
}

func (r ownedRuns) Create(ctx context.Context, run research.Run, maxPerUser int) error {
	if err := r.store.CreateRun(ctx, run, maxPerUser); err != nil {
		return err
	}
	of := run.Options.Digest
	k := of.Schedule + "@" + of.Due.UTC().Format(time.RFC3339)
	r.rec.mu.Lock()
	r.rec.runs[k] = append(r.rec.runs[k], r.owner)
	r.rec.mu.Unlock()
	return nil
}

func (r ownedRuns) TryStart(ctx context.Context, id string) {
	if _, err := r.store.AcquireRun(ctx, id, r.owner, r.clk.Now(), time.Minute); err != nil {
		return
	}
	_ = r.store.FinishRun(ctx, id, r.owner, research.StateDone, "", r.clk.Now())
}

// TestSchedulersRace: three schedulers, each with its own connection pool
// (as three `serve` processes would), tick at the same moments over five days
// that include New York's fall-back. Every due time of every schedule runs
// exactly once, and nothing else runs.
func TestSchedulersRace(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	start := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	end := start.Add(5 * 24 * time.Hour)
	specs := []struct{ spec, tz string }{
		{"@hourly", "UTC"},
		{"30 1 * * *", "America/New_York"}, // 01:30 repeats on 2026-11-01: still once
		{"0 9 * * 1", "Asia/Tokyo"},
		{"@every 3h", "Europe/London"},
		{"15 */2 * * *", "Europe/London"},
	}
	admin := openSchedules(t, dsn)
	var want []string
	for i, c := range specs {
		sc := schedule.Schedule{ID: fmt.Sprint("s", i), Channel: "C1", Owner: "U1", Topic: c.spec, Spec: c.spec, TZ: c.tz,
			Enabled: true, ActiveSince: start, CreatedAt: start, UpdatedAt: start}
		if err := admin.CreateSchedule(ctx, sc, 0); err != nil {
			t.Fatal(err)
		}
		dues, _ := schedule.MustParseSpec(c.spec).DueBetween(start, end, sc.Location(), start, 0)
		for _, d := range dues {
			want = append(want, sc.ID+"@"+d.UTC().Format(time.RFC3339))
		}
	}
	rec := &recorder{runs: map[string][]string{}}
	var scheds []*schedule.Scheduler
	var clocks []*clock.Manual
	for i := range 3 {
		clk := clock.NewManual(start)
		clocks = append(clocks, clk)
		owner := fmt.Sprint("replica-", i)
		st, err := postgres.Open(ctx, postgres.Options{URL: dsn, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		scheds = append(scheds, &schedule.Scheduler{Store: postgres.NewSchedules(st), Runs: ownedRuns{rec, owner, postgres.NewRuns(st), clk},
			Clock: clk, Grace: time.Hour})
	}
	for now := start; !now.After(end); now = now.Add(10 * time.Minute) {
		var wg sync.WaitGroup
		for i, s := range scheds {
			clocks[i].Set(now.Add(time.Duration(i) * time.Second)) // replicas' clocks differ a little
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.Tick(ctx); err != nil {
					t.Errorf("tick: %v", err)
				}
			}()
		}
		wg.Wait()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	perOwner := map[string]int{}
	for _, k := range want {
		owners := rec.runs[k]
		if len(owners) != 1 {
			t.Errorf("%s ran %d times (%v), want once", k, len(owners), owners)
			continue
		}
		perOwner[owners[0]]++
	}
	if len(rec.runs) != len(want) {
		t.Errorf("%d distinct firings ran, want %d", len(rec.runs), len(want))
	}
	t.Logf("%d firings, by replica: %v", len(want), perOwner)
	for i := range specs {
		fs, err := admin.ListFirings(ctx, fmt.Sprint("s", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.State != schedule.FiringDone {
				t.Errorf("firing %s@%s is %s", f.ScheduleID, f.Due, f.State)
			}
		}
	}
}
