package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"deepresearch/agent/citation"
)

// Depth sets how much research a run does.
type Depth string

// Depths.
const (
	DepthQuick    Depth = "quick"
	DepthStandard Depth = "standard"
	DepthDeep     Depth = "deep"
)

// Request is one question on a thread: the first one or a follow-up ("dig
// deeper into X", "rewrite it shorter").
type Request struct {
	Question string `json:"question"`
	// Language of the report ("ja", "en", ...); empty: the question's.
	Language string `json:"language,omitempty"`
	// ApprovePlan pauses after planning for a person to approve the plan.
	ApprovePlan bool `json:"approve_plan,omitempty"`
	// ApproveDraft pauses before the report is final.
	ApproveDraft bool `json:"approve_draft,omitempty"`
	// NoClarify never asks a clarifying question.
	NoClarify bool  `json:"no_clarify,omitempty"`
	Depth     Depth `json:"depth,omitempty"`
	// Tag is the caller's label for the turn (the bot's run id), kept in
	// the thread's state and returned in Result.Tag, so a caller that
	// crashed after the turn finished can tell its own turn from an
	// earlier one.
	Tag string `json:"tag,omitempty"`
	// Workspace, when set, lets the research search the requester's own
	// workspace (see Workspace) where the plan or the question calls for it.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Audience is where the report will be seen; external sources (MCP
	// servers) whose results may not appear there are not used. nil: a
	// channel report nobody named (only sources allowed anywhere).
	Audience *Audience `json:"audience,omitempty"`
	// Requester is who asked (the Slack user id; "" in a terminal). Only
	// its hash (tracing.Hash) leaves the process, on the turn's span.
	Requester string `json:"requester,omitempty"`
	// TeamSize is how many researchers research each subtask, each with
	// its own strategy (0: Options.TeamSize; at most MaxTeamSize). Above
	// 1 the report cross-checks their findings (see CrossCheck).
	TeamSize int `json:"team_size,omitempty"`
}

// Plan is the research plan: a theme, the points to investigate, search
// queries dealt out to subtasks, and the checks the answer must pass.
type Plan struct {
	Theme               string    `json:"theme"`
	InvestigationPoints []string  `json:"investigation_points"`
	SearchQueries       []string  `json:"search_queries"`
	Subtasks            []Subtask `json:"subtasks"`
	PlanText            string    `json:"plan_text"`
	// EvaluationTypes are the checks the answer must pass.
	EvaluationTypes []Check   `json:"evaluation_types"`
	Fallback        bool      `json:"fallback,omitempty"` // the LLM failed; a simple plan was used
	CreatedAt       time.Time `json:"created_at"`
}

// Check is a test the answer must pass, chosen by the planner and judged
// by the reviewer.
type Check string

// Checks.
const (
	CheckDefinitive   Check = "definitive"
	CheckFreshness    Check = "freshness"
	CheckPlurality    Check = "plurality"
	CheckCompleteness Check = "completeness"
	CheckAttribution  Check = "attribution"
)

// Subtask is one researcher's assignment.
type Subtask struct {
	Title   string   `json:"title"`
	Queries []string `json:"queries"`
	// Workspace asks for the team's own messages to be searched too (the
	// planner sets it for points about the team's own decisions).
	Workspace bool `json:"workspace,omitempty"`
}

// Finding is an item of the knowledge store: a claim with the verbatim quote
// and the source it rests on (or a computed result).
type Finding struct {
	ID       string      `json:"id"`
	Subtask  string      `json:"subtask,omitempty"`
	Claim    string      `json:"claim"`
	Quote    string      `json:"quote,omitempty"`
	URL      string      `json:"url,omitempty"`
	Title    string      `json:"title,omitempty"`
	Kind     FindingKind `json:"kind"`
	Verified bool        `json:"verified,omitempty"` // the quote is in the page read
	Round    int         `json:"round,omitempty"`
	Turn     int         `json:"turn,omitempty"`
}

// FindingKind says what a finding rests on.
type FindingKind string

// Finding kinds.
const (
	FindingSource   FindingKind = "source"   // a quote from a page read
	FindingComputed FindingKind = "computed" // the result of a program
)

// Source is a document seen (in search results) or read in the run.
type Source struct {
	URL       string    `json:"url"` // normalised
	FinalURL  string    `json:"final_url,omitempty"`
	Title     string    `json:"title"`
	Snippet   string    `json:"snippet,omitempty"`
	Text      string    `json:"text,omitempty"` // exact text read (empty if only seen)
	Retrieved bool      `json:"retrieved"`
	Query     string    `json:"query,omitempty"`
	Provider  string    `json:"provider,omitempty"`
	Published time.Time `json:"published,omitzero"`

	// Aliases are the other URLs the same page was reached by (a redirect
	// link, a rel=canonical alias, a copy with the same text): one source.
	Aliases []string `json:"aliases,omitempty"`
	// Digest identifies the text read (see textKey): two URLs with the
	// same text are one source.
	Digest string `json:"digest,omitempty"`
	// OffTopic says the page does not concern the research: OffTopicSkipped
	// (judged by its search result, not read) or OffTopicRead (read, its
	// text shares nothing with the question; no evidence taken from it).
	OffTopic string `json:"off_topic,omitempty"`
}

// Off-topic verdicts on a page.
const (
	OffTopicSkipped = "skipped"
	OffTopicRead    = "read"
)

// ReadStats says what the pages read were worth: Read were read (and kept),
// Useless of those gave no evidence, OffTopic were read and found off-topic
// (not kept), Skipped were judged off-topic by their search result and not
// read. Wasted reads are Useless + OffTopic.
type ReadStats struct {
	Read     int `json:"read"`
	Useless  int `json:"useless"`
	OffTopic int `json:"off_topic"`
	Skipped  int `json:"skipped"`
}

// Wasted is the reads that gave nothing.
func (r ReadStats) Wasted() int { return r.Useless + r.OffTopic }

// readStats counts the thread's reads.
func readStats(s State) ReadStats {
	used := map[string]bool{}
	for _, f := range s.Findings {
		if f.Verified {
			used[f.URL] = true
		}
	}
	var st ReadStats
	for u, src := range s.Sources {
		switch {
		case src.Retrieved:
			st.Read++
			if !used[u] {
				st.Useless++
			}
		case src.OffTopic == OffTopicRead:
			st.OffTopic++
		case src.OffTopic == OffTopicSkipped:
			st.Skipped++
		}
	}
	return st
}

// SubtaskResult is what one researcher returned.
type SubtaskResult struct {
	Turn      int      `json:"turn"`
	Round     int      `json:"round"`
	Index     int      `json:"index"`
	Title     string   `json:"title"`
	Answer    string   `json:"answer"`
	Completed bool     `json:"completed"`
	Tries     int      `json:"tries"`
	Gaps      []string `json:"gaps,omitempty"`
	Findings  int      `json:"findings"`
	Stopped   Budget   `json:"stopped,omitempty"` // the budget that cut it short
	// Statements are the answer as the writer sees it: sentences with the
	// findings (by ID) they rest on.
	Statements []Statement `json:"statements,omitempty"`
	// Searches is how many queries it searched; Read the pages it read, by
	// URL. A resumed turn's progress shows them again.
	Searches int         `json:"searches,omitempty"`
	Read     []SourceRef `json:"read,omitempty"`
	// Member is the researcher of a team that returned it (0 alone).
	Member int `json:"member,omitempty"`
}

// readRefs lists the pages of read, by URL.
func readRefs(read map[string]Source) []SourceRef {
	out := make([]SourceRef, 0, len(read))
	for _, u := range slices.Sorted(maps.Keys(read)) {
		out = append(out, SourceRef{URL: read[u].URL, Title: read[u].Title, Retrieved: true})
	}
	return out
}

// Budget names a budget of the turn that can run out.
type Budget string

// Budgets.
const (
	BudgetTokens Budget = "tokens" // only the reserve for the final report is left
	BudgetTime   Budget = "time"   // the wall-clock budget is spent
)

// Scores are the reviewer's scores, each from 0 to 1.
type Scores struct {
	FactCheck    float64 `json:"fact_check"`
	Completeness float64 `json:"completeness"`
	Logic        float64 `json:"logic"`
	Format       float64 `json:"format"`
}

// Weighted returns 0.4·fact + 0.3·completeness + 0.2·logic + 0.1·format.
func (s Scores) Weighted() float64 {
	return 0.4*s.FactCheck + 0.3*s.Completeness + 0.2*s.Logic + 0.1*s.Format
}

// Evaluation is the reviewer's verdict on one of the plan's checks.
type Evaluation struct {
	Type   Check  `json:"type"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// Issue is a problem the reviewer found.
type Issue struct {
	Type        string `json:"type"`
	Severity    string `json:"severity"`
	Description string `json:"description"`
	Location    string `json:"location"`
}

// Review is the reviewer's verdict on a draft.
type Review struct {
	Approved        bool         `json:"approved"`
	Overall         float64      `json:"overall_score"`
	Scores          Scores       `json:"scores"`
	Evaluations     []Evaluation `json:"evaluations,omitempty"`
	Feedback        string       `json:"feedback,omitempty"`
	SuggestedAction NextStep     `json:"suggested_action,omitempty"` // NextWrite, NextResearch or NextEnd
	Issues          []Issue      `json:"issues,omitempty"`
	Simple          bool         `json:"simple,omitempty"` // scored without the LLM
	Round           int          `json:"round"`
}

// Usage counts the tokens of a thread.
//
// The tokens are every request's that reached the server: Requests counts
// them (retries, hedges, a re-asked reply, calls cancelled in flight), and
// WastedTokens is the part spent on requests whose answer was not used;
// Calls counts the answered calls. SpeculativeWasted is the part of
// WastedTokens spent on speculative calls that were called off.
type Usage struct {
	Calls             int `json:"calls"`
	Requests          int `json:"requests,omitempty"`
	PromptTokens      int `json:"prompt_tokens"`
	CompletionTokens  int `json:"completion_tokens"`
	WastedTokens      int `json:"wasted_tokens,omitempty"`
	SpeculativeWasted int `json:"speculative_wasted,omitempty"`
	// SpeculativeSavedMS is the wall time speculative calls saved, in
	// milliseconds: how long each used one ran alongside the judgement it
	// would otherwise have waited for.
	SpeculativeSavedMS int64   `json:"speculative_saved_ms,omitempty"`
	Cost               float64 `json:"cost,omitempty"`
	Failures           int     `json:"failures,omitempty"` // calls that failed after retries
}

// The notes of Result.Unverified begin (English) or contain (Japanese)
// these words, by kind: a statement whose citation was removed, a question
// the research left open (the report passed its review), a point not fully
// researched (it did not).
const (
	NoteCitationRemoved   = "Citation removed from "
	NoteCitationRemovedJA = "の出典を削除"
	NoteOpenQuestion      = "Open question: "
	NoteOpenQuestionJA    = "未解決の問い: "
	NoteNotResearched     = "Not fully researched: "
	NoteNotResearchedJA   = "調査が不十分: "
)

// NoteCounts sorts a report's notes (Result.Unverified) by kind.
type NoteCounts struct {
	Unverified    int // statements whose citation was removed
	Open          int // questions left open by a report that passed
	NotResearched int // points not fully researched
	Other         int // notes on the run: budgets, the model, the review
}

// CountNotes sorts notes as finalize wrote them.
func CountNotes(notes []string) NoteCounts {
	var c NoteCounts
	for _, n := range notes {
		switch {
		case strings.HasPrefix(n, NoteCitationRemoved) || strings.Contains(n, NoteCitationRemovedJA):
			c.Unverified++
		case strings.HasPrefix(n, NoteOpenQuestion) || strings.HasPrefix(n, NoteOpenQuestionJA):
			c.Open++
		case strings.HasPrefix(n, NoteNotResearched) || strings.HasPrefix(n, NoteNotResearchedJA):
			c.NotResearched++
		default:
			c.Other++
		}
	}
	return c
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Spent says what the run's model requests cost in tokens, honestly: every
// request that reached the server, and how many of those tokens went on
// requests whose answer was not used.
func (u Usage) Spent() string {
	req := max(u.Requests, u.Calls)
	s := fmt.Sprintf("%d tokens in %d requests", u.Total(), req)
	if req != u.Calls || u.WastedTokens > 0 {
		s += fmt.Sprintf(" (%d calls answered; %d tokens on failed, retried or cancelled requests)", u.Calls, u.WastedTokens)
	}
	return s
}

// Speculation says whether the run's speculative calls paid for
// themselves: the wall time they saved against the tokens they wasted (""
// when it made none).
func (u Usage) Speculation() string {
	if u.SpeculativeSavedMS == 0 && u.SpeculativeWasted == 0 {
		return ""
	}
	saved := time.Duration(u.SpeculativeSavedMS) * time.Millisecond
	return fmt.Sprintf("speculative answers saved %s of waiting and wasted %d tokens", saved.Round(100*time.Millisecond), u.SpeculativeWasted)
}

// PerVerified is the tokens spent per verified citation of the report
// ("no verified citation" without one).
func (u Usage) PerVerified(verified int) string {
	if verified <= 0 {
		return "no verified citation"
	}
	return fmt.Sprintf("%d tokens per verified citation", (u.Total()+verified/2)/verified)
}

func (u Usage) add(v Usage) Usage {
	return Usage{Calls: u.Calls + v.Calls, Requests: u.Requests + v.Requests, PromptTokens: u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens, WastedTokens: u.WastedTokens + v.WastedTokens,
		SpeculativeWasted: u.SpeculativeWasted + v.SpeculativeWasted, SpeculativeSavedMS: u.SpeculativeSavedMS + v.SpeculativeSavedMS, Cost: u.Cost + v.Cost, Failures: u.Failures + v.Failures}
}

// Status is where a thread stands after Start, Resume or Continue.
type Status string

// Statuses.
const (
	StatusDone        Status = "done"        // a report was produced
	StatusReplied     Status = "replied"     // small talk answered directly
	StatusInterrupted Status = "interrupted" // waiting for a person (see Result.Interrupts)
	StatusCancelled   Status = "cancelled"   // a person cancelled
)

// Finish says why a report is final.
type Finish string

// Finish reasons.
const (
	FinishApproved      Finish = "approved"        // the reviewer passed it
	FinishPersonOK      Finish = "person_approved" // a person approved the draft
	FinishMaxRounds     Finish = "max_rounds"      // review rounds ran out; the best draft was kept
	FinishTokenBudget   Finish = "token_budget"    // the token budget ran out
	FinishTimeBudget    Finish = "time_budget"     // the wall-clock budget ran out
	FinishLLMDown       Finish = "llm_unavailable" // extractive report from the sources
	FinishRewritten     Finish = "rewritten"       // a follow-up rewrite of the report
	FinishCancelled     Finish = "cancelled"
	FinishMaxIterations Finish = "max_iterations"
)

// Citations is the outcome of the citation check of the final report.
type Citations = citation.Report

// SourceRef names a source in the result.
type SourceRef struct {
	URL       string `json:"url"`
	Title     string `json:"title"`
	Retrieved bool   `json:"retrieved"`
	Cited     bool   `json:"cited"`
}

// InterruptKind says what a pause asks a person.
type InterruptKind string

// Interrupt kinds.
const (
	InterruptClarify      InterruptKind = "clarify"       // answer with Answer.Text
	InterruptApprovePlan  InterruptKind = "approve_plan"  // approve / revise / cancel
	InterruptApproveDraft InterruptKind = "approve_draft" // approve / revise / research / cancel
)

// Action is a person's answer to an approval.
type Action string

// Actions (the Slack bot shows them as buttons).
const (
	ActionApprove  Action = "approve"
	ActionRevise   Action = "revise"   // request changes, with Answer.Feedback
	ActionResearch Action = "research" // research more, with Answer.Feedback
	ActionCancel   Action = "cancel"
	ActionAnswer   Action = "answer" // answers a clarifying question with Answer.Text
)

// Choice is a button.
type Choice struct {
	Action Action `json:"action"`
	Label  string `json:"label"`
	// NeedsText: the button asks for text (feedback or an answer).
	NeedsText bool `json:"needs_text,omitempty"`
}

// Interrupt is a pause waiting for a person, with what to show them.
type Interrupt struct {
	ID       string        `json:"id"` // answer with Resume(ctx, thread, map[id]Answer)
	Kind     InterruptKind `json:"kind"`
	Question string        `json:"question,omitempty"` // clarify: the question to ask
	Plan     *Plan         `json:"plan,omitempty"`     // approve_plan
	Draft    string        `json:"draft,omitempty"`    // approve_draft: the checked draft
	Summary  string        `json:"summary,omitempty"`
	Review   *Review       `json:"review,omitempty"`
	// Citations of the draft.
	Citations *Citations `json:"citations,omitempty"`
	Choices   []Choice   `json:"choices"`
	Language  string     `json:"language,omitempty"`
}

// Answer is a person's reply to an Interrupt.
type Answer struct {
	Action   Action `json:"action"`
	Feedback string `json:"feedback,omitempty"`
	Text     string `json:"text,omitempty"`
}

// Result is where a thread stands.
type Result struct {
	ThreadID string `json:"thread_id"`
	Status   Status `json:"status"`
	// TraceParent is the turn's trace context (see State.TraceParent), so a
	// caller's later work on the turn (the upload) joins its trace.
	TraceParent string `json:"traceparent,omitempty"`
	Finish      Finish `json:"finish,omitempty"`
	// Reply answers small talk (StatusReplied).
	Reply string `json:"reply,omitempty"`
	// Report is the final markdown report; Summary its executive summary.
	Report  string      `json:"report,omitempty"`
	Summary string      `json:"summary,omitempty"`
	Plan    *Plan       `json:"plan,omitempty"`
	Sources []SourceRef `json:"sources,omitempty"`
	// Subtasks are what the current turn's researchers returned so far.
	Subtasks  []SubtaskResult `json:"subtasks,omitempty"`
	Citations Citations       `json:"citations"`
	Review    *Review         `json:"review,omitempty"`
	Usage     Usage           `json:"usage"`
	// Unverified says what the report could not back with a checked source
	// (dropped citations, open gaps, budget cut-offs).
	Unverified []string `json:"unverified,omitempty"`
	// Extractive: the LLM was unavailable and the report quotes sources.
	Extractive bool        `json:"extractive,omitempty"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Charts are the charts the report links by name (see Chart).
	Charts   []Chart `json:"charts,omitempty"`
	Language string  `json:"language,omitempty"`
	// Tag is the current turn's Request.Tag.
	Tag string `json:"tag,omitempty"`
	// Reads says what the pages read were worth (wasted reads).
	Reads ReadStats `json:"reads"`
	// ReadWorkspace: the thread read messages of the requester's workspace
	// (Deps.Workspace), which must not be stored beyond the run.
	ReadWorkspace bool `json:"read_workspace,omitempty"`
	// Routes are the current turn's routing decisions taken by the model
	// where the rules could not decide, with its reasons.
	Routes []Routing `json:"routes,omitempty"`
	// CrossCheck is what the last draft's findings say together
	// (corroborated statements, disagreements); the report shows it when
	// a team researched.
	CrossCheck *CrossCheck `json:"cross_check,omitempty"`
	// Repeated: the call ran nothing and returned the thread's current
	// turn as it stood (a Start repeating the turn's Tag, or a Resume of a
	// turn that had already ended).
	Repeated bool `json:"repeated,omitempty"`
}

// EventKind says what a progress Event reports.
type EventKind string

// Event kinds.
const (
	EventPhase           EventKind = "phase"
	EventPlanMade        EventKind = "plan"
	EventSubtaskStarted  EventKind = "subtask_started"
	EventSubtaskFinished EventKind = "subtask_finished"
	EventSearched        EventKind = "searched"
	EventSourceFound     EventKind = "source_found"
	EventSourceRead      EventKind = "source_read"
	EventNoteSaved       EventKind = "note"
	EventTokens          EventKind = "tokens"
	EventDraft           EventKind = "draft"
	EventReviewed        EventKind = "reviewed"
	EventBudget          EventKind = "budget"
	EventWarning         EventKind = "warning"
	EventRouted          EventKind = "routed"  // the model decided a route the rules could not (Message: step and reason)
	EventWaiting         EventKind = "waiting" // the run waits on the model: a retry, or an answer slow to come (Message)
)

// Phase is a stage of the run.
type Phase string

// Phases.
const (
	PhaseCoordinating Phase = "coordinating"
	PhasePlanning     Phase = "planning"
	PhaseResearching  Phase = "researching"
	PhaseWriting      Phase = "writing"
	PhaseReviewing    Phase = "reviewing"
	PhaseFinishing    Phase = "finishing"
)

// SubtaskRef names a subtask in events.
type SubtaskRef struct {
	Round     int    `json:"round"`
	Index     int    `json:"index"`
	Title     string `json:"title"`
	Completed bool   `json:"completed,omitempty"`
	Findings  int    `json:"findings,omitempty"`
	Tries     int    `json:"tries,omitempty"`
	// Team is how many researchers research the subtask (0 or 1: one);
	// Member which of them this is.
	Team   int `json:"team,omitempty"`
	Member int `json:"member,omitempty"`
}

// Tokens reports usage in events.
type Tokens struct {
	Node   string `json:"node"`
	Call   int    `json:"call"`   // tokens of this call
	Used   int    `json:"used"`   // tokens used in this turn so far
	Budget int    `json:"budget"` // 0: unlimited
}

// Event is one progress report; the Slack bot and the CLI render them.
type Event struct {
	Kind      EventKind   `json:"kind"`
	ThreadID  string      `json:"thread_id,omitempty"`
	Phase     Phase       `json:"phase,omitempty"`
	Message   string      `json:"message,omitempty"`
	Plan      *Plan       `json:"plan,omitempty"`
	Subtask   *SubtaskRef `json:"subtask,omitempty"`
	Query     string      `json:"query,omitempty"`
	Results   int         `json:"results,omitempty"`
	URL       string      `json:"url,omitempty"`
	Title     string      `json:"title,omitempty"`
	Tokens    *Tokens     `json:"tokens,omitempty"`
	Review    *Review     `json:"review,omitempty"`
	Citations *Citations  `json:"citations,omitempty"`
}

func decodeInterrupt(id string, payload json.RawMessage) Interrupt {
	var in Interrupt
	_ = json.Unmarshal(payload, &in)
	in.ID = id
	return in
}
