package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"deepresearch/agent/llm"
	"deepresearch/graph"
	"deepresearch/prompts"
)

type coordOut struct {
	Intent             string `json:"intent" jsonschema:"enum=chat|research|clarify|rewrite"`
	Reply              string `json:"reply"`
	ResearchQuestion   string `json:"research_question"`
	ClarifyingQuestion string `json:"clarifying_question"`
	Instruction        string `json:"instruction"`
}

// coordinator decides what the message needs: a direct reply, one
// clarifying question, a rewrite of the last report, or research.
func (a *planning) coordinator(ctx context.Context, s State) ([]graph.Write, error) {
	phase(ctx, PhaseCoordinating)
	sc, c := a.sc, a.caller(nCoordinator)
	hasReport := s.Report != ""
	if !hasReport && len(s.History) == 0 && plainQuestion(s.Question, s.Language) {
		// nothing for the model to decide: research the question as asked
		return []graph.Write{sc.intent.Set(IntentResearch)}, nil
	}
	mayAsk := !s.Req.NoClarify && !s.Clarified
	p, err := prompts.Render(prompts.Coordinator, prompts.CoordinatorData{
		Question: s.Question, Language: s.Language, Today: today(a.now()), History: s.History,
		HasReport: hasReport, MayAsk: mayAsk,
	})
	if err != nil {
		return nil, err
	}
	var out coordOut
	if err := structured(ctx, c, llm.RolePlanner, p, false, &out); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		emit(ctx, Event{Kind: EventWarning, Message: "coordinator unavailable; researching the question as asked"})
		out = coordOut{Intent: string(IntentResearch)}
	}
	intent := settleIntent(out, hasReport, mayAsk)
	return append([]graph.Write{sc.intent.Set(intent), sc.usage.Set(c.usage())}, a.intentWrites(s, intent, out, hasReport)...), nil
}

// settleIntent is the coordinator's intent when it can be acted on, else
// research: a rewrite needs a report, a clarification a question that may
// be asked, a chat a reply.
func settleIntent(out coordOut, hasReport, mayAsk bool) Intent {
	intent := parseIntent(out.Intent)
	switch {
	case intent == IntentRewrite && !hasReport,
		intent == IntentClarify && (!mayAsk || strings.TrimSpace(out.ClarifyingQuestion) == ""),
		intent == IntentChat && strings.TrimSpace(out.Reply) == "":
		return IntentResearch
	}
	return intent
}

// intentWrites are what an intent changes: the reply and its end for a
// chat, the question for a clarification, the instruction for a rewrite,
// the restated focus for a follow-up's research.
func (a *planning) intentWrites(s State, intent Intent, out coordOut, hasReport bool) []graph.Write {
	sc := a.sc
	switch intent {
	case IntentChat:
		return []graph.Write{sc.reply.Set(out.Reply), sc.status.Set(StatusReplied),
			sc.history.Set([]prompts.Exchange{{Question: s.Question, Answer: out.Reply}})}
	case IntentClarify:
		return []graph.Write{sc.reply.Set(strings.TrimSpace(out.ClarifyingQuestion))}
	case IntentRewrite:
		instr := strings.TrimSpace(out.Instruction)
		if instr == "" {
			instr = s.Question
		}
		return []graph.Write{sc.instruction.Set(instr), sc.feedback.Set(""), sc.reviews.Set(0)}
	}
	if q := strings.TrimSpace(out.ResearchQuestion); q != "" && hasReport {
		// a follow-up: research the restated focus
		return []graph.Write{sc.question.Set(q)}
	}
	return nil
}

func cancelChoice(lang string) Choice {
	return Choice{Action: ActionCancel, Label: label(lang, "Cancel", "キャンセル")}
}

// clarify asks the one clarifying question (an interrupt).
func (a *planning) clarify(ctx context.Context, s State) ([]graph.Write, error) {
	sc := a.sc
	ans, err := graph.PauseAs[Answer](ctx, Interrupt{
		Kind: InterruptClarify, Question: s.Reply, Language: s.Language,
		Choices: []Choice{{Action: ActionAnswer, Label: label(s.Language, "Answer", "回答する"), NeedsText: true}, cancelChoice(s.Language)},
	})
	if err != nil {
		return nil, err
	}
	if ans.Action == ActionCancel {
		return []graph.Write{sc.next.Set(NextCancel), sc.reply.Set("")}, nil
	}
	q := s.Question
	text := strings.TrimSpace(ans.Text + " " + ans.Feedback)
	if text != "" {
		q += "\n\n" + label(s.Language, "Clarification: ", "補足: ") + s.Reply + " → " + text
	}
	return []graph.Write{sc.question.Set(q), sc.clarified.Set(true), sc.reply.Set(""), sc.next.Set("")}, nil
}

type planOut struct {
	Theme               string    `json:"theme"`
	InvestigationPoints []string  `json:"investigation_points"`
	SearchQueries       []string  `json:"search_queries"`
	Subtasks            []Subtask `json:"subtasks"`
	PlanText            string    `json:"plan_text"`
	EvaluationTypes     []string  `json:"evaluation_types" jsonschema:"enum=definitive|freshness|plurality|completeness|attribution"`
}

// planner makes the research plan (theme, points, queries, subtasks and
// the checks the answer must pass), falling back to a one-subtask plan.
func (a *planning) planner(ctx context.Context, s State) ([]graph.Write, error) {
	phase(ctx, PhasePlanning)
	sc, c := a.sc, a.caller(nPlanner)
	if s.Report == "" && !s.Req.ApprovePlan && !looksInternal(s.Question) {
		// the research starts once the plan is made: the pages the question
		// itself leads to can be on their way already (not for the team's
		// own matters, which the web does not know)
		a.readAhead(ctx, s.Question)
	}
	l := a.limits(s.Req.Depth)
	var known []string
	for _, f := range s.Findings {
		if len(known) == 20 {
			break
		}
		known = append(known, f.Claim)
	}
	p, err := prompts.Render(prompts.Planner, prompts.PlannerData{
		Question: s.Question, Language: s.Language, Today: today(a.now()),
		MaxSubtasks: l.subtasks, MaxQueries: a.opts.MaxQueries, Feedback: s.PlanFeedback, Known: known,
		Workspace: a.workspace != nil && s.Req.Workspace != nil,
	})
	if err != nil {
		return nil, err
	}
	var out planOut
	var plan *Plan
	if err := structured(ctx, c, llm.RolePlanner, p, false, &out); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		emit(ctx, Event{Kind: EventWarning, Message: "planner unavailable; using a simple plan"})
	} else {
		plan = a.cleanPlan(out, l)
	}
	if plan == nil {
		plan = a.fallbackPlan(s.Question)
	}
	plan.CreatedAt = a.now()
	emit(ctx, Event{Kind: EventPlanMade, Plan: plan})
	return []graph.Write{sc.plan.Set(plan), sc.planFeedback.Set(""), sc.next.Set(""), sc.usage.Set(c.usage())}, nil
}

func (a *planning) cleanPlan(out planOut, l limits) *Plan {
	pl := &Plan{Theme: strings.TrimSpace(out.Theme), PlanText: strings.TrimSpace(out.PlanText)}
	var seen []string
	for _, st := range out.Subtasks {
		t := strings.TrimSpace(st.Title)
		qs := dedupQueries(st.Queries, seen, a.opts.MaxQueries)
		if t == "" || len(qs) == 0 {
			continue
		}
		seen = append(seen, qs...)
		pl.Subtasks = append(pl.Subtasks, Subtask{Title: t, Queries: qs, Workspace: st.Workspace})
		if len(pl.Subtasks) == l.subtasks {
			break
		}
	}
	if len(pl.Subtasks) == 0 {
		// points and queries without subtasks: deal the queries out
		pl.Subtasks = dealQueries(out.InvestigationPoints, dedupQueries(out.SearchQueries, nil, 0), l.subtasks, a.opts.MaxQueries)
		if pl.Subtasks == nil {
			return nil
		}
	}
	for _, st := range pl.Subtasks {
		pl.InvestigationPoints = append(pl.InvestigationPoints, st.Title)
		pl.SearchQueries = append(pl.SearchQueries, st.Queries...)
	}
	pl.EvaluationTypes = planChecks(out.EvaluationTypes)
	if pl.Theme == "" {
		pl.Theme = pl.Subtasks[0].Title
	}
	return pl
}

// dealQueries makes a subtask of each of the first maxSubtasks points and
// deals the queries out among them (at most maxQueries each; a subtask
// left without one searches its title); nil without points or queries.
func dealQueries(pts, qs []string, maxSubtasks, maxQueries int) []Subtask {
	if len(pts) == 0 || len(qs) == 0 {
		return nil
	}
	if len(pts) > maxSubtasks {
		pts = pts[:maxSubtasks]
	}
	subs := make([]Subtask, 0, len(pts))
	for _, pt := range pts {
		subs = append(subs, Subtask{Title: pt})
	}
	for i, q := range qs {
		st := &subs[i%len(subs)]
		if len(st.Queries) < maxQueries {
			st.Queries = append(st.Queries, q)
		}
	}
	for i := range subs {
		if len(subs[i].Queries) == 0 {
			subs[i].Queries = []string{subs[i].Title}
		}
	}
	return subs
}

// planChecks are the checks the planner named, known and once each, and
// attribution always.
func planChecks(names []string) []Check {
	var cs []Check
	for _, t := range names {
		if c, ok := parseCheck(t); ok && !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	if !slices.Contains(cs, CheckAttribution) {
		cs = append(cs, CheckAttribution)
	}
	return cs
}

// echoes reports whether s repeats feedback (or a long part of it) rather
// than naming something to look for.
func echoes(s, feedback string) bool {
	n, f := normQuery(s), normQuery(feedback)
	if n == "" || f == "" {
		return false
	}
	return n == f || len([]rune(n)) >= 24 && strings.Contains(f, n) || len([]rune(f)) >= 24 && strings.Contains(n, f)
}

func (a *planning) fallbackPlan(q string) *Plan {
	first := strings.SplitN(q, "\n", 2)[0]
	query := clip(first, 200)
	return &Plan{
		Theme: clip(first, 80), InvestigationPoints: []string{first}, SearchQueries: []string{query},
		Subtasks: []Subtask{{Title: first, Queries: []string{query}}}, PlanText: first,
		EvaluationTypes: []Check{CheckCompleteness, CheckAttribution}, Fallback: true,
	}
}

// approvePlan lets a person approve, revise or cancel the plan.
func (a *planning) approvePlan(ctx context.Context, s State) ([]graph.Write, error) {
	sc, lang := a.sc, s.Language
	ans, err := graph.PauseAs[Answer](ctx, Interrupt{
		Kind: InterruptApprovePlan, Plan: s.Plan, Language: lang,
		Choices: []Choice{
			{Action: ActionApprove, Label: label(lang, "Approve plan", "計画を承認")},
			{Action: ActionRevise, Label: label(lang, "Change plan", "計画を修正"), NeedsText: true},
			cancelChoice(lang),
		},
	})
	if err != nil {
		return nil, err
	}
	switch ans.Action {
	case ActionRevise, ActionResearch:
		fb := strings.TrimSpace(ans.Feedback + " " + ans.Text)
		return []graph.Write{sc.next.Set(NextReplan), sc.planFeedback.Set(fb)}, nil
	case ActionCancel:
		return []graph.Write{sc.next.Set(NextCancel)}, nil
	}
	return []graph.Write{sc.next.Set(NextPlanApproved)}, nil
}

type replanOut struct {
	Subtasks []Subtask `json:"subtasks"`
}

// supervisor routes research / write / end and plans the subtasks of each
// research round: the plan's subtasks first; then a person's or the
// reviewer's request, or too few sources read, while rounds are left; the
// writer otherwise, or when a budget is spent; the end once the visits run
// out with a draft in hand.
func (a *planning) supervisor(ctx context.Context, s State) ([]graph.Write, error) {
	sc, c := a.sc, a.caller(nSupervisor)
	l := a.limits(s.Req.Depth)
	it := s.Iteration + 1
	w := []graph.Write{sc.iteration.Set(it)}
	nRead := len(retrieved(s.Sources))
	next := NextWrite
	var dispatch []Subtask
	ex := a.exhausted(ctx, s.Deadline)
	canResearch := s.Round < l.rounds && a.search != nil
	switch {
	case ex != "":
		w = append(w, sc.exhausted.Set(ex))
		emit(ctx, Event{Kind: EventBudget, Message: string(ex) + " budget spent; writing the report from what was found"})
	case it > l.iterations:
		if s.Best != nil {
			next = NextEnd
		}
	case s.Round == 0:
		dispatch = s.Plan.Subtasks
	case s.ResearchRequest != "" && s.Round < l.rounds:
		// a person's request may be searched as written; the reviewer's
		// feedback is a judgement of the draft, never a query
		byReviewer := s.Review != nil && s.Review.Feedback == s.ResearchRequest
		dispatch = a.replan(ctx, c, s, l, s.ResearchRequest, !byReviewer)
	case nRead < a.opts.MinSources && canResearch:
		dispatch = a.replan(ctx, c, s, l, "", false)
	case canResearch && len(gapsOf(s)) > 0:
		// sources enough by count, yet subtasks left open: whether the
		// evidence is enough is the model's call
		rt, u := a.route(ctx, s, nSupervisor, "The researchers left gaps open. Is the evidence enough to write the report, or is another research round needed?",
			gapFacts(s, nRead), l.rounds-s.Round, NextWrite)
		w = append(w, sc.routes.Set([]Routing{rt}), sc.usage.Set(u))
		if rt.Next == NextResearch {
			dispatch = a.replan(ctx, c, s, l, "", false)
		}
	}
	if len(dispatch) > 0 {
		dispatch = dispatch[:min(len(dispatch), l.subtasks)]
		next = NextResearch
		phase(ctx, PhaseResearching)
		w = append(w, sc.round.Set(s.Round+1), sc.dispatch.Set(dispatch), sc.researchRequest.Set(""))
	}
	w = append(w, sc.next.Set(next), sc.usage.Set(c.usage()))
	return w, nil
}

// routeSupervisor fans out one researcher per dispatched subtask.
func (a *planning) routeSupervisor(s State) []graph.Route {
	switch s.Next {
	case NextResearch:
		known := make([]string, 0, len(s.Sources))
		for u, src := range s.Sources {
			if src.Retrieved {
				known = append(known, u)
				known = append(known, src.Aliases...) // read under another URL
			}
		}
		slices.Sort(known)
		l := a.limits(s.Req.Depth)
		routes := make([]graph.Route, 0, len(s.Dispatch))
		team := a.teamSize(s.Req)
		for i, st := range s.Dispatch {
			for m := range team {
				// each member of a team researches the subtask its own way
				mst := st
				mst.Queries = memberQueries(st.Queries, m, s.Language)
				routes = append(routes, graph.Send(nResearcher, researchTask{
					Turn: s.Turn, Round: s.Round, Index: i, Member: m, Team: team, Subtask: mst, Question: s.Question, Language: s.Language,
					Known: known, Queries: s.Queries, Deadline: s.Deadline, MaxTries: l.tries,
					Workspace: a.workspaceFor(s, st), Audience: audienceOf(s.Req),
				}))
			}
		}
		if len(routes) > 0 {
			return routes
		}
		return []graph.Route{graph.To(nWriter)}
	case NextWrite:
		return []graph.Route{graph.To(nWriter)}
	}
	return []graph.Route{graph.To(nFinalize)}
}

// gapFacts are what the routing model is told of a round that left gaps.
func gapFacts(s State, retrieved int) []string {
	facts := []string{fmt.Sprintf("%d sources read in %d research round(s)", retrieved, s.Round),
		fmt.Sprintf("%d verified findings", len(evidenceOf(s.Findings, 0)))}
	for _, g := range gapsOf(s) {
		facts = append(facts, "Open gap: "+g)
	}
	return facts
}

// replan plans another round from feedback and the researchers' gaps. The
// planner's subtasks and queries that merely repeat the feedback are
// dropped; when nothing is left the gaps are researched, and the feedback
// itself only when searchable (a person's request, not a reviewer's
// verdict). Nothing to research means the writer takes the feedback.
func (a *planning) replan(ctx context.Context, c *caller, s State, l limits, feedback string, searchable bool) []Subtask {
	gaps := openGaps(s)
	theme := s.Question
	if s.Plan != nil {
		theme = s.Plan.Theme
	}
	p, err := prompts.Render(prompts.Replan, prompts.ReplanData{
		Question: s.Question, Language: s.Language, Today: today(a.now()), Theme: theme, Feedback: feedback,
		Gaps: gaps, PreviousQueries: s.Queries, MaxSubtasks: l.subtasks, MaxQueries: a.opts.MaxQueries,
		Workspace: a.workspace != nil && s.Req.Workspace != nil,
	})
	var out replanOut
	if err == nil {
		err = structured(ctx, c, llm.RolePlanner, p, false, &out)
	}
	if err != nil {
		// no plan from the model: the gaps are researched directly below
		a.log.Warn("agent: replan failed; researching the gaps directly", "err", err)
	}
	subs, seen := a.replannedSubtasks(out.Subtasks, s.Queries, feedback, searchable)
	if len(subs) > 0 {
		return subs
	}
	// fallback: research the gaps (and a person's request) directly
	direct := gaps
	if searchable && feedback != "" {
		direct = append(append([]string(nil), gaps...), feedback)
	}
	for _, g := range direct {
		if qs := dedupQueries([]string{g}, seen, 1); len(qs) > 0 {
			seen = append(seen, qs...)
			subs = append(subs, Subtask{Title: clip(g, 120), Queries: qs})
		}
	}
	return subs
}

// openGaps are the gaps this turn's unfinished subtasks left (a subtask
// without gaps named is one itself).
func openGaps(s State) []string {
	var gaps []string
	for _, r := range s.Results {
		if r.Turn == s.Turn && !r.Completed && !teamCompleted(s, r) {
			gaps = append(gaps, r.Gaps...)
			if len(r.Gaps) == 0 {
				gaps = append(gaps, r.Title)
			}
		}
	}
	return gaps
}

// replannedSubtasks keeps the planner's subtasks with new queries; unless
// the feedback is searchable, queries that echo it are dropped and a title
// that echoes it is replaced by its first query. seen grows by the queries
// kept.
func (a *planning) replannedSubtasks(planned []Subtask, seen []string, feedback string, searchable bool) ([]Subtask, []string) {
	var subs []Subtask
	for _, st := range planned {
		var own []string
		for _, q := range st.Queries {
			if searchable || !echoes(q, feedback) {
				own = append(own, q)
			}
		}
		qs := dedupQueries(own, seen, a.opts.MaxQueries)
		title := strings.TrimSpace(st.Title)
		if title == "" || len(qs) == 0 {
			continue
		}
		if !searchable && echoes(title, feedback) {
			title = qs[0]
		}
		seen = append(seen, qs...)
		subs = append(subs, Subtask{Title: title, Queries: qs, Workspace: st.Workspace})
	}
	return subs, seen
}

// plainQuestion reports whether a first message is plainly a research
// question — long enough to be specific, asked as a question or a research
// request, and not addressed to the bot itself — so that asking the model
// whether it is small talk, a rewrite or too vague adds nothing. Anything
// else goes to the coordinator.
func plainQuestion(q, lang string) bool {
	q = strings.TrimSpace(q)
	lower := strings.ToLower(q)
	switch lang {
	case "en":
		words := strings.FieldsFunc(lower, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
		})
		if len(words) < 5 {
			return false
		}
		for _, w := range words {
			switch w {
			case "you", "your", "you're", "yourself", "hi", "hello", "hey", "thanks", "thank":
				return false
			}
		}
		if strings.HasSuffix(q, "?") {
			return true
		}
		switch words[0] {
		case "what", "how", "why", "which", "who", "when", "where", "compare", "explain", "research", "investigate",
			"analyze", "analyse", "summarize", "summarise", "describe", "assess", "evaluate", "review", "survey", "list":
			return true
		}
	case "ja":
		if len([]rune(q)) < 12 {
			return false
		}
		for _, w := range []string{"あなた", "君", "きみ", "こんにちは", "ありがとう"} {
			if strings.Contains(q, w) {
				return false
			}
		}
		for _, w := range []string{"調べ", "調査", "動向", "比較", "分析", "まとめ", "について", "とは", "教えて", "現状", "影響", "違い", "？", "?"} {
			if strings.Contains(q, w) {
				return true
			}
		}
	}
	return false
}
