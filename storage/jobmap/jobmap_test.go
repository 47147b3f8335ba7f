package jobmap_test

import (
	"errors"
	"testing"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/jobmap"
)

func TestInboxRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		in   research.InboxEntry
		want research.InboxEntry // what reads back
	}{
		{"plain", research.InboxEntry{Key: "ev:1", Type: "events_api", EnvelopeID: "e1", Payload: []byte(`{"a":"\u0000 x"}`),
			ReceivedAt: t0, Owner: "A", LeaseUntil: t0.Add(time.Minute)},
			research.InboxEntry{Key: "ev:1", Type: "events_api", EnvelopeID: "e1", Payload: []byte(`{"a":"\u0000 x"}`),
				ReceivedAt: t0, Owner: "A", LeaseUntil: t0.Add(time.Minute), Attempts: 1}},
		{"body with NULs", research.InboxEntry{Key: "ev:2", Type: "interactive", EnvelopeID: "e2", Payload: []byte("a\x00b\x00"),
			ReceivedAt: t0, Owner: "A", LeaseUntil: t0},
			research.InboxEntry{Key: "ev:2", Type: "interactive", EnvelopeID: "e2", Payload: []byte("a\x00b\x00"),
				ReceivedAt: t0, Owner: "A", LeaseUntil: t0, Attempts: 1}},
		{"NUL in the id, no lease", research.InboxEntry{Key: "env:3", Type: "x", EnvelopeID: "e\x003", ReceivedAt: t0},
			research.InboxEntry{Key: "env:3", Type: "x", EnvelopeID: "e3", ReceivedAt: t0, LeaseUntil: t0, Attempts: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			js, err := jobs.CheckPut([]jobs.Job{jobmap.InboxJob(tt.in)})
			if err != nil {
				t.Fatal(err)
			}
			got, err := jobmap.InboxEntry(js[0])
			if err != nil {
				t.Fatal(err)
			}
			if got.Key != tt.want.Key || got.Type != tt.want.Type || got.EnvelopeID != tt.want.EnvelopeID ||
				string(got.Payload) != string(tt.want.Payload) || !got.ReceivedAt.Equal(tt.want.ReceivedAt) ||
				got.Owner != tt.want.Owner || !got.LeaseUntil.Equal(tt.want.LeaseUntil) || got.Attempts != 1 || got.Done() {
				t.Errorf("read back %+v\nwant %+v", got, tt.want)
			}
			j := js[0]
			j.Payload, err = jobmap.InboxDonePayload(j)
			if err != nil {
				t.Fatal(err)
			}
			j.State, j.FinishedAt = jobs.Done, t0.Add(time.Second)
			done, err := jobmap.InboxEntry(j)
			if err != nil {
				t.Fatal(err)
			}
			if done.Type != tt.want.Type || done.EnvelopeID != tt.want.EnvelopeID || len(done.Payload) != 0 || !done.DoneAt.Equal(j.FinishedAt) {
				t.Errorf("done entry %+v", done)
			}
		})
	}
	if _, err := jobmap.InboxEntry(jobs.Job{Key: "bad", Payload: []byte("no separators")}); err == nil {
		t.Error("a payload without separators was read as an envelope")
	}
}

func TestResearchErr(t *testing.T) {
	for _, tt := range []struct {
		in, want error
	}{
		{jobs.ErrNotFound, research.ErrNotFound},
		{jobs.ErrLeaseLost, research.ErrLeaseLost},
		{jobs.ErrNotClaimable, research.ErrLeaseLost},
	} {
		got := jobmap.ResearchErr(tt.in)
		if !errors.Is(got, tt.want) || !errors.Is(got, tt.in) {
			t.Errorf("ResearchErr(%v) = %v, want it to wrap %v", tt.in, got, tt.want)
		}
	}
	if jobmap.ResearchErr(nil) != nil {
		t.Error("ResearchErr(nil) != nil")
	}
}

func TestFiringKey(t *testing.T) {
	for _, tt := range []struct {
		id  string
		due int64
	}{{"s1", 1772442000000000000}, {"a@b", 0}, {"", -5}} {
		id, due, err := jobmap.ParseFiringKey(jobmap.FiringKey(tt.id, tt.due))
		if err != nil || id != tt.id || due != tt.due {
			t.Errorf("ParseFiringKey(FiringKey(%q, %d)) = %q, %d, %v", tt.id, tt.due, id, due, err)
		}
	}
	for _, bad := range []string{"no-at", "s1@", "s1@x"} {
		if _, _, err := jobmap.ParseFiringKey(bad); err == nil {
			t.Errorf("ParseFiringKey(%q) accepted", bad)
		}
	}
}

// Every firing state survives the trip through a job: as claimed, and as
// finished.
func TestFiringStates(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, st := range []schedule.FiringState{schedule.FiringRunning, schedule.FiringWaiting, schedule.FiringDone,
		schedule.FiringFailed, schedule.FiringSkipped} {
		j, err := jobmap.FiringJob(schedule.Firing{ScheduleID: "s", Due: t0, State: st, Owner: "p", LeaseUntil: t0, ClaimedAt: t0}, 1)
		if err != nil {
			t.Fatalf("FiringJob(%s): %v", st, err)
		}
		if got := jobmap.FiringState(j.State, j.Payload); got != st {
			t.Errorf("claimed %s reads back %s", st, got)
		}
		if !st.Final() {
			continue
		}
		state, p, err := jobmap.FiringFinish(schedule.Outcome{State: st})
		if err != nil {
			t.Fatalf("FiringFinish(%s): %v", st, err)
		}
		if got := jobmap.FiringState(state, p); got != st {
			t.Errorf("finished %s reads back %s", st, got)
		}
	}
	if _, _, err := jobmap.FiringFinish(schedule.Outcome{State: schedule.FiringRunning}); !errors.Is(err, jobs.ErrInvalid) {
		t.Errorf("FiringFinish(running) = %v", err)
	}
	if _, err := jobmap.FiringJob(schedule.Firing{ScheduleID: "s", State: "bogus", ClaimedAt: t0}, 1); !errors.Is(err, jobs.ErrInvalid) {
		t.Errorf("FiringJob(bogus) = %v", err)
	}
}

// Every run state survives the trip through a job, and the finished ones
// through FinishRun's mapping.
func TestRunStates(t *testing.T) {
	for _, st := range []research.RunState{research.StateQueued, research.StateRunning, research.StateWaiting,
		research.StateDone, research.StateFailed, research.StateCancelled} {
		js, p := jobmap.RunJobStates(st)
		if got := jobmap.RunState(js, p); got != st {
			t.Errorf("%s -> (%s, %q) -> %s", st, js, p, got)
		}
		fs, fp, err := jobmap.RunFinish(st)
		if st.Active() {
			if !errors.Is(err, jobs.ErrInvalid) {
				t.Errorf("RunFinish(%s) = %v, want ErrInvalid", st, err)
			}
			continue
		}
		if err != nil || jobmap.RunState(fs, fp) != st {
			t.Errorf("RunFinish(%s) = %s, %q, %v", st, fs, fp, err)
		}
	}
}

// Decide's checks come in this order: the interrupt, then an
// earlier decision, then the state.
func TestDecideRefusal(t *testing.T) {
	d := research.Decision{InterruptID: "i1", Action: research.ActionApprove}
	intr := &research.PendingInterrupt{ID: "i1"}
	for _, tt := range []struct {
		name string
		run  research.Run
		want error
	}{
		{"waiting", research.Run{State: research.StateWaiting, Interrupt: intr}, nil},
		{"no interrupt", research.Run{State: research.StateWaiting}, research.ErrNotWaiting},
		{"other interrupt", research.Run{State: research.StateWaiting, Interrupt: &research.PendingInterrupt{ID: "i2"}}, research.ErrNotWaiting},
		{"decided, queued", research.Run{State: research.StateQueued, Interrupt: intr, Decision: &d}, research.ErrAlreadyDecided},
		{"cancelled while waiting", research.Run{State: research.StateCancelled, Interrupt: intr}, research.ErrNotWaiting},
	} {
		err := jobmap.DecideRefusal(tt.run, d)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}
