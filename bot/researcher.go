package bot

import (
	"context"
	"errors"
	"time"
)

// Researcher is what the bot needs from the research agent. Every method
// works on a graph thread id (see ThreadID) and blocks until the run
// finishes, pauses on an interrupt, or ctx ends; progress is reported through
// sink while it runs. An Outcome carries either an Interrupt (the run is
// paused and waits for an Answer) or a Result (the run is finished).
//
// When ctx ends the methods return an error wrapping ctx's error; the thread
// must then be resumable with Continue (the graph's last checkpoint).
// Two calls never run at once for one thread: the bot's run lease guarantees
// it across processes.
type Researcher interface {
	// Start asks a new question on a thread: the first one, or a follow-up
	// ("dig deeper into X", "rewrite shorter") on a thread that already has
	// history, which the agent should use.
	Start(ctx context.Context, req StartRequest, sink ProgressSink) (Outcome, error)
	// Resume answers the pending interrupt with id interruptID. A second
	// answer to the same interrupt must fail (the bot only sends one).
	Resume(ctx context.Context, threadID, interruptID string, ans Answer, sink ProgressSink) (Outcome, error)
	// Continue carries on a run that stopped without finishing (the process
	// died, its lease was lost, or it was shut down) from the last
	// checkpoint. It returns ErrNothingToContinue when the thread has no
	// unfinished work, i.e. the input that started the run never reached a
	// checkpoint; the bot then repeats Start or Resume.
	Continue(ctx context.Context, threadID string, sink ProgressSink) (Outcome, error)
	// Cancel discards the unfinished work of a thread (a cancelled run), so
	// that a later Start on the thread begins afresh. It is called after
	// the running call has returned. Cancelling a thread with nothing
	// pending is not an error.
	Cancel(ctx context.Context, threadID string) error
}

// ErrNothingToContinue is returned by Researcher.Continue when the thread has
// no unfinished work to carry on.
var ErrNothingToContinue = errors.New("bot: nothing to continue on this thread")

// ProgressSink receives progress while a run works. Each Progress is the
// whole current picture, not a delta, so the bot may drop intermediate ones.
// It must not block for long; the bot's sink only records the value.
type ProgressSink func(Progress)

// StartRequest is a question for a thread.
type StartRequest struct {
	// RunID identifies the bot's run. A Start repeated for the same run
	// (the process died after the turn finished but before the run was
	// recorded as done) returns that turn's outcome instead of asking
	// again.
	RunID     string
	ThreadID  string
	Question  string
	FollowUp  bool   // the thread has earlier runs
	Requester string // Slack user id (for audit; never rendered as a mention)
	Options   RunOptions
}

// RunOptions tune one run.
type RunOptions struct {
	ApprovePlan  bool   // pause for plan approval
	ApproveDraft bool   // pause for draft approval
	Depth        string // "quick", "standard", "deep"; "" lets the agent choose
	Language     string // report language, e.g. "ja"; "" follows the question
	// Redeliver names an earlier run of the thread whose research finished
	// but whose report never reached Slack (the upload failed). The run
	// asks the researcher for that run's turn again — a finished turn is
	// returned as it is, not researched again — and posts its report.
	Redeliver string `json:",omitempty"`
}

// Progress is a snapshot of a running research.
type Progress struct {
	Phase       string    // e.g. "planning", "researching", "writing", "reviewing"
	Plan        []string  // the plan's steps, if planned
	Subtasks    []Subtask // parallel subtasks and their state
	SourcesRead int       // pages/documents read so far
	Tokens      int       // LLM tokens spent so far (prompt + completion)
	Note        string    // one short line on what is happening now
}

// Subtask is one unit of research and its state.
type Subtask struct {
	Title string
	State SubtaskState
}

// SubtaskState is the state of a Subtask.
type SubtaskState string

// Subtask states.
const (
	SubtaskPending SubtaskState = "pending"
	SubtaskRunning SubtaskState = "running"
	SubtaskDone    SubtaskState = "done"
	SubtaskFailed  SubtaskState = "failed"
)

// Outcome is how a Researcher call ended: exactly one of Interrupt and
// Result is set.
type Outcome struct {
	Interrupt *Interrupt
	Result    *Result
}

// InterruptKind says what a paused run waits for.
type InterruptKind string

// Interrupt kinds.
const (
	InterruptPlan     InterruptKind = "plan"     // approve the research plan
	InterruptDraft    InterruptKind = "draft"    // approve the draft report
	InterruptQuestion InterruptKind = "question" // answer a clarifying question in the thread
)

// Interrupt is a paused run's request to a person.
type Interrupt struct {
	ID   string // the graph's interrupt id; Resume answers it
	Kind InterruptKind
	// Text is what to show: the plan, the draft's summary (markdown), or the
	// question. It comes from the LLM and is escaped by the bot.
	Text string
	// Draft is the full draft report for InterruptDraft (attached as a
	// file when long); may be empty.
	Draft string
}

// Action is a person's decision on an interrupt.
type Action string

// Actions.
const (
	ActionApprove Action = "approve" // go on as planned/drafted
	ActionRevise  Action = "revise"  // request changes; Answer.Text says which
	ActionMore    Action = "more"    // research more before writing again
	ActionCancel  Action = "cancel"  // stop the run (the bot never resumes with it; it cancels)
	ActionAnswer  Action = "answer"  // the answer to a clarifying question, in Answer.Text
)

// Answer resumes an interrupt.
type Answer struct {
	Action Action
	Text   string // feedback for ActionRevise, the answer for ActionAnswer
	By     string // Slack user id of who decided
}

// Result is a finished research.
type Result struct {
	Title     string // short title of the report
	Summary   string // a few sentences (markdown)
	Report    string // the full report (markdown)
	Sources   int    // distinct sources cited
	Citations int    // citations in the report
	Tokens    int    // LLM tokens spent in total
	Elapsed   time.Duration
	// Reply: the message needed an answer, not a research (small talk, a
	// question about the bot); Summary is the answer, posted as a message
	// instead of a report file.
	Reply bool
	// Extractive: the model could not be reached for part of the research,
	// and the report was written from the sources' own words instead.
	Extractive bool
}
