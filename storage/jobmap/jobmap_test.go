package jobmap_test

import (
	"errors"
	"testing"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
	"deepresearch/storage/jobmap"
)

func TestInboxRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		in   slackstate.InboxEntry
		want slackstate.InboxEntry // what reads back
	}{
		{"plain", slackstate.InboxEntry{Key: "ev:1", Type: "events_api", EnvelopeID: "e1", Payload: []byte(`{"a":"\u0000 x"}`),
			ReceivedAt: t0, Owner: "A", LeaseUntil: t0.Add(time.Minute)},
			slackstate.InboxEntry{Key: "ev:1", Type: "events_api", EnvelopeID: "e1", Payload: []byte(`{"a":"\u0000 x"}`),
				ReceivedAt: t0, Owner: "A", LeaseUntil: t0.Add(time.Minute), Attempts: 1}},
		{"body with NULs", slackstate.InboxEntry{Key: "ev:2", Type: "interactive", EnvelopeID: "e2", Payload: []byte("a\x00b\x00"),
			ReceivedAt: t0, Owner: "A", LeaseUntil: t0},
			slackstate.InboxEntry{Key: "ev:2", Type: "interactive", EnvelopeID: "e2", Payload: []byte("a\x00b\x00"),
				ReceivedAt: t0, Owner: "A", LeaseUntil: t0, Attempts: 1}},
		{"NUL in the id, no lease", slackstate.InboxEntry{Key: "env:3", Type: "x", EnvelopeID: "e\x003", ReceivedAt: t0},
			slackstate.InboxEntry{Key: "env:3", Type: "x", EnvelopeID: "e3", ReceivedAt: t0, LeaseUntil: t0, Attempts: 1}},
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

// A firing shows its run's state: each run state maps to one firing state,
// with the run's lease; a firing with no run keeps the row's.
func TestFiringRun(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		run  research.RunState
		want schedule.FiringState
	}{
		{research.StateQueued, schedule.FiringRunning}, {research.StateRunning, schedule.FiringRunning},
		{research.StateWaiting, schedule.FiringWaiting}, {research.StateDone, schedule.FiringDone},
		{research.StateFailed, schedule.FiringFailed}, {research.StateCancelled, schedule.FiringSkipped},
	} {
		state, payload := jobmap.RunJobStates(tt.run)
		var f schedule.Firing
		jobmap.FiringRun(&f, "", jobs.Job{State: state, Payload: payload, Owner: "p", LeaseUntil: t0, Attempts: 2}, true)
		if f.State != tt.want || f.Owner != "p" || f.Attempts != 2 || !f.LeaseUntil.Equal(t0) {
			t.Errorf("run %s: firing %+v, want %s", tt.run, f, tt.want)
		}
	}
	for _, row := range []schedule.FiringState{schedule.FiringSkipped, schedule.FiringFailed} {
		var f schedule.Firing
		jobmap.FiringRun(&f, jobmap.RowState(row), jobs.Job{}, false)
		if f.State != row {
			t.Errorf("row %s: firing %s", row, f.State)
		}
	}
	if jobmap.RowState(schedule.FiringRunning) != "" {
		t.Error("a running firing's row keeps a state")
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
