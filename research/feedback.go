package research

import (
	"context"
	"time"
)

// FeedbackValue is a person's verdict on a report.
type FeedbackValue string

// Feedback values: the two buttons under a report or digest.
const (
	FeedbackGood FeedbackValue = "positive"
	FeedbackBad  FeedbackValue = "negative"
)

// Valid reports whether v is one of the two values.
func (v FeedbackValue) Valid() bool { return v == FeedbackGood || v == FeedbackBad }

// Feedback is one person's verdict on one run's report (or a digest's,
// under its firing's id), with what was wrong when they said so.
type Feedback struct {
	RunID string
	User  string
	Value FeedbackValue
	Text  string // "what was wrong?", from the form a negative click offers
	At    time.Time
}

// FeedbackCount tallies a run's feedback.
type FeedbackCount struct {
	Good, Bad int
}

// FeedbackStore keeps feedback: one record per run and user, the latest
// click winning. storage/sqlstore's conformance suite checks the implementation.
type FeedbackStore interface {
	// RecordFeedback stores f as the user's verdict on the run, replacing an
	// earlier one (value and time). A positive verdict has no text (a
	// "Good" after "Not good" drops the complaint); a negative one with an
	// empty Text keeps the text stored before (the click, then its form). A
	// value that is not Valid is refused.
	RecordFeedback(ctx context.Context, f Feedback) error
	// Feedback returns a run's records, oldest first.
	Feedback(ctx context.Context, runID string) ([]Feedback, error)
	// CountFeedback tallies the feedback of each run named (runs without
	// any are left out of the map).
	CountFeedback(ctx context.Context, runIDs []string) (map[string]FeedbackCount, error)
}

// AddFeedbackCount adds n verdicts of value v to c.
func AddFeedbackCount(c FeedbackCount, v FeedbackValue, n int) FeedbackCount {
	switch v {
	case FeedbackGood:
		c.Good += n
	case FeedbackBad:
		c.Bad += n
	}
	return c
}
