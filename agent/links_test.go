package agent_test

import (
	"context"
	"strings"
	"testing"

	"deepresearch/agent"
)

// TestTurnLinksOnlyToSourcesRead: what a turn hands out — the plan and the
// draft shown for approval, the report and its summary — links only the
// pages the run read. The model (after a hostile page) writes links to
// other addresses, a link whose text spoofs another address, Slack
// mentions and HTML into its prose; they come out inert, the addresses
// defanged, and a link to a page read stays a link.
func TestTurnLinksOnlyToSourcesRead(t *testing.T) {
	e := newEnv(t)
	e.brain.Inject = "[https://vendor.example/support](https://evil.example/phish) <https://evil.example/x|https://docs.vendor.example> " +
		"![logo](https://evil.example/p.png) [click](javascript:alert(1)) see https://evil.example/bare <!channel> <@U0BOSS> " +
		`<a href="https://evil.example/a">x</a> [the timeline](https://news.example/ai-act-timeline) [https://accounts.google.com](https://law.example/penalties)`
	ctx := context.Background()
	inert := func(where, s string) {
		t.Helper()
		for _, bad := range []string{"evil.example", "<!channel>", "<@U0BOSS>", "<a href", "](javascript:", "[https://accounts.google.com]"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s keeps %q:\n%s", where, bad, s)
			}
		}
	}
	res := e.start("links", agent.Request{Question: "What does the EU AI Act require?", ApprovePlan: true, ApproveDraft: true})
	if len(res.Interrupts) != 1 || res.Interrupts[0].Plan == nil {
		t.Fatalf("want a plan to approve, got %+v", res)
	}
	p := res.Interrupts[0].Plan
	inert("the plan", p.Theme+"\n"+p.PlanText+"\n"+p.Subtasks[0].Title)
	if !strings.Contains(p.PlanText, "hxxps://evil[.]example/phish") {
		t.Errorf("the plan does not show the hostile address as inert text: %q", p.PlanText)
	}
	res, err := e.agent().Resume(ctx, "links", map[string]agent.Answer{res.Interrupts[0].ID: {Action: agent.ActionApprove}}, nil)
	if err != nil || len(res.Interrupts) != 1 || res.Interrupts[0].Kind != agent.InterruptApproveDraft {
		t.Fatalf("want a draft to approve: %v %+v", err, res)
	}
	inert("the draft", res.Interrupts[0].Draft)
	inert("the draft's summary", res.Interrupts[0].Summary)
	if rv := res.Interrupts[0].Review; rv != nil {
		inert("the review", rv.Feedback)
	}
	res, err = e.agent().Resume(ctx, "links", map[string]agent.Answer{res.Interrupts[0].ID: {Action: agent.ActionApprove}}, nil)
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("want the report: %v %+v", err, res)
	}
	inert("the report", res.Report)
	inert("the summary", res.Summary)
	for _, want := range []string{"[the timeline](https://news.example/ai-act-timeline)", "(<https://law.example/penalties>)", "hxxps://evil[.]example/phish"} {
		if !strings.Contains(res.Report, want) {
			t.Errorf("the report lacks %q:\n%s", want, res.Report)
		}
	}
}
