package schedule

import (
	"context"
	"time"
)

// Store keeps schedules and the record of their firings. A firing that
// runs is a research run of the digest kind (RunID): its lease, state and
// report live with the run; the firing's row keeps what the digests need
// (manual, when it fired, the digest posted, why it was skipped or failed
// without a run) and takes its state from the run. Implementations must be
// safe for concurrent use.
type Store interface {
	// CreateSchedule inserts s (ID set by the caller). It fails with ErrLimit
	// when its channel already has maxPerChannel schedules (checked
	// atomically with the insert) and ErrAlreadyExists on a duplicate id.
	CreateSchedule(ctx context.Context, s Schedule, maxPerChannel int) error
	// GetSchedule returns one schedule (with LastDue) or ErrNotFound.
	GetSchedule(ctx context.Context, id string) (Schedule, error)
	// UpdateSchedule replaces the mutable fields of s.ID (Channel, Topic,
	// Spec, TZ, Enabled, Options, ActiveSince, UpdatedAt) or returns ErrNotFound.
	UpdateSchedule(ctx context.Context, s Schedule) error
	// DeleteSchedule removes a schedule and its firings, or returns ErrNotFound.
	DeleteSchedule(ctx context.Context, id string) error
	// ListSchedules returns the schedules matching f, oldest first, with LastDue.
	ListSchedules(ctx context.Context, f Filter) ([]Schedule, error)

	// RecordFiring inserts the firing (f.ScheduleID, f.Due) unless it
	// exists, and reports whether this call inserted it. A firing with a
	// final State (skipped, failed) never ran; any other is the record of
	// the digest run RunID(f.ScheduleID, f.Due), whose state it shows.
	// ErrNotFound when the schedule does not exist.
	RecordFiring(ctx context.Context, f Firing) (bool, error)
	// RecordOutcome records a firing's outcome: the digest posted, or the
	// error text (a declined approval). ErrNotFound when there is no such
	// firing.
	RecordOutcome(ctx context.Context, scheduleID string, due time.Time, out Outcome) error
	// GetFiring returns one firing or ErrNotFound.
	GetFiring(ctx context.Context, scheduleID string, due time.Time) (Firing, error)
	// ListFirings returns a schedule's firings, newest first (limit ≤ 0: all).
	ListFirings(ctx context.Context, scheduleID string, limit int) ([]Firing, error)
	// PreviousDigest returns the latest firing of the schedule due before
	// `before` whose digest was posted, or ErrNotFound.
	PreviousDigest(ctx context.Context, scheduleID string, before time.Time) (Firing, error)
}

// Filter selects schedules; zero fields match everything.
type Filter struct {
	Channel     string
	Owner       string
	EnabledOnly bool
}

// Outcome is what a firing's record keeps of how it ended.
type Outcome struct {
	Error  string
	Digest *Digest
}
