package schedule

import (
	"context"
	"time"
)

// Store keeps schedules and their firings. Implementations must be safe for
// concurrent use and, when several processes share one database, make
// ClaimFiring, TakeOverFiring and ApproveFiring atomic across them.
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

	// ClaimFiring inserts the firing (f.ScheduleID, f.Due) unless it exists.
	// It reports whether this call created it; only that caller may run it.
	ClaimFiring(ctx context.Context, f Firing) (bool, error)
	// RenewFiring extends the lease of a running firing held by owner, or
	// returns ErrLeaseLost.
	RenewFiring(ctx context.Context, scheduleID string, due time.Time, owner string, leaseUntil time.Time) error
	// FinishFiring records the outcome (done, failed, skipped) of a firing
	// held by owner, with the digest when done, or returns ErrLeaseLost.
	FinishFiring(ctx context.Context, scheduleID string, due time.Time, owner string, out Outcome) error
	// TakeOverFiring gives owner the firings still running whose lease
	// expired before now and which have had fewer than maxAttempts attempts;
	// each is returned to exactly one caller, its attempts incremented.
	TakeOverFiring(ctx context.Context, owner string, now, leaseUntil time.Time, maxAttempts int) ([]Firing, error)
	// FailExpired marks failed the running firings whose lease expired before
	// now after maxAttempts attempts, and returns how many.
	FailExpired(ctx context.Context, now time.Time, maxAttempts int) (int, error)
	// ApproveFiring moves a waiting firing to running under owner's lease,
	// once: a second call gets ErrNotWaiting.
	ApproveFiring(ctx context.Context, scheduleID string, due time.Time, owner string, now, leaseUntil time.Time) (Firing, error)
	// GetFiring returns one firing or ErrNotFound.
	GetFiring(ctx context.Context, scheduleID string, due time.Time) (Firing, error)
	// ListFirings returns a schedule's firings, newest first (limit ≤ 0: all).
	ListFirings(ctx context.Context, scheduleID string, limit int) ([]Firing, error)
	// PreviousDigest returns the latest done firing of the schedule due
	// before `before` that has a digest, or ErrNotFound.
	PreviousDigest(ctx context.Context, scheduleID string, before time.Time) (Firing, error)
}

// Filter selects schedules; zero fields match everything.
type Filter struct {
	Channel     string
	Owner       string
	EnabledOnly bool
}

// Outcome is how a firing ended.
type Outcome struct {
	State      FiringState // done, failed or skipped
	Error      string
	Digest     *Digest
	FinishedAt time.Time
}
