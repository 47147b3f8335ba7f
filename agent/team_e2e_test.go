package agent_test

import (
	"regexp"
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
)

// plantedWeb is a web in which each strategy of a team finds its own
// sites: primary sources and independent reporting agree on the AI
// Office's staff and disagree on the top fine. The plan's own queries find
// the usual pages.
func plantedWeb(w *agenttest.World) {
	primary := []agenttest.Page{
		{URL: "https://stats.example/office", Title: "AI Office staff", Text: "The AI Office that enforces the AI Act employs 140 people. It sits in Brussels."},
		{URL: "https://official.example/fines", Title: "AI Act fines", Text: "Fines under the AI Act reach 35 million euros for prohibited practices. Lower tiers apply to other infringements."},
	}
	independent := []agenttest.Page{
		{URL: "https://news.example/office", Title: "Inside the AI Office", Text: "The AI Office that enforces the AI Act employs 140 people, officials said. More hires are planned."},
		{URL: "https://press.example/fines", Title: "AI Act fines explained", Text: "Fines under the AI Act reach 30 million euros for prohibited practices. Critics call them low."},
	}
	w.Pages = append(append(append([]agenttest.Page(nil), agenttest.EnglishPages()...), primary...), independent...)
	w.Find = func(q string) []agenttest.Page {
		switch {
		case strings.HasSuffix(q, "official data"):
			return primary
		case strings.HasSuffix(q, "news analysis"):
			return independent
		}
		return agenttest.EnglishPages()
	}
}

// A team of three researches each subtask three ways: the report marks
// the staff figure both kinds of site give as corroborated, and reports
// the fine they give differently as a disagreement citing both. A single
// researcher (the plan's queries only) finds neither.
func TestTeamCorroboratesAndReportsDisagreement(t *testing.T) {
	for _, team := range []int{1, 3} {
		e := newEnv(t)
		plantedWeb(e.web)
		e.brain.CiteByID = true
		res := e.start("team", agent.Request{Question: "What does the EU AI Act require?", TeamSize: team})
		if res.Status != agent.StatusDone {
			t.Fatalf("team %d: status %s", team, res.Status)
		}
		corroborated := regexp.MustCompile(`Corroborated by 2 independent sites \(([a-z.]+), ([a-z.]+)\): Claim: The AI Office that enforces the AI Act employs 140 people[^\n]*\[\^\d+\]\x{2060}?\[\^\d+\]`)
		disagree := regexp.MustCompile(`Sources disagree: ([a-z.]+) says “[^”]* (\d\d) million euros[^”]*” \[\^\d+\]; ([a-z.]+) says “[^”]* (\d\d) million euros[^”]*” \[\^\d+\]`)
		if team == 1 {
			if strings.Contains(res.Report, "Cross-checked") || e.brain.Count("select") > 0 {
				t.Errorf("a single researcher's report has a cross-check:\n%s", res.Report)
			}
			if res.CrossCheck == nil || len(res.CrossCheck.Corroborated)+len(res.CrossCheck.Disagreements) > 0 {
				t.Errorf("team 1: cross-check %+v; the plan's queries find no planted page", res.CrossCheck)
			}
			continue
		}
		if m := corroborated.FindStringSubmatch(res.Report); m == nil || m[1] == m[2] {
			t.Errorf("no corroborated claim from two sites in the report:\n%s", res.Report)
		}
		if m := disagree.FindStringSubmatch(res.Report); m == nil || m[2] == m[4] || m[1] == m[3] {
			t.Errorf("no disagreement with both citations in the report:\n%s", res.Report)
		}
		// the writer is told not to pick one of the figures
		told := false
		for _, p := range e.brain.WriterPrompts() {
			told = told || regexp.MustCompile(`never choose one of them:\n- \[E\d+\] [a-z.]+: "[^"]* (35|30) million euros[^"]*" vs \[E\d+\] [a-z.]+: "[^"]* (35|30) million`).MatchString(p)
		}
		if !told {
			t.Error("the writer was not told of the disagreement")
		}
		if res.Citations.Dropped > 0 {
			t.Errorf("%d citations dropped: %+v", res.Citations.Dropped, res.Citations)
		}
		// three researchers per subtask, each of the plan's subtasks
		members := map[int]int{}
		for _, s := range res.Subtasks {
			members[s.Member]++
		}
		if len(members) != 3 || members[0] != members[1] || members[1] != members[2] {
			t.Errorf("researchers per member %v", members)
		}
	}
}

// The token budget and its reserve are the run's, not each researcher's:
// a team of three spends one budget and stops researching when it is
// spent.
func TestTeamSharesTheTokenBudget(t *testing.T) {
	e := newEnv(t)
	plantedWeb(e.web)
	e.opts.TokenBudget = 6500
	res := e.start("team-budget", agent.Request{Question: "What does the EU AI Act require?", TeamSize: 3})
	if res.Status != agent.StatusDone || res.Report == "" {
		t.Fatalf("%+v", res)
	}
	if e.kinds()[agent.EventBudget] == 0 {
		t.Errorf("the team never ran out of the run's budget: it used %d tokens of 6500; events %v", res.Usage.Total(), e.kinds())
	}
	if res.Usage.Total() > 6500+2000 {
		t.Errorf("a team of three used %d tokens of a budget of 6500", res.Usage.Total())
	}
}

// The members of a team read different pages: where their searches find
// the same ones, the page goes to the member that picked it first, and
// the others read the next results.
func TestTeamMembersReadDifferentPages(t *testing.T) {
	e := newEnv(t)
	res := e.start("team-pages", agent.Request{Question: "What does the EU AI Act require?", TeamSize: 3})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	type subtask struct{ round, index int }
	readBy := map[subtask]map[string]int{}
	for _, s := range res.Subtasks {
		k := subtask{s.Round, s.Index}
		if readBy[k] == nil {
			readBy[k] = map[string]int{}
		}
		for _, r := range s.Read {
			if m, ok := readBy[k][r.URL]; ok && m != s.Member {
				t.Errorf("subtask %v: %s read by members %d and %d", k, r.URL, m, s.Member)
			}
			readBy[k][r.URL] = s.Member
		}
	}
	if len(readBy) == 0 {
		t.Fatal("nothing read")
	}
}

// A subtask one member of its team completed is no gap for the next
// round's plan, though another member found nothing.
func TestTeamGapsAreTheTeams(t *testing.T) {
	e := newEnv(t)
	e.opts.MaxTries, e.opts.MinSources, e.opts.MaxRounds = 1, 100, 2 // too few sources: the supervisor replans
	e.web.Empty = func(q string) bool { return strings.HasSuffix(q, "news analysis") }
	res := e.start("team-gaps", agent.Request{Question: "What does the EU AI Act require?", TeamSize: 3})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	replanned := false
	for _, r := range e.srv.Requests() {
		if agenttest.Kind(r.Node()) != "supervisor" {
			continue
		}
		replanned = true
		if strings.Contains(r.LastUser(), "Open gaps") {
			t.Errorf("the replan was given gaps of subtasks the team completed:\n%s", r.LastUser())
		}
	}
	if !replanned {
		t.Fatal("no replan")
	}
}
