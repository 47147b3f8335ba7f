package jobs_test

import (
	"errors"
	"testing"
	"time"

	"deepresearch/jobs"
)

func TestClaimable(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		job  jobs.Job
		max  int
		want bool
	}{
		{"ready", jobs.Job{State: jobs.Ready}, 0, true},
		{"ready within bound", jobs.Job{State: jobs.Ready, Attempts: 4}, 5, true},
		{"ready at bound", jobs.Job{State: jobs.Ready, Attempts: 5}, 5, false},
		{"held, lease running", jobs.Job{State: jobs.Held, LeaseUntil: now.Add(time.Second)}, 0, false},
		{"held, lease ends now", jobs.Job{State: jobs.Held, LeaseUntil: now}, 0, false},
		{"held, lease expired", jobs.Job{State: jobs.Held, LeaseUntil: now.Add(-time.Nanosecond)}, 0, true},
		{"held, expired, spent", jobs.Job{State: jobs.Held, LeaseUntil: now.Add(-time.Hour), Attempts: 3}, 3, false},
		{"parked", jobs.Job{State: jobs.Parked}, 0, false},
		{"done", jobs.Job{State: jobs.Done}, 0, false},
		{"failed", jobs.Job{State: jobs.Failed}, 0, false},
	}
	for _, tt := range tests {
		if got := tt.job.Claimable(now, tt.max); got != tt.want {
			t.Errorf("%s: Claimable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckPut(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	got, err := jobs.CheckPut([]jobs.Job{
		{Kind: jobs.KindRun, Key: "a", CreatedAt: now, Attempts: 7, Owner: "x", Error: "e"},
		{Kind: jobs.KindEnvelope, Key: "b", State: jobs.Held, Owner: "o", LeaseUntil: now.Add(time.Minute), CreatedAt: now},
		{Kind: jobs.KindEnvelope, Key: "c", State: jobs.Done, CreatedAt: now},
		{Kind: jobs.KindEnvelope, Key: "d", State: jobs.Held, LeaseUntil: now, CreatedAt: now}, // held for nobody
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := got[0]; a.State != jobs.Ready || a.Attempts != 0 || a.Owner != "" || a.Error != "" || !a.UpdatedAt.Equal(now) {
		t.Errorf("ready put normalised to %+v", a)
	}
	if b := got[1]; b.Attempts != 1 || b.Owner != "o" {
		t.Errorf("held put normalised to %+v", b)
	}
	if c := got[2]; !c.FinishedAt.Equal(now) {
		t.Errorf("done put normalised to %+v", c)
	}
	if d := got[3]; d.State != jobs.Held || d.Owner != "" || d.Attempts != 1 {
		t.Errorf("ownerless held put normalised to %+v", d)
	}
	for _, bad := range []jobs.Job{
		{Key: "k", CreatedAt: now},
		{Kind: jobs.KindRun, CreatedAt: now},
		{Kind: jobs.KindRun, Key: "k"},
		{Kind: jobs.KindRun, Key: "k", State: jobs.Held, Owner: "o", CreatedAt: now},
		{Kind: jobs.KindRun, Key: "k", State: jobs.Held, CreatedAt: now},
		{Kind: jobs.KindRun, Key: "k", State: jobs.Failed, CreatedAt: now},
	} {
		if _, err := jobs.CheckPut([]jobs.Job{bad}); !errors.Is(err, jobs.ErrInvalid) {
			t.Errorf("CheckPut(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := jobs.CheckFinish(jobs.Held); !errors.Is(err, jobs.ErrInvalid) {
		t.Errorf("CheckFinish(held) = %v", err)
	}
}
