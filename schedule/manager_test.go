package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/schedule"
)

func newManager(t *testing.T) (*schedule.Manager, *world, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(monday9.Add(-time.Hour))
	w := newWorld(t, clk, &fakeResearcher{results: results(2)}, &fakePoster{})
	p := w.proc(t, "p1")
	return &schedule.Manager{Store: w.st, Scheduler: p.sched, Decider: w.runs, Clock: clk, Admins: []string{"UADMIN"},
		Limits: schedule.Limits{MaxPerChannel: 2, ShortestInterval: time.Hour}}, w, clk
}

func draft() schedule.Draft {
	return schedule.Draft{Team: "T1", Channel: "C1", Owner: "UOWNER", Topic: "competitor news", Spec: "0 9 * * MON", TZ: "Asia/Tokyo"}
}

func TestManagerValidation(t *testing.T) {
	m, _, _ := newManager(t)
	ctx := context.Background()
	d := draft()
	d.Topic, d.Spec, d.TZ = " ", "*/30 * * * *", "Mars/Base"
	_, err := m.Create(ctx, d)
	var ve *schedule.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, schedule.ErrInvalid) {
		t.Fatalf("Create = %v", err)
	}
	if ve.Fields[schedule.FieldTopic] == "" || !strings.Contains(ve.Fields[schedule.FieldTZ], "Mars/Base") {
		t.Errorf("fields = %v", ve.Fields)
	}
	d = draft()
	d.Spec = "*/30 * * * *"
	_, err = m.Create(ctx, d)
	if !errors.As(err, &ve) || ve.Fields[schedule.FieldSpec] != "This runs every 30m; the shortest interval allowed is 1h." {
		t.Fatalf("interval: %v", err)
	}
	d.Spec = "61 9 * * *"
	_, err = m.Create(ctx, d)
	if !errors.As(err, &ve) || ve.Fields[schedule.FieldSpec] != "minute field: 61 is out of range 0–59" {
		t.Fatalf("bad minute: %v", err)
	}
	sc, err := m.Create(ctx, draft())
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Enabled || sc.Owner != "UOWNER" || sc.ID == "" || sc.Spec != "0 9 * * MON" {
		t.Fatalf("created %+v", sc)
	}
	if _, err := m.Create(ctx, draft()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, draft()); !errors.Is(err, schedule.ErrLimit) || !strings.Contains(err.Error(), "already has 2 schedules") {
		t.Fatalf("third: %v", err)
	}
}

func TestManagerPermissions(t *testing.T) {
	m, w, clk := newManager(t)
	ctx := context.Background()
	sc, err := m.Create(ctx, draft())
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func(user string) error{
		"pause":   func(u string) error { _, err := m.SetEnabled(ctx, sc.ID, u, false); return err },
		"resume":  func(u string) error { _, err := m.SetEnabled(ctx, sc.ID, u, true); return err },
		"run now": func(u string) error { _, err := m.RunNow(ctx, sc.ID, u); return err },
		"approve": func(u string) error { return m.Approve(ctx, sc.ID, monday9, u) },
		"delete":  func(u string) error { _, err := m.Delete(ctx, sc.ID, u); return err },
	} {
		if err := op("USTRANGER"); !errors.Is(err, schedule.ErrForbidden) {
			t.Errorf("%s by a stranger: %v, want ErrForbidden", name, err)
		}
	}
	if _, err := m.SetEnabled(ctx, sc.ID, "UOWNER", false); err != nil {
		t.Fatalf("owner pauses: %v", err)
	}
	clk.Set(monday9.Add(time.Minute))
	got, err := m.SetEnabled(ctx, sc.ID, "UADMIN", true)
	if err != nil || !got.Enabled || !got.ActiveSince.Equal(monday9.Add(time.Minute)) {
		t.Fatalf("admin resumes: %+v %v", got, err)
	}
	started, err := m.RunNow(ctx, sc.ID, "UADMIN")
	if err != nil || !started {
		t.Fatalf("run now: %v %v", started, err)
	}
	again, err := m.RunNow(ctx, sc.ID, "UOWNER") // same minute: a double click
	if err != nil || again {
		t.Fatalf("second run now in the same minute: %v %v", again, err)
	}
	w.settle(t)
	if reqs := w.res.Reqs(); len(reqs) != 1 || !reqs[0].Options.Digest.Manual {
		t.Fatalf("researches = %+v", reqs)
	}
	if _, err := m.Delete(ctx, sc.ID, "UOWNER"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetEnabled(ctx, sc.ID, "UOWNER", false); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}
