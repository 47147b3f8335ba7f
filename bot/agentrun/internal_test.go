package agentrun

import (
	"testing"

	"deepresearch/agent"
	"deepresearch/bot"
)

func TestAnswerMapping(t *testing.T) {
	cases := []struct {
		in   bot.Answer
		want agent.Answer
	}{
		{bot.Answer{Action: bot.ActionApprove, Text: "ignored"}, agent.Answer{Action: agent.ActionApprove}},
		{bot.Answer{Action: bot.ActionRevise, Text: " shorter "}, agent.Answer{Action: agent.ActionRevise, Feedback: "shorter"}},
		{bot.Answer{Action: bot.ActionMore, Text: "SMEs"}, agent.Answer{Action: agent.ActionResearch, Feedback: "SMEs"}},
		{bot.Answer{Action: bot.ActionCancel}, agent.Answer{Action: agent.ActionCancel}},
		{bot.Answer{Action: bot.ActionAnswer, Text: "2026"}, agent.Answer{Action: agent.ActionAnswer, Text: "2026"}},
	}
	for _, c := range cases {
		if got := toAgentAnswer(c.in); got != c.want {
			t.Errorf("%+v → %+v, want %+v", c.in, got, c.want)
		}
	}
	in := toBotInterrupt(agent.Interrupt{ID: "i1", Kind: agent.InterruptClarify, Question: "Which year?"})
	if in.Kind != bot.InterruptQuestion || in.Text != "Which year?" || in.ID != "i1" {
		t.Errorf("clarify → %+v", in)
	}
	res := toBotResult(&agent.Result{Status: agent.StatusReplied, Reply: "Hello!"})
	if res.Summary != "Hello!" || res.Report != "Hello!" {
		t.Errorf("reply → %+v", res)
	}
}
