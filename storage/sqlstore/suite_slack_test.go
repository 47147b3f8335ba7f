package sqlstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/slackstate"
)

// Slack runs the conformance suite of slackstate.Store. newStores returns
// an empty database's Slack store and its run store (on the same
// database: a place belongs to a run).
func Slack(t *testing.T, newStores func(t *testing.T) (slackstate.Store, research.Store)) {
	tests := []struct {
		name string
		fn   func(*testing.T, slackstate.Store, research.Store)
	}{
		{"ClaimEvent", only(testClaimEvent)},
		{"ClaimEventConcurrent", only(testClaimEventConcurrent)},
		{"Threads", only(testThreads)},
		{"CreateRunWithPlace", testCreateRunWithPlace},
		{"CreateRunRefusedLeavesNoPlace", testCreateRunRefused},
		{"StatusMessage", testStatusMessage},
		{"StatusMessageConcurrent", testStatusMessageConcurrent},
		{"StatusMessageWithoutPlace", testStatusMessageWithoutPlace},
		{"InboxPut", only(testInboxPut)},
		{"InboxPutConcurrent", only(testInboxPutConcurrent)},
		{"InboxClaim", only(testInboxClaim)},
		{"InboxClaimConcurrent", only(testInboxClaimConcurrent)},
		{"InboxLease", only(testInboxLease)},
		{"InboxPrune", only(testInboxPrune)},
		{"Instances", only(testInstances)},
		{"InstancesConcurrent", only(testInstancesConcurrent)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, runs := newStores(t)
			tc.fn(t, s, runs)
		})
	}
}

// only adapts a test of the Slack store alone.
func only(fn func(*testing.T, slackstate.Store)) func(*testing.T, slackstate.Store, research.Store) {
	return func(t *testing.T, s slackstate.Store, _ research.Store) { fn(t, s) }
}

func place(id, thread string) slackstate.Place {
	return slackstate.Place{RunID: id, Key: key(thread), Stream: true}
}

// testCreateRunWithPlace: CreateRun creates the run (as the run store
// reads it) and its place; a second creation of the same id is
// ErrConflict and keeps both as they were.
func testCreateRunWithPlace(t *testing.T, s slackstate.Store, runs research.Store) {
	c := ctx(t)
	_, err := s.Place(c, "r1")
	wantErr(t, err, slackstate.ErrNotFound)
	r := newRun("r1", "1.0", "U1")
	must(t, s.CreateRun(c, r, place("r1", "1.0"), 0))
	got, err := runs.Run(c, "r1")
	must(t, err)
	if got.State != research.StateQueued || got.Question != r.Question || got.ThreadID != r.ThreadID {
		t.Errorf("created run = %+v", got)
	}
	p, err := s.Place(c, "r1")
	must(t, err)
	if p != place("r1", "1.0") {
		t.Errorf("place = %+v, want %+v", p, place("r1", "1.0"))
	}
	again := place("r1", "9.0")
	again.Stream = false
	wantErr(t, s.CreateRun(c, r, again, 0), research.ErrConflict)
	if p, err := s.Place(c, "r1"); err != nil || p != place("r1", "1.0") {
		t.Errorf("place after a second creation = %+v, %v", p, err)
	}
	if ts, err := s.StatusMessage(c, "r1"); err != nil || ts != "" {
		t.Errorf("status message of a new run = %q, %v", ts, err)
	}
}

// testCreateRunRefused: a run refused for a busy thread or the per-user
// limit leaves no place (and no run).
func testCreateRunRefused(t *testing.T, s slackstate.Store, runs research.Store) {
	c := ctx(t)
	must(t, s.CreateRun(c, newRun("r1", "1.0", "U1"), place("r1", "1.0"), 0))
	wantErr(t, s.CreateRun(c, newRun("r2", "1.0", "U2"), place("r2", "1.0"), 0), research.ErrThreadBusy)
	wantErr(t, s.CreateRun(c, newRun("r3", "3.0", "U1"), place("r3", "3.0"), 1), research.ErrUserLimit)
	for _, id := range []string{"r2", "r3"} {
		if _, err := s.Place(c, id); !errors.Is(err, slackstate.ErrNotFound) {
			t.Errorf("place of refused %s: %v", id, err)
		}
		if _, err := runs.Run(c, id); !errors.Is(err, research.ErrNotFound) {
			t.Errorf("refused run %s: %v", id, err)
		}
	}
}

// testStatusMessage: the first ts recorded stays (set-if-empty); an
// unknown run is ErrNotFound.
func testStatusMessage(t *testing.T, s slackstate.Store, _ research.Store) {
	c := ctx(t)
	must(t, s.CreateRun(c, newRun("r1", "1.0", "U1"), place("r1", "1.0"), 0))
	ts, err := s.SetStatusMessage(c, "r1", "1.1")
	must(t, err)
	ts2, err := s.SetStatusMessage(c, "r1", "1.2")
	must(t, err)
	if ts != "1.1" || ts2 != "1.1" {
		t.Errorf("status ts = %q, %q; want 1.1 twice", ts, ts2)
	}
	if got, err := s.StatusMessage(c, "r1"); err != nil || got != "1.1" {
		t.Errorf("StatusMessage = %q, %v", got, err)
	}
	p, err := s.Place(c, "r1")
	must(t, err)
	if want := (slackstate.Place{RunID: "r1", Key: key("1.0"), Stream: true, StatusTS: "1.1"}); p != want {
		t.Errorf("place = %+v, want %+v", p, want)
	}
	_, err = s.SetStatusMessage(c, "nope", "1.3")
	wantErr(t, err, slackstate.ErrNotFound)
	if got, err := s.StatusMessage(c, "nope"); err != nil || got != "" {
		t.Errorf("StatusMessage of an unknown run = %q, %v", got, err)
	}
}

// testStatusMessageConcurrent: of processes recording a status message
// for one run at once, one wins and all read its ts.
func testStatusMessageConcurrent(t *testing.T, s slackstate.Store, _ research.Store) {
	c := ctx(t)
	must(t, s.CreateRun(c, newRun("r1", "1.0", "U1"), place("r1", "1.0"), 0))
	var mu sync.Mutex
	seen := map[string]int{}
	race(8, func(i int) int {
		ts, err := s.SetStatusMessage(c, "r1", fmt.Sprintf("1.%d", i+1))
		if err != nil {
			t.Error(err)
			return 0
		}
		mu.Lock()
		seen[ts]++
		mu.Unlock()
		return 1
	})
	if len(seen) != 1 {
		t.Errorf("recorded status ts seen = %v, want one", seen)
	}
}

// testStatusMessageWithoutPlace: a run created without a place (a
// digest's, by the run store) gets one, with no thread, from its first
// status message.
func testStatusMessageWithoutPlace(t *testing.T, s slackstate.Store, runs research.Store) {
	c := ctx(t)
	r := newRun("digest:s1@1", "1.0", "")
	must(t, runs.CreateRun(c, r, 0))
	_, err := s.Place(c, r.ID)
	wantErr(t, err, slackstate.ErrNotFound)
	ts, err := s.SetStatusMessage(c, r.ID, "7.0")
	must(t, err)
	if ts2, err := s.SetStatusMessage(c, r.ID, "7.1"); err != nil || ts != "7.0" || ts2 != "7.0" {
		t.Errorf("status ts = %q, %q, %v; want 7.0 twice", ts, ts2, err)
	}
	p, err := s.Place(c, r.ID)
	must(t, err)
	if want := (slackstate.Place{RunID: r.ID, StatusTS: "7.0"}); p != want {
		t.Errorf("place = %+v, want %+v", p, want)
	}
}

func testClaimEvent(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	first, err := s.ClaimEvent(c, "ev:1", at(0))
	must(t, err)
	again, err := s.ClaimEvent(c, "ev:1", at(1))
	must(t, err)
	other, err := s.ClaimEvent(c, "ev:2", at(10))
	must(t, err)
	if !first || again || !other {
		t.Fatalf("claims = %v %v %v, want true false true", first, again, other)
	}
	n, err := s.PruneEvents(c, at(5))
	must(t, err)
	if n != 1 {
		t.Errorf("pruned %d, want 1", n)
	}
	if ok, _ := s.ClaimEvent(c, "ev:1", at(11)); !ok {
		t.Error("a pruned key cannot be claimed again")
	}
	if ok, _ := s.ClaimEvent(c, "ev:2", at(11)); ok {
		t.Error("a key newer than the prune time was forgotten")
	}
}

func testClaimEventConcurrent(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	wins := race(16, func(int) int { return won(t)(s.ClaimEvent(c, "ev:race", at(0))) })
	if wins != 1 {
		t.Fatalf("%d winners, want 1", wins)
	}
}

func testThreads(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	_, err := s.Thread(c, key("1.0"))
	wantErr(t, err, slackstate.ErrNotFound)
	th := slackstate.Thread{Key: key("1.0"), ThreadID: key("1.0").ThreadID(), Requester: "U1", DM: true, CreatedAt: at(0)}
	got, err := s.PutThread(c, th)
	must(t, err)
	if got != th {
		t.Fatalf("PutThread = %+v", got)
	}
	other := th
	other.Requester = "U2"
	got, err = s.PutThread(c, other)
	must(t, err)
	if got.Requester != "U1" {
		t.Errorf("second PutThread replaced the mapping: %+v", got)
	}
	got, err = s.Thread(c, key("1.0"))
	must(t, err)
	if got != th {
		t.Errorf("Thread = %+v, want %+v", got, th)
	}
}

func entry(key string, received float64, owner string, lease time.Duration) slackstate.InboxEntry {
	return slackstate.InboxEntry{Key: key, Type: "events_api", EnvelopeID: "env-" + key,
		Payload:    []byte(`{"event_id":"` + key + `","event":{"type":"app_mention","text":"調べて <@U0>"}}`),
		ReceivedAt: at(received), Owner: owner, LeaseUntil: at(received).Add(lease)}
}

func put(t *testing.T, s slackstate.Store, e slackstate.InboxEntry) {
	t.Helper()
	if !putOne(t, s, e) {
		t.Fatalf("first put of %s refused", e.Key)
	}
}

func putOne(t *testing.T, s slackstate.Store, e slackstate.InboxEntry) bool {
	t.Helper()
	ok, err := s.PutInbox(ctx(t), []slackstate.InboxEntry{e})
	must(t, err)
	if len(ok) != 1 {
		t.Fatalf("PutInbox of 1 entry answered %v", ok)
	}
	return ok[0]
}

func keys(es []slackstate.InboxEntry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key)
	}
	return fmt.Sprint(out)
}

func testInboxPut(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	_, err := s.InboxEntry(c, "ev:1")
	wantErr(t, err, slackstate.ErrNotFound)
	e := entry("ev:1", 0.123, "A", 30*time.Second)
	put(t, s, e)
	got, err := s.InboxEntry(c, "ev:1")
	must(t, err)
	if got.Key != e.Key || got.Type != e.Type || got.EnvelopeID != e.EnvelopeID || string(got.Payload) != string(e.Payload) ||
		!got.ReceivedAt.Equal(e.ReceivedAt) || got.Owner != "A" || !got.LeaseUntil.Equal(e.LeaseUntil) ||
		got.Attempts != 1 || got.Done() {
		t.Fatalf("stored entry:\n got %+v\nwant %+v", got, e)
	}
	// A redelivery (any process) is refused and changes nothing.
	again := entry("ev:1", 5, "B", time.Minute)
	again.Payload = []byte(`{}`)
	if putOne(t, s, again) {
		t.Fatal("duplicate put accepted")
	}
	got, _ = s.InboxEntry(c, "ev:1")
	if got.Owner != "A" || string(got.Payload) != string(e.Payload) || got.Attempts != 1 {
		t.Errorf("duplicate put changed the entry: %+v", got)
	}
	// Several at once (a burst stored in one write): new keys are stored,
	// a known key and a key repeated in the batch are not.
	ok, err := s.PutInbox(c, []slackstate.InboxEntry{entry("ev:2", 6, "B", time.Minute), entry("ev:1", 6, "B", time.Minute),
		entry("ev:3", 6, "B", time.Minute), entry("ev:2", 6, "C", time.Minute)})
	must(t, err)
	if fmt.Sprint(ok) != "[true false true false]" {
		t.Errorf("batch put = %v, want [true false true false]", ok)
	}
	for _, k := range []string{"ev:2", "ev:3"} {
		if got, err := s.InboxEntry(c, k); err != nil || got.Owner != "B" || got.Attempts != 1 {
			t.Errorf("%s = %+v, %v", k, got, err)
		}
	}
	if ok, err := s.PutInbox(c, nil); err != nil || len(ok) != 0 {
		t.Errorf("empty put = %v, %v", ok, err)
	}
}

func testInboxPutConcurrent(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	wins := race(16, func(i int) int {
		ok, err := s.PutInbox(c, []slackstate.InboxEntry{entry("ev:race", 0, fmt.Sprintf("P%d", i), time.Minute)})
		return won(t)(err == nil && ok[0], err)
	})
	if wins != 1 {
		t.Fatalf("%d puts accepted, want 1", wins)
	}
}

func testInboxClaim(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	put(t, s, entry("ev:live", 0, "A", 30*time.Second))  // A works on it until 30
	put(t, s, entry("ev:old", 1, "A", 5*time.Second))    // A's lease ran out at 6
	put(t, s, entry("ev:orphan", 2, "", 0))              // nobody took it on
	put(t, s, entry("ev:done", 0.5, "A", 5*time.Second)) // handled
	put(t, s, entry("ev:later", 3, "A", 5*time.Second))  // lease until 8
	must(t, s.FinishInbox(c, "ev:done", "A", at(1)))

	got, err := s.ClaimInbox(c, "B", at(7), time.Minute, 0)
	must(t, err)
	if keys(got) != "[ev:old ev:orphan]" {
		t.Fatalf("claimed %s at 7, want [ev:old ev:orphan] (oldest first)", keys(got))
	}
	for _, e := range got {
		if e.Owner != "B" || !e.LeaseUntil.Equal(at(67)) || e.Attempts != 2 || len(e.Payload) == 0 || e.Done() {
			t.Errorf("claimed entry = %+v", e)
		}
	}
	// Held by B now: not claimable again until B's lease runs out.
	got, err = s.ClaimInbox(c, "C", at(9), time.Minute, 1)
	must(t, err)
	if keys(got) != "[ev:later]" {
		t.Fatalf("claimed %s at 9 with limit 1, want [ev:later]", keys(got))
	}
	got, err = s.ClaimInbox(c, "C", at(10), time.Minute, 0)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("claimed %s at 10, want nothing", keys(got))
	}
	// Everything not done comes back once its lease expires.
	got, err = s.ClaimInbox(c, "D", at(100), time.Minute, 0)
	must(t, err)
	if keys(got) != "[ev:live ev:old ev:orphan ev:later]" {
		t.Fatalf("claimed %s at 100", keys(got))
	}
	if got[1].Attempts != 3 || got[0].Attempts != 2 {
		t.Errorf("attempts = %d, %d; want 2, 3", got[0].Attempts, got[1].Attempts)
	}
}

func testInboxClaimConcurrent(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	for i := range 6 {
		put(t, s, entry(fmt.Sprintf("ev:%d", i), float64(i), "dead", time.Second))
	}
	got := claimRace(t, 8, 2, func(owner string, limit int) ([]slackstate.InboxEntry, error) {
		return s.ClaimInbox(c, owner, at(60), time.Minute, limit)
	}, func(e slackstate.InboxEntry) string { return e.Key }, func(owner string, e slackstate.InboxEntry) bool {
		return e.Owner == owner && e.Attempts == 2
	})
	if len(got) != 6 {
		t.Fatalf("claimed %v, want each of 6 entries once", got)
	}
}

func testInboxLease(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	put(t, s, entry("ev:1", 0, "A", 10*time.Second))
	must(t, s.ExtendInbox(c, "ev:1", "A", at(8), 10*time.Second))
	wantErr(t, s.ExtendInbox(c, "ev:1", "B", at(8), 10*time.Second), slackstate.ErrLeaseLost)
	wantErr(t, s.ExtendInbox(c, "nope", "A", at(8), 10*time.Second), slackstate.ErrNotFound)
	wantErr(t, s.FinishInbox(c, "nope", "A", at(8)), slackstate.ErrNotFound)
	if got, _ := s.ClaimInbox(c, "B", at(17), time.Minute, 0); len(got) != 0 {
		t.Fatalf("claimed %s under an extended lease", keys(got))
	}
	// A's lease runs out: B takes over and A is fenced off.
	got, err := s.ClaimInbox(c, "B", at(19), 10*time.Second, 0)
	must(t, err)
	if keys(got) != "[ev:1]" {
		t.Fatalf("takeover claimed %s", keys(got))
	}
	wantErr(t, s.ExtendInbox(c, "ev:1", "A", at(20), 10*time.Second), slackstate.ErrLeaseLost)
	wantErr(t, s.FinishInbox(c, "ev:1", "A", at(20)), slackstate.ErrLeaseLost)
	must(t, s.FinishInbox(c, "ev:1", "B", at(21)))
	e, err := s.InboxEntry(c, "ev:1")
	must(t, err)
	if !e.Done() || !e.DoneAt.Equal(at(21)) || e.Owner != "" || len(e.Payload) != 0 || e.Attempts != 2 {
		t.Errorf("done entry = %+v", e)
	}
	wantErr(t, s.FinishInbox(c, "ev:1", "B", at(22)), slackstate.ErrLeaseLost)
	wantErr(t, s.ExtendInbox(c, "ev:1", "B", at(22), time.Second), slackstate.ErrLeaseLost)
	if got, _ := s.ClaimInbox(c, "C", at(1000), time.Minute, 0); len(got) != 0 {
		t.Errorf("a done entry was claimed: %s", keys(got))
	}
	// Done, the key still refuses a redelivery.
	if putOne(t, s, entry("ev:1", 30, "C", time.Second)) {
		t.Error("a done entry's key was put again")
	}
}

func testInboxPrune(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	put(t, s, entry("ev:old-done", 0, "A", time.Second))
	put(t, s, entry("ev:old-pending", 1, "A", time.Second))
	put(t, s, entry("ev:new-done", 20, "A", time.Second))
	must(t, s.FinishInbox(c, "ev:old-done", "A", at(0.5)))
	must(t, s.FinishInbox(c, "ev:new-done", "A", at(20.5)))
	claimed, err := s.ClaimEvent(c, "msg:C1:1.0", at(2))
	must(t, err)
	if !claimed {
		t.Fatal("claim event")
	}
	n, err := s.PruneEvents(c, at(10))
	must(t, err)
	if n != 2 {
		t.Errorf("pruned %d, want 2 (one event id, one done entry)", n)
	}
	if _, err := s.InboxEntry(c, "ev:old-done"); !errors.Is(err, slackstate.ErrNotFound) {
		t.Errorf("old done entry not pruned: %v", err)
	}
	for _, k := range []string{"ev:old-pending", "ev:new-done"} {
		if _, err := s.InboxEntry(c, k); err != nil {
			t.Errorf("%s pruned: %v", k, err)
		}
	}
	// A pruned key is forgotten: it can be put again.
	if !putOne(t, s, entry("ev:old-done", 30, "B", time.Second)) {
		t.Error("a pruned key cannot be put again")
	}
}

func live(t *testing.T, s slackstate.Store, since float64) int {
	t.Helper()
	n, err := s.LiveInstances(ctx(t), at(since))
	must(t, err)
	return n
}

// The instance registry: a touch makes an instance live from its time on
// (the window is the caller's since, inclusive), a later touch moves it,
// touching again does not count it twice, leaving forgets it at once (also
// an unknown id), and PruneEvents forgets instances last seen before its
// time.
func testInstances(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	if n := live(t, s, 0); n != 0 {
		t.Fatalf("live = %d in an empty store, want 0", n)
	}
	must(t, s.TouchInstance(c, "A", at(10)))
	must(t, s.TouchInstance(c, "B", at(12)))
	must(t, s.TouchInstance(c, "A", at(14)))
	must(t, s.TouchInstance(c, "A", at(14))) // the same time again
	for _, tc := range []struct {
		since float64
		want  int
	}{{0, 2}, {12, 2}, {12.001, 1}, {14, 1}, {14.001, 0}} {
		if n := live(t, s, tc.since); n != tc.want {
			t.Errorf("live since %vs = %d, want %d", tc.since, n, tc.want)
		}
	}
	// B stops announcing itself: it expires from a later window; A is
	// touched again and stays.
	must(t, s.TouchInstance(c, "A", at(20)))
	if n := live(t, s, 15); n != 1 {
		t.Errorf("live since 15s = %d, want 1 (B expired)", n)
	}
	must(t, s.TouchInstance(c, "C", at(21)))
	if n := live(t, s, 15); n != 2 {
		t.Errorf("live since 15s = %d, want 2 (A and C)", n)
	}
	must(t, s.LeaveInstance(c, "C"))
	must(t, s.LeaveInstance(c, "C"))       // again: not an error
	must(t, s.LeaveInstance(c, "unknown")) // never touched: not an error
	if n := live(t, s, 15); n != 1 {
		t.Errorf("live since 15s after C left = %d, want 1", n)
	}
	// C comes back after leaving.
	must(t, s.TouchInstance(c, "C", at(22)))
	if n := live(t, s, 15); n != 2 {
		t.Errorf("live since 15s after C came back = %d, want 2", n)
	}
	// Pruning forgets B (seen at 12), not A (20) nor C (22); the count
	// includes it.
	n, err := s.PruneEvents(c, at(15))
	must(t, err)
	if n != 1 {
		t.Errorf("pruned %d, want 1 (instance B)", n)
	}
	if n := live(t, s, 0); n != 2 {
		t.Errorf("live since 0 after the prune = %d, want 2 (B forgotten)", n)
	}
}

// Instances touching and leaving at once are each counted once.
func testInstancesConcurrent(t *testing.T, s slackstate.Store) {
	c := ctx(t)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			id := fmt.Sprintf("P%d", i)
			for k := range 5 {
				if err := s.TouchInstance(c, id, at(float64(k))); err != nil {
					t.Error(err)
				}
			}
			if i%4 == 0 {
				if err := s.LeaveInstance(c, id); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := live(t, s, 4); n != 12 {
		t.Errorf("live = %d, want 12 (16 touched, 4 left)", n)
	}
	if n := live(t, s, 4.001); n != 0 {
		t.Errorf("live after the last touch = %d, want 0", n)
	}
}
