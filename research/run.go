// Package research holds the product's words for a research run: the run
// and its states, the interrupt a paused run shows and the decision on it,
// progress, and the result; the run's lifecycle, which every face (the
// chat bot, the terminal) shares, as a Service; and the Runner, which
// runs research on the agent.
package research

import (
	"errors"
	"strings"
	"time"

	"deepresearch/agent"
)

// The agent's errors a Researcher returns, under the product's names:
// one sentinel each, never a copy to map.
var (
	// ErrNothingToContinue is returned by Researcher.Continue when the
	// thread has no unfinished work to carry on.
	ErrNothingToContinue = agent.ErrNothingToContinue
	// ErrCancelled is returned for a run whose thread was cancelled.
	ErrCancelled = agent.ErrCancelled
)

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
	Requester string // the requester's user id (for audit; never rendered as a mention)
	Options   RunOptions
}

// RunOptions tune one run.
type RunOptions struct {
	ApprovePlan  bool   // pause for plan approval
	ApproveDraft bool   // pause for draft approval
	Depth        string // "quick", "standard", "deep"; "" lets the agent choose
	Language     string // report language, e.g. "ja"; "" follows the question
	// TeamSize is the researchers per subtask (agent.Request.TeamSize; 0:
	// the agent's default).
	TeamSize int `json:",omitempty"`
	// Redeliver names an earlier run of the thread whose research finished
	// but whose report was never published (the upload failed). The run
	// asks the researcher for that run's turn again — a finished turn is
	// returned as it is, not researched again — and posts its report.
	Redeliver string `json:",omitempty"`
	// WorkspaceToken is the credential that came with the requester's
	// message (its action_token): with it the run may search the messages
	// of the workspace that the requester can see. "": no such search. It
	// is short-lived, never logged and never stored (the bot keeps it in
	// memory until the run's researcher starts; it is not encoded).
	WorkspaceToken string `json:"-"`
	// WorkspacePrivate lets that search include private conversations the
	// requester is in: only for a run whose report no one else sees.
	WorkspacePrivate bool `json:",omitempty"`
	// WorkspaceBefore is the ts of the requester's message: the search
	// finds only what was written before it.
	WorkspaceBefore string `json:",omitempty"`
	// Channel is where the report is posted and Private says nobody but
	// the requester sees it (a DM, the assistant pane): together they
	// decide which MCP sources the run may use (agent.Audience).
	Channel string `json:",omitempty"`
	Private bool   `json:",omitempty"`
	// Team is the workspace the report is posted in: with Channel and
	// Private it decides which past reports the run may use.
	Team string `json:",omitempty"`
	// ApproveStart: the run waits for a person's go-ahead (an interrupt of
	// kind InterruptStart) before its research starts.
	ApproveStart bool `json:",omitempty"`
	// Digest is set on a scheduled digest's run: the firing it researches.
	// Such a run asks no one (no clarifying question) and its face posts
	// the digest to the schedule's channel.
	Digest *DigestOf `json:",omitempty"`
}

// DigestOf names the firing of a schedule that a digest run researches.
type DigestOf struct {
	Schedule string
	Due      time.Time
	Manual   bool `json:",omitempty"` // fired by hand ("Run now")
}

// Progress is a snapshot of a running research.
type Progress struct {
	Phase       string    // e.g. "planning", "researching", "writing", "reviewing"
	Theme       string    // the plan's theme, once planned
	Plan        []string  // the plan's steps, if planned
	Subtasks    []Subtask // parallel subtasks and their state
	SourcesRead int       // pages/documents read so far
	Tokens      int       // LLM tokens spent so far (prompt + completion)
	Note        string    // one short line on what is happening now
}

// Subtask is one unit of research and its state.
type Subtask struct {
	Title    string
	State    SubtaskState
	Searches int      // searches it made so far
	Sources  []Source // pages it read so far, in reading order
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
	// InterruptStart: a go-ahead before the research starts (a run with
	// RunOptions.ApproveStart); approving it starts the research.
	InterruptStart InterruptKind = "start"
)

// StartInterruptID is the id of a run's InterruptStart.
const StartInterruptID = "start"

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
	By     string // the user id of who decided
}

// Source is a page a report cited or read.
type Source struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// Result is a finished research.
type Result struct {
	Title   string // short title of the report
	Summary string // a few sentences (markdown)
	// WriterSummary is the writer's summary as it wrote it (Summary may
	// add a line on the report's limits, or lines of the report): a
	// digest reads its findings there.
	WriterSummary string `json:",omitempty"`
	Report        string // the full report (markdown)
	Sources       int    // distinct sources cited
	// Cited lists the sources the report cites (for a digest's "what's
	// new"); Findings its key findings, when the writer listed them.
	Cited     []Source
	Findings  []string
	Citations int // citations in the report
	Tokens    int // LLM tokens spent in total
	Elapsed   time.Duration
	// Reply: the message needed an answer, not a research (small talk, a
	// question about the bot); Summary is the answer, posted as a message
	// instead of a report file.
	Reply bool
	// Extractive: the model could not be reached for part of the research,
	// and the report was written from the sources' own words instead.
	Extractive bool
	// TraceParent is the research turn's trace context (W3C traceparent;
	// "" untraced): the upload's span joins that trace.
	TraceParent string `json:",omitempty"`
	// Links are the addresses of the sources read in the run: the only
	// ones the summary may show as links.
	Links []string
	// ReadWorkspace: the run read messages of the workspace, which are
	// never stored beyond it (the report is not kept as a source).
	ReadWorkspace bool `json:",omitempty"`
	// Charts are the report's charts (PNG), which the report links by
	// name; they are shared next to it.
	Charts []Chart `json:",omitempty"`
}

// Chart is a chart of the report: a PNG the report links by Name
// ("chart-1.png").
type Chart struct {
	Name  string
	Title string
	PNG   []byte
}

// Store errors. Implementations return them (wrapped or not); callers test
// with errors.Is.
var (
	ErrNotFound       = errors.New("research: not found")
	ErrConflict       = errors.New("research: already exists")
	ErrThreadBusy     = errors.New("research: the thread has an active run")
	ErrUserLimit      = errors.New("research: too many active runs for the user")
	ErrNotAcquired    = errors.New("research: run not acquired")
	ErrLeaseLost      = errors.New("research: run lease lost")
	ErrAlreadyDecided = errors.New("research: interrupt already decided")
	ErrNotWaiting     = errors.New("research: run is not waiting on that interrupt")
	ErrFinished       = errors.New("research: run already finished")
)

// RunState is the state of a run job.
type RunState string

// Run states. Queued, running and waiting are active; the others are final.
const (
	StateQueued    RunState = "queued"
	StateRunning   RunState = "running"
	StateWaiting   RunState = "waiting"
	StateDone      RunState = "done"
	StateFailed    RunState = "failed"
	StateCancelled RunState = "cancelled"
)

// Active reports whether the state is queued, running or waiting.
func (s RunState) Active() bool {
	return s == StateQueued || s == StateRunning || s == StateWaiting
}

// AllStates lists every run state.
var AllStates = []RunState{StateQueued, StateRunning, StateWaiting, StateDone, StateFailed, StateCancelled}

// RunKind is the kind of a run, from its id: the part before the first
// ':' ("ask:…" is an `ask` run; a later "digest:SCHEDULE:DUE" a digest's
// firing), "" for an id without one (a conversation's run: the chat
// face's ids).
// Each face takes over only the runs of its kind after a crash.
func RunKind(id string) string {
	kind, _, ok := strings.Cut(id, ":")
	if !ok {
		return ""
	}
	return kind
}

// Run is one research job: a question (or a follow-up) on a graph thread,
// from creation to a final state.
type Run struct {
	ID        string
	ThreadID  string
	Requester string
	// Locale is the requester's locale (e.g. "ja-JP"), when known: a
	// default for the report's language and for dates in messages.
	Locale   string
	Question string
	FollowUp bool
	Options  RunOptions
	State    RunState

	// Lease: who works on it and until when (running only).
	Owner      string
	LeaseUntil time.Time
	Attempt    int // acquisitions since the last input; >1 means a retry

	Interrupt         *PendingInterrupt // set while waiting (and kept after, for the record)
	Decision          *Decision         // the decision on Interrupt, once made
	CancelRequestedBy string            // set by RequestCancel on a running run
	Error             string            // for failed

	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time
}

// PendingInterrupt is an interrupt a waiting run shows.
type PendingInterrupt struct {
	ID   string
	Kind InterruptKind
	Text string
	// MessageID is the face's id of the message that shows it (the one
	// with the buttons, or the question); "" when shown nowhere in
	// particular.
	MessageID string
}

// Decision is someone's answer to an interrupt.
type Decision struct {
	InterruptID string
	Action      Action
	Text        string
	By          string
	At          time.Time
}

// RunFilter selects runs for ListRuns; zero fields match everything.
type RunFilter struct {
	Requester string
	States    []RunState
	Limit     int // 0: no limit
}

// Upload is the published report of a run.
type Upload struct {
	RunID  string
	FileID string // the face's id of the report file ("" for a reply)
	// MessageID is the face's id of the message that shows the report, when
	// known.
	MessageID string
	At        time.Time
}
