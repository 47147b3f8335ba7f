// Package jobmap maps the leased records of research.Store,
// slackstate.Store and schedule.Store onto jobs.Job and back, and the queue's errors onto theirs.
// storage/sqlstore keeps those records in the jobs table through these
// functions, on either engine.
package jobmap

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
	"deepresearch/storage/dbtext"
)

// The inbox: an entry is a KindEnvelope job keyed by the entry's key, created
// at ReceivedAt, whose payload is the envelope: its type, a NUL, its
// envelope id, a NUL, and the body as received. Migration 0008 builds the
// same bytes in SQL from the old inbox table.

// envelope returns the payload of an envelope. The type and id come from
// Slack and never hold a NUL; dbtext.String drops one if they did.
func envelope(typ, envelopeID string, body []byte) []byte {
	typ, envelopeID = dbtext.String(typ), dbtext.String(envelopeID)
	p := make([]byte, 0, len(typ)+len(envelopeID)+2+len(body))
	p = append(p, typ...)
	p = append(p, 0)
	p = append(p, envelopeID...)
	p = append(p, 0)
	return append(p, body...)
}

// splitEnvelope is the inverse of envelope.
func splitEnvelope(p []byte) (typ, envelopeID string, body []byte, err error) {
	t, rest, ok := bytes.Cut(p, []byte{0})
	if !ok {
		return "", "", nil, errors.New("envelope payload without a type")
	}
	id, body, ok := bytes.Cut(rest, []byte{0})
	if !ok {
		return "", "", nil, errors.New("envelope payload without an envelope id")
	}
	return string(t), string(id), body, nil
}

// InboxJob returns the job PutInbox stores for e: held by e.Owner (or, with
// no owner, by nobody) until e.LeaseUntil, or until e.ReceivedAt when e has
// no lease, so that a claimer takes it at once.
func InboxJob(e slackstate.InboxEntry) jobs.Job {
	until := e.LeaseUntil
	if until.IsZero() {
		until = e.ReceivedAt
	}
	return jobs.Job{Kind: jobs.KindEnvelope, Key: e.Key, Payload: envelope(e.Type, e.EnvelopeID, e.Payload),
		State: jobs.Held, Owner: e.Owner, LeaseUntil: until, CreatedAt: e.ReceivedAt}
}

// InboxDonePayload returns the payload FinishInbox stores: the envelope's
// type and id without its body.
func InboxDonePayload(j jobs.Job) ([]byte, error) {
	typ, id, _, err := splitEnvelope(j.Payload)
	if err != nil {
		return nil, fmt.Errorf("inbox entry %s: %w", j.Key, err)
	}
	return envelope(typ, id, nil), nil
}

// InboxEntries returns the inbox entries of claimed KindEnvelope jobs.
func InboxEntries(js []jobs.Job) ([]slackstate.InboxEntry, error) {
	out := make([]slackstate.InboxEntry, 0, len(js))
	for _, j := range js {
		e, err := InboxEntry(j)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// InboxEntry returns the inbox entry of a KindEnvelope job.
func InboxEntry(j jobs.Job) (slackstate.InboxEntry, error) {
	typ, id, body, err := splitEnvelope(j.Payload)
	if err != nil {
		return slackstate.InboxEntry{}, fmt.Errorf("inbox entry %s: %w", j.Key, err)
	}
	e := slackstate.InboxEntry{Key: j.Key, Type: typ, EnvelopeID: id, Payload: body, ReceivedAt: j.CreatedAt,
		Owner: j.Owner, LeaseUntil: j.LeaseUntil, Attempts: j.Attempts}
	if len(e.Payload) == 0 {
		e.Payload = nil
	}
	if j.State.Final() {
		e.DoneAt = j.FinishedAt
	}
	return e, nil
}

// EventJob returns the job ClaimEvent puts: a Done record of the key.
func EventJob(key string, at time.Time) jobs.Job {
	return jobs.Job{Kind: jobs.KindEvent, Key: key, State: jobs.Done, CreatedAt: at}
}

// ResearchErr returns err, from the jobs code, also wrapping the
// research.Store (and slackstate.Store) error it stands for: ErrNotFound, or ErrLeaseLost for a
// lease not held (or a job not claimable).
func ResearchErr(err error) error {
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return fmt.Errorf("%w: %w", research.ErrNotFound, err)
	case errors.Is(err, jobs.ErrLeaseLost), errors.Is(err, jobs.ErrNotClaimable):
		return fmt.Errorf("%w: %w", research.ErrLeaseLost, err)
	}
	return err
}

// Firings: the schedule_firings row of a firing that ran has no state of
// its own: it shows the state of its digest run, the KindRun job keyed
// schedule.RunID(scheduleID, due), which the engines join as
// 'digest:' || schedule_id || '@' || due (due in Unix nanoseconds). A
// firing that never ran (skipped, or failed before its run) keeps its
// final state in the row.

// FiringRun fills the state fields of f from the job of its run, found or
// not (then f keeps rowState, the row's own).
func FiringRun(f *schedule.Firing, rowState string, j jobs.Job, found bool) {
	if !found {
		f.State = schedule.FiringState(rowState)
		if f.State == "" { // a run not yet created, or gone
			f.State = schedule.FiringRunning
		}
		return
	}
	switch RunState(j.State, j.Payload) {
	case research.StateQueued, research.StateRunning:
		f.State = schedule.FiringRunning
	case research.StateWaiting:
		f.State = schedule.FiringWaiting
	case research.StateDone:
		f.State = schedule.FiringDone
	case research.StateCancelled:
		f.State = schedule.FiringSkipped
	default:
		f.State = schedule.FiringFailed
	}
	f.Owner, f.LeaseUntil, f.Attempts, f.FinishedAt = j.Owner, j.LeaseUntil, j.Attempts, j.FinishedAt
	if f.Error == "" {
		f.Error = j.Error
	}
}

// RowState is the state a firing's row keeps: a final one of a firing
// that never ran, else "" (the run's).
func RowState(s schedule.FiringState) string {
	if s == schedule.FiringSkipped || s == schedule.FiringFailed {
		return string(s)
	}
	return ""
}

// Runs: a run is a KindRun job keyed by its id, created at its CreatedAt,
// which holds its lease and state (ready: queued, held: running, parked:
// waiting, done, failed; cancelled is failed with the payload "cancelled")
// and a failed run's error text. The runs row keeps the rest: the columns
// that conditions read, and the detail (detail.go).

// RunCancelled is the payload of a cancelled run's job.
const RunCancelled = "cancelled"

// RunJob returns the job CreateRun puts for r: ready.
func RunJob(r research.Run) jobs.Job {
	return jobs.Job{Kind: jobs.KindRun, Key: r.ID, State: jobs.Ready, CreatedAt: r.CreatedAt}
}

// RunFinish returns the job state and payload FinishRun stores for a final
// run state.
func RunFinish(s research.RunState) (jobs.State, []byte, error) {
	switch s {
	case research.StateDone:
		return jobs.Done, []byte{}, nil
	case research.StateFailed:
		return jobs.Failed, []byte{}, nil
	case research.StateCancelled:
		return jobs.Failed, []byte(RunCancelled), nil
	}
	return "", nil, fmt.Errorf("finish run in state %q (not a final state): %w", s, jobs.ErrInvalid)
}

// RunState returns the state of a run whose job is in state s with payload p.
func RunState(s jobs.State, p []byte) research.RunState {
	switch s {
	case jobs.Ready:
		return research.StateQueued
	case jobs.Held:
		return research.StateRunning
	case jobs.Parked:
		return research.StateWaiting
	case jobs.Done:
		return research.StateDone
	}
	if string(p) == RunCancelled {
		return research.StateCancelled
	}
	return research.StateFailed
}

// RunJobStates returns the job states (and, for cancelled and failed, the
// payload that tells them apart) of a run state, for queries by state.
func RunJobStates(s research.RunState) (jobs.State, []byte) {
	switch s {
	case research.StateQueued:
		return jobs.Ready, nil
	case research.StateRunning:
		return jobs.Held, nil
	case research.StateWaiting:
		return jobs.Parked, nil
	case research.StateDone:
		return jobs.Done, nil
	case research.StateCancelled:
		return jobs.Failed, []byte(RunCancelled)
	}
	return jobs.Failed, []byte{}
}

// RunLease fills the lease fields of r from its job: state, owner, lease,
// attempt, finish time, error text, and UpdatedAt when the job changed
// later than the row.
func RunLease(r *research.Run, j jobs.Job) {
	r.State = RunState(j.State, j.Payload)
	r.Owner, r.LeaseUntil, r.Attempt, r.FinishedAt, r.Error = j.Owner, j.LeaseUntil, j.Attempts, j.FinishedAt, j.Error
	if j.UpdatedAt.After(r.UpdatedAt) {
		r.UpdatedAt = j.UpdatedAt
	}
}

// DecideRefusal says why decision d cannot be applied to run r (as stored,
// with its lease), or returns nil. Decide checks in this order: r waits on d's interrupt (else ErrNotWaiting),
// has no decision yet (else ErrAlreadyDecided), and is waiting (else
// ErrNotWaiting: a waiting run that was cancelled keeps its interrupt).
func DecideRefusal(r research.Run, d research.Decision) error {
	switch {
	case r.Interrupt == nil || r.Interrupt.ID != d.InterruptID:
		return fmt.Errorf("run %s, interrupt %s: %w", r.ID, d.InterruptID, research.ErrNotWaiting)
	case r.Decision != nil:
		return fmt.Errorf("run %s, interrupt %s: %w", r.ID, d.InterruptID, research.ErrAlreadyDecided)
	case r.State != research.StateWaiting:
		return fmt.Errorf("run %s is %s: %w", r.ID, r.State, research.ErrNotWaiting)
	}
	return nil
}
