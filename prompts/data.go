package prompts

// Exchange is an earlier turn of the conversation on a thread.
type Exchange struct {
	Question string
	Answer   string // report summary or reply
}

// CoordinatorData feeds the coordinator prompt.
type CoordinatorData struct {
	Question  string
	Language  string
	Today     string
	History   []Exchange
	HasReport bool // a report exists on this thread (follow-ups may rewrite it)
	MayAsk    bool // a clarifying question is still allowed
}

// PlannerData feeds the planner prompt.
type PlannerData struct {
	Question    string
	Language    string
	Today       string
	MaxSubtasks int
	MaxQueries  int
	Feedback    string   // a person's edits to an earlier plan
	Known       []string // findings from earlier turns (follow-ups)
	// Workspace: the team's own Slack messages can be searched too.
	Workspace bool
}

// ReplanData feeds the prompt that plans another research round.
type ReplanData struct {
	Question        string
	Language        string
	Today           string
	Theme           string
	Feedback        string
	Gaps            []string
	PreviousQueries []string
	MaxSubtasks     int
	MaxQueries      int
	// Workspace: the team's own Slack messages can be searched too.
	Workspace bool
}

// RouteData feeds the prompt that decides the next step where the rules
// cannot: another research round or a (re)write.
type RouteData struct {
	Question string
	Language string
	// Decision is the question to decide ("Is the evidence enough to
	// write the report?"); Facts what the run knows that bears on it.
	Decision string
	Facts    []string
	// RoundsLeft is how many research rounds the run may still start.
	RoundsLeft int
}

// Link is a URL the researcher may visit.
type Link struct {
	N     int
	Title string
	URL   string
}

// SelectData feeds the researcher's action choice.
type SelectData struct {
	Question        string
	Language        string
	Today           string
	Subtask         string
	Try             int
	MaxTries        int
	Advice          string
	PreviousQueries []string
	Knowledge       []string
	Links           []Link
	AllowVisit      bool
	AllowCoding     bool
	MaxQueries      int
	// NoSearch: web search is not offered; Planned are the planner's queries
	// for a first try that asks the model (because Sources are offered);
	// Sources are the team's external tools (MCP servers) offered too.
	NoSearch bool
	Planned  []string
	Sources  []SourceTool
	// Strategy is how this researcher works, one of a team researching the
	// same subtask in different ways ("": the only one).
	Strategy string
}

// SourceTool is an external source's tool offered to the researcher.
type SourceTool struct {
	Name        string
	Source      string
	Description string
}

// Page is a text the model reads.
type Page struct {
	N     int
	Title string
	URL   string
	Text  string
}

// SummarizeData feeds the per-query summary.
type SummarizeData struct {
	Question string
	Subtask  string
	Query    string
	Language string
	Pages    []Page
}

// Evidence is a finding with its verbatim quote and source.
type Evidence struct {
	N     int
	Claim string
	Quote string
	Title string
	URL   string
}

// AnswerData feeds the researcher's subtask answer.
type AnswerData struct {
	Question     string
	Subtask      string
	Language     string
	Evidence     []Evidence
	Computations []string
	Advice       string
}

// ReflectData feeds the researcher's reflection.
type ReflectData struct {
	Question string
	Subtask  string
	Language string
	Answer   string
	Try      int
	MaxTries int
	Sources  int
	// PreviousQueries are the subtask's searches so far, which the new
	// ones must differ from.
	PreviousQueries []string
}

// SubtaskAnswer is one researcher's result.
type SubtaskAnswer struct {
	Title  string
	Answer string
}

// WriterData feeds the writer.
type WriterData struct {
	Question      string
	Theme         string
	Language      string
	Today         string
	Points        []string
	Evidence      []Evidence
	Subtasks      []SubtaskAnswer
	Feedback      string // reviewer's or a person's feedback
	PreviousDraft string
	Instruction   string // a follow-up such as "rewrite it shorter"
	Gaps          []string
	// Disagreements are quantities the sources state differently, each
	// with both sides' evidence ("[E3] says 35 million; [E7] says 30
	// million"): the report gives both, never one.
	Disagreements []string
}

// Citations summarises the deterministic citation check for the reviewer.
type Citations struct {
	Cited    int
	Verified int
	Dropped  int
}

// ReviewerData feeds the reviewer.
type ReviewerData struct {
	Question        string
	Language        string
	Today           string
	Points          []string
	Draft           string
	EvaluationTypes []string
	Citations       Citations
	Evidence        []Evidence
}

// AnalystData feeds the data analyst: the evidence whose quotes hold numbers.
type AnalystData struct {
	Question string
	Language string
	Evidence []Evidence
}
