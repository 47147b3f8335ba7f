package research

import (
	"context"
	"time"
)

// Store keeps the runs that every face shares, across restarts and
// between replicas: runs as durable jobs with a lease, decisions on
// interrupts, and the published reports with their staged files. A face
// keeps its own records (where it shows a run) in a store of its own.
//
// Every method is atomic on its own (one transaction in SQL); the comments
// say which are compare-and-set. Times are passed in by the caller (the
// face's clock), never read from the database's clock, so tests control
// them; a SQL implementation stores them with at least millisecond
// precision. storage/sqlstore's conformance suite checks the
// implementation against these rules.
type Store interface {
	// CreateRun inserts a new run in state queued. It is refused with
	// ErrThreadBusy when the run's graph thread already has an active run
	// (queued, running or waiting), and with ErrUserLimit when maxPerUser > 0
	// and the requester already has that many active runs. Both checks and
	// the insert are one atomic step. r.ID must be unique: a run with the
	// same id gets ErrConflict, checked before the other two rules (a face
	// may derive a run's id from the message that asked, so that handling
	// one message twice finds its run instead of a busy thread).
	CreateRun(ctx context.Context, r Run, maxPerUser int) error
	// Run returns a run by id, or ErrNotFound.
	Run(ctx context.Context, id string) (Run, error)
	// LatestRun returns the most recently created run of a graph thread, or
	// ErrNotFound.
	LatestRun(ctx context.Context, threadID string) (Run, error)
	// ListRuns returns runs matching f, newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)

	// AcquireRun is a compare-and-set that makes owner the run's lease
	// holder until now+lease and sets its state to running, if the run is
	// queued, or running with a lease that expired before now. It
	// increments Attempt and returns the updated run. Otherwise it returns
	// ErrNotAcquired (the run is held by someone else, waiting, or finished).
	AcquireRun(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (Run, error)
	// AcquireRuns acquires, as AcquireRun does, up to limit runs of the
	// kind (RunKind of their ids) that are queued or running with an
	// expired lease, oldest first, skipping rows another caller is
	// acquiring at the same time (FOR UPDATE SKIP LOCKED).
	AcquireRuns(ctx context.Context, kind, owner string, now time.Time, lease time.Duration, limit int) ([]Run, error)
	// Heartbeat extends the lease of a running run held by owner to
	// now+lease and returns the run (whose CancelRequestedBy tells the owner
	// to stop). It returns ErrLeaseLost when owner no longer holds a
	// running run (lease taken over, run cancelled or finished).
	Heartbeat(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (Run, error)
	// ReleaseRun puts a running run held by owner back to queued with no
	// lease (graceful shutdown: another process continues it at once).
	// A clean hand-back is no failed try: it takes back the pickup that
	// it ends (Attempt, never below 1), so rolling restarts do not count
	// toward the bound on pickups while crashes do. ErrLeaseLost when owner
	// does not hold it.
	ReleaseRun(ctx context.Context, id, owner string, now time.Time) error
	// WaitRun moves a running run held by owner to waiting for the
	// interrupt it (the lease is dropped, the decision cleared).
	// ErrLeaseLost when owner does not hold it.
	WaitRun(ctx context.Context, id, owner string, intr PendingInterrupt, now time.Time) error
	// FinishRun moves a running run held by owner to a final state (done,
	// failed or cancelled) with an error text for failed. ErrLeaseLost when
	// owner does not hold it.
	FinishRun(ctx context.Context, id, owner string, state RunState, errText string, now time.Time) error

	// Decide records a decision on the pending interrupt of a waiting run,
	// exactly once across processes: a compare-and-set that succeeds only
	// if the run is waiting on interrupt d.InterruptID with no decision yet.
	// With ActionCancel the run becomes cancelled; with any other action it
	// becomes queued with the decision as its input (Attempt reset to 0), to
	// be acquired and resumed. It returns the updated run. A second decision
	// gets ErrAlreadyDecided and the run as stored (whose Decision says who
	// decided what); a run not waiting on that interrupt gets ErrNotWaiting.
	Decide(ctx context.Context, runID string, d Decision) (Run, error)
	// RequestCancel cancels a run on behalf of user by. A queued or waiting
	// run becomes cancelled at once (cancelled=true). A running run gets
	// CancelRequestedBy set and stays running until its owner, told by
	// Heartbeat, finishes it (cancelled=false). A finished run gets
	// ErrFinished. The returned run is the stored one after the change.
	RequestCancel(ctx context.Context, runID, by string, now time.Time) (r Run, cancelled bool, err error)

	// RecordUpload records that the report of a run was posted as file
	// fileID. It returns false (and changes nothing) when the run already
	// has an upload recorded (insert-if-absent).
	RecordUpload(ctx context.Context, u Upload) (bool, error)
	// Upload returns the recorded upload of a run, or ErrNotFound.
	Upload(ctx context.Context, runID string) (Upload, error)
	// StageUpload records fileID as a report file of the run reserved by
	// the face (its bytes uploaded) and not yet shared and recorded, before it
	// is shared: a process that dies in between leaves it to the next one,
	// which deletes it or records it, so that no file is left unshared.
	// Staging a file again changes nothing.
	StageUpload(ctx context.Context, runID, fileID string, at time.Time) error
	// StagedUploads returns the run's staged files, oldest first.
	StagedUploads(ctx context.Context, runID string) ([]string, error)
	// UnstageUpload forgets a staged file (deleted, or shared and
	// recorded); an unknown one is no error.
	UnstageUpload(ctx context.Context, runID, fileID string) error

	// HeldRuns counts the runs held under a lease that has not ended by
	// now: those held by owner, and all of them. The replicas split the
	// chat workspace's rate budgets by it, so a process working on more runs
	// (each with a final picture to show) gets more of them.
	HeldRuns(ctx context.Context, owner string, now time.Time) (mine, all int, err error)
}
