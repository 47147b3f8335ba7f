package research

import (
	"context"
	"time"
)

// Store keeps what the bot must not lose across restarts and share between
// replicas: the Slack thread ↔ graph thread mapping, runs as durable jobs
// with a lease, received envelopes (the inbox) and processed event ids,
// decisions on interrupts and uploads.
//
// Every method is atomic on its own (one transaction in SQL); the comments
// say which are compare-and-set. Times are passed in by the caller (the bot's
// clock), never read from the database's clock, so tests control them; a SQL
// implementation stores them with at least millisecond precision.
// storage/sqlstore's conformance suite checks the implementation against
// these rules.
type Store interface {
	// ClaimEvent records that the event (or envelope) with this key is being
	// handled. It returns true for the first claim of the key and false for
	// every later one, across all processes (INSERT … ON CONFLICT DO NOTHING).
	ClaimEvent(ctx context.Context, key string, at time.Time) (bool, error)
	// PruneEvents forgets event keys claimed before the given time, inbox
	// entries received before it that are done, and instances last seen
	// before it, and returns how many (of all three). Inbox entries not done
	// are never pruned.
	PruneEvents(ctx context.Context, before time.Time) (int, error)

	// The instance registry: every bot process on the store announces
	// itself every few seconds, and counts the processes that did recently
	// to split Slack's per-workspace rate limits among them.

	// TouchInstance records that the instance id was alive at now (insert,
	// or update of its last-seen time).
	TouchInstance(ctx context.Context, id string, now time.Time) error
	// LiveInstances counts the instances last seen at or after since,
	// across all processes (0 when none; the caller counts itself as at
	// least one).
	LiveInstances(ctx context.Context, since time.Time) (int, error)
	// HeldRuns counts the runs held under a lease that has not ended by
	// now: those held by owner, and all of them. The replicas split the
	// workspace's Slack budgets by it, so a process working on more runs
	// (each with a final picture to show) gets more of them.
	HeldRuns(ctx context.Context, owner string, now time.Time) (mine, all int, err error)
	// LeaveInstance forgets the instance (a clean shutdown), so that the
	// others stop counting it at once. Leaving an unknown id is not an
	// error.
	LeaveInstance(ctx context.Context, id string) error

	// The inbox keeps every received Socket Mode envelope from before its
	// ack until it has been handled, so that an envelope acked by a process
	// that dies before handling it is handled by another (or by this one,
	// restarted). An entry is held by one process at a time with a lease,
	// as runs are.

	// PutInbox stores the entries, each held by its Owner until its
	// LeaseUntil with Attempts 1 and not done, in one transaction, except
	// those whose key has an entry already (INSERT … ON CONFLICT DO
	// NOTHING). It reports for each entry whether it stored it: false for
	// every later put of a key (also one repeated in es), across all
	// processes, so the inbox is also the dedupe of redelivered envelopes.
	PutInbox(ctx context.Context, es []InboxEntry) ([]bool, error)
	// ClaimInbox takes over up to limit entries that are not done and
	// whose lease expired before now (their holder died, or never started
	// on them), oldest first, skipping rows another caller is claiming at
	// the same time (FOR UPDATE SKIP LOCKED): each becomes held by owner
	// until now+lease with Attempts incremented. It returns them.
	ClaimInbox(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]InboxEntry, error)
	// ExtendInbox extends owner's lease on an entry that is not done to
	// now+lease. It returns ErrLeaseLost when owner does not hold it (taken
	// over after its lease expired, or done) and ErrNotFound when there is
	// no such entry.
	ExtendInbox(ctx context.Context, key, owner string, now time.Time, lease time.Duration) error
	// FinishInbox marks an entry owner holds as done at now, dropping its
	// payload and lease (the key stays, for dedupe, until PruneEvents). It
	// returns ErrLeaseLost when owner does not hold it and ErrNotFound when
	// there is no such entry.
	FinishInbox(ctx context.Context, key, owner string, now time.Time) error
	// InboxEntry returns the entry with this key, or ErrNotFound.
	InboxEntry(ctx context.Context, key string) (InboxEntry, error)

	// PutThread stores the mapping of a Slack thread if the key has none yet
	// and returns the stored mapping: the given one, or the one another
	// caller stored first (insert-if-absent, then read).
	PutThread(ctx context.Context, t Thread) (Thread, error)
	// Thread returns the mapping of a Slack thread, or ErrNotFound.
	Thread(ctx context.Context, key ThreadKey) (Thread, error)

	// CreateRun inserts a new run in state queued. It is refused with
	// ErrThreadBusy when the run's graph thread already has an active run
	// (queued, running or waiting), and with ErrUserLimit when maxPerUser > 0
	// and the requester already has that many active runs. Both checks and
	// the insert are one atomic step. r.ID must be unique: a run with the
	// same id gets ErrConflict, checked before the other two rules (the bot
	// derives a run's id from the Slack message that asked, so handling one
	// message twice finds its run instead of a busy thread).
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
	// AcquireRuns acquires, as AcquireRun does, up to limit runs that are
	// queued or running with an expired lease, oldest first, skipping rows
	// another caller is acquiring at the same time (FOR UPDATE SKIP LOCKED).
	AcquireRuns(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Run, error)
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
	// SetStatusMessage records the ts of the run's status message if it has
	// none yet and returns the stored ts (set-if-empty, then read).
	SetStatusMessage(ctx context.Context, id, ts string) (string, error)

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
	// StageUpload records fileID as a report file of the run reserved in
	// Slack (its bytes uploaded) and not yet shared and recorded, before it
	// is shared: a process that dies in between leaves it to the next one,
	// which deletes it or records it, so that no file is left unshared.
	// Staging a file again changes nothing.
	StageUpload(ctx context.Context, runID, fileID string, at time.Time) error
	// StagedUploads returns the run's staged files, oldest first.
	StagedUploads(ctx context.Context, runID string) ([]string, error)
	// UnstageUpload forgets a staged file (deleted, or shared and
	// recorded); an unknown one is no error.
	UnstageUpload(ctx context.Context, runID, fileID string) error
}
