package agent_test

import (
	"strings"
	"testing"
	"unicode"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
)

// A finding whose claim states a number its quote lacks reaches the
// writer marked, not as a sourced figure.
func TestClaimBeyondItsQuoteIsMarked(t *testing.T) {
	e := newEnv(t)
	// the summariser quotes each sentence only up to its first number
	e.brain.FindingQuote = func(q string) string {
		if i := strings.IndexFunc(q, unicode.IsDigit); i >= 12 {
			return strings.TrimSpace(q[:i])
		}
		return q
	}
	res := e.start("claims-marked", agent.Request{Question: "What does the EU AI Act require?"})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	marked := false
	for _, r := range e.srv.Requests() {
		if agenttest.Kind(r.Node()) == "writer" && strings.Contains(r.LastUser(), "[not in the quote: ") {
			marked = true
		}
	}
	if !marked {
		t.Error("no claim reached the writer marked, though the quotes leave their numbers out")
	}
}
