package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// EventKind tells what an Event reports.
type EventKind int

// Event kinds.
const (
	EventNodeStart EventKind = iota + 1
	EventNodeEnd
	EventCustom       // emitted by a node with Emit
	EventWritesSaved  // a task's writes reached the Saver
	EventCheckpoint   // a checkpoint reached the Saver (or was made, without one)
	EventInterrupt    // the run paused
	EventTaskRestored // a task finished before a crash was not run again
	EventMemoHit      // a Memo call returned its stored result instead of running (Payload: the key)
)

func (k EventKind) String() string {
	switch k {
	case EventNodeStart:
		return "node_start"
	case EventNodeEnd:
		return "node_end"
	case EventCustom:
		return "custom"
	case EventWritesSaved:
		return "writes_saved"
	case EventCheckpoint:
		return "checkpoint"
	case EventInterrupt:
		return "interrupt"
	case EventTaskRestored:
		return "task_restored"
	case EventMemoHit:
		return "memo_hit"
	}
	return fmt.Sprintf("event(%d)", int(k))
}

// Event is one thing that happened in a run. Handlers are called from task
// goroutines and the background writer, so they must be safe for concurrent
// use and quick.
type Event struct {
	Kind         EventKind
	ThreadID     string
	NS           string
	Step         int
	CheckpointID int64
	Node         string
	Task         int // index of the task in its step
	Attempt      int
	Duration     time.Duration
	Err          error
	Payload      any         // EventCustom: what the node emitted
	Interrupts   []Interrupt // EventInterrupt
}

// Interrupt is a pause waiting for an answer.
type Interrupt struct {
	ID    string // answer with Config.Resume[ID]
	Kind  string // "before", "after" or "node"
	Nodes []string
	// Payload is what the node passed to Pause (as JSON), for the UI.
	Payload      json.RawMessage
	CheckpointID int64
}

type taskCtxKey struct{}

type taskCtx struct {
	emit    func(Event)
	base    Event
	resumes map[int]json.RawMessage // interrupt index → answer
	calls   int                     // Pause calls so far
	memo    *memoState              // nil outside a run with a Saver
}

// Emit sends a custom progress event from inside a node. Outside a run it
// does nothing.
func Emit(ctx context.Context, payload any) {
	tc, _ := ctx.Value(taskCtxKey{}).(*taskCtx)
	if tc == nil || tc.emit == nil {
		return
	}
	e := tc.base
	e.Kind = EventCustom
	e.Payload = payload
	tc.emit(e)
}

// TaskInfo identifies the running task, for nodes that need a stable key
// (for example to name a subgraph's namespace or an idempotency key).
type TaskInfo struct {
	ThreadID     string
	NS           string
	CheckpointID int64
	Step         int
	Node         string
	Task         int
}

// CurrentTask returns the task a node runs as.
func CurrentTask(ctx context.Context) (TaskInfo, bool) {
	tc, _ := ctx.Value(taskCtxKey{}).(*taskCtx)
	if tc == nil {
		return TaskInfo{}, false
	}
	b := tc.base
	return TaskInfo{ThreadID: b.ThreadID, NS: b.NS, CheckpointID: b.CheckpointID, Step: b.Step, Node: b.Node, Task: b.Task}, true
}

// interruptErr is returned by Pause while no answer is known.
type interruptErr struct {
	index   int
	payload json.RawMessage
}

func (e *interruptErr) Error() string { return "graph: interrupted" }

// ErrInterrupted is matched by errors.Is on the error Pause returns.
var ErrInterrupted = errors.New("graph: interrupted")

func (e *interruptErr) Is(target error) bool { return target == ErrInterrupted }

// Pause interrupts the node until a person answers. The first time, it
// returns an error (matching ErrInterrupted) the node must return as is; the run stops, its state is
// stored, and the interrupt (with payload) is reported. When the run is
// resumed with an answer, the node runs again from the start and this call
// returns the answer (as JSON). A node may call Interrupt several times; the
// answers are matched by call order. Work done before a Pause runs again on
// resume, so put side effects after it.
func Pause(ctx context.Context, payload any) (json.RawMessage, error) {
	tc, _ := ctx.Value(taskCtxKey{}).(*taskCtx)
	if tc == nil {
		return nil, errors.New("graph: Pause called outside a running node")
	}
	i := tc.calls
	tc.calls++
	if v, ok := tc.resumes[i]; ok {
		return v, nil
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("graph: interrupt payload: %w", err)
	}
	return nil, &interruptErr{index: i, payload: raw}
}

// PauseAs is Pause with the answer decoded into T.
func PauseAs[T any](ctx context.Context, payload any) (T, error) {
	var v T
	raw, err := Pause(ctx, payload)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("graph: decode interrupt answer: %w", err)
	}
	return v, nil
}
