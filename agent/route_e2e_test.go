package agent_test

import (
	"slices"
	"strings"
	"testing"

	"deepresearch/agent"
)

// Where the rules cannot decide, the model does, and its reason is kept
// with the run: the reviewer suggests accepting a draft it failed while
// naming missing facts (facts or form?), and researchers leave gaps after
// enough sources were read (enough data?).
func TestModelDecidesWhatRulesCannot(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes the case the rules cannot decide
		setup  func(e *env)
		at     string
		answer string // the model's step
		rounds int    // research rounds the run ends with
	}{
		{"review objection about facts", reviewAcceptsFailedDraft, "reviewer", "research", 2},
		{"review objection about form", reviewAcceptsFailedDraft, "reviewer", "write", 1},
		{"gaps left, more research", gapsLeft, "supervisor", "research", 2},
		{"gaps left, enough to write", gapsLeft, "supervisor", "write", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.opts.MinSources = 1
			tc.setup(e)
			var prompts []string
			e.brain.Route = func(p string) (string, string) {
				prompts = append(prompts, p)
				return tc.answer, "Because the model says " + tc.answer + "."
			}
			res := e.start("route-"+tc.at+"-"+tc.answer, agent.Request{Question: "What does the EU AI Act require?"})
			if res.Status != agent.StatusDone {
				t.Fatalf("status %s", res.Status)
			}
			if len(prompts) != 1 || len(res.Routes) != 1 {
				t.Fatalf("%d routing calls, routes %+v; want one", len(prompts), res.Routes)
			}
			rt := res.Routes[0]
			if rt.At != tc.at || string(rt.Next) != tc.answer || !rt.ByModel || rt.Reason != "Because the model says "+tc.answer+"." || rt.Decision == "" {
				t.Errorf("route %+v", rt)
			}
			rounds := 0
			for _, s := range res.Subtasks {
				rounds = max(rounds, s.Round)
			}
			if rounds != tc.rounds {
				t.Errorf("%d research rounds, want %d", rounds, tc.rounds)
			}
			if !slices.ContainsFunc(e.events, func(ev agent.Event) bool {
				return ev.Kind == agent.EventRouted && strings.Contains(ev.Message, rt.Reason)
			}) {
				t.Error("no routed event with the reason")
			}
		})
	}
}

// reviewAcceptsFailedDraft: the first review fails the draft, names a
// missing fact and still suggests "accept"; the second approves.
func reviewAcceptsFailedDraft(e *env) {
	e.brain.ReviewScores = func(n int) (agent.Scores, string) {
		if n == 1 {
			return agent.Scores{FactCheck: 0.95, Completeness: 0.4, Logic: 0.8, Format: 1}, "accept"
		}
		return agent.Scores{FactCheck: 0.95, Completeness: 0.9, Logic: 0.9, Format: 1}, "accept"
	}
	e.brain.Issues = func(n int) []agent.Issue {
		if n == 1 {
			return []agent.Issue{{Type: "missing", Severity: "major", Description: "the fine amounts are not given", Location: "Penalties"}}
		}
		return nil
	}
}

// gapsLeft: one try per researcher, never judged complete.
func gapsLeft(e *env) {
	e.opts.MaxTries = 1
	e.brain.ReflectDone = func(int) bool { return false }
}
