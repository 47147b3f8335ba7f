package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/schedule"
)

// NewScheduleStore opens an isolated, empty schedule store for one
// subtest, with the run store on the same database (a firing that ran
// shows its digest run's state).
type NewScheduleStore func(t *testing.T) (schedule.Store, research.Store)

var scheduleT0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func mk(id, channel string) schedule.Schedule {
	return schedule.Schedule{
		ID: id, Team: "T1", Channel: channel, Owner: "U1", Topic: "competitor news " + id,
		Spec: "0 9 * * 1", TZ: "Asia/Tokyo", Enabled: true,
		Options:     schedule.Options{Depth: schedule.DepthQuick, Approval: true, Language: "ja"},
		ActiveSince: scheduleT0, CreatedAt: scheduleT0, UpdatedAt: scheduleT0,
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustSchedule(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func running(id string, due time.Time) schedule.Firing {
	return schedule.Firing{ScheduleID: id, Due: due, State: schedule.FiringRunning, ClaimedAt: due}
}

// withFiring creates schedule a in C1 and records f for it.
func withFiring(t *testing.T, s schedule.Store, f schedule.Firing) {
	t.Helper()
	ctx := ctxT(t)
	mustSchedule(t, s.CreateSchedule(ctx, mk("a", "C1"), 0))
	_, err := s.RecordFiring(ctx, f)
	mustSchedule(t, err)
}

// Schedules runs the conformance suite every schedule.Store passes.
func Schedules(t *testing.T, open NewScheduleStore) {
	only := func(f func(*testing.T, schedule.Store)) func(*testing.T) {
		return func(t *testing.T) {
			s, _ := open(t)
			f(t, s)
		}
	}
	t.Run("ScheduleCRUD", only(testCRUD))
	t.Run("ChannelLimit", only(testLimit))
	t.Run("ChannelLimitConcurrent", only(testLimitConcurrent))
	t.Run("RecordOnce", only(testRecordOnce))
	t.Run("FiringShowsItsRun", func(t *testing.T) { testFiringRun(t)(open(t)) })
	t.Run("Digests", only(testDigests))
	t.Run("DeleteCascades", only(testDelete))
	t.Run("HostileText", only(testScheduleHostileText))
}

func testCRUD(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	a, b := mk("a", "C1"), mk("b", "C2")
	b.CreatedAt = scheduleT0.Add(time.Minute)
	b.Owner = "U2"
	mustSchedule(t, s.CreateSchedule(ctx, a, 0))
	mustSchedule(t, s.CreateSchedule(ctx, b, 0))
	if err := s.CreateSchedule(ctx, a, 0); !errors.Is(err, schedule.ErrAlreadyExists) {
		t.Fatalf("duplicate create: %v, want ErrAlreadyExists", err)
	}
	got, err := s.GetSchedule(ctx, "a")
	mustSchedule(t, err)
	if got.Topic != a.Topic || got.Spec != a.Spec || got.TZ != a.TZ || got.Options != a.Options || !got.Enabled ||
		!got.CreatedAt.Equal(a.CreatedAt) || !got.ActiveSince.Equal(a.ActiveSince) || got.Owner != "U1" || got.Channel != "C1" || got.Team != "T1" {
		t.Fatalf("Get = %+v, want %+v", got, a)
	}
	if !got.LastDue.IsZero() {
		t.Fatalf("LastDue of a schedule that never fired = %v", got.LastDue)
	}
	if _, err := s.GetSchedule(ctx, "nope"); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
	a.Enabled, a.Topic, a.Spec, a.TZ = false, "new topic", "@daily", "Europe/London"
	a.Options = schedule.Options{Depth: schedule.DepthDeep}
	a.UpdatedAt, a.ActiveSince = scheduleT0.Add(time.Hour), scheduleT0.Add(time.Hour)
	mustSchedule(t, s.UpdateSchedule(ctx, a))
	got, err = s.GetSchedule(ctx, "a")
	mustSchedule(t, err)
	if got.Enabled || got.Topic != "new topic" || got.Spec != "@daily" || got.TZ != "Europe/London" || got.Options != a.Options ||
		!got.UpdatedAt.Equal(a.UpdatedAt) || !got.ActiveSince.Equal(a.ActiveSince) || !got.CreatedAt.Equal(scheduleT0) {
		t.Fatalf("after update: %+v", got)
	}
	if err := s.UpdateSchedule(ctx, mk("nope", "C1")); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	all, err := s.ListSchedules(ctx, schedule.Filter{})
	mustSchedule(t, err)
	if len(all) != 2 || all[0].ID != "a" || all[1].ID != "b" {
		t.Fatalf("List all = %v", ids(all))
	}
	for _, c := range []struct {
		f    schedule.Filter
		want string
	}{
		{schedule.Filter{Channel: "C2"}, "b"},
		{schedule.Filter{Owner: "U1"}, "a"},
		{schedule.Filter{EnabledOnly: true}, "b"},
	} {
		l, err := s.ListSchedules(ctx, c.f)
		mustSchedule(t, err)
		if len(l) != 1 || l[0].ID != c.want {
			t.Fatalf("List(%+v) = %v, want [%s]", c.f, ids(l), c.want)
		}
	}
	mustSchedule(t, s.DeleteSchedule(ctx, "a"))
	if err := s.DeleteSchedule(ctx, "a"); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func ids(l []schedule.Schedule) []string {
	var out []string
	for _, s := range l {
		out = append(out, s.ID)
	}
	return out
}

func testLimit(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	mustSchedule(t, s.CreateSchedule(ctx, mk("1", "C1"), 2))
	mustSchedule(t, s.CreateSchedule(ctx, mk("2", "C1"), 2))
	if err := s.CreateSchedule(ctx, mk("3", "C1"), 2); !errors.Is(err, schedule.ErrLimit) {
		t.Fatalf("third in channel: %v, want ErrLimit", err)
	}
	mustSchedule(t, s.CreateSchedule(ctx, mk("4", "C2"), 2))
}

func testLimitConcurrent(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	n := race(8, func(i int) int {
		return wonUnless(t, s.CreateSchedule(ctx, mk(fmt.Sprint("c", i), "C9"), 3), schedule.ErrLimit)
	})
	if n != 3 {
		t.Fatalf("created %d schedules concurrently with a limit of 3", n)
	}
}

func testRecordOnce(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	mustSchedule(t, s.CreateSchedule(ctx, mk("a", "C1"), 0))
	due := scheduleT0.Add(7 * 24 * time.Hour)
	n := race(16, func(int) int {
		return won(t)(s.RecordFiring(ctx, running("a", due)))
	})
	if n != 1 {
		t.Fatalf("%d records of one firing succeeded, want 1", n)
	}
	f, err := s.GetFiring(ctx, "a", due)
	mustSchedule(t, err)
	if f.State != schedule.FiringRunning || !f.Due.Equal(due) || f.Manual {
		t.Fatalf("firing = %+v", f)
	}
	sc, err := s.GetSchedule(ctx, "a")
	mustSchedule(t, err)
	if !sc.LastDue.Equal(due) {
		t.Fatalf("LastDue = %v, want %v", sc.LastDue, due)
	}
	l, err := s.ListSchedules(ctx, schedule.Filter{})
	mustSchedule(t, err)
	if !l[0].LastDue.Equal(due) {
		t.Fatalf("List LastDue = %v, want %v", l[0].LastDue, due)
	}
	if _, err := s.RecordFiring(ctx, running("missing", due)); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("record for a missing schedule: %v, want ErrNotFound", err)
	}
	// A skipped firing keeps its state and why.
	skipped := schedule.Firing{ScheduleID: "a", Due: scheduleT0, State: schedule.FiringSkipped, ClaimedAt: due, Error: "missed"}
	ok, err := s.RecordFiring(ctx, skipped)
	mustSchedule(t, err)
	if !ok {
		t.Fatal("record of an earlier due time failed")
	}
	f, err = s.GetFiring(ctx, "a", scheduleT0)
	mustSchedule(t, err)
	if f.State != schedule.FiringSkipped || f.Error != "missed" || !f.ClaimedAt.Equal(due) {
		t.Fatalf("skipped firing = %+v", f)
	}
	fs, err := s.ListFirings(ctx, "a", 0)
	mustSchedule(t, err)
	if len(fs) != 2 || !fs[0].Due.Equal(due) || !fs[1].Due.Equal(scheduleT0) {
		t.Fatalf("ListFirings = %+v", fs)
	}
	fs, err = s.ListFirings(ctx, "a", 1)
	mustSchedule(t, err)
	if len(fs) != 1 {
		t.Fatalf("ListFirings limit 1 = %d", len(fs))
	}
	if err := s.RecordOutcome(ctx, "a", due.Add(time.Hour), schedule.Outcome{Error: "x"}); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("outcome of a missing firing: %v, want ErrNotFound", err)
	}
}

// testFiringRun: a firing that ran shows its digest run's state, lease and
// error, from queued to its end; a declined one is skipped.
func testFiringRun(t *testing.T) func(schedule.Store, research.Store) {
	return func(s schedule.Store, runs research.Store) {
		ctx := ctxT(t)
		sc := mk("a", "C1")
		mustSchedule(t, s.CreateSchedule(ctx, sc, 0))
		state := func(due time.Time, want schedule.FiringState) schedule.Firing {
			t.Helper()
			f, err := s.GetFiring(ctx, "a", due)
			mustSchedule(t, err)
			if f.State != want {
				t.Fatalf("firing %s: state %q, want %q (%+v)", due, f.State, want, f)
			}
			return f
		}
		now := scheduleT0
		fire := func(due time.Time, approval bool) string {
			t.Helper()
			r := schedule.DigestRun(sc, due, !approval, now)
			mustSchedule(t, runs.CreateRun(ctx, r, 0))
			_, err := s.RecordFiring(ctx, running("a", due))
			mustSchedule(t, err)
			got, err := runs.Run(ctx, r.ID)
			mustSchedule(t, err)
			if of := got.Options.Digest; of == nil || of.Schedule != "a" || !of.Due.Equal(due) || of.Manual == approval || got.Options.ApproveStart != approval {
				t.Fatalf("digest run read back as %+v (%+v)", got.Options, of)
			}
			return r.ID
		}
		// Done, with the lease while it runs.
		d1 := scheduleT0
		id := fire(d1, false)
		state(d1, schedule.FiringRunning)
		_, err := runs.AcquireRun(ctx, id, "p1", now, time.Minute)
		mustSchedule(t, err)
		if f := state(d1, schedule.FiringRunning); f.Owner != "p1" || f.Attempts != 1 || !f.LeaseUntil.Equal(now.Add(time.Minute)) {
			t.Fatalf("running firing = %+v", f)
		}
		mustSchedule(t, runs.FinishRun(ctx, id, "p1", research.StateDone, "", now.Add(time.Minute)))
		if f := state(d1, schedule.FiringDone); !f.FinishedAt.Equal(now.Add(time.Minute)) {
			t.Fatalf("done firing = %+v", f)
		}
		// Failed, with the run's error.
		d2 := scheduleT0.Add(time.Hour)
		id = fire(d2, false)
		_, err = runs.AcquireRun(ctx, id, "p1", now, time.Minute)
		mustSchedule(t, err)
		mustSchedule(t, runs.FinishRun(ctx, id, "p1", research.StateFailed, "boom", now))
		if f := state(d2, schedule.FiringFailed); f.Error != "boom" {
			t.Fatalf("failed firing = %+v", f)
		}
		// Waiting for approval, then declined.
		d3 := scheduleT0.Add(2 * time.Hour)
		id = fire(d3, true)
		_, err = runs.AcquireRun(ctx, id, "p1", now, time.Minute)
		mustSchedule(t, err)
		mustSchedule(t, runs.WaitRun(ctx, id, "p1", research.PendingInterrupt{ID: research.StartInterruptID, Kind: research.InterruptStart}, now))
		state(d3, schedule.FiringWaiting)
		_, err = runs.Decide(ctx, id, research.Decision{InterruptID: research.StartInterruptID, Action: research.ActionCancel, By: "U1", At: now})
		mustSchedule(t, err)
		mustSchedule(t, s.RecordOutcome(ctx, "a", d3, schedule.Outcome{Error: "declined by U1"}))
		if f := state(d3, schedule.FiringSkipped); f.Error != "declined by U1" {
			t.Fatalf("declined firing = %+v", f)
		}
	}
}

func testDigests(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	mustSchedule(t, s.CreateSchedule(ctx, mk("a", "C1"), 0))
	mustSchedule(t, s.CreateSchedule(ctx, mk("b", "C1"), 0))
	week := 7 * 24 * time.Hour
	if _, err := s.PreviousDigest(ctx, "a", scheduleT0.Add(10*week)); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("no digest yet: %v", err)
	}
	post := func(id string, due time.Time, _ schedule.FiringState, d *schedule.Digest) {
		t.Helper()
		_, err := s.RecordFiring(ctx, running(id, due))
		mustSchedule(t, err)
		if d != nil {
			mustSchedule(t, s.RecordOutcome(ctx, id, due, schedule.Outcome{Digest: d}))
		}
	}
	d1 := &schedule.Digest{Title: "w1", Summary: "s1", Findings: []string{"A rose 5%", "B launched X"},
		Sources: []research.Source{{URL: "https://a.example/1", Title: "A"}}, MessageTS: "1.1", NewFindings: 2, NewSources: 1}
	post("a", scheduleT0, schedule.FiringDone, d1)
	post("a", scheduleT0.Add(week), schedule.FiringFailed, nil)
	post("a", scheduleT0.Add(2*week), schedule.FiringDone, &schedule.Digest{Title: "w3"})
	post("b", scheduleT0.Add(week), schedule.FiringDone, &schedule.Digest{Title: "other"})
	f, err := s.PreviousDigest(ctx, "a", scheduleT0.Add(2*week))
	mustSchedule(t, err)
	if !f.Due.Equal(scheduleT0) || f.Digest == nil || f.Digest.Title != "w1" || f.Digest.Summary != "s1" || len(f.Digest.Findings) != 2 ||
		f.Digest.Findings[1] != "B launched X" || len(f.Digest.Sources) != 1 || f.Digest.Sources[0] != d1.Sources[0] ||
		f.Digest.MessageTS != "1.1" || f.Digest.NewFindings != 2 || f.Digest.NewSources != 1 {
		t.Fatalf("previous digest = %+v / %+v", f, f.Digest)
	}
	f, err = s.PreviousDigest(ctx, "a", scheduleT0.Add(3*week))
	mustSchedule(t, err)
	if f.Digest.Title != "w3" {
		t.Fatalf("latest digest = %+v", f.Digest)
	}
}

func testDelete(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	withFiring(t, s, running("a", scheduleT0))
	mustSchedule(t, s.DeleteSchedule(ctx, "a"))
	if _, err := s.GetFiring(ctx, "a", scheduleT0); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("firing of a deleted schedule: %v", err)
	}
	// The same id may be created again, with no history.
	mustSchedule(t, s.CreateSchedule(ctx, mk("a", "C1"), 0))
	fs, err := s.ListFirings(ctx, "a", 0)
	mustSchedule(t, err)
	if len(fs) != 0 {
		t.Fatalf("firings after re-create: %+v", fs)
	}
}
