package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind names a family of jobs. Keys are unique within a kind.
type Kind string

// The kinds of this service.
const (
	KindRun      Kind = "run"      // a research run (key: the run id)
	KindEnvelope Kind = "envelope" // a received Slack envelope (key: its dedupe key)
	KindFiring   Kind = "firing"   // a digest firing of before migration 0016, which removes them (a firing runs as a KindRun)
	KindEvent    Kind = "event"    // a handled event id, put Done (key: the caller's)
)

// State is where a job is in its life.
type State string

// The states. Ready and Held jobs are live; Parked jobs wait for a person;
// Done and Failed are final.
const (
	Ready  State = "ready"  // waiting for a claimer
	Held   State = "held"   // claimed by Owner until LeaseUntil
	Parked State = "parked" // waiting for a person (an approval, a decision)
	Done   State = "done"
	Failed State = "failed"
)

// Final reports whether s is Done or Failed.
func (s State) Final() bool { return s == Done || s == Failed }

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	switch s {
	case Ready, Held, Parked, Done, Failed:
		return true
	}
	return false
}

// Job is one unit of work. Times are the caller's, stored with at least
// millisecond precision and read back in UTC; the zero time means "none".
type Job struct {
	Kind       Kind
	Key        string
	Payload    []byte // the consumer's own data; nil and empty are the same
	State      State
	Owner      string    // Held: the claimer ("" otherwise)
	LeaseUntil time.Time // Held: another may take it over after this
	Attempts   int       // pickups so far (claims, less graceful releases)
	CreatedAt  time.Time // set by Put; claims go oldest first
	UpdatedAt  time.Time // the last change
	FinishedAt time.Time // Done or Failed: when
	Error      string    // Failed: why
}

// Claimable reports whether a claimer may take j at now: it is Ready, or
// Held with a lease that expired before now, and (when maxAttempts > 0) it
// has had fewer than maxAttempts pickups.
func (j Job) Claimable(now time.Time, maxAttempts int) bool {
	if maxAttempts > 0 && j.Attempts >= maxAttempts {
		return false
	}
	return j.State == Ready || j.State == Held && j.LeaseUntil.Before(now)
}

// Errors of Queue, wrapped by implementations (test with errors.Is).
var (
	ErrNotFound     = errors.New("jobs: no such job")
	ErrLeaseLost    = errors.New("jobs: lease not held")          // the owner does not hold the job
	ErrNotClaimable = errors.New("jobs: job not claimable")       // held by another, parked, finished or out of attempts
	ErrNotParked    = errors.New("jobs: job not parked")          // Unpark of a job that is not Parked
	ErrInvalid      = errors.New("jobs: invalid job or argument") // a Put or Finish the rules do not allow
)

// Queue is a durable lease queue shared by any number of processes. Every
// method is atomic on its own (one statement or one transaction in SQL);
// times come from the caller, never from the database's clock, so that
// tests control them. storage/sqlstore's conformance suite checks the
// implementation.
//
// How the three hand-made queues map onto it:
//
// Runs (research.Store): CreateRun is Put of a Ready KindRun job (the run's
// other columns stay in the runs table); AcquireRun is ClaimKey;
// AcquireRuns is Claim (oldest first, SKIP LOCKED); Heartbeat is Extend;
// ReleaseRun is Release; WaitRun is Park (the interrupt in the runs table);
// Decide is Unpark (attempts reset to 0, the decision in the runs table),
// or Cancel for a cancel decision; FinishRun is Finish; RequestCancel of a
// queued or waiting run is Cancel. A cancelled run is Failed with the
// payload "cancelled".
//
// Inbox (slackstate.Store): PutInbox is Put of Held KindEnvelope jobs (the returned flags are
// the dedupe of redelivered envelopes; the envelope is the payload);
// ClaimInbox is Claim; ExtendInbox is Extend; FinishInbox is Finish with the
// envelope's body dropped from the payload; InboxEntry is Get; ClaimEvent is
// Put of a Done KindEvent job; PruneEvents is Prune of those two kinds. TouchInstance,
// LiveInstances and LeaveInstance keep their names.
//
// A digest firing that runs is a run (KindRun, keyed schedule.RunID):
// its lease is a run's; its row in the schedule store shows that job's
// state.
type Queue interface {
	// Put stores each job whose (Kind, Key) has none yet, in one step, and
	// reports for each whether it stored it: false for a key stored before
	// or repeated earlier in js. A job is put Ready, Held (LeaseUntil set:
	// Attempts 1; an empty Owner holds it for nobody, so it is claimable
	// once the lease ends), Parked, or Done (a bare record of the key); the
	// empty State means Ready. CreatedAt must be set; UpdatedAt
	// becomes CreatedAt. Attempts, Error and FinishedAt are ignored.
	Put(ctx context.Context, js []Job) ([]bool, error)

	// ClaimKey makes owner the holder of the job until now+lease and
	// increments its attempts, if it is claimable at now (see
	// Job.Claimable; maxAttempts ≤ 0: no bound). It returns the updated
	// job, ErrNotFound, or ErrNotClaimable.
	ClaimKey(ctx context.Context, kind Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (Job, error)
	// Claim claims, as ClaimKey does, up to limit (≤ 0: all) claimable jobs
	// of the kind, oldest first (CreatedAt, then Key), skipping jobs that
	// another caller is claiming at the same moment: every job goes to
	// exactly one caller. It returns them oldest first.
	Claim(ctx context.Context, kind Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]Job, error)
	// Extend moves the lease of a job owner holds to now+lease (a
	// heartbeat) and returns the job. ErrLeaseLost when owner does not hold
	// it (taken over, parked, finished), ErrNotFound when there is none.
	Extend(ctx context.Context, kind Kind, key, owner string, now time.Time, lease time.Duration) (Job, error)
	// Release hands a job owner holds back: Ready, no lease, and the pickup
	// it ends given back (attempts - 1, never below 1), so a graceful
	// shutdown does not count against the bound while a crash does.
	// ErrLeaseLost or ErrNotFound as for Extend.
	Release(ctx context.Context, kind Kind, key, owner string, now time.Time) error
	// Park moves a job owner holds to Parked (waiting for a person), lease
	// dropped; a non-nil payload replaces the stored one. ErrLeaseLost or
	// ErrNotFound as for Extend.
	Park(ctx context.Context, kind Kind, key, owner string, payload []byte, now time.Time) error
	// Unpark moves a Parked job to Ready with attempts reset to 0, once: a
	// compare-and-set, so of two deciders exactly one wins. A non-nil
	// payload replaces the stored one. It returns the updated job,
	// ErrNotParked (and changes nothing), or ErrNotFound.
	Unpark(ctx context.Context, kind Kind, key string, payload []byte, now time.Time) (Job, error)
	// Finish moves a job owner holds to Done or Failed (state) at now, with
	// errText kept for Failed, lease dropped; a non-nil payload replaces the
	// stored one (empty: drop it). ErrLeaseLost or ErrNotFound as for
	// Extend; ErrInvalid for another state.
	Finish(ctx context.Context, kind Kind, key, owner string, state State, errText string, payload []byte, now time.Time) error
	// Cancel fails a job that nobody holds (Ready or Parked) at now with
	// errText. ErrNotClaimable when it is Held or finished, ErrNotFound
	// when there is none.
	Cancel(ctx context.Context, kind Kind, key, errText string, now time.Time) error
	// FailExpired fails, with errText, the Held jobs of the kind whose lease
	// expired before now after maxAttempts (> 0) pickups: no one may claim
	// them again. It returns how many.
	FailExpired(ctx context.Context, kind Kind, now time.Time, maxAttempts int, errText string) (int, error)
	// Get returns the job, or ErrNotFound.
	Get(ctx context.Context, kind Kind, key string) (Job, error)
	// Prune deletes the finished jobs (of every kind) finished before
	// `before` and the instances last seen before it, and returns how many
	// rows of both it deleted. Unfinished jobs are never pruned. The stores
	// read a run's and a firing's state from its job, so pruning those
	// kinds leaves their rows without one (slackstate.Store.PruneEvents
	// prunes only envelopes and event keys).
	Prune(ctx context.Context, before time.Time) (int, error)

	// The instance registry: every process announces itself every few
	// seconds and counts those that did recently.

	// TouchInstance records that the instance id was alive at now.
	TouchInstance(ctx context.Context, id string, now time.Time) error
	// LiveInstances counts the instances last seen at or after since.
	LiveInstances(ctx context.Context, since time.Time) (int, error)
	// LeaveInstance forgets the instance (clean shutdown); an unknown id is
	// no error.
	LeaveInstance(ctx context.Context, id string) error
}

// CheckPut validates the jobs given to Put and returns them normalised
// (empty State → Ready, Attempts 1 for Held and 0 otherwise, UpdatedAt =
// CreatedAt, FinishedAt = CreatedAt for Done). Implementations call it first.
func CheckPut(js []Job) ([]Job, error) {
	out := make([]Job, len(js))
	for i, j := range js {
		if j.Kind == "" || j.Key == "" {
			return nil, fmt.Errorf("put job %d: empty kind or key: %w", i, ErrInvalid)
		}
		if j.CreatedAt.IsZero() {
			return nil, fmt.Errorf("put job %s/%s: no CreatedAt: %w", j.Kind, j.Key, ErrInvalid)
		}
		if j.State == "" {
			j.State = Ready
		}
		j.Attempts, j.Error, j.FinishedAt, j.UpdatedAt = 0, "", time.Time{}, j.CreatedAt
		switch j.State {
		case Held:
			if j.LeaseUntil.IsZero() {
				return nil, fmt.Errorf("put job %s/%s: held without a lease: %w", j.Kind, j.Key, ErrInvalid)
			}
			j.Attempts = 1
		case Ready, Parked, Done:
			j.Owner, j.LeaseUntil = "", time.Time{}
			if j.State == Done {
				j.FinishedAt = j.CreatedAt
			}
		default:
			return nil, fmt.Errorf("put job %s/%s in state %q: %w", j.Kind, j.Key, j.State, ErrInvalid)
		}
		out[i] = j
	}
	return out, nil
}

// CheckFinish validates the state given to Finish.
func CheckFinish(state State) error {
	if !state.Final() {
		return fmt.Errorf("finish in state %q: %w", state, ErrInvalid)
	}
	return nil
}
