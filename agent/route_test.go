package agent

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"deepresearch/agent/llm"
	"deepresearch/graph"
)

func TestParseIntent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Intent
	}{
		{"chat", IntentChat},
		{"clarify", IntentClarify},
		{"rewrite", IntentRewrite},
		{"research", IntentResearch},
		{" Rewrite\n", IntentRewrite},
		{"CHAT", IntentChat},
		{"", IntentResearch},
		{"summarize", IntentResearch},
		{"chat please", IntentResearch},
	} {
		if got := parseIntent(tc.in); got != tc.want {
			t.Errorf("parseIntent(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseSuggestedAction(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want NextStep
	}{
		{"research", NextResearch},
		{" Research ", NextResearch},
		{"write", NextWrite},
		{"", NextWrite},
		{"end", NextWrite}, // the reviewer never ends a turn: the review rounds do
		{"replan", NextWrite},
	} {
		if got := parseSuggestedAction(tc.in); got != tc.want {
			t.Errorf("parseSuggestedAction(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseCheck(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Check
		ok   bool
	}{
		{"definitive", CheckDefinitive, true},
		{"freshness", CheckFreshness, true},
		{"plurality", CheckPlurality, true},
		{"completeness", CheckCompleteness, true},
		{"attribution", CheckAttribution, true},
		{" Attribution", CheckAttribution, true},
		{"", "", false},
		{"accuracy", "", false},
	} {
		if got, ok := parseCheck(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("parseCheck(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// The fixtures are states as checkpoints stored them while these fields
// were plain strings: they must load into the typed fields and encode to
// the same bytes.
func TestStoredStatesLoad(t *testing.T) {
	t.Run("state", func(t *testing.T) {
		raw := readFixture(t, "testdata/old_state.json")
		var s State
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name      string
			got, want any
		}{
			{"intent", s.Intent, IntentRewrite},
			{"next", s.Next, NextDraftApproved},
			{"exhausted", s.Exhausted, BudgetTokens},
			{"review.suggested_action", s.Review.SuggestedAction, NextResearch},
			{"best.review.suggested_action", s.Best.Review.SuggestedAction, NextResearch},
			{"review.evaluations[0].type", s.Review.Evaluations[0].Type, CheckFreshness},
			{"results[0].stopped", s.Results[0].Stopped, BudgetTime},
			{"findings[0].kind", s.Findings[0].Kind, FindingSource},
			{"findings[1].kind", s.Findings[1].Kind, FindingComputed},
		} {
			if c.got != c.want {
				t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
			}
		}
		if !slices.Equal(s.Plan.EvaluationTypes, []Check{CheckFreshness, CheckAttribution}) {
			t.Errorf("plan.evaluation_types = %q", s.Plan.EvaluationTypes)
		}
		sameJSON(t, raw, s)
	})
	t.Run("researcher", func(t *testing.T) {
		raw := readFixture(t, "testdata/old_rstate.json")
		var s rState
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		var kinds []actionKind
		for _, a := range s.Actions {
			kinds = append(kinds, a.Kind)
		}
		if !slices.Equal(kinds, []actionKind{actSearch, actVisit, actCoding}) {
			t.Errorf("actions %q", kinds)
		}
		if s.Stopped != BudgetTokens || s.Findings[0].Kind != FindingComputed {
			t.Errorf("stopped %q, findings[0].kind %q", s.Stopped, s.Findings[0].Kind)
		}
		sameJSON(t, raw, s)
	})
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// sameJSON fails unless v encodes to raw, as the fixtures were written.
func sameJSON(t *testing.T, raw []byte, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if b = append(b, '\n'); !bytes.Equal(b, raw) {
		t.Errorf("re-encoded state differs from the stored one:\n%s\nwant:\n%s", b, raw)
	}
}

// Routing on the words as stored: each state is JSON as a checkpoint holds it.
func TestRoutesOnStoredWords(t *testing.T) {
	a := &planning{&core{}}
	supervisor := func(s State) string {
		rs := a.routeSupervisor(s)
		if len(rs) == 0 {
			return ""
		}
		return rs[0].Node
	}
	for _, tc := range []struct {
		name   string
		router func(State) string
		state  string
		want   string
	}{
		{"coordinator chat", afterCoordinator, `{"intent":"chat"}`, graph.End},
		{"coordinator clarify", afterCoordinator, `{"intent":"clarify"}`, nClarify},
		{"coordinator rewrite", afterCoordinator, `{"intent":"rewrite"}`, nWriter},
		{"coordinator research", afterCoordinator, `{"intent":"research"}`, nPlanner},
		{"coordinator unset", afterCoordinator, `{}`, nPlanner},
		{"clarify cancel", afterClarify, `{"next":"cancel"}`, nFinalize},
		{"clarify answered", afterClarify, `{}`, nPlanner},
		{"planner to approval", afterPlanner, `{"req":{"question":"q","approve_plan":true}}`, nApprovePlan},
		{"planner", afterPlanner, `{}`, nSupervisor},
		{"plan replan", afterApprovePlan, `{"next":"replan"}`, nPlanner},
		{"plan cancel", afterApprovePlan, `{"next":"cancel"}`, nFinalize},
		{"plan approved", afterApprovePlan, `{"next":"approved"}`, nSupervisor},
		{"supervisor write", supervisor, `{"next":"write"}`, nWriter},
		{"supervisor end", supervisor, `{"next":"end"}`, nFinalize},
		{"supervisor research", supervisor, `{"next":"research","dispatch":[{"title":"t","queries":["q"]}]}`, nResearcher},
		{"supervisor research, nothing dispatched", supervisor, `{"next":"research"}`, nWriter},
		{"reviewer write", afterReviewer, `{"next":"write"}`, nWriter},
		{"reviewer research", afterReviewer, `{"next":"research"}`, nSupervisor},
		{"reviewer done", afterReviewer, `{"next":"done"}`, nFinalize},
		{"reviewer done, to a person", afterReviewer, `{"next":"done","req":{"question":"q","approve_draft":true}}`, nApproveDraft},
		{"draft revise", afterApproveDraft, `{"next":"write"}`, nWriter},
		{"draft research", afterApproveDraft, `{"next":"research"}`, nSupervisor},
		{"draft approved", afterApproveDraft, `{"next":"approve"}`, nFinalize},
		{"draft cancel", afterApproveDraft, `{"next":"cancel"}`, nFinalize},
	} {
		var s State
		if err := json.Unmarshal([]byte(tc.state), &s); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := tc.router(s); got != tc.want {
			t.Errorf("%s: routes to %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The reviewer may say a report passes as it is: its schema offers
// "accept" beside "write" and "research" (a strict server rejects any
// value the enum lacks).
func TestReviewSchemaOffersAccept(t *testing.T) {
	s, err := llm.SchemaFor[reviewOut]()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"accept"`) {
		t.Errorf("suggested_action offers no \"accept\": %s", b)
	}
	if got := parseSuggestedAction("accept"); got != NextWrite {
		t.Errorf("accept = %q: the review rounds, not the reviewer, end a turn", got)
	}
}

// The reviewer's objection is clear when its suggestion and its issues
// agree, and left to the model ("") when they do not.
func TestObjection(t *testing.T) {
	missing := Issue{Type: "missing", Description: "no fine amounts"}
	style := Issue{Type: "format", Description: "headings out of order"}
	failed := func(c Check) Evaluation { return Evaluation{Type: c, Pass: false} }
	for _, tc := range []struct {
		name      string
		suggested string
		rv        Review
		want      NextStep
	}{
		{"research, facts", "research", Review{Issues: []Issue{missing}}, NextResearch},
		{"research, nothing named", "research", Review{}, NextResearch},
		{"research, only form", "research", Review{Issues: []Issue{style}}, ""},
		{"write, form", "write", Review{Issues: []Issue{style}}, NextWrite},
		{"write, nothing named", "write", Review{}, NextWrite},
		{"write, only facts", "write", Review{Issues: []Issue{missing}}, ""},
		{"write, failed completeness", "write", Review{Evaluations: []Evaluation{failed(CheckCompleteness)}}, ""},
		{"write, facts and form", "write", Review{Issues: []Issue{missing, style}}, NextWrite},
		{"research, failed attribution", "research", Review{Evaluations: []Evaluation{failed(CheckAttribution)}}, ""},
		{"accept of a failed draft", "accept", Review{}, ""},
		{"no suggestion", "", Review{Issues: []Issue{missing}}, ""},
	} {
		if got := objection(tc.suggested, &tc.rv); got != tc.want {
			t.Errorf("%s: objection = %q, want %q", tc.name, got, tc.want)
		}
	}
}
