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

// NewScheduleStore opens an isolated, empty store for one subtest.
type NewScheduleStore func(t *testing.T) schedule.Store

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

func running(id string, due time.Time, owner string, lease time.Time) schedule.Firing {
	return schedule.Firing{ScheduleID: id, Due: due, State: schedule.FiringRunning, Owner: owner, LeaseUntil: lease, Attempts: 1, ClaimedAt: due}
}

// withFiring creates schedule a in C1 and claims f for it.
func withFiring(t *testing.T, s schedule.Store, f schedule.Firing) {
	t.Helper()
	ctx := ctxT(t)
	mustSchedule(t, s.CreateSchedule(ctx, mk("a", "C1"), 0))
	_, err := s.ClaimFiring(ctx, f)
	mustSchedule(t, err)
}

// Schedules runs the conformance suite every schedule.Store passes.
func Schedules(t *testing.T, open NewScheduleStore) {
	t.Run("ScheduleCRUD", func(t *testing.T) { testCRUD(t, open(t)) })
	t.Run("ChannelLimit", func(t *testing.T) { testLimit(t, open(t)) })
	t.Run("ChannelLimitConcurrent", func(t *testing.T) { testLimitConcurrent(t, open(t)) })
	t.Run("ClaimOnce", func(t *testing.T) { testClaimOnce(t, open(t)) })
	t.Run("LeaseRenewFinish", func(t *testing.T) { testLease(t, open(t)) })
	t.Run("TakeOver", func(t *testing.T) { testTakeOver(t, open(t)) })
	t.Run("Approve", func(t *testing.T) { testApprove(t, open(t)) })
	t.Run("Digests", func(t *testing.T) { testDigests(t, open(t)) })
	t.Run("DeleteCascades", func(t *testing.T) { testDelete(t, open(t)) })
	t.Run("HostileText", func(t *testing.T) { testScheduleHostileText(t, open(t)) })
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

func testClaimOnce(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	mustSchedule(t, s.CreateSchedule(ctx, mk("a", "C1"), 0))
	due := scheduleT0.Add(7 * 24 * time.Hour)
	n := race(16, func(i int) int {
		return won(t)(s.ClaimFiring(ctx, running("a", due, fmt.Sprint("p", i), due.Add(time.Minute))))
	})
	if n != 1 {
		t.Fatalf("%d claims of one firing succeeded, want 1", n)
	}
	f, err := s.GetFiring(ctx, "a", due)
	mustSchedule(t, err)
	if f.State != schedule.FiringRunning || !f.Due.Equal(due) || f.Attempts != 1 || f.Manual {
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
	if _, err := s.ClaimFiring(ctx, running("missing", due, "p", due)); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("claim for a missing schedule: %v, want ErrNotFound", err)
	}
	// A skipped firing is recorded in one claim.
	skipped := schedule.Firing{ScheduleID: "a", Due: scheduleT0, State: schedule.FiringSkipped, Owner: "p", ClaimedAt: due, FinishedAt: due, Error: "missed"}
	ok, err := s.ClaimFiring(ctx, skipped)
	mustSchedule(t, err)
	if !ok {
		t.Fatal("claim of an earlier due time failed")
	}
	f, err = s.GetFiring(ctx, "a", scheduleT0)
	mustSchedule(t, err)
	if f.State != schedule.FiringSkipped || f.Error != "missed" || !f.FinishedAt.Equal(due) {
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
}

func testLease(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	due := scheduleT0
	withFiring(t, s, running("a", due, "p1", due.Add(time.Minute)))
	mustSchedule(t, s.RenewFiring(ctx, "a", due, "p1", due.Add(2*time.Minute)))
	if err := s.RenewFiring(ctx, "a", due, "p2", due.Add(2*time.Minute)); !errors.Is(err, schedule.ErrLeaseLost) {
		t.Fatalf("renew by another owner: %v", err)
	}
	if err := s.FinishFiring(ctx, "a", due, "p2", schedule.Outcome{State: schedule.FiringDone}); !errors.Is(err, schedule.ErrLeaseLost) {
		t.Fatalf("finish by another owner: %v", err)
	}
	f, err := s.GetFiring(ctx, "a", due)
	mustSchedule(t, err)
	if !f.LeaseUntil.Equal(due.Add(2 * time.Minute)) {
		t.Fatalf("lease = %v", f.LeaseUntil)
	}
	mustSchedule(t, s.FinishFiring(ctx, "a", due, "p1", schedule.Outcome{State: schedule.FiringFailed, Error: "boom", FinishedAt: due.Add(time.Minute)}))
	if err := s.FinishFiring(ctx, "a", due, "p1", schedule.Outcome{State: schedule.FiringDone}); !errors.Is(err, schedule.ErrLeaseLost) {
		t.Fatalf("second finish: %v", err)
	}
	if err := s.RenewFiring(ctx, "a", due, "p1", due.Add(time.Hour)); !errors.Is(err, schedule.ErrLeaseLost) {
		t.Fatalf("renew of a finished firing: %v", err)
	}
	f, err = s.GetFiring(ctx, "a", due)
	mustSchedule(t, err)
	if f.State != schedule.FiringFailed || f.Error != "boom" || !f.FinishedAt.Equal(due.Add(time.Minute)) || f.Digest != nil {
		t.Fatalf("finished firing = %+v", f)
	}
}

func testTakeOver(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	due := scheduleT0
	withFiring(t, s, running("a", due, "dead", due.Add(time.Minute)))
	got, err := s.TakeOverFiring(ctx, "p", due.Add(30*time.Second), due.Add(3*time.Minute), 3)
	mustSchedule(t, err)
	if len(got) != 0 {
		t.Fatalf("took over a firing whose lease is valid: %+v", got)
	}
	now := due.Add(2 * time.Minute)
	taken := race(8, func(i int) int {
		fs, err := s.TakeOverFiring(ctx, fmt.Sprint("p", i), now, now.Add(2*time.Minute), 3)
		if err != nil {
			t.Errorf("take over: %v", err)
		}
		for _, f := range fs {
			if f.Attempts != 2 || f.Owner != fmt.Sprint("p", i) || f.State != schedule.FiringRunning {
				t.Errorf("taken firing = %+v", f)
			}
		}
		return len(fs)
	})
	if taken != 1 {
		t.Fatalf("the expired firing was taken over %d times, want 1", taken)
	}
	// Attempts exhausted: the next expiry fails it.
	now = now.Add(time.Hour)
	fs, err := s.TakeOverFiring(ctx, "q", now, now.Add(time.Minute), 2)
	mustSchedule(t, err)
	if len(fs) != 0 {
		t.Fatalf("took over after the last attempt: %+v", fs)
	}
	n, err := s.FailExpired(ctx, now, 2)
	mustSchedule(t, err)
	if n != 1 {
		t.Fatalf("FailExpired = %d, want 1", n)
	}
	f, err := s.GetFiring(ctx, "a", due)
	mustSchedule(t, err)
	if f.State != schedule.FiringFailed || f.Error == "" {
		t.Fatalf("abandoned firing = %+v", f)
	}
}

func testApprove(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	due := scheduleT0
	withFiring(t, s, schedule.Firing{ScheduleID: "a", Due: due, State: schedule.FiringWaiting, Owner: "p0", ClaimedAt: due})
	n := race(8, func(i int) int {
		f, err := s.ApproveFiring(ctx, "a", due, fmt.Sprint("p", i), due, due.Add(time.Minute))
		switch {
		case err == nil:
			if f.State != schedule.FiringRunning || f.Owner != fmt.Sprint("p", i) || f.Attempts != 1 {
				t.Errorf("approved firing = %+v", f)
			}
			return 1
		case !errors.Is(err, schedule.ErrNotWaiting):
			t.Errorf("approve: %v", err)
		}
		return 0
	})
	if n != 1 {
		t.Fatalf("%d approvals won, want 1", n)
	}
	if _, err := s.ApproveFiring(ctx, "a", due.Add(time.Hour), "p", due, due); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("approve missing: %v", err)
	}
	// Declining a waiting firing: finish by its owner as skipped.
	due2 := due.Add(24 * time.Hour)
	_, err := s.ClaimFiring(ctx, schedule.Firing{ScheduleID: "a", Due: due2, State: schedule.FiringWaiting, Owner: "p0", ClaimedAt: due})
	mustSchedule(t, err)
	mustSchedule(t, s.FinishFiring(ctx, "a", due2, "p0", schedule.Outcome{State: schedule.FiringSkipped, Error: "declined"}))
	if _, err := s.ApproveFiring(ctx, "a", due2, "p", due, due); !errors.Is(err, schedule.ErrNotWaiting) {
		t.Fatalf("approve declined: %v", err)
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
	post := func(id string, due time.Time, state schedule.FiringState, d *schedule.Digest) {
		t.Helper()
		_, err := s.ClaimFiring(ctx, running(id, due, "p", due.Add(time.Minute)))
		mustSchedule(t, err)
		mustSchedule(t, s.FinishFiring(ctx, id, due, "p", schedule.Outcome{State: state, Digest: d, FinishedAt: due.Add(time.Minute)}))
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
	withFiring(t, s, running("a", scheduleT0, "p", scheduleT0))
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
