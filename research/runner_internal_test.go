package research

import (
	"strings"
	"testing"

	"deepresearch/agent"
)

func TestAnswerMapping(t *testing.T) {
	cases := []struct {
		in   Answer
		want agent.Answer
	}{
		{Answer{Action: ActionApprove, Text: "ignored"}, agent.Answer{Action: agent.ActionApprove}},
		{Answer{Action: ActionRevise, Text: " shorter "}, agent.Answer{Action: agent.ActionRevise, Feedback: "shorter"}},
		{Answer{Action: ActionMore, Text: "SMEs"}, agent.Answer{Action: agent.ActionResearch, Feedback: "SMEs"}},
		{Answer{Action: ActionCancel}, agent.Answer{Action: agent.ActionCancel}},
		{Answer{Action: ActionAnswer, Text: "2026"}, agent.Answer{Action: agent.ActionAnswer, Text: "2026"}},
	}
	for _, c := range cases {
		if got := toAgentAnswer(c.in); got != c.want {
			t.Errorf("%+v → %+v, want %+v", c.in, got, c.want)
		}
	}
	in := toInterrupt(agent.Interrupt{ID: "i1", Kind: agent.InterruptClarify, Question: "Which year?"})
	if in.Kind != InterruptQuestion || in.Text != "Which year?" || in.ID != "i1" {
		t.Errorf("clarify → %+v", in)
	}
	res := toResult(&agent.Result{Status: agent.StatusReplied, Reply: "Hello!"})
	if res.Summary != "Hello!" || res.Report != "Hello!" {
		t.Errorf("reply → %+v", res)
	}
}

// TestInterruptTextsForMarkdownBlocks: the plan and draft texts are shown
// in markdown blocks, which read standard markdown (**bold**); a review
// score that no reviewer model gave says so; an extractive report is
// flagged in the bot's result.
func TestInterruptTextsForMarkdownBlocks(t *testing.T) {
	plan := toInterrupt(agent.Interrupt{ID: "p", Kind: agent.InterruptApprovePlan, Plan: &agent.Plan{Theme: "EU AI Act", Subtasks: []agent.Subtask{{Title: "Timeline"}}}})
	if !strings.HasPrefix(plan.Text, "**EU AI Act**\n") {
		t.Errorf("plan text = %q, want the theme in standard markdown bold", plan.Text)
	}
	draft := toInterrupt(agent.Interrupt{ID: "d", Kind: agent.InterruptApproveDraft, Draft: "# D\n\nx", Review: &agent.Review{Overall: 0.8, Simple: true}})
	if !strings.Contains(draft.Text, "estimated by rules") {
		t.Errorf("draft text = %q, want the rule-based score labelled", draft.Text)
	}
	draft = toInterrupt(agent.Interrupt{ID: "d", Kind: agent.InterruptApproveDraft, Draft: "# D\n\nx", Review: &agent.Review{Overall: 0.8}})
	if strings.Contains(draft.Text, "estimated") {
		t.Errorf("draft text = %q: a reviewer's score labelled as estimated", draft.Text)
	}
	if r := toResult(&agent.Result{Report: "# R\n\nx", Extractive: true}); !r.Extractive {
		t.Error("extractive result not flagged")
	}
}
