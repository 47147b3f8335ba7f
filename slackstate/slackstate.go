// Package slackstate holds the Slack bot's own records and their store
// contract: the Slack thread ↔ graph thread mapping, the Socket Mode inbox
// and the processed event keys, the registry of bot replicas, and each
// run's place in Slack (its thread, its status message and whether that is
// a stream). The run itself — its question, state, lease, decision and
// upload — is research's (research.Store); these records say where and how
// Slack shows it. storage/sqlstore implements Store for SQLite and
// PostgreSQL; package bot uses it.
package slackstate

import (
	"context"
	"time"

	"deepresearch/research"
)

// The store's errors are the run store's, one sentinel each: a caller
// tests with errors.Is against either name.
var (
	// ErrNotFound: no such record.
	ErrNotFound = research.ErrNotFound
	// ErrLeaseLost: the caller does not hold the inbox entry.
	ErrLeaseLost = research.ErrLeaseLost
)

// ThreadKey identifies a Slack thread: the team, the channel and the ts of
// the thread's parent message.
type ThreadKey struct {
	Team     string
	Channel  string
	ThreadTS string
}

// ThreadID derives the graph thread id of a Slack thread.
func (k ThreadKey) ThreadID() string {
	return "slack:" + k.Team + ":" + k.Channel + ":" + k.ThreadTS
}

// Thread maps a Slack thread to its graph thread.
type Thread struct {
	Key       ThreadKey
	ThreadID  string // graph thread id
	Requester string // Slack user id of who started the thread's first run
	DM        bool   // a direct message (assistant) thread
	CreatedAt time.Time
}

// Place is where and how Slack shows a run: the thread it lives in, its
// status message and whether that message is a stream. A run of a
// conversation gets its place when it is created (CreateRun); a digest's
// run has no thread, only the status message SetStatusMessage records
// (the digest's summary message in the schedule's channel).
type Place struct {
	RunID string
	Key   ThreadKey // the run's thread (zero for a run without one)
	// Stream: the run's status is shown as a stream (its creator took a
	// chat.startStream for it); false, an edited status message. A process
	// that picks the run up asks Slack whether a stream still takes chunks
	// only for a stream.
	Stream   bool
	StatusTS string // the status message, edited in place ("" until recorded)
}

// InboxEntry is a received Socket Mode envelope in the inbox.
type InboxEntry struct {
	Key        string // dedupe key: "ev:<event_id>", or "env:<envelope_id>"
	Type       string // envelope type: events_api, interactive or slash_commands
	EnvelopeID string
	Payload    []byte // the envelope's payload (JSON) as received; empty once done
	ReceivedAt time.Time

	// Lease: who handles it and until when (not done only).
	Owner      string
	LeaseUntil time.Time
	Attempts   int // processes that took it on: 1 for the receiver, +1 per ClaimInbox

	DoneAt time.Time // zero until handled
}

// Done reports whether the entry has been handled.
func (e InboxEntry) Done() bool { return !e.DoneAt.IsZero() }

// Store keeps what the Slack bot must not lose across restarts and shares
// between replicas, besides the runs: the thread mapping, the inbox and
// processed event keys, the replica registry and the runs' places.
//
// Every method is atomic on its own (one transaction in SQL); the comments
// say which are compare-and-set. Times are passed in by the caller (the
// bot's clock), never read from the database's clock, so tests control
// them; a SQL implementation stores them with at least millisecond
// precision. storage/sqlstore's conformance suite checks the
// implementation against these rules.
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

	// CreateRun creates run r, as research.Store.CreateRun does (its rules
	// and errors: ErrConflict first, then ErrThreadBusy and ErrUserLimit),
	// and its place p (p.RunID is r.ID), in one transaction: a run of a
	// thread never exists without its place, so a process that recovers it
	// knows where to show it. A refused run leaves no place; a run that
	// exists (ErrConflict: the same message handled twice) keeps the place
	// it was created with.
	CreateRun(ctx context.Context, r research.Run, p Place, maxPerUser int) error
	// Place returns the place of a run, or ErrNotFound (no such run, or a
	// run created without one that has no status message yet).
	Place(ctx context.Context, runID string) (Place, error)
	// SetStatusMessage records the ts of the run's status message if it
	// has none yet and returns the stored ts (set-if-empty, then read). A
	// run without a place (a digest's) gets one with no thread. ErrNotFound
	// when there is no such run.
	SetStatusMessage(ctx context.Context, runID, ts string) (string, error)
	// StatusMessage returns the ts of the run's status message, "" when
	// none is recorded (or there is no such run).
	StatusMessage(ctx context.Context, runID string) (string, error)
}
