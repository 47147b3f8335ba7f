package agent

import (
	"context"
	"strings"

	"deepresearch/agent/llm"
	"deepresearch/prompts"
)

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

// Routing is a decision on the run's way that the rules could not take on
// their own, asked of the model: what was decided, where, and why. The
// run's history keeps them (State.Routes) and each is reported as an
// EventRouted.
type Routing struct {
	Turn     int      `json:"turn"`
	At       string   `json:"at"`       // the node that decided (supervisor, reviewer)
	Decision string   `json:"decision"` // the question put to the model
	Next     NextStep `json:"next"`     // NextResearch or NextWrite
	Reason   string   `json:"reason"`
	// ByModel is false when the model gave no usable answer and the rules'
	// default stood (Reason says so).
	ByModel bool `json:"by_model,omitempty"`
}

// routeOut is the model's routing decision.
type routeOut struct {
	Next   string `json:"next" jsonschema:"enum=research|write"`
	Reason string `json:"reason"`
}

// route asks the model the decision the rules at node at cannot take:
// another research round or a (re)write. fallback is the step taken when
// the model fails. The answer is bounded as the rules are: research only
// while rounds are left (the caller asks only then), and the supervisor's
// iteration limit holds whatever it says.
func (a *core) route(ctx context.Context, s State, at, decision string, facts []string, roundsLeft int, fallback NextStep) (Routing, Usage) {
	c := a.caller(nRoute)
	r := Routing{Turn: s.Turn, At: at, Decision: decision, Next: fallback}
	p, err := prompts.Render(prompts.Route, prompts.RouteData{Question: s.Question, Language: s.Language,
		Decision: decision, Facts: facts, RoundsLeft: roundsLeft})
	var out routeOut
	if err == nil {
		err = structured(ctx, c, llm.RolePlanner, p, false, &out)
	}
	switch next := NextStep(word(out.Next)); {
	case err != nil:
		r.Reason = "the model could not decide (" + clip(err.Error(), 200) + "); the rules' default stands"
		a.log.Warn("agent: routing by the model failed; the rules' default stands", "at", at, "next", fallback, "err", err)
	case next == NextResearch || next == NextWrite:
		r.Next, r.ByModel = next, true
		r.Reason = clip(strings.TrimSpace(out.Reason), 500)
	default:
		r.Reason = "the model named no known step (" + clip(out.Next, 40) + "); the rules' default stands"
	}
	emit(ctx, Event{Kind: EventRouted, Message: "next step " + string(r.Next) + ": " + r.Reason})
	return r, c.usage()
}

// objection tells what the reviewer's objection to a draft it did not
// approve is about, from its suggested action (as it said it) and its
// issues and failed checks: facts (NextResearch) or form (NextWrite), or ""
// when they disagree — the reviewer suggested "accept" of a draft that
// failed, a rewrite while naming only missing facts, or research while
// naming only faults of form. The empty answer is for the model.
func objection(suggested string, rv *Review) NextStep {
	facts, form := 0, 0
	for _, is := range rv.Issues {
		switch issueKind(is.Type + " " + is.Description) {
		case NextResearch:
			facts++
		case NextWrite:
			form++
		}
	}
	for _, e := range rv.Evaluations {
		if e.Pass {
			continue
		}
		switch e.Type {
		case CheckFreshness, CheckPlurality, CheckCompleteness:
			facts++
		case CheckDefinitive, CheckAttribution:
			form++
		}
	}
	switch word(suggested) {
	case string(NextResearch):
		if form > 0 && facts == 0 {
			return ""
		}
		return NextResearch
	case string(NextWrite):
		if facts > 0 && form == 0 {
			return ""
		}
		return NextWrite
	}
	return ""
}

// issueKind classifies a reviewer's issue by its words: missing or wrong
// facts (NextResearch), faults of form (NextWrite), or neither ("").
func issueKind(text string) NextStep {
	t := strings.ToLower(text)
	for _, w := range []string{"fact", "missing", "outdated", "evidence", "data", "number", "figure", "source", "coverage", "incomplete"} {
		if strings.Contains(t, w) {
			return NextResearch
		}
	}
	for _, w := range []string{"format", "style", "structure", "wording", "clarity", "grammar", "length", "tone", "markdown", "heading"} {
		if strings.Contains(t, w) {
			return NextWrite
		}
	}
	return ""
}
