package agent_test

import (
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
)

// A run's usage counts every request that reached the model: the planner's
// failed attempt, and each speculative answer called off when its
// reflection asked for another try (the request was sent; a real API bills
// its prompt). Before, a run counted answered calls only.
func TestUsageCountsEveryRequest(t *testing.T) {
	e := newEnv(t)
	e.brain.FailNext("planner")
	e.brain.ReflectDone = func(try int) bool { return try >= 2 }
	hung := map[string]bool{}
	e.brain.Wrap = func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		// the first answer of each subtask is still being written when its
		// reflection asks for another try (the server calls Wrap under its
		// lock, so the map needs no other)
		if agenttest.Kind(r.Node()) == "answer_subtask" && !hung[r.Node()] {
			hung[r.Node()] = true
			return llmtest.Hang()
		}
		return scripted
	}
	res := e.start("usage-every-request", agent.Request{Question: "What does the EU AI Act require?"})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	u := res.Usage
	// every request the server saw is counted; a called-off one written
	// whole but dropped before the server read it may be counted too
	if u.Requests < e.srv.Calls() || u.Requests > e.srv.Calls()+len(hung) {
		t.Errorf("usage counts %d requests, the server saw %d (%d called off)", u.Requests, e.srv.Calls(), len(hung))
	}
	if want := u.Calls + 1 + len(hung); u.Requests < want {
		t.Errorf("requests %d, want at least %d (%d answered, the failed planner, %d called-off answers)", u.Requests, want, u.Calls, len(hung))
	}
	if u.WastedTokens <= 0 || u.SpeculativeWasted <= 0 || u.SpeculativeWasted > u.WastedTokens {
		t.Errorf("wasted %d tokens, %d of them speculative; want both, speculative a part", u.WastedTokens, u.SpeculativeWasted)
	}
}

// The run's cost lines: every request, the tokens per verified citation,
// and what speculation saved against what it wasted.
func TestUsageLines(t *testing.T) {
	u := agent.Usage{Calls: 8, Requests: 17, PromptTokens: 7000, CompletionTokens: 786, WastedTokens: 1200,
		SpeculativeWasted: 446, SpeculativeSavedMS: 1345}
	if got, want := u.Spent(), "7786 tokens in 17 requests (8 calls answered; 1200 tokens on failed, retried or cancelled requests)"; got != want {
		t.Errorf("Spent = %q, want %q", got, want)
	}
	if got, want := u.PerVerified(4), "1947 tokens per verified citation"; got != want {
		t.Errorf("PerVerified = %q, want %q", got, want)
	}
	if got, want := u.PerVerified(0), "no verified citation"; got != want {
		t.Errorf("PerVerified(0) = %q, want %q", got, want)
	}
	if got, want := u.Speculation(), "speculative answers saved 1.3s of waiting and wasted 446 tokens"; got != want {
		t.Errorf("Speculation = %q, want %q", got, want)
	}
	clean := agent.Usage{Calls: 3, Requests: 3, PromptTokens: 100}
	if got, want := clean.Spent(), "100 tokens in 3 requests"; got != want || clean.Speculation() != "" {
		t.Errorf("clean: Spent = %q, want %q; Speculation %q", got, want, clean.Speculation())
	}
}
