package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"deepresearch/agent/citation"
	"deepresearch/agent/llm"
	"deepresearch/graph"
	"deepresearch/prompts"
)

// lookup finds the pages read in this thread for the citation check, by
// their URL or any alias (where a redirect ended, a rel=canonical alias, a
// copy with the same text); the document is the source under its one URL.
func lookup(sources map[string]Source) citation.Lookup {
	final := map[string]string{}
	for u, src := range sources {
		if !src.Retrieved {
			continue
		}
		if src.FinalURL != "" {
			final[src.FinalURL] = u
		}
		for _, al := range src.Aliases {
			final[al] = u
		}
	}
	return func(raw string) (citation.Doc, bool) {
		n := normURL(raw)
		src, ok := sources[n]
		if !ok || !src.Retrieved {
			if k, ok2 := final[n]; ok2 {
				src, ok = sources[k], true
			}
		}
		if !ok || !src.Retrieved {
			return citation.Doc{}, false
		}
		return citation.Doc{URL: src.URL, Title: src.Title, Text: src.Text}, true
	}
}

// turnResults returns this turn's latest result per subtask title.
func turnResults(s State) []SubtaskResult {
	var out []SubtaskResult
	idx := map[string]int{}
	for _, r := range s.Results {
		if r.Turn != s.Turn {
			continue
		}
		if i, ok := idx[r.Title]; ok {
			if p := out[i]; p.Round == r.Round && p.Index == r.Index && p.Member != r.Member {
				out[i] = mergeMembers(p, r) // another member of the team
				continue
			}
			out[i] = r
			continue
		}
		idx[r.Title] = len(out)
		out = append(out, r)
	}
	return out
}

func gapsOf(s State) []string {
	var gaps []string
	for _, r := range turnResults(s) {
		if !r.Completed {
			if len(r.Gaps) > 0 {
				gaps = append(gaps, r.Gaps...)
			} else {
				gaps = append(gaps, r.Title)
			}
		}
	}
	return dedupQueries(gaps, nil, 8)
}

// writer drafts the report from the evidence and checks its citations.
func (a *writing) writer(ctx context.Context, s State) ([]graph.Write, error) {
	phase(ctx, PhaseWriting)
	sc, c := a.sc, a.caller(nWriter)
	var points []string
	theme := s.Question
	if s.Plan != nil {
		points, theme = s.Plan.InvestigationPoints, s.Plan.Theme
	}
	subs, ev, ix := writerInput(s, a.opts.MaxEvidence)
	cc := crossCheck(ix.list)
	prev := s.Draft
	if s.Intent == IntentRewrite && s.Report != "" && s.Drafts == 0 {
		prev = s.Report
	}
	if s.Feedback == "" && s.Instruction == "" {
		prev = "" // a first draft
	}
	p, err := prompts.Render(prompts.Writer, prompts.WriterData{
		Question: s.Question, Theme: theme, Language: s.Language, Today: today(a.now()), Points: points,
		Evidence: ev, Subtasks: subs, Feedback: s.Feedback,
		PreviousDraft: citeByID(prev, ix), Instruction: s.Instruction, Gaps: gapsOf(s),
		Disagreements: disagreementLines(cc, ix),
	})
	if err != nil {
		return nil, err
	}
	resp, err := c.chat(ctx, llm.Request{Role: llm.RoleWriter, Messages: messages(p), Final: true})
	draft := cleanMarkdown(resp.Content)
	extractive := false
	w := []graph.Write{sc.drafts.Set(s.Drafts + 1), sc.feedback.Set("")}
	if err != nil || draft == "" {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case budgetErr(err) != "" && s.Draft != "":
			// no budget for another version: keep the last one
			emit(ctx, Event{Kind: EventBudget, Message: "no budget left for another draft; keeping the last one"})
			return append(w, sc.exhausted.Set(budgetErr(err)), sc.usage.Set(c.usage())), nil
		case budgetErr(err) != "":
			// the budget, not the model, stopped the writer: say so
			w = append(w, sc.exhausted.Set(budgetErr(err)))
			emit(ctx, Event{Kind: EventBudget, Message: string(budgetErr(err)) + " budget spent before the report was written; building an extractive report from the sources"})
		default:
			emit(ctx, Event{Kind: EventWarning, Message: "the writer is unavailable; building an extractive report from the sources"})
		}
		draft, extractive = a.extractiveReport(s, budgetErr(err)), true
	}
	if a.teamSize(s.Req) > 1 {
		// a team's findings are cross-checked in the report itself
		draft = withCrossCheck(draft, cc, ix, s.Language)
	}
	w = append(w, sc.crossCheck.Set(&cc))
	checked, rep := a.checkCitations(ctx, draft, s, ix)
	emit(ctx, Event{Kind: EventDraft, Citations: &rep, Message: fmt.Sprintf("draft %d: %d cited, %d verified, %d dropped", s.Drafts+1, rep.Cited, rep.Verified, rep.Dropped)})
	return append(w, sc.draft.Set(checked), sc.draftCitations.Set(rep), sc.draftExtractive.Set(extractive), sc.usage.Set(c.usage())), nil
}

// cleanMarkdown strips reasoning blocks and a fence around the whole report.
func cleanMarkdown(s string) string {
	s, _ = llm.StripThink(s)
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		if i := strings.Index(s, "\n"); i >= 0 && strings.HasSuffix(s, "```") {
			s = strings.TrimSpace(s[i+1 : len(s)-3])
		}
	}
	return s
}

type reviewOut struct {
	Scores          Scores       `json:"scores"`
	Evaluations     []Evaluation `json:"evaluations"`
	Feedback        string       `json:"feedback"`
	SuggestedAction string       `json:"suggested_action" jsonschema:"enum=accept|write|research"`
	Issues          []Issue      `json:"issues"`
}

// citationFact is the most the fact-check score can be given the citation
// check: every dropped citation is a claim that lost its source.
func citationFact(r citation.Report) float64 {
	if r.Cited == 0 {
		return 0.5
	}
	return 0.5 + 0.5*float64(r.Verified)/float64(r.Cited)
}

var sections = []string{"## Executive Summary", "## Key Findings", "## Detailed Analysis", "## References"}

func formatScore(d string) float64 {
	n := 0
	for _, h := range sections {
		if strings.Contains(d, h) {
			n++
		}
	}
	return float64(n) / float64(len(sections))
}

// reviewer scores the draft (approved at a weighted score of 0.8 with fact
// checking at 0.9) and judges it against the checks the planner chose.
func (a *writing) reviewer(ctx context.Context, s State) ([]graph.Write, error) {
	phase(ctx, PhaseReviewing)
	sc, c := a.sc, a.caller(nReviewer)
	l := a.limits(s.Req.Depth)
	n := s.Reviews + 1
	r, err := a.review(ctx, c, s, n)
	if err != nil {
		return nil, err
	}
	rv := r.rv
	w := []graph.Write{sc.reviews.Set(n), sc.usage.Set(c.usage())}
	if r.exhausted != "" {
		w = append(w, sc.exhausted.Set(r.exhausted))
	}
	if s.Best == nil || rv.Overall > s.Best.Score || s.Best.Extractive && !s.DraftExtractive {
		w = append(w, sc.best.Set(&bestDraft{Text: s.Draft, Citations: s.DraftCitations, Score: rv.Overall, Review: rv, Extractive: s.DraftExtractive}))
	}
	settled := r.settled() || n >= l.reviews
	canResearch := s.Round < l.rounds && a.search != nil
	if !settled && canResearch {
		w = append(w, a.judgeObjection(ctx, s, l, r)...)
	}
	next := NextDone
	switch {
	case settled:
	case rv.SuggestedAction == NextResearch && canResearch:
		next = NextResearch
		w = append(w, sc.researchRequest.Set(rv.Feedback), sc.feedback.Set(rv.Feedback))
	default:
		next = NextWrite
		w = append(w, sc.feedback.Set(reviewFeedback(rv)))
	}
	if next == NextDone {
		rv.SuggestedAction = NextEnd
	}
	emit(ctx, Event{Kind: EventReviewed, Review: rv})
	return append(w, sc.review.Set(rv), sc.next.Set(next)), nil
}

// reviewRun is one review of a draft and how it was reached.
type reviewRun struct {
	rv        *Review
	suggested string // the action as the reviewer named it
	exhausted Budget // the budget that ran out, if one did
	modelOK   bool   // false when the reviewer model failed
}

// settled reports whether the review ends the reviewing: the draft is
// approved, was scored without the model, or no budget is left.
func (r reviewRun) settled() bool {
	return r.rv.Approved || r.rv.Simple || !r.modelOK || r.exhausted != ""
}

// review scores the draft: by the reviewer model, or by rules when a
// budget is spent, the draft is extractive or the model fails.
func (a *writing) review(ctx context.Context, c *caller, s State, n int) (reviewRun, error) {
	r := reviewRun{rv: &Review{Round: n}, exhausted: s.Exhausted, modelOK: true}
	if r.exhausted == "" {
		r.exhausted = a.exhausted(ctx, s.Deadline)
	}
	if r.exhausted != "" || s.DraftExtractive {
		r.scoreByRules(s)
	} else if err := a.askReviewer(ctx, c, s, &r); err != nil {
		return r, err
	}
	r.rv.grade(s.DraftCitations)
	return r, nil
}

// scoreByRules scores the draft without the model.
func (r *reviewRun) scoreByRules(s State) {
	r.rv.Simple = true
	r.rv.Scores = Scores{FactCheck: citationFact(s.DraftCitations), Completeness: 0.7, Logic: 0.8, Format: formatScore(s.Draft)}
}

// askReviewer has the reviewer model score the draft against the checks
// the planner chose; when the model fails (not for a cancelled context),
// the rules score it.
func (a *writing) askReviewer(ctx context.Context, c *caller, s State, r *reviewRun) error {
	var types []Check
	var points []string
	if s.Plan != nil {
		types, points = s.Plan.EvaluationTypes, s.Plan.InvestigationPoints
	}
	p, err := prompts.Render(prompts.Reviewer, prompts.ReviewerData{
		Question: s.Question, Language: s.Language, Today: today(a.now()), Points: points, Draft: s.Draft,
		EvaluationTypes: checkNames(types), Evidence: reviewEvidence(s, a.opts.MaxEvidence),
		Citations: prompts.Citations{Cited: s.DraftCitations.Cited, Verified: s.DraftCitations.Verified, Dropped: s.DraftCitations.Dropped},
	})
	if err != nil {
		return err
	}
	var out reviewOut
	if err := structured(ctx, c, llm.RoleReviewer, p, false, &out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if b := budgetErr(err); b != "" {
			r.exhausted = b
		} else {
			r.modelOK = false
		}
		r.scoreByRules(s)
		return nil
	}
	rv := r.rv
	rv.Scores, rv.Feedback, rv.Issues = clampScores(out.Scores), strings.TrimSpace(out.Feedback), out.Issues
	rv.SuggestedAction, r.suggested = parseSuggestedAction(out.SuggestedAction), out.SuggestedAction
	for _, e := range out.Evaluations {
		if c, ok := parseCheck(string(e.Type)); ok && slices.Contains(types, c) {
			e.Type = c
			rv.Evaluations = append(rv.Evaluations, e)
		}
	}
	return nil
}

// grade caps the fact-check score by the citation check and decides
// approval: a weighted score of 0.8, fact checking at 0.9 and every chosen
// check passed; the first failed check is the feedback when there is none.
func (rv *Review) grade(cit citation.Report) {
	if f := citationFact(cit); rv.Scores.FactCheck > f {
		rv.Scores.FactCheck = f
	}
	rv.Overall = rv.Scores.Weighted()
	rv.Approved = !rv.Simple && rv.Overall >= 0.8 && rv.Scores.FactCheck >= 0.9
	for _, e := range rv.Evaluations {
		if !e.Pass {
			rv.Approved = false
			if rv.Feedback == "" {
				rv.Feedback = string(e.Type) + ": " + e.Reason
			}
		}
	}
}

// judgeObjection sets the action a review that did not approve the draft
// suggests. The rules decide when the reviewer's suggestion and its issues
// agree; when they do not, the model judges whether the objection is about
// facts or about form.
func (a *writing) judgeObjection(ctx context.Context, s State, l limits, r reviewRun) []graph.Write {
	rv := r.rv
	switch objection(r.suggested, rv) {
	case NextResearch:
		rv.SuggestedAction = NextResearch
	case NextWrite:
		rv.SuggestedAction = NextWrite
	default:
		rt, u := a.route(ctx, s, nReviewer, "The reviewer did not approve the draft. Is its objection about facts (another research round) or about form (a rewrite)?",
			reviewFacts(r.suggested, rv), l.rounds-s.Round, NextWrite)
		rv.SuggestedAction = rt.Next
		return []graph.Write{a.sc.routes.Set([]Routing{rt}), a.sc.usage.Set(u)}
	}
	return nil
}

// reviewFacts is what the routing model is told of a review.
func reviewFacts(suggested string, rv *Review) []string {
	facts := []string{fmt.Sprintf("The reviewer suggested %q; overall score %.2f, fact check %.2f, completeness %.2f, format %.2f",
		word(suggested), rv.Overall, rv.Scores.FactCheck, rv.Scores.Completeness, rv.Scores.Format)}
	if rv.Feedback != "" {
		facts = append(facts, "Reviewer feedback: "+clip(rv.Feedback, 600))
	}
	for _, is := range rv.Issues {
		facts = append(facts, fmt.Sprintf("Issue (%s/%s): %s", is.Type, is.Severity, clip(is.Description, 300)))
	}
	for _, e := range rv.Evaluations {
		if !e.Pass {
			facts = append(facts, fmt.Sprintf("Failed check %s: %s", e.Type, clip(e.Reason, 300)))
		}
	}
	return facts
}

// checkNames are the checks as the prompts name them.
func checkNames(cs []Check) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

func clampScores(s Scores) Scores {
	cl := func(v float64) float64 { return min(1, max(0, v)) }
	return Scores{FactCheck: cl(s.FactCheck), Completeness: cl(s.Completeness), Logic: cl(s.Logic), Format: cl(s.Format)}
}

func reviewFeedback(rv *Review) string {
	var b strings.Builder
	b.WriteString(rv.Feedback)
	for _, is := range rv.Issues {
		fmt.Fprintf(&b, "\n- [%s/%s] %s (%s)", is.Type, is.Severity, is.Description, is.Location)
	}
	return strings.TrimSpace(b.String())
}

// chosen is the draft a person sees and the run ends with: the approved
// draft, else the best-scored one.
func chosen(s State) (string, citation.Report, bool) {
	if s.Review != nil && s.Review.Approved || s.Best == nil {
		return s.Draft, s.DraftCitations, s.DraftExtractive
	}
	return s.Best.Text, s.Best.Citations, s.Best.Extractive
}

// approveDraft lets a person approve, revise, send back to research or
// cancel the draft.
func (a *writing) approveDraft(ctx context.Context, s State) ([]graph.Write, error) {
	sc, lang := a.sc, s.Language
	draft, cit, _ := chosen(s)
	ans, err := graph.PauseAs[Answer](ctx, Interrupt{
		Kind: InterruptApproveDraft, Draft: draft, Summary: execSummary(draft), Review: s.Review, Citations: &cit, Language: lang,
		Choices: []Choice{
			{Action: ActionApprove, Label: label(lang, "Approve", "承認")},
			{Action: ActionRevise, Label: label(lang, "Request changes", "修正を依頼"), NeedsText: true},
			{Action: ActionResearch, Label: label(lang, "Research more", "追加調査"), NeedsText: true},
			cancelChoice(lang),
		},
	})
	if err != nil {
		return nil, err
	}
	fb := strings.TrimSpace(ans.Feedback + " " + ans.Text)
	l := a.limits(s.Req.Depth)
	switch ans.Action {
	case ActionRevise:
		return []graph.Write{sc.next.Set(NextWrite), sc.feedback.Set(fb), sc.reviews.Set(0), sc.draft.Set(draft), sc.draftCitations.Set(cit), sc.review.Set(nil), sc.best.Set(nil)}, nil
	case ActionResearch:
		return []graph.Write{sc.next.Set(NextResearch), sc.researchRequest.Set(fb), sc.feedback.Set(fb), sc.reviews.Set(0),
			sc.round.Set(min(s.Round, l.rounds-1)), sc.iteration.Set(0), sc.review.Set(nil), sc.best.Set(nil), sc.exhausted.Set("")}, nil
	case ActionCancel:
		return []graph.Write{sc.next.Set(NextCancel)}, nil
	}
	return []graph.Write{sc.next.Set(NextDraftApproved)}, nil
}

// cancelWrites end a turn as cancelled.
func (a *writing) cancelWrites(s State) []graph.Write {
	sc := a.sc
	return []graph.Write{sc.status.Set(StatusCancelled), sc.finish.Set(FinishCancelled),
		sc.history.Set([]prompts.Exchange{{Question: s.Question, Answer: "(cancelled)"}})}
}

// finalize ends the turn with the best report and says what is unverified.
func (a *writing) finalize(ctx context.Context, s State) ([]graph.Write, error) {
	phase(ctx, PhaseFinishing)
	sc, lang := a.sc, s.Language
	if s.Next == NextCancel {
		return a.cancelWrites(s), nil
	}
	report, cit, extractive := chosen(s)
	if strings.TrimSpace(report) == "" {
		report, extractive = a.extractiveReport(s, s.Exhausted), true
		report, cit = a.checkCitations(ctx, report, s, indexEvidence(s.Findings))
	}
	var charts []Chart
	var w []graph.Write
	left := 0 // proposed table values left out
	if !extractive && s.Exhausted == "" && strings.TrimSpace(report) != "" {
		c := a.caller(nAnalyst)
		report, cit, charts, left = a.withAnalysis(ctx, c, s, report, cit)
		w = append(w, sc.usage.Set(c.usage()))
	}
	unv := citationNotes(cit, lang)
	unv = append(unv, unreachableLines(s, lang)...)
	if left > 0 {
		// how many, not which: a value that failed the check is not shown
		unv = append(unv, fmt.Sprintf(label(lang,
			"%d value(s) proposed for the data table were left out: their number is not in the quote they cite, or their unit could not be converted with a cited rate.",
			"データ表の候補のうち%d件は除外しました：引用した出典の文中にその数値がない、または出典の換算レートで単位を換算できませんでした。"), left))
	}
	gapsAt := len(unv) // the questions left open go here, once the verdict is known
	finish, note := a.finishOf(s, extractive)
	if note != "" {
		unv = append(unv, note)
	}
	unv = slices.Insert(unv, gapsAt, gapNotes(s, finish)...)
	if n := notPassedNote(s, finish); n != "" {
		unv = append(unv, n)
	}
	if len(unv) > 0 {
		report = insertSection(report, label(lang, "## Limitations", "## 未検証事項・制約"), unv)
	}
	report = withSourcesRead(report, s.Sources, cit, lang)
	sum := execSummary(report)
	if ti, ok := graph.CurrentTask(ctx); ok {
		rs := readStats(s)
		a.log.Info("research finished", "thread", ti.ThreadID, "finish", finish, "tokens", s.Usage.Total()-s.TurnStart,
			"cited", cit.Cited, "verified", cit.Verified, "dropped", cit.Dropped, "unverified", len(unv),
			"read", rs.Read, "wasted_reads", rs.Wasted(), "skipped_off_topic", rs.Skipped)
	}
	return append(w, sc.report.Set(report), sc.summary.Set(sum), sc.citations.Set(cit), sc.status.Set(StatusDone),
		sc.finish.Set(finish), sc.unverified.Set(unv), sc.extractive.Set(extractive), sc.charts.Set(charts),
		sc.history.Set([]prompts.Exchange{{Question: s.Question, Answer: sum}})), nil
}

// withAnalysis has the data analyst add a table of the evidence's numbers
// that compare (each value checked against the quote it cites) and its
// chart; left counts the proposed values left out.
func (a *writing) withAnalysis(ctx context.Context, c *caller, s State, report string, cit citation.Report) (string, citation.Report, []Chart, int) {
	ix := indexEvidence(s.Findings)
	sec := a.analyze(ctx, c, s, ix)
	if sec == nil {
		return report, cit, nil, 0
	}
	report, cit = withTable(report, cit, sec, ix, s.Language)
	var charts []Chart
	if sec.chart != nil {
		charts = append(charts, *sec.chart)
	}
	return report, cit, charts, len(sec.table.Dropped)
}

// citationNotes say which claims lost their citation and why.
func citationNotes(cit citation.Report, lang string) []string {
	var unv []string
	for _, f := range cit.Failed() {
		if f.Status == citation.Unused {
			continue
		}
		ctxt := f.Context
		if ctxt == "" {
			ctxt = f.Label
		}
		unv = append(unv, fmt.Sprintf(label(lang, NoteCitationRemoved+"“%s” (%s%s)", "「%s」"+NoteCitationRemovedJA+"（%s%s）"), ctxt, f.Status, urlSuffix(f.URL)))
	}
	return unv
}

// extractiveHeader says at the top of an extractive report why the model did
// not write it.
func extractiveHeader(lang string, why Budget) string {
	cause, causeJA := "The language model was unavailable", "言語モデルが利用できなかったため"
	switch why {
	case BudgetTokens:
		cause, causeJA = "The token budget ran out", "トークン予算が尽きたため"
	case BudgetTime:
		cause, causeJA = "The time budget ran out", "時間予算が尽きたため"
	}
	return label(lang,
		"> **Extractive report.** "+cause+", so this report was not written by the language model: it quotes the sources collected in this run verbatim, without synthesis or review.\n\n",
		"> **抽出型レポート**："+causeJA+"、このレポートは言語モデルによって書かれていません。この実行で収集した情報源の文章をそのまま引用しており、要約・統合・レビューは行われていません。\n\n")
}

// finishOf is how the turn ends, with the note a report that ended early
// carries.
func (a *writing) finishOf(s State, extractive bool) (Finish, string) {
	lang := s.Language
	switch {
	case extractive && s.Exhausted == BudgetTokens:
		return FinishTokenBudget, label(lang, "The token budget ran out: the report quotes the sources without synthesis or review.",
			"トークン予算が尽きたため、レポートは情報源の引用のみで構成され、統合・レビューされていません。")
	case extractive && s.Exhausted == BudgetTime:
		return FinishTimeBudget, label(lang, "The time budget ran out: the report quotes the sources without synthesis or review.",
			"時間予算が尽きたため、レポートは情報源の引用のみで構成され、統合・レビューされていません。")
	case extractive:
		return FinishLLMDown, label(lang, "The language model was unavailable: the report quotes the sources without synthesis or review.",
			"言語モデルが利用できなかったため、レポートは情報源の引用のみで構成され、統合・レビューされていません。")
	case s.Exhausted == BudgetTokens:
		return FinishTokenBudget, label(lang, "The token budget ran out: research stopped early and the report was not fully reviewed.",
			"トークン予算が尽きたため、調査を途中で打ち切り、レポートの十分なレビューは行われていません。")
	case s.Exhausted == BudgetTime:
		return FinishTimeBudget, label(lang, "The time budget ran out: research stopped early and the report was not fully reviewed.",
			"時間予算が尽きたため、調査を途中で打ち切り、レポートの十分なレビューは行われていません。")
	case s.Next == NextDraftApproved:
		return FinishPersonOK, ""
	case s.Review != nil && s.Review.Approved:
		return FinishApproved, ""
	case s.Intent == IntentRewrite:
		return FinishRewritten, ""
	case s.Iteration > a.limits(s.Req.Depth).iterations:
		return FinishMaxIterations, ""
	}
	return FinishMaxRounds, ""
}

// gapNotes list what the research left open. One verdict per report: a
// report the review (or a person) passed lists them as open questions,
// not as "not fully researched", which would contradict the pass.
func gapNotes(s State, finish Finish) []string {
	prefix := label(s.Language, NoteNotResearched, NoteNotResearchedJA)
	if finish == FinishApproved || finish == FinishPersonOK {
		prefix = label(s.Language, NoteOpenQuestion, NoteOpenQuestionJA)
	}
	var notes []string
	for _, g := range gapsOf(s) {
		notes = append(notes, prefix+g)
	}
	return notes
}

// notPassedNote says that the review did not pass the report kept when
// the rounds or iterations ran out.
func notPassedNote(s State, finish Finish) string {
	if finish != FinishMaxRounds && finish != FinishMaxIterations {
		return ""
	}
	if b := s.Best; b != nil && b.Review != nil && !b.Review.Approved {
		return fmt.Sprintf(label(s.Language, "The reviewer did not pass the report (score %.2f): %s", "レビューで合格しませんでした（スコア %.2f）：%s"),
			b.Review.Overall, clip(b.Review.Feedback, 300))
	}
	return ""
}

// sourcesHeadings are the headings of the list of sources read, which
// ends every report.
var sourcesHeadings = []string{"## Sources read", "## 参照した情報源"}

// withSourcesRead ends the report with the sources read in this thread
// (title, URL), cited ones first in the order of the references, so a
// reader sees what the research rests on even when citations were dropped.
// A list the writer copied from an earlier report is replaced.
func withSourcesRead(report string, sources map[string]Source, cit citation.Report, lang string) string {
	report = withoutSourcesList(report)
	read := citedFirst(retrieved(sources), cit)
	var b strings.Builder
	b.WriteString(strings.TrimRight(report, "\n"))
	b.WriteString("\n\n" + label(lang, sourcesHeadings[0], sourcesHeadings[1]) + "\n\n")
	if len(read) == 0 {
		b.WriteString(label(lang, "No pages or documents were read.\n", "読み込んだページや文書はありません。\n"))
	}
	const maxListed = 100
	for i, src := range read {
		if i == maxListed {
			fmt.Fprintf(&b, label(lang, "- … and %d more\n", "- ほか%d件\n"), len(read)-maxListed)
			break
		}
		title := sourceTitle(src.Title)
		if title == "" {
			title = src.URL
		}
		fmt.Fprintf(&b, "- %s — %s\n", title, src.URL)
	}
	return b.String()
}

// withoutSourcesList takes off a list of sources read that ends report
// (one the writer copied from an earlier report).
func withoutSourcesList(report string) string {
	for _, h := range sourcesHeadings {
		if i := strings.LastIndex(report, "\n"+h+"\n"); i >= 0 && !strings.Contains(report[i+len(h)+2:], "\n#") {
			report = report[:i]
		}
	}
	return report
}

// retrieved are the sources that were read, in sortSources order.
func retrieved(sources map[string]Source) []Source {
	var read []Source
	for _, src := range sources {
		if src.Retrieved {
			read = append(read, src)
		}
	}
	sortSources(read)
	return read
}

// citedFirst orders read with the sources the report cites (verified)
// first, in the order of their first reference; the rest keep their order.
func citedFirst(read []Source, cit citation.Report) []Source {
	rank := map[string]int{}
	for _, f := range cit.Footnotes {
		if f.Status == citation.Verified && f.Number > 0 {
			if u := normURL(f.URL); rank[u] == 0 || f.Number < rank[u] {
				rank[u] = f.Number
			}
		}
	}
	slices.SortStableFunc(read, func(x, y Source) int {
		rx, ry := rank[x.URL], rank[y.URL]
		switch {
		case rx == ry:
			return 0
		case rx == 0:
			return 1
		case ry == 0:
			return -1
		}
		return rx - ry
	})
	return read
}

// sourceTitle puts a page's title on one line, without control characters
// or markup that could turn it into a link or a mention.
func sourceTitle(t string) string {
	t = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsControl(r):
			return ' '
		case strings.ContainsRune("[]<>`*_|", r):
			return -1
		}
		return r
	}, t)
	return clip(strings.Join(strings.Fields(t), " "), 200)
}

func urlSuffix(u string) string {
	if u == "" {
		return ""
	}
	return ": " + u
}

// insertSection puts a bulleted section before the References heading (or
// at the end).
func insertSection(report, heading string, items []string) string {
	var b strings.Builder
	b.WriteString(heading + "\n\n")
	for _, it := range items {
		b.WriteString("- " + it + "\n")
	}
	sec := b.String()
	if i := strings.LastIndex(report, "\n## References"); i >= 0 {
		return strings.TrimRight(report[:i], "\n") + "\n\n" + sec + report[i:]
	}
	return strings.TrimRight(report, "\n") + "\n\n" + sec
}

// execSummary returns the Executive Summary section's text (or the first
// paragraph).
func execSummary(report string) string {
	lines := strings.Split(report, "\n")
	var out []string
	in := false
	for _, ln := range lines {
		t := strings.TrimSpace(ln)
		if strings.HasPrefix(t, "#") {
			if in {
				break
			}
			in = strings.Contains(strings.ToLower(t), "executive summary") || strings.Contains(t, "要約") || strings.Contains(t, "エグゼクティブサマリー")
			continue
		}
		if in && t != "" && !strings.HasPrefix(t, ">") {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		for _, ln := range lines {
			t := strings.TrimSpace(ln)
			if t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, ">") {
				out = append(out, t)
				break
			}
		}
	}
	s := strings.Join(out, " ")
	s = strings.ReplaceAll(citationMarker.ReplaceAllString(s, "\x00"), " \x00", "")
	s = strings.ReplaceAll(s, "\x00", "")
	return clip(strings.TrimSpace(s), 600)
}

// extractiveReport builds a report without the LLM: verbatim quotes from the
// sources read, clearly labelled with why (the budget that ran out, or ""
// when the model was unavailable).
func (a *writing) extractiveReport(s State, why Budget) string {
	lang := s.Language
	theme := s.Question
	if s.Plan != nil && s.Plan.Theme != "" {
		theme = s.Plan.Theme
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", strings.SplitN(theme, "\n", 2)[0])
	b.WriteString(extractiveHeader(lang, why))
	var refs quoteRefs
	srcs := retrieved(s.Sources)
	b.WriteString("## Executive Summary\n\n")
	fmt.Fprintf(&b, label(lang, "%d sources were read for: %s\n\n", "「%[2]s」について%[1]d件の情報源を読みました。\n\n"), len(srcs), strings.SplitN(s.Question, "\n", 2)[0])
	b.WriteString("## Key Findings\n\n")
	n := 0
	for _, f := range s.Findings {
		if f.Verified && n < 5 {
			fmt.Fprintf(&b, "- “%s” %s\n", f.Quote, refs.cite(f.Quote, f.Title, f.URL))
			n++
		}
	}
	if n == 0 {
		b.WriteString(label(lang, "- No verified findings.\n", "- 検証済みの知見はありません。\n"))
	}
	b.WriteString("\n## Detailed Analysis\n\n")
	for _, src := range srcs[:min(len(srcs), 8)] {
		quotes := excerptQuotes(clip(src.Text, a.opts.ExcerptChars))
		if len(quotes) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n", src.Title)
		for _, q := range quotes {
			fmt.Fprintf(&b, "> %s %s\n>\n", q, refs.cite(q, src.Title, src.URL))
		}
		b.WriteString("\n")
	}
	b.WriteString("## References\n\n")
	for i, r := range refs {
		fmt.Fprintf(&b, "[^%d]: \"%s\" — %s, %s\n", i+1, r.quote, r.title, r.url)
	}
	return b.String()
}

// quoteRefs are the footnotes of an extractive report, in order.
type quoteRefs []struct{ quote, title, url string }

// cite adds a footnote and returns its marker.
func (r *quoteRefs) cite(quote, title, url string) string {
	*r = append(*r, struct{ quote, title, url string }{quote, title, url})
	return fmt.Sprintf("[^%d]", len(*r))
}

// excerptQuotes are the first two sentences of text of 20 to 300 runes.
func excerptQuotes(text string) []string {
	var quotes []string
	for _, sn := range sentences(text) {
		if l := len([]rune(sn)); l >= 20 && l <= 300 {
			quotes = append(quotes, sn)
			if len(quotes) == 2 {
				break
			}
		}
	}
	return quotes
}

// recentFirst orders the knowledge store with this turn's findings first,
// so a follow-up's new evidence is not crowded out by earlier turns'.
func recentFirst(s State) []Finding {
	out := make([]Finding, 0, len(s.Findings))
	for _, f := range s.Findings {
		if f.Turn == s.Turn {
			out = append(out, f)
		}
	}
	for _, f := range s.Findings {
		if f.Turn != s.Turn {
			out = append(out, f)
		}
	}
	return out
}
