package agent_test

import (
	"slices"
	"testing"

	"deepresearch/agent"
)

// Every structured call of a research names its JSON schema for what it
// asks (plan, findings, check, review …), never the client's generic
// "response".
func TestStructuredCallsNameTheirSchema(t *testing.T) {
	e := newEnv(t)
	res := e.start("schema-names", agent.Request{Question: "What does the EU AI Act require?"})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	seen := map[string]bool{}
	for _, r := range e.srv.Requests() {
		if ft := r.FormatType(); ft == "" || ft == "text" {
			continue
		}
		seen[r.SchemaName()] = true
	}
	for _, want := range []string{"plan", "findings", "check", "review"} {
		if !seen[want] {
			t.Errorf("no structured call named %q; names seen: %v", want, keys(seen))
		}
	}
	if seen["response"] || seen[""] {
		t.Errorf("a structured call is still named generically: %v", keys(seen))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
