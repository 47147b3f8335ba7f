package agent

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"deepresearch/agent/citation"
	"deepresearch/graph"
	"deepresearch/prompts"
)

// State is the research thread's state in the graph (JSON in checkpoints).
// Findings, sources and results accumulate across turns: they are the
// thread's knowledge store.
type State struct {
	// Turn input.
	Turn     int       `json:"turn"`
	Req      Request   `json:"req"`
	Question string    `json:"question"` // the question being researched (after clarification)
	Language string    `json:"language"`
	Deadline time.Time `json:"deadline"`
	// TurnStart is Usage.Total() when the turn began (budgets are per turn).
	TurnStart int `json:"turn_start"`

	History     []prompts.Exchange `json:"history,omitempty"`
	Intent      Intent             `json:"intent,omitempty"`
	Reply       string             `json:"reply,omitempty"`
	Instruction string             `json:"instruction,omitempty"`
	Clarified   bool               `json:"clarified,omitempty"`

	Plan         *Plan  `json:"plan,omitempty"`
	PlanFeedback string `json:"plan_feedback,omitempty"`

	Round     int               `json:"round"`
	Iteration int               `json:"iteration"`
	Dispatch  []Subtask         `json:"dispatch,omitempty"`
	Results   []SubtaskResult   `json:"results,omitempty"`
	Findings  []Finding         `json:"findings,omitempty"`
	Sources   map[string]Source `json:"sources,omitempty"`
	Queries   []string          `json:"queries,omitempty"`
	Notes     int               `json:"notes"`

	// ResearchRequest is feedback asking for more research (reviewer or person).
	ResearchRequest string `json:"research_request,omitempty"`
	// Feedback for the next draft (reviewer or person).
	Feedback string `json:"feedback,omitempty"`

	Draft           string          `json:"draft,omitempty"`
	DraftCitations  citation.Report `json:"draft_citations"`
	DraftExtractive bool            `json:"draft_extractive,omitempty"`
	Drafts          int             `json:"drafts"`
	Review          *Review         `json:"review,omitempty"`
	Reviews         int             `json:"reviews"`
	Best            *bestDraft      `json:"best,omitempty"`
	Next            NextStep        `json:"next,omitempty"`

	Report     string          `json:"report,omitempty"`
	Summary    string          `json:"summary,omitempty"`
	Citations  citation.Report `json:"citations"`
	Status     Status          `json:"status,omitempty"`
	Finish     Finish          `json:"finish,omitempty"`
	Unverified []string        `json:"unverified,omitempty"`
	// Unreachable names the external sources that could not be reached,
	// with the turn they last failed in (the report lists this turn's).
	Unreachable map[string]int `json:"unreachable,omitempty"`
	Extractive  bool           `json:"extractive,omitempty"`
	Exhausted   Budget         `json:"exhausted,omitempty"`
	// Routes are the decisions the model took where the rules could not,
	// of every turn (Routing.Turn).
	Routes []Routing `json:"routes,omitempty"`
	// CrossCheck is the last draft's cross-check of the findings.
	CrossCheck *CrossCheck `json:"cross_check,omitempty"`
	// Charts are the report's charts (the data analyst's, from its table).
	Charts []Chart `json:"charts,omitempty"`

	Usage Usage `json:"usage"`

	// TraceParent is the W3C traceparent of the span of the call that
	// started the turn ("" untraced): a later call on the turn (a resume,
	// hours later in another process) continues its trace.
	TraceParent string `json:"traceparent,omitempty"`
}

type bestDraft struct {
	Text       string          `json:"text"`
	Citations  citation.Report `json:"citations"`
	Score      float64         `json:"score"`
	Review     *Review         `json:"review,omitempty"`
	Extractive bool            `json:"extractive,omitempty"`
}

// channels of State.
type schema struct {
	s *graph.Schema[State]

	turn, turnStart, notes                 graph.Channel[int]
	req                                    graph.Channel[Request]
	question, language, reply              graph.Channel[string]
	intent                                 graph.Channel[Intent]
	instruction, planFeedback              graph.Channel[string]
	deadline                               graph.Channel[time.Time]
	clarified, draftExtractive, extractive graph.Channel[bool]
	history                                graph.Channel[[]prompts.Exchange]
	plan                                   graph.Channel[*Plan]
	round, iteration, drafts, reviews      graph.Channel[int]
	dispatch                               graph.Channel[[]Subtask]
	results                                graph.Channel[[]SubtaskResult]
	findings                               graph.Channel[[]Finding]
	sources                                graph.Channel[map[string]Source]
	queries, unverified                    graph.Channel[[]string]
	unreachable                            graph.Channel[map[string]int]
	researchRequest, feedback, draft       graph.Channel[string]
	next                                   graph.Channel[NextStep]
	draftCitations, citations              graph.Channel[citation.Report]
	review                                 graph.Channel[*Review]
	best                                   graph.Channel[*bestDraft]
	report, summary                        graph.Channel[string]
	exhausted                              graph.Channel[Budget]
	status                                 graph.Channel[Status]
	finish                                 graph.Channel[Finish]
	usage                                  graph.Channel[Usage]
	traceParent                            graph.Channel[string]
	routes                                 graph.Channel[[]Routing]
	crossCheck                             graph.Channel[*CrossCheck]
	charts                                 graph.Channel[[]Chart]
}

// newSchema declares the channels of State, each once: its field, how writes
// combine, and whether it belongs to the turn (graph.PerTurn: a new turn
// starts it from zero; the others carry the thread's knowledge, and the
// last turn's plan and report, into the next). A channel is named after its
// field's JSON key.
func newSchema() *schema {
	s := graph.NewSchema[State]()
	turn := graph.PerTurn()
	sumInt := func(a, b int) int { return a + b }
	return &schema{
		s: s,
		// the turn's input (Start writes every one of these but turn)
		turn:        graph.LastValue(s, "", func(st *State) *int { return &st.Turn }),
		req:         graph.LastValue(s, "", func(st *State) *Request { return &st.Req }, turn),
		question:    graph.LastValue(s, "", func(st *State) *string { return &st.Question }, turn),
		language:    graph.LastValue(s, "", func(st *State) *string { return &st.Language }, turn),
		deadline:    graph.LastValue(s, "", func(st *State) *time.Time { return &st.Deadline }, turn),
		turnStart:   graph.LastValue(s, "", func(st *State) *int { return &st.TurnStart }, turn),
		traceParent: graph.LastValue(s, "", func(st *State) *string { return &st.TraceParent }, turn),

		history:      graph.Append(s, "", func(st *State) *[]prompts.Exchange { return &st.History }),
		intent:       graph.LastValue(s, "", func(st *State) *Intent { return &st.Intent }, turn),
		reply:        graph.LastValue(s, "", func(st *State) *string { return &st.Reply }, turn),
		instruction:  graph.LastValue(s, "", func(st *State) *string { return &st.Instruction }, turn),
		clarified:    graph.LastValue(s, "", func(st *State) *bool { return &st.Clarified }, turn),
		plan:         graph.LastValue(s, "", func(st *State) **Plan { return &st.Plan }),
		planFeedback: graph.LastValue(s, "", func(st *State) *string { return &st.PlanFeedback }, turn),

		round:       graph.LastValue(s, "", func(st *State) *int { return &st.Round }, turn),
		iteration:   graph.LastValue(s, "", func(st *State) *int { return &st.Iteration }, turn),
		dispatch:    graph.LastValue(s, "", func(st *State) *[]Subtask { return &st.Dispatch }, turn),
		results:     graph.Append(s, "", func(st *State) *[]SubtaskResult { return &st.Results }),
		findings:    graph.Append(s, "", func(st *State) *[]Finding { return &st.Findings }),
		sources:     graph.Reduce(s, "", func(st *State) *map[string]Source { return &st.Sources }, mergeSources),
		queries:     graph.Append(s, "", func(st *State) *[]string { return &st.Queries }),
		notes:       graph.Reduce(s, "", func(st *State) *int { return &st.Notes }, sumInt),
		unreachable: graph.Reduce(s, "", func(st *State) *map[string]int { return &st.Unreachable }, mergeUnreachable),
		routes:      graph.Append(s, "", func(st *State) *[]Routing { return &st.Routes }),
		usage:       graph.Reduce(s, "", func(st *State) *Usage { return &st.Usage }, Usage.add),

		researchRequest: graph.LastValue(s, "", func(st *State) *string { return &st.ResearchRequest }, turn),
		feedback:        graph.LastValue(s, "", func(st *State) *string { return &st.Feedback }, turn),
		draft:           graph.LastValue(s, "", func(st *State) *string { return &st.Draft }),
		draftCitations:  graph.LastValue(s, "", func(st *State) *citation.Report { return &st.DraftCitations }),
		draftExtractive: graph.LastValue(s, "", func(st *State) *bool { return &st.DraftExtractive }),
		drafts:          graph.LastValue(s, "", func(st *State) *int { return &st.Drafts }, turn),
		review:          graph.LastValue(s, "", func(st *State) **Review { return &st.Review }, turn),
		reviews:         graph.LastValue(s, "", func(st *State) *int { return &st.Reviews }, turn),
		best:            graph.LastValue(s, "", func(st *State) **bestDraft { return &st.Best }, turn),
		next:            graph.LastValue(s, "", func(st *State) *NextStep { return &st.Next }, turn),
		crossCheck:      graph.LastValue(s, "", func(st *State) **CrossCheck { return &st.CrossCheck }, turn),
		charts:          graph.LastValue(s, "", func(st *State) *[]Chart { return &st.Charts }, turn),

		report:     graph.LastValue(s, "", func(st *State) *string { return &st.Report }),
		summary:    graph.LastValue(s, "", func(st *State) *string { return &st.Summary }),
		citations:  graph.LastValue(s, "", func(st *State) *citation.Report { return &st.Citations }),
		status:     graph.LastValue(s, "", func(st *State) *Status { return &st.Status }, turn),
		finish:     graph.LastValue(s, "", func(st *State) *Finish { return &st.Finish }, turn),
		unverified: graph.LastValue(s, "", func(st *State) *[]string { return &st.Unverified }, turn),
		extractive: graph.LastValue(s, "", func(st *State) *bool { return &st.Extractive }, turn),
		exhausted:  graph.LastValue(s, "", func(st *State) *Budget { return &st.Exhausted }, turn),
	}
}

// turnInput is the input of a new turn after prev: the next turn number and
// the request; the channels of the turn (graph.PerTurn) start from zero.
func (sc *schema) turnInput(prev State, req Request, lang string, deadline time.Time, traceParent string) []graph.Write {
	return []graph.Write{
		sc.traceParent.Set(traceParent),
		sc.turn.Set(prev.Turn + 1), sc.req.Set(req), sc.question.Set(req.Question), sc.language.Set(lang),
		sc.deadline.Set(deadline), sc.turnStart.Set(prev.Usage.Total()),
	}
}

// researchTask is the argument of one researcher (a Send).
type researchTask struct {
	ThreadID string `json:"thread_id"`
	Turn     int    `json:"turn"`
	Round    int    `json:"round"`
	Index    int    `json:"index"`
	// Member is the researcher's place in the subtask's team (0 alone); it
	// names the strategy (see strategies).
	Member   int       `json:"member,omitempty"`
	Team     int       `json:"team,omitempty"` // the team's size (0: one researcher)
	Subtask  Subtask   `json:"subtask"`
	Question string    `json:"question"`
	Language string    `json:"language"`
	Known    []string  `json:"known,omitempty"` // URLs read in earlier rounds
	Queries  []string  `json:"queries,omitempty"`
	Deadline time.Time `json:"deadline"`
	MaxTries int       `json:"max_tries"`
	// Workspace is the access to the requester's workspace this
	// researcher searches with (nil: the web and documents only).
	Workspace *Workspace `json:"workspace,omitempty"`
	// Audience is where the report is seen: it decides which external
	// sources the researcher may use (nil: a channel report).
	Audience *Audience `json:"audience,omitempty"`
}

// rState is a researcher's own state (a subgraph with its own checkpoints).
type rState struct {
	Task         researchTask      `json:"task"`
	Try          int               `json:"try"`
	Actions      []action          `json:"actions,omitempty"`
	Findings     []Finding         `json:"findings,omitempty"`
	Sources      map[string]Source `json:"sources,omitempty"`
	Queries      []string          `json:"queries,omitempty"`
	Computations []string          `json:"computations,omitempty"`
	Answer       string            `json:"answer,omitempty"`
	Reflection   *verdict          `json:"reflection,omitempty"` // this try's, made with the answer
	Advice       string            `json:"advice,omitempty"`
	Gaps         []string          `json:"gaps,omitempty"`
	NextQueries  []string          `json:"next_queries,omitempty"`
	Done         bool              `json:"done"`
	Completed    bool              `json:"completed"`
	Stopped      Budget            `json:"stopped,omitempty"`
	Notes        int               `json:"notes"`
	Usage        Usage             `json:"usage"`
	Unreachable  map[string]int    `json:"unreachable,omitempty"`
}

// action is a step the researcher chose.
type action struct {
	Kind    actionKind `json:"kind"`
	Queries []string   `json:"queries,omitempty"`
	URLs    []string   `json:"urls,omitempty"`
	Task    string     `json:"task,omitempty"`
	Code    string     `json:"code,omitempty"`
	// Tool, Source and Args name an external tool call (actTool).
	Tool   string          `json:"tool,omitempty"`
	Source string          `json:"source,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
}

// actionKind is what an action does; the researcher's tools have the same
// names.
type actionKind string

// Action kinds.
const (
	actSearch actionKind = "search" // run web searches
	actVisit  actionKind = "visit"  // read pages seen in results
	actCoding actionKind = "coding" // compute with a program
	actAnswer actionKind = "answer" // enough is known: answer the subtask
	actTool   actionKind = "tool"   // call an external source's tool
)

type rSchema struct {
	s                     *graph.Schema[rState]
	task                  graph.Channel[researchTask]
	try, notes            graph.Channel[int]
	actions               graph.Channel[[]action]
	findings              graph.Channel[[]Finding]
	sources               graph.Channel[map[string]Source]
	queries, computations graph.Channel[[]string]
	answer, advice        graph.Channel[string]
	stopped               graph.Channel[Budget]
	reflection            graph.Channel[*verdict]
	gaps, nextQueries     graph.Channel[[]string]
	done, completed       graph.Channel[bool]
	usage                 graph.Channel[Usage]
	unreachable           graph.Channel[map[string]int]
}

// newRSchema declares the channels of rState, each once (named after its
// field's JSON key).
func newRSchema() *rSchema {
	s := graph.NewSchema[rState]()
	return &rSchema{
		s:            s,
		task:         graph.LastValue(s, "", func(st *rState) *researchTask { return &st.Task }),
		try:          graph.LastValue(s, "", func(st *rState) *int { return &st.Try }),
		notes:        graph.Reduce(s, "", func(st *rState) *int { return &st.Notes }, func(a, b int) int { return a + b }),
		actions:      graph.LastValue(s, "", func(st *rState) *[]action { return &st.Actions }),
		findings:     graph.Append(s, "", func(st *rState) *[]Finding { return &st.Findings }),
		sources:      graph.Reduce(s, "", func(st *rState) *map[string]Source { return &st.Sources }, mergeSources),
		queries:      graph.Append(s, "", func(st *rState) *[]string { return &st.Queries }),
		computations: graph.Append(s, "", func(st *rState) *[]string { return &st.Computations }),
		answer:       graph.LastValue(s, "", func(st *rState) *string { return &st.Answer }),
		reflection:   graph.LastValue(s, "", func(st *rState) **verdict { return &st.Reflection }),
		advice:       graph.LastValue(s, "", func(st *rState) *string { return &st.Advice }),
		stopped:      graph.LastValue(s, "", func(st *rState) *Budget { return &st.Stopped }),
		gaps:         graph.LastValue(s, "", func(st *rState) *[]string { return &st.Gaps }),
		nextQueries:  graph.LastValue(s, "", func(st *rState) *[]string { return &st.NextQueries }),
		done:         graph.LastValue(s, "", func(st *rState) *bool { return &st.Done }),
		completed:    graph.LastValue(s, "", func(st *rState) *bool { return &st.Completed }),
		usage:        graph.Reduce(s, "", func(st *rState) *Usage { return &st.Usage }, Usage.add),
		unreachable:  graph.Reduce(s, "", func(st *rState) *map[string]int { return &st.Unreachable }, mergeUnreachable),
	}
}

// mergeSources merges source maps by URL; a page that was read is never
// replaced by a mere search hit for the same URL. It copies, never mutates.
func mergeSources(old, upd map[string]Source) map[string]Source {
	out := make(map[string]Source, len(old)+len(upd))
	for k, v := range old {
		out[k] = v
	}
	// one page, one source: a page read again under an alias or with the
	// same text (by another researcher) is an alias of the first
	alias, digest := map[string]string{}, map[string]string{}
	for k, v := range out {
		if v.Retrieved {
			for _, al := range v.Aliases {
				alias[al] = k
			}
			if v.Digest != "" {
				digest[v.Digest] = k
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(upd)) {
		v := upd[k]
		if cur, ok := out[k]; ok && cur.Retrieved && !v.Retrieved {
			continue
		}
		k0, isAlias := alias[k]
		if !isAlias && v.Retrieved && v.Digest != "" {
			k0, isAlias = digest[v.Digest]
		}
		if isAlias && k0 != k {
			if v.Retrieved {
				out[k0] = withAlias(out[k0], append([]string{k}, v.Aliases...)...)
			}
			continue
		}
		if v.Retrieved {
			if cur, ok := out[k]; ok && cur.Retrieved {
				v = withAlias(v, cur.Aliases...)
			}
			for _, al := range v.Aliases {
				if cur, ok := out[al]; ok && !cur.Retrieved {
					delete(out, al) // only seen, under the alias
				}
				alias[al] = k
			}
			if v.Digest != "" {
				digest[v.Digest] = k
			}
		}
		out[k] = v
	}
	return out
}
