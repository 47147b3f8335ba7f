package agent

import "strings"

// Intent is what the coordinator made of a message (State.Intent).
type Intent string

// Intents.
const (
	IntentChat     Intent = "chat"     // small talk, answered directly
	IntentResearch Intent = "research" // research the question
	IntentClarify  Intent = "clarify"  // ask one clarifying question first
	IntentRewrite  Intent = "rewrite"  // rewrite the last report
)

// parseIntent maps the coordinator's answer to an intent: anything it does
// not name is research.
func parseIntent(text string) Intent {
	switch in := Intent(word(text)); in {
	case IntentChat, IntentClarify, IntentRewrite:
		return in
	}
	return IntentResearch
}

// NextStep is where the graph goes after a node that decides (State.Next),
// and what the reviewer suggests (Review.SuggestedAction: research, write
// or end). The empty step is no decision yet.
type NextStep string

// Next steps.
const (
	NextResearch      NextStep = "research" // another research round
	NextWrite         NextStep = "write"    // another draft
	NextReplan        NextStep = "replan"   // a person asked for another plan
	NextEnd           NextStep = "end"      // nothing more to do: the turn ends with its best draft
	NextDone          NextStep = "done"     // the review is over: to a person's approval, or final
	NextPlanApproved  NextStep = "approved" // a person approved the plan
	NextDraftApproved NextStep = "approve"  // a person approved the draft
	NextCancel        NextStep = "cancel"   // a person cancelled
)

// parseSuggestedAction maps the reviewer's suggested action to a next step:
// research when it says so, another draft otherwise.
func parseSuggestedAction(text string) NextStep {
	if NextStep(word(text)) == NextResearch {
		return NextResearch
	}
	return NextWrite
}

// parseCheck maps a check the model named to a known one; ok is false for
// any other word.
func parseCheck(text string) (_ Check, ok bool) {
	switch c := Check(word(text)); c {
	case CheckDefinitive, CheckFreshness, CheckPlurality, CheckCompleteness, CheckAttribution:
		return c, true
	}
	return "", false
}

// word is a one-word answer of the model as compared with the known words.
func word(text string) string { return strings.ToLower(strings.TrimSpace(text)) }
