package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/slackstate"
)

var raceT0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func raceRun(id, thread, user string) research.Run {
	k := slackstate.ThreadKey{Team: "T1", Channel: "C1", ThreadTS: thread}
	return research.Run{ID: id, ThreadID: k.ThreadID(), Requester: user, Question: "q " + id, CreatedAt: raceT0, UpdatedAt: raceT0}
}

// RunsTwoHandles races goroutines over two Stores on one database (two
// connection pools, or two processes' worth of handles): acquiring a run,
// deciding an interrupt, creating runs on one thread and under a per-user
// limit, bulk acquiring, storing a redelivered envelope in the inbox and
// taking over inbox entries must each succeed exactly as often as the rules
// allow, whichever handle the callers use; and the instances announced
// through either handle are counted through both. sa and sb are the Slack
// stores (inbox, instances) on a's and b's handles.
func RunsTwoHandles(t *testing.T, a, b research.Store, sa, sb slackstate.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x := &twoHandles{t: t, ctx: ctx, h: [2]research.Store{a, b}, slack: [2]slackstate.Store{sa, sb}}
	x.acquireAndDecide()
	x.createRun()
	x.acquireRuns()
	x.inbox()
	x.instances()
}

// twoHandles is the state of RunsTwoHandles.
type twoHandles struct {
	t     *testing.T
	ctx   context.Context
	h     [2]research.Store
	slack [2]slackstate.Store // the same handles' Slack stores
	mu    sync.Mutex
}

// race runs fn on 10 goroutines, alternating handles, and returns how many
// succeeded and the last that did.
func (x *twoHandles) race(fn func(i int, s research.Store) error) (wins int, winner int) {
	const n = 10
	var mu sync.Mutex
	var wg sync.WaitGroup
	winner = -1
	for i := range n {
		wg.Go(func() {
			if err := fn(i, x.h[i%2]); err == nil {
				mu.Lock()
				wins++
				winner = i
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return wins, winner
}

// acquireAndDecide: a run is acquired by one caller, and its interrupt
// decided by one.
func (x *twoHandles) acquireAndDecide() {
	t, ctx, h, race := x.t, x.ctx, x.h, x.race
	for round := range 5 {
		id := fmt.Sprintf("r%d", round)
		if err := h[round%2].CreateRun(ctx, raceRun(id, fmt.Sprintf("%d.0", round), "U1"), 0); err != nil {
			t.Fatal(err)
		}
		wins, winner := race(func(i int, s research.Store) error {
			_, err := s.AcquireRun(ctx, id, fmt.Sprintf("P%d", i), raceT0, time.Minute)
			if err != nil && !errors.Is(err, research.ErrNotAcquired) {
				t.Error(err)
			}
			return err
		})
		if wins != 1 {
			t.Fatalf("round %d: %d owners, want 1", round, wins)
		}
		owner := fmt.Sprintf("P%d", winner)
		for _, s := range h {
			if r, err := s.Run(ctx, id); err != nil || r.Owner != owner || r.Attempt != 1 {
				t.Fatalf("round %d: run = %+v, %v; want owner %s, attempt 1", round, r, err, owner)
			}
		}
		if err := h[(winner+1)%2].WaitRun(ctx, id, owner, research.PendingInterrupt{ID: "i", Kind: research.InterruptDraft}, raceT0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		wins, winner = race(func(i int, s research.Store) error {
			_, err := s.Decide(ctx, id, research.Decision{InterruptID: "i", Action: research.ActionApprove, By: fmt.Sprintf("U%d", i), At: raceT0.Add(2 * time.Second)})
			if err != nil && !errors.Is(err, research.ErrAlreadyDecided) {
				t.Error(err)
			}
			return err
		})
		if wins != 1 {
			t.Fatalf("round %d: %d decisions, want 1", round, wins)
		}
		for _, s := range h {
			r, err := s.Run(ctx, id)
			if err != nil || r.State != research.StateQueued || r.Decision == nil || r.Decision.By != fmt.Sprintf("U%d", winner) {
				t.Fatalf("round %d: decided run = %+v, %v; want decision by U%d", round, r, err, winner)
			}
		}
		if _, _, err := h[round%2].RequestCancel(ctx, id, "U1", raceT0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
	}

}

// createRun: CreateRun's checks hold across handles.
func (x *twoHandles) createRun() {
	t, ctx, race := x.t, x.ctx, x.race
	// CreateRun's checks hold across handles: one run per thread, and at
	// most 3 active runs for a user.
	wins, _ := race(func(i int, s research.Store) error {
		err := s.CreateRun(ctx, raceRun(fmt.Sprintf("t%d", i), "same.0", fmt.Sprintf("V%d", i)), 0)
		if err != nil && !errors.Is(err, research.ErrThreadBusy) {
			t.Error(err)
		}
		return err
	})
	if wins != 1 {
		t.Errorf("%d runs created on one thread, want 1", wins)
	}
	wins, _ = race(func(i int, s research.Store) error {
		err := s.CreateRun(ctx, raceRun(fmt.Sprintf("u%d", i), fmt.Sprintf("u%d.0", i), "W"), 3)
		if err != nil && !errors.Is(err, research.ErrUserLimit) {
			t.Error(err)
		}
		return err
	})
	if wins != 3 {
		t.Errorf("%d runs created for a user limited to 3, want 3", wins)
	}

}

// acquireRuns: AcquireRuns gives each queued run to one caller.
func (x *twoHandles) acquireRuns() {
	t, ctx, race, mu := x.t, x.ctx, x.race, &x.mu
	// AcquireRuns: each queued run goes to exactly one caller.
	got := map[string]int{}
	race(func(i int, s research.Store) error {
		runs, err := s.AcquireRuns(ctx, "", fmt.Sprintf("Q%d", i), raceT0.Add(time.Hour), time.Minute, 1)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range runs {
			got[r.ID]++
		}
		return err
	})
	if len(got) != 4 {
		t.Errorf("acquired %v, want the 4 queued runs (the thread race winner and 3 of W) once each", got)
	}
	for id, k := range got {
		if k != 1 {
			t.Errorf("run %s acquired %d times", id, k)
		}
	}

}

// inbox: an envelope is stored once, and taken over by one caller.
func (x *twoHandles) inbox() {
	t, ctx, race, mu := x.t, x.ctx, x.race, &x.mu
	// The inbox: a redelivered envelope is stored once whichever handle
	// (process) gets it, and an entry left by a dead process is taken over
	// by exactly one caller.
	for round := range 4 {
		key := fmt.Sprintf("ev:two-%d", round)
		wins, _ := race(func(i int, _ research.Store) error {
			ok, err := x.slack[i%2].PutInbox(ctx, []slackstate.InboxEntry{{Key: key, Type: "events_api", EnvelopeID: fmt.Sprintf("e%d", i),
				Payload: []byte(`{}`), ReceivedAt: raceT0, Owner: "dead", LeaseUntil: raceT0.Add(time.Second)}})
			if err != nil {
				t.Error(err)
				return err
			}
			if !ok[0] {
				return errors.New("duplicate")
			}
			return nil
		})
		if wins != 1 {
			t.Fatalf("inbox round %d: %d puts accepted, want 1", round, wins)
		}
	}
	claimed := map[string]int{}
	race(func(i int, _ research.Store) error {
		es, err := x.slack[i%2].ClaimInbox(ctx, fmt.Sprintf("P%d", i), raceT0.Add(time.Minute), time.Minute, 1)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range es {
			claimed[e.Key]++
		}
		return err
	})
	if len(claimed) != 4 {
		t.Errorf("claimed %v, want the 4 entries once each", claimed)
	}
	for k, n := range claimed {
		if n != 1 {
			t.Errorf("entry %s claimed %d times", k, n)
		}
	}

}

// instances: the registry is shared by the handles.
func (x *twoHandles) instances() {
	t, ctx, h := x.t, x.ctx, x.slack
	// The instance registry: two processes see each other, and one that
	// leaves is gone for both.
	for i, s := range h {
		if err := s.TouchInstance(ctx, fmt.Sprintf("I%d", i), raceT0); err != nil {
			t.Fatal(err)
		}
	}
	liveIn := func(want int) {
		t.Helper()
		for i, s := range h {
			if n, err := s.LiveInstances(ctx, raceT0.Add(-time.Second)); err != nil || n != want {
				t.Errorf("handle %d: live instances = %d, %v; want %d", i, n, err, want)
			}
		}
	}
	liveIn(2)
	if err := h[0].LeaveInstance(ctx, "I1"); err != nil {
		t.Fatal(err)
	}
	liveIn(1)
}
