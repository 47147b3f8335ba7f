package agent_test

import (
	"strings"
	"testing"

	"deepresearch/agent"
)

// One verdict per report: a report the review passes lists the questions
// its research left open as open questions, never as "Not fully
// researched", which contradicts the pass; a report that did not pass keeps
// saying so.
func TestOneVerdictPerReport(t *testing.T) {
	for _, tc := range []struct {
		name      string
		approve   bool
		want, not string
	}{
		{"passed", true, agent.NoteOpenQuestion, agent.NoteNotResearched},
		{"not passed", false, agent.NoteNotResearched, agent.NoteOpenQuestion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.brain.ReflectDone = func(int) bool { return false } // every subtask leaves gaps
			if !tc.approve {
				e.brain.ReviewScores = func(int) (agent.Scores, string) {
					return agent.Scores{FactCheck: 0.5, Completeness: 0.4, Logic: 0.5, Format: 0.5}, "write"
				}
			}
			res := e.start("verdict-"+strings.ReplaceAll(tc.name, " ", "-"), agent.Request{Question: "What does the EU AI Act require?"})
			if res.Status != agent.StatusDone {
				t.Fatalf("status %s", res.Status)
			}
			if tc.approve != (res.Finish == agent.FinishApproved) {
				t.Fatalf("finish %s", res.Finish)
			}
			joined := strings.Join(res.Unverified, "\n")
			if !strings.Contains(joined, tc.want) || strings.Contains(joined, tc.not) {
				t.Errorf("notes, want %q and no %q:\n%s", tc.want, tc.not, joined)
			}
			if !strings.Contains(res.Report, tc.want) || strings.Contains(res.Report, tc.not) {
				t.Errorf("report, want %q and no %q", tc.want, tc.not)
			}
		})
	}
}
