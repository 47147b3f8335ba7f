package graph

import (
	"context"
	"errors"
	"time"
)

// Saver is the durable storage the runtime needs. It is deliberately a store of
// opaque byte records: it knows nothing of the state type, reducers or nodes.
//
// Model. A thread holds one checkpoint chain per namespace (the root graph uses
// NS ""; subgraphs use their own). Checkpoints form a tree through ParentID;
// the thread's head names the newest checkpoint of the active branch. A
// checkpoint stores only what changed (Delta: the writes applied on top of its
// parent) and, now and then, a full Snapshot, so storage grows with the state
// and the number of changes, not with steps × state.
//
// Pending writes are attached to a checkpoint: they are the results of the tasks
// that run from it. They are saved as each task finishes, so a crash re-runs
// only unfinished tasks; the next checkpoint's state is its parent's state plus
// the parent's pending writes (from the writes table) plus its inline Delta.
//
// One writer per thread: Commit is a compare-and-set on the head. Two processes
// resuming the same thread cannot fork its history; the loser gets ErrConflict.
// A deleted thread stays deleted: later commits and writes get ErrThreadDeleted.
type Saver interface {
	// Load returns the chain of checkpoints needed to rebuild the state at
	// checkpoint id (id 0 means the head of thread/ns): from the nearest
	// checkpoint at or before it that has a Snapshot (or, failing that, the
	// root of the chain, whose base is the zero state), to id itself, oldest
	// first. Each returned checkpoint carries its pending writes (Writes).
	// A thread/ns with no checkpoints returns ErrNotFound.
	Load(ctx context.Context, threadID, ns string, id int64) (*Chain, error)

	// Commit atomically appends the batch's checkpoints (each the parent of
	// the next; the first's parent is 0 for a new chain, or any existing
	// checkpoint of the chain: the head to continue, an older one to fork),
	// moves the head to the last one, and stores the batch's pending writes.
	// If the head is not ExpectHead it returns ErrConflict and stores nothing.
	// A batch with no checkpoints only stores writes, and only while their
	// checkpoint is the head (else ErrConflict). Writes are idempotent: a
	// (checkpoint, task, idx) already stored is left as it was.
	Commit(ctx context.Context, b *Batch) error

	// PutResume records the answer to one interrupt exactly once. A second
	// call for the same key returns ErrAlreadyResumed; a checkpoint that is no
	// longer the head returns ErrConflict.
	PutResume(ctx context.Context, threadID, ns string, checkpointID int64, w PendingWrite) error

	// List returns checkpoint summaries of thread/ns, newest first.
	List(ctx context.Context, threadID, ns string, opts ListOptions) ([]CheckpointInfo, error)

	// DeleteThread removes every namespace of a thread and leaves a tombstone
	// so that late commits from other processes cannot resurrect it.
	DeleteThread(ctx context.Context, threadID string) error
	// ForgetThread removes every namespace of a thread, checkpoints and
	// pending writes, and leaves no tombstone: a later run of the thread
	// starts afresh (its content must not outlive the run that made it).
	// A thread with nothing stored is no error.
	ForgetThread(ctx context.Context, threadID string) error

	// PutSnapshot sets the Snapshot of an existing checkpoint (used by
	// retention before older checkpoints are dropped).
	PutSnapshot(ctx context.Context, threadID, ns string, id int64, snapshot []byte) error

	// DeleteBefore drops every checkpoint of thread/ns with ID < id (on any
	// branch) and their pending writes, and returns how many checkpoints went.
	// The caller makes sure checkpoint id has a Snapshot first.
	DeleteBefore(ctx context.Context, threadID, ns string, id int64) (int, error)

	// PruneThreads deletes whole threads whose root namespace saw no commit,
	// write or resume since olderThan; with finishedOnly, only threads whose last commit said
	// Finished. It returns how many threads were removed. Pruned threads get
	// no tombstone (they are old; a new run with the same id starts fresh).
	PruneThreads(ctx context.Context, olderThan time.Time, finishedOnly bool) (int, error)
}

// Chain is what Load returns.
type Chain struct {
	Head        int64               // the thread/ns head at the time of the load
	Checkpoints []*StoredCheckpoint // Checkpoints[0] has a Snapshot or ParentID 0; the last is the one asked for
}

// StoredCheckpoint is one checkpoint as stored.
type StoredCheckpoint struct {
	ThreadID  string
	NS        string
	ID        int64 // > 0, unique within thread/ns, increasing
	ParentID  int64 // 0 for the first checkpoint of a chain
	Step      int
	Source    string // "input", "loop", "update", "fork"
	Snapshot  []byte // optional full state
	Delta     []byte // encoded writes applied on top of the parent (those not in the parent's pending writes)
	Next      []byte // encoded tasks to run from here
	Meta      []byte // encoded metadata (JSON object)
	CreatedAt time.Time

	// Writes are this checkpoint's pending writes, filled in by Load.
	Writes []PendingWrite
}

// PendingWrite is one write of one task run from a checkpoint.
type PendingWrite struct {
	CheckpointID int64 // the checkpoint the task ran from
	Task         int   // the task's index in the checkpoint's Next; -1 for writes not tied to a task
	Idx          int   // position within the task's writes; negative for special records
	Channel      string
	Value        []byte
}

// Batch is one atomic Commit.
type Batch struct {
	ThreadID    string
	NS          string
	ExpectHead  int64
	Checkpoints []*StoredCheckpoint
	Writes      []PendingWrite
	// Finished says the last checkpoint ends the run (no tasks, no interrupt);
	// retention uses it.
	Finished bool
}

// ListOptions filter List.
type ListOptions struct {
	Before int64  // only checkpoints with ID < Before (0: no bound)
	Limit  int    // at most this many (0: all)
	Source string // only this source ("" any)
	// Meta keeps checkpoints whose metadata (a JSON object of strings) has
	// all of these key/value pairs.
	Meta map[string]string
}

// CheckpointInfo summarises a checkpoint for history listings.
type CheckpointInfo struct {
	ID, ParentID int64
	Step         int
	Source       string
	Meta         []byte
	CreatedAt    time.Time
	HasSnapshot  bool
}

// Errors a Saver returns (wrapped or not; compare with errors.Is).
var (
	ErrNotFound       = errors.New("graph: checkpoint not found")
	ErrConflict       = errors.New("graph: thread was advanced by another writer")
	ErrThreadDeleted  = errors.New("graph: thread was deleted")
	ErrAlreadyResumed = errors.New("graph: interrupt was already resumed")
	ErrTooLarge       = errors.New("graph: record exceeds the store's size limit")
)
