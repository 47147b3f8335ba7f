package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"deepresearch/agent/citation"
	"deepresearch/agent/llm"
	"deepresearch/graph"
	"deepresearch/prompts"
	"deepresearch/tools/search"
)

// Researcher subgraph nodes: select the actions (search, visit, coding,
// answer) → execute them → answer the subtask → reflect, at most MaxTries
// loops.
const (
	rSelect  = "select"
	rExecute = "execute"
	rAnswer  = "answer_subtask"
	rReflect = "reflect"
)

func (a *researching) buildResearcher(opts graph.Options) (*graph.Graph[rState], error) {
	b := graph.New(a.rsc.s)
	b.AddNode(rSelect, a.rSelect)
	b.AddNode(rExecute, a.rExecute)
	b.AddNode(rAnswer, a.rAnswer)
	b.AddNode(rReflect, a.rReflect)
	b.AddEdge(graph.Start, rSelect)
	b.AddEdge(rSelect, rExecute)
	b.AddEdge(rExecute, rAnswer)
	b.AddEdge(rAnswer, rReflect)
	b.AddConditionalEdges(rReflect, func(s rState) []graph.Route {
		if s.Done {
			return []graph.Route{graph.To(graph.End)}
		}
		return []graph.Route{graph.To(rSelect)}
	})
	return b.Compile(opts)
}

func (t researchTask) ref() *SubtaskRef {
	return &SubtaskRef{Round: t.Round, Index: t.Index, Title: t.Subtask.Title, Team: t.Team, Member: t.Member}
}

func (t researchTask) node(step string) string {
	if t.Member > 0 {
		return fmt.Sprintf("researcher[%d.%d.%d].%s", t.Round, t.Index, t.Member, step)
	}
	return fmt.Sprintf("researcher[%d.%d].%s", t.Round, t.Index, step)
}

// researchOut turns a finished researcher into the parent's writes.
func (a *researching) researchOut(s rState) []graph.Write {
	sc, t := a.sc, s.Task
	var fs []Finding
	for _, f := range s.Findings {
		if f.Verified || f.Kind == FindingComputed {
			f.Subtask, f.Round, f.Turn = t.Subtask.Title, t.Round, t.Turn
			fs = append(fs, f)
		}
	}
	read, kept := map[string]Source{}, map[string]Source{}
	for u, src := range s.Sources {
		if src.Retrieved {
			read[u] = src
		}
		if src.Retrieved || src.OffTopic != "" {
			kept[u] = src // off-topic ones count as wasted or skipped reads
		}
	}
	res := SubtaskResult{Turn: t.Turn, Round: t.Round, Index: t.Index, Title: t.Subtask.Title, Answer: s.Answer,
		Completed: s.Completed, Tries: s.Try, Gaps: s.Gaps, Findings: len(fs), Stopped: s.Stopped,
		Searches: len(s.Queries), Read: readRefs(read), Statements: answerStatements(s.Answer, localEvidence(s.Findings)), Member: t.Member}
	return []graph.Write{sc.results.Set([]SubtaskResult{res}), sc.findings.Set(fs), sc.sources.Set(kept),
		sc.queries.Set(s.Queries), sc.notes.Set(s.Notes), sc.usage.Set(s.Usage), sc.unreachable.Set(s.Unreachable)}
}

type searchArgs struct {
	Queries []string `json:"queries" jsonschema:"description=new web search queries"`
}

type visitArgs struct {
	URLs []string `json:"urls" jsonschema:"description=URLs of pages to read"`
}

type codingArgs struct {
	Task string `json:"task" jsonschema:"description=what the program computes"`
	Code string `json:"code" jsonschema:"description=JavaScript that prints the result with console.log"`
}

type answerArgs struct {
	Reason string `json:"reason"`
}

// unread lists the pages seen in results but not read, for the visit action.
func unread(s rState) []prompts.Link {
	var out []prompts.Link
	for _, src := range s.Sources {
		if !src.Retrieved && src.OffTopic == "" && !slices.Contains(s.Task.Known, src.URL) {
			out = append(out, prompts.Link{Title: src.Title, URL: src.URL})
		}
	}
	slicesSortLinks(out)
	if len(out) > 10 {
		out = out[:10]
	}
	for i := range out {
		out[i].N = i + 1
	}
	return out
}

// rSelect chooses the next actions. The first try runs the planned queries
// without asking the model (the planner already chose them); later tries ask
// the model with tool calling, offering only the actions that make sense
// (visit only with unread pages, coding only with a sandbox, answer only
// with knowledge).
func (a *researching) rSelect(ctx context.Context, s rState) ([]graph.Write, error) {
	rs, t := a.rsc, s.Task
	if s.Try == 0 {
		emit(ctx, Event{Kind: EventSubtaskStarted, Subtask: t.ref()})
	}
	if ex := a.exhausted(ctx, t.Deadline); ex != "" {
		return []graph.Write{rs.actions.Set(nil), rs.stopped.Set(ex)}, nil
	}
	if a.search == nil && a.fetch == nil && a.coder == nil && a.tools == nil {
		return []graph.Write{rs.actions.Set(nil)}, nil
	}
	prev := append(append([]string(nil), t.Queries...), s.Queries...)
	// external sources (MCP servers) this report may use; with any, the
	// model chooses among them and web search from the first try on
	ext, down := a.toolsFor(ctx, t)
	var extra []graph.Write
	if len(down) > 0 {
		extra = append(extra, rs.unreachable.Set(unreachableSet(down, t.Turn)))
	}
	var planned []string
	if s.Try == 0 {
		planned = dedupQueries(t.Subtask.Queries, prev, a.opts.MaxQueries)
		if len(planned) == 0 {
			planned = dedupQueries([]string{t.Subtask.Title}, prev, 1)
		}
	}
	if qs, ok := a.searchWithoutModel(s, prev, planned, len(ext) > 0); ok {
		return append([]graph.Write{rs.actions.Set([]action{{Kind: actSearch, Queries: qs}})}, extra...), nil
	}
	c := a.caller(t.node(rSelect))
	acts, answered, err := a.selectByModel(ctx, c, s, prev, planned, ext)
	if err != nil {
		return nil, err
	}
	if answered {
		// the model chose answer (or only repeated queries)
		return append([]graph.Write{rs.actions.Set(nil), rs.usage.Set(c.usage())}, extra...), nil
	}
	if len(acts) == 0 {
		acts = a.fallbackSearch(s, prev, planned)
	}
	return append([]graph.Write{rs.actions.Set(acts), rs.usage.Set(c.usage())}, extra...), nil
}

// searchWithoutModel returns the queries a try runs without asking the
// model, when no external source asks for a choice: the planned ones on
// the first try, and the ones the reflection named on a later try when
// there is no sandbox (only coding needs the select step).
func (a *researching) searchWithoutModel(s rState, prev, planned []string, external bool) ([]string, bool) {
	if external {
		return nil, false
	}
	if s.Try == 0 {
		return planned, true
	}
	if a.coder == nil && a.search != nil {
		if qs := dedupQueries(s.NextQueries, prev, a.opts.MaxQueries); len(qs) > 0 {
			return qs, true
		}
	}
	return nil, false
}

// selectByModel asks the model, with tool calling, for the next actions
// among those that make sense. answered reports that it chose to answer
// (or only repeated queries); a failed call chooses nothing.
func (a *researching) selectByModel(ctx context.Context, c *caller, s rState, prev, planned []string, ext []ExternalTool) (acts []action, answered bool, err error) {
	t := s.Task
	links := unread(s)
	know := knownClaims(s.Findings)
	p, err := prompts.Render(prompts.Select, prompts.SelectData{
		Question: t.Question, Language: t.Language, Today: today(a.now()), Subtask: t.Subtask.Title,
		Try: s.Try + 1, MaxTries: t.MaxTries, Advice: s.Advice, PreviousQueries: prev, Knowledge: know,
		Links: links, AllowVisit: len(links) > 0 && a.fetch != nil, AllowCoding: a.coder != nil, MaxQueries: a.opts.MaxQueries,
		NoSearch: a.search == nil, Planned: planned, Sources: selectTools(ext), Strategy: strategyOf(t.Member).hint,
	})
	if err != nil {
		return nil, false, err
	}
	tools := append(a.actionTools(len(links) > 0, len(know) > 0), llmTools(ext)...)
	cctx, cancel := a.withDeadline(ctx, t.Deadline)
	defer cancel()
	resp, err := c.chat(cctx, llm.Request{Role: llm.RoleResearcher, Messages: messages(p), Tools: tools, ToolChoice: llm.ToolChoiceRequired})
	if err != nil {
		return nil, false, ctx.Err()
	}
	acts = a.parseActions(resp.ToolCalls, prev, links)
	acts = append(acts, toolActions(resp.ToolCalls, ext, a.opts.MaxQueries)...)
	return acts, len(acts) == 0 && len(resp.ToolCalls) > 0, nil
}

// knownClaims are the claims a try may answer from: verified findings and
// computations.
func knownClaims(fs []Finding) []string {
	var know []string
	for _, f := range fs {
		if f.Verified || f.Kind == FindingComputed {
			know = append(know, clip(f.Claim, 200))
		}
	}
	return know
}

// actionTools are the built-in actions offered to the select step: search
// with a search engine, visit with unread pages and a fetcher, coding with
// a sandbox, answer with knowledge.
func (a *researching) actionTools(unreadPages, knowledge bool) []llm.Tool {
	var tools []llm.Tool
	add := func(tl llm.Tool, err error) {
		if err == nil {
			tools = append(tools, tl)
		}
	}
	if a.search != nil {
		add(llm.NewTool[searchArgs](string(actSearch), "Run new web search queries."))
	}
	if unreadPages && a.fetch != nil {
		add(llm.NewTool[visitArgs](string(actVisit), "Read pages seen in search results."))
	}
	if a.coder != nil {
		add(llm.NewTool[codingArgs](string(actCoding), "Compute exactly with a short JavaScript program (console.log the result)."))
	}
	if knowledge {
		add(llm.NewTool[answerArgs](string(actAnswer), "Enough is known to answer the subtask."))
	}
	return tools
}

// fallbackSearch is the search a try runs when the model chose nothing:
// the planned queries on a first try; else the reflection's queries, or a
// rewrite of the subtask.
func (a *researching) fallbackSearch(s rState, prev, planned []string) []action {
	qs := planned
	if s.Try > 0 {
		qs = dedupQueries(append(append([]string(nil), s.NextQueries...), s.Task.Subtask.Title+" "+s.Advice), prev, a.opts.MaxQueries)
	}
	if len(qs) > 0 && a.search != nil {
		return []action{{Kind: actSearch, Queries: qs}}
	}
	return nil
}

func (a *researching) parseActions(calls []llm.ToolCall, prev []string, links []prompts.Link) []action {
	var acts []action
	var queries []string
	for _, tc := range calls {
		switch actionKind(tc.Name) {
		case actSearch:
			var args searchArgs
			if tc.Decode(&args) == nil {
				queries = append(queries, args.Queries...)
			}
		case actVisit:
			var args visitArgs
			if tc.Decode(&args) == nil {
				var urls []string
				for _, u := range args.URLs {
					u = strings.TrimSpace(u)
					if u != "" && len(urls) < a.opts.MaxURLs {
						urls = append(urls, u)
					}
				}
				if len(urls) > 0 {
					acts = append(acts, action{Kind: actVisit, URLs: urls})
				}
			}
		case actCoding:
			var args codingArgs
			if tc.Decode(&args) == nil && strings.TrimSpace(args.Code) != "" {
				acts = append(acts, action{Kind: actCoding, Task: args.Task, Code: args.Code})
			}
		}
	}
	if qs := dedupQueries(queries, prev, a.opts.MaxQueries); len(qs) > 0 {
		acts = append([]action{{Kind: actSearch, Queries: qs}}, acts...)
	}
	return acts
}

// rExecute runs the chosen actions in parallel: each search query is a
// pipeline of search → read the new pages → summarise (a research note).
func (a *researching) rExecute(ctx context.Context, s rState) ([]graph.Write, error) {
	rs, t := a.rsc, s.Task
	if len(s.Actions) == 0 {
		return nil, nil
	}
	ctx2, cancel := a.withDeadline(ctx, t.Deadline)
	defer cancel()
	c := a.caller(t.node(rExecute))
	ex := a.newExecution(ctx, s, c)
	// pages already read would fill the top results: ask for as many more
	// (up to twice as many), so a query still leads to pages not yet read
	results := a.opts.ResultsPerQuery
	if k := len(ex.claimed); k > 0 {
		results = min(results+k, 2*results, search.MaxMaxResults)
	}
	ex.run(ctx2, s.Actions, results)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	w := []graph.Write{rs.findings.Set(ex.findings), rs.sources.Set(ex.sources), rs.queries.Set(ex.queries),
		rs.computations.Set(ex.computations), rs.notes.Set(ex.notes), rs.usage.Set(c.usage())}
	if len(ex.unreachable) > 0 {
		w = append(w, rs.unreachable.Set(unreachableSet(ex.unreachable, t.Turn)))
	}
	if errors.Is(ctx2.Err(), context.DeadlineExceeded) {
		w = append(w, rs.stopped.Set(BudgetTime))
	}
	return w, nil
}

// newExecution starts a try's execution with the pages already known or
// read (under any of their URLs) claimed.
func (a *researching) newExecution(ctx context.Context, s rState, c *caller) *execution {
	ex := &execution{a: a, s: s, c: c, claimed: map[string]bool{}, sources: map[string]Source{}}
	ex.threadID = "-"
	if ti, ok := graph.CurrentTask(ctx); ok {
		ex.threadID = ti.ThreadID
	}
	for _, u := range s.Task.Known {
		ex.claimed[u] = true
	}
	for u, src := range s.Sources {
		if src.Retrieved {
			ex.claimed[u] = true
			for _, al := range src.Aliases {
				ex.claimed[al] = true
			}
		}
	}
	return ex
}

// run runs the actions in parallel, each search query on its own (asking
// for results results and reading its share of MaxURLs), and waits.
func (ex *execution) run(ctx context.Context, acts []action, results int) {
	a := ex.a
	var wg sync.WaitGroup
	goRun := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	for _, act := range acts {
		switch act.Kind {
		case actSearch:
			if a.search == nil || len(act.Queries) == 0 {
				continue // (no queries: nothing to search, and no divide by zero)
			}
			per := (a.opts.MaxURLs + len(act.Queries) - 1) / len(act.Queries)
			for _, q := range act.Queries {
				goRun(func() { ex.searchAndRead(ctx, q, results, per) })
			}
		case actVisit:
			goRun(func() { ex.visit(ctx, act.URLs) })
		case actCoding:
			goRun(func() { ex.code(ctx, act) })
		case actTool:
			if a.tools != nil {
				goRun(func() { ex.callTool(ctx, act) })
			}
		}
	}
	wg.Wait()
}

type execution struct {
	a        *researching
	s        rState
	c        *caller
	threadID string

	mu           sync.Mutex
	claimed      map[string]bool
	sources      map[string]Source
	findings     []Finding
	queries      []string
	computations []string
	notes        int
	unreachable  []string // external sources that could not be reached
}

func (ex *execution) searchAndRead(ctx context.Context, q string, n, per int) {
	a, t := ex.a, ex.s.Task
	results, err := ex.search(ctx, search.Query{Text: q, MaxResults: n})
	ex.mu.Lock()
	ex.queries = append(ex.queries, q)
	ex.mu.Unlock()
	if err != nil {
		a.log.Warn("search failed", "query", q, "err", err)
		emit(ctx, Event{Kind: EventWarning, Query: q, Message: "search failed: " + err.Error()})
		return
	}
	emit(ctx, Event{Kind: EventSearched, Query: q, Results: len(results), Subtask: t.ref()})
	// the best matches first; plainly off-topic results are not read
	results, off := rankResults(results, ex.topic(q), t.Language)
	var pick []search.Result
	ex.mu.Lock()
	for _, r := range results {
		u := normURL(r.URL)
		if u == "" {
			continue
		}
		if _, seen := ex.sources[u]; !seen && !ex.claimed[u] {
			src := Source{URL: u, Title: r.Title, Snippet: r.Snippet, Query: q, Provider: r.Source, Published: r.Published}
			if off[r.URL] {
				src.OffTopic = OffTopicSkipped
			}
			ex.sources[u] = src
			emit(ctx, Event{Kind: EventSourceFound, URL: u, Title: r.Title, Query: q})
		}
		if off[r.URL] {
			continue
		}
		if !ex.claimed[u] && len(pick) < per && teamClaim(ctx, t, u) {
			ex.claimed[u] = true
			pick = append(pick, r)
		}
	}
	ex.mu.Unlock()
	pages := ex.read(ctx, pick, q)
	ex.summarize(ctx, q, pages)
}

// read fetches the picked results in parallel; results that carry their full
// text (internal documents, Tavily raw content) are read without fetching.
func (ex *execution) read(ctx context.Context, rs []search.Result, q string) []Source {
	a := ex.a
	out := make([]*Source, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		src := Source{URL: normURL(r.URL), Title: r.Title, Snippet: r.Snippet, Query: q, Provider: r.Source, Published: r.Published}
		if strings.TrimSpace(r.Content) != "" {
			src.Text, src.Retrieved = clip(r.Content, a.opts.PageChars), true
			out[i] = &src
			continue
		}
		if a.fetch == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = a.fetchSource(ctx, r.URL, src)
		}()
	}
	wg.Wait()
	pages := ex.keepRead(out, q)
	for _, p := range pages {
		emit(ctx, Event{Kind: EventSourceRead, URL: p.URL, Title: p.Title, Query: q, Subtask: ex.s.Task.ref()})
	}
	return pages
}

// fetchSource reads the page at raw into src (nil when it cannot be read
// or has no text): its text, title and final URL; a page known by another
// canonical URL is keyed by that one, with raw's as an alias.
func (a *researching) fetchSource(ctx context.Context, raw string, src Source) *Source {
	u := src.URL
	pg, err := a.readPage(ctx, raw)
	if err != nil || strings.TrimSpace(pg.Text) == "" {
		a.log.Debug("fetch failed", "url", raw, "err", err)
		return nil
	}
	src.Text, src.Retrieved = clip(pg.Text, a.opts.PageChars), true
	if pg.Title != "" {
		src.Title = pg.Title
	}
	if pg.FinalURL != "" && normURL(pg.FinalURL) != u {
		src.FinalURL = normURL(pg.FinalURL)
	}
	// one page, one source: keyed by its canonical URL, the
	// URL it was reached by an alias
	if c := canonicalURL(raw, pg); c != u {
		src.URL = c
		src = withAlias(src, u)
	}
	src.Digest = textKey(src.Text)
	return &src
}

// keepRead records the pages read (nil: not read) and returns the new
// ones to summarise: not known from an earlier turn, not off the topic of
// q, and not the same page read by another URL.
func (ex *execution) keepRead(read []*Source, q string) []Source {
	var pages []Source
	ex.mu.Lock()
	defer ex.mu.Unlock()
	for _, p := range read {
		if p == nil {
			continue
		}
		for _, al := range p.Aliases {
			if cur, ok := ex.sources[al]; ok && !cur.Retrieved {
				delete(ex.sources, al) // seen in results under the alias
			}
		}
		ex.claimed[p.URL] = true
		for _, al := range p.Aliases {
			ex.claimed[al] = true
		}
		if slices.Contains(ex.s.Task.Known, p.URL) {
			continue // read in an earlier turn: its findings are known
		}
		if offTopicPage(p.Title, p.Text, ex.topic(q)) {
			// nothing of the question in it: no evidence from it
			ex.sources[p.URL] = Source{URL: p.URL, Title: p.Title, Query: q, Provider: p.Provider, OffTopic: OffTopicRead}
			continue
		}
		if k, cur, ok := ex.sameSource(*p); ok {
			// read already (by another URL): one source, summarised once
			ex.sources[k] = withAlias(cur, append([]string{p.URL}, p.Aliases...)...)
			continue
		}
		ex.sources[p.URL] = *p
		pages = append(pages, *p)
	}
	return pages
}

// topic is what the pages a query leads to must concern: the question,
// the subtask and the query.
func (ex *execution) topic(q string) map[string]bool {
	t := ex.s.Task
	return topicTerms(t.Question, t.Subtask.Title, strings.TrimPrefix(q, "visit: "))
}

// sameSource finds the source already read that p is: the same canonical
// URL, an alias of it or the same text.
// ex.mu is held.
func (ex *execution) sameSource(p Source) (string, Source, bool) {
	for _, m := range []map[string]Source{ex.sources, ex.s.Sources} {
		for k, src := range m {
			if !src.Retrieved {
				continue
			}
			if k == p.URL || slices.Contains(src.Aliases, p.URL) || p.Digest != "" && src.Digest == p.Digest {
				if cur, ok := ex.sources[k]; ok {
					return k, cur, true
				}
				return k, src, true
			}
		}
	}
	return "", Source{}, false
}

func (ex *execution) visit(ctx context.Context, urls []string) {
	var rs []search.Result
	ex.mu.Lock()
	for _, u := range urls {
		n := normURL(u)
		if ex.claimed[n] {
			continue
		}
		ex.claimed[n] = true
		title := ""
		if src, ok := ex.s.Sources[n]; ok {
			title = src.Title
		}
		rs = append(rs, search.Result{URL: u, Title: title})
	}
	ex.mu.Unlock()
	q := "visit: " + ex.s.Task.Subtask.Title
	ex.summarize(ctx, q, ex.read(ctx, rs, q))
}

func (ex *execution) code(ctx context.Context, act action) {
	res, err := ex.a.coder.Run(ctx, act.Code)
	out := strings.TrimSpace(res.Output)
	if res.Value != "" {
		out = strings.TrimSpace(out + "\n" + res.Value)
	}
	task := act.Task
	if task == "" {
		task = "computation"
	}
	line := task + " → " + clip(out, 500)
	if err != nil {
		line = task + " → error: " + err.Error()
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.computations = append(ex.computations, line)
	if err == nil && out != "" {
		ex.findings = append(ex.findings, Finding{ID: hashID("code", act.Code), Claim: line, Kind: FindingComputed})
	}
}

type summaryOut struct {
	Summary  string       `json:"summary"`
	Findings []findingOut `json:"findings"`
}

type findingOut struct {
	Claim string `json:"claim"`
	Quote string `json:"quote"`
	URL   string `json:"url"`
}

// summarize turns the pages one query led to into a research note and
// findings whose quotes are checked against the pages at once.
func (ex *execution) summarize(ctx context.Context, q string, pages []Source) {
	a, t := ex.a, ex.s.Task
	if len(pages) == 0 {
		return
	}
	out := ex.summaryOf(ctx, q, pages)
	fs := checkedFindings(out.Findings, pages, a.opts.ExcerptChars, t.Language)
	var urls []string
	for _, p := range pages {
		urls = append(urls, p.URL)
	}
	step := t.Round*100 + t.Index*10 + ex.s.Try
	id := hashID(ex.threadID, fmt.Sprint(t.Turn), fmt.Sprint(step), q)
	if t.Member > 0 {
		id = hashID(id, fmt.Sprint(t.Member))
	}
	note := Note{ID: id, ThreadID: ex.threadID, Turn: t.Turn, Step: step,
		Subtask: t.Subtask.Title, Query: q, Summary: strings.TrimSpace(out.Summary), Sources: urls, CreatedAt: a.now()}
	switch {
	case fromWorkspace(pages):
		// what the team wrote in Slack is read for this run only: a note
		// would keep (a summary of) it beyond the run
		a.log.Debug("research note of workspace messages not saved", "query", q)
	default:
		if err := a.notes.SaveNote(ctx, note); err != nil {
			a.log.Warn("save research note", "err", err)
		}
	}
	emit(ctx, Event{Kind: EventNoteSaved, Query: q, Message: clip(note.Summary, 300), Subtask: t.ref()})
	ex.mu.Lock()
	ex.findings = append(ex.findings, fs...)
	ex.notes++
	ex.mu.Unlock()
}

// summaryOf has the model summarise the pages' excerpts into a note and
// findings; without the model, the summary is extractive.
func (ex *execution) summaryOf(ctx context.Context, q string, pages []Source) summaryOut {
	a, t := ex.a, ex.s.Task
	var pp []prompts.Page
	for i, p := range pages {
		pp = append(pp, prompts.Page{N: i + 1, Title: p.Title, URL: p.URL, Text: clip(p.Text, a.opts.ExcerptChars)})
	}
	var out summaryOut
	p, err := prompts.Render(prompts.Summarize, prompts.SummarizeData{Question: t.Question, Subtask: t.Subtask.Title, Query: q, Language: t.Language, Pages: pp})
	if err == nil {
		err = structured(ctx, ex.c, llm.RoleResearcher, p, false, &out)
	}
	if err != nil {
		return extractiveSummary(pages, a.opts.ExcerptChars)
	}
	return out
}

// checkedFindings are the model's findings with their quotes checked
// against the excerpts of pages the model was shown: a quote found makes
// the finding verified, on the page it names or else any that has it, and
// a quote nearly right is replaced by the excerpt's exact text.
func checkedFindings(out []findingOut, pages []Source, excerptChars int, lang string) []Finding {
	m := citation.NewMatcher()
	docs := make([]citation.Doc, len(pages))
	for i, p := range pages {
		docs[i] = citation.Doc{URL: p.URL, Text: clip(p.Text, excerptChars)}
	}
	find := func(i int, quote string) (string, bool) {
		mt, ok := m.Find(docs[i], quote)
		if !ok {
			return "", false
		}
		if mt.Exact {
			return quote, true
		}
		return mt.Quote, true
	}
	var fs []Finding
	for _, f := range out {
		if strings.TrimSpace(f.Quote) == "" {
			continue
		}
		// the page the quote is from: the one named, else any that has it
		idx, quote := -1, ""
		for i, p := range pages {
			if q, ok := find(i, f.Quote); idx < 0 && ok && normURL(f.URL) == p.URL {
				idx, quote = i, q
			}
		}
		for i := range pages {
			if q, ok := find(i, f.Quote); idx < 0 && ok {
				idx, quote = i, q
			}
		}
		fd := Finding{ID: hashID(f.URL, f.Quote), Claim: strings.TrimSpace(f.Claim), Quote: strings.TrimSpace(f.Quote), Kind: FindingSource, URL: normURL(f.URL)}
		if idx >= 0 {
			fd.URL, fd.Title, fd.Verified, fd.Quote = pages[idx].URL, pages[idx].Title, true, strings.TrimSpace(quote)
			fd.ID = hashID(fd.URL, fd.Quote)
		}
		if fd.Claim == "" {
			fd.Claim = fd.Quote
		}
		fd.Claim = markClaim(fd.Claim, fd.Quote, lang)
		fs = append(fs, fd)
	}
	return fs
}

// extractiveSummary is the summary without the LLM: the first substantial
// sentences of each page, quoted verbatim.
func extractiveSummary(pages []Source, excerpt int) summaryOut {
	var out summaryOut
	var parts []string
	for _, p := range pages {
		n := 0
		for _, sn := range sentences(clip(p.Text, excerpt)) {
			if len([]rune(sn)) < 20 || len([]rune(sn)) > 300 {
				continue
			}
			out.Findings = append(out.Findings, findingOut{Claim: sn, Quote: sn, URL: p.URL})
			if n == 0 {
				parts = append(parts, sn)
			}
			if n++; n == 2 {
				break
			}
		}
	}
	out.Summary = strings.Join(parts, " ")
	return out
}

func evidenceOf(fs []Finding, limit int) []prompts.Evidence {
	var ev []prompts.Evidence
	for _, f := range fs {
		if !f.Verified {
			continue
		}
		ev = append(ev, prompts.Evidence{N: len(ev) + 1, Claim: f.Claim, Quote: f.Quote, Title: f.Title, URL: f.URL})
		if limit > 0 && len(ev) == limit {
			break
		}
	}
	return ev
}

// rAnswer writes the subtask answer from the evidence and, at
// the same time, has the reflection judge that evidence: the two calls do
// not depend on each other. When the reflection asks for another try, an
// answer still under way is cancelled (the next try writes a new one).
func (a *researching) rAnswer(ctx context.Context, s rState) ([]graph.Write, error) {
	rs, t := a.rsc, s.Task
	ev := evidenceOf(s.Findings, 30)
	// nothing found: no answer (the subtask stays a gap), never a sentence
	// the writer could take for a finding
	fallback := evidenceList(ev, s.Computations)
	stopped := s.Stopped != "" || a.exhausted(ctx, t.Deadline) != ""
	cctx, cancel := a.withDeadline(ctx, t.Deadline)
	defer cancel()

	reflecting := !stopped && a.canResearch()
	n := len(evidenceOf(s.Findings, 0)) + len(s.Computations)
	var v verdict
	reused := false
	if prev := s.Reflection; reflecting && sameEvidence(prev, s.Try, n) {
		// this try found nothing new: the last verdict on the same evidence
		// stands, and asking again adds nothing
		reflecting, v, reused = false, *prev, true
		if anotherTry(v, len(ev), s) {
			return []graph.Write{rs.reflection.Set(&v)}, nil // another try follows; the answer can wait
		}
	}

	c := a.caller(t.node(rAnswer))
	actx, cancelAnswer := context.WithCancel(cctx)
	defer cancelAnswer()
	// the answer is asked for while the reflection judges the evidence:
	// speculation that saves the reflection's wait when the answer stands,
	// and wastes the answer's tokens when another try replaces it
	var spec speculation
	ans := &pendingAnswer{text: fallback, done: make(chan struct{})}
	if len(ev)+len(s.Computations) == 0 || stopped {
		close(ans.done)
	} else if err := a.startAnswer(actx, c, s, ev, reflecting, &spec, ans); err != nil {
		return nil, err
	}
	w := []graph.Write{rs.reflection.Set(nil)}
	if reused {
		w = []graph.Write{rs.reflection.Set(&v)}
	}
	if reflecting {
		rc := a.caller(t.node(rReflect))
		var err error
		v, err = a.reflect(cctx, rc, s, fallback)
		if err != nil {
			cancelAnswer()
			<-ans.done
			return nil, err
		}
		v.Evidence = n
		spec.judged()
		superseded := !v.Failed && anotherTry(v, len(ev), s)
		if superseded {
			cancelAnswer() // another try follows; its answer replaces this one
		}
		w = []graph.Write{rs.reflection.Set(&v), rs.usage.Set(rc.usage())}
		<-ans.done
		c.settle(spec, superseded)
	}
	<-ans.done
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return append(w, rs.answer.Set(ans.text), rs.usage.Set(c.usage())), nil
}

// canResearch reports whether the agent has a way to find more: a search
// engine, a fetcher or external tools.
func (a *researching) canResearch() bool {
	return a.search != nil || a.fetch != nil || a.tools != nil
}

// sameEvidence reports whether prev, a verdict of an earlier try, judged
// the n items of evidence this try has: nothing new was found.
func sameEvidence(prev *verdict, try, n int) bool {
	return prev != nil && !prev.Failed && try > 0 && prev.Evidence == n
}

// evidenceList is the evidence and computations as a list, the answer
// when the model gives none.
func evidenceList(ev []prompts.Evidence, computations []string) string {
	var b strings.Builder
	for _, e := range ev {
		fmt.Fprintf(&b, "- %s [E%d]\n", e.Claim, e.N)
	}
	for _, cpt := range computations {
		fmt.Fprintf(&b, "- %s\n", cpt)
	}
	return b.String()
}

// pendingAnswer is a subtask answer being written: text is final once
// done is closed.
type pendingAnswer struct {
	text string // the model's answer, else what it started as
	done chan struct{}
}

// startAnswer has the model write the subtask answer from ev in the
// background (speculatively while the reflection judges, when reflecting).
func (a *researching) startAnswer(ctx context.Context, c *caller, s rState, ev []prompts.Evidence, reflecting bool, spec *speculation, ans *pendingAnswer) error {
	t := s.Task
	p, err := prompts.Render(prompts.Answer, prompts.AnswerData{Question: t.Question, Subtask: t.Subtask.Title, Language: t.Language,
		Evidence: ev, Computations: s.Computations, Advice: s.Advice})
	if err != nil {
		return err
	}
	spec.start(reflecting)
	go func() {
		defer close(ans.done)
		resp, err := c.chat(withSpeculative(ctx, reflecting), llm.Request{Role: llm.RoleResearcher, Messages: messages(p)})
		spec.answered(resp, err)
		if txt := strings.TrimSpace(resp.Content); err == nil && txt != "" {
			ans.text = txt
		}
	}()
	return nil
}

// anotherTry reports whether the subtask gets another try after verdict v
// on evidence items: the reflection did not find it complete on some
// evidence, and tries are left.
func anotherTry(v verdict, evidence int, s rState) bool {
	if v.Out.IsCompleted && evidence > 0 {
		return false
	}
	return s.Try+1 < s.Task.MaxTries
}

type reflectOut struct {
	IsCompleted bool     `json:"is_completed"`
	Advice      string   `json:"advice"`
	Gaps        []string `json:"gaps"`
	NextQueries []string `json:"next_queries"`
}

// verdict is a reflection made by rAnswer for rReflect to act on.
type verdict struct {
	Out      reflectOut `json:"out"`
	Failed   bool       `json:"failed,omitempty"`   // the model gave no reflection
	Evidence int        `json:"evidence,omitempty"` // verified findings and computations it judged
}

// reflect asks the model whether the evidence answers the subtask. A
// failed call is a verdict too (Failed); only a cancelled run is an error.
func (a *researching) reflect(ctx context.Context, c *caller, s rState, answer string) (verdict, error) {
	t := s.Task
	src := 0
	for _, x := range s.Sources {
		if x.Retrieved {
			src++
		}
	}
	p, err := prompts.Render(prompts.Reflect, prompts.ReflectData{Question: t.Question, Subtask: t.Subtask.Title, Language: t.Language,
		Answer: answer, Try: s.Try + 1, MaxTries: t.MaxTries, Sources: src,
		PreviousQueries: append(append([]string(nil), t.Queries...), s.Queries...)})
	if err != nil {
		return verdict{}, err
	}
	var out reflectOut
	if err := structured(ctx, c, llm.RoleResearcher, p, false, &out); err != nil {
		if ctx.Err() != nil {
			return verdict{}, ctx.Err()
		}
		return verdict{Failed: true}, nil
	}
	return verdict{Out: out}, nil
}

// rReflect acts on the reflection and decides whether to try again.
func (a *researching) rReflect(ctx context.Context, s rState) ([]graph.Write, error) {
	rs, t := a.rsc, s.Task
	try := s.Try + 1
	verified := len(evidenceOf(s.Findings, 0))
	w := []graph.Write{rs.try.Set(try)}
	finish := func(done, completed bool, extra ...graph.Write) ([]graph.Write, error) {
		w = append(w, rs.done.Set(done), rs.completed.Set(completed))
		w = append(w, extra...)
		if done {
			ref := t.ref()
			ref.Completed, ref.Findings, ref.Tries = completed, verified, try
			emit(ctx, Event{Kind: EventSubtaskFinished, Subtask: ref})
		}
		return w, nil
	}
	stopped := s.Stopped
	if stopped == "" {
		stopped = a.exhausted(ctx, t.Deadline)
	}
	if stopped != "" {
		return finish(true, false, rs.stopped.Set(stopped), rs.gaps.Set([]string{t.Subtask.Title}))
	}
	if a.search == nil && a.fetch == nil && a.tools == nil {
		return finish(true, verified > 0)
	}
	v := s.Reflection
	if v == nil {
		// a checkpoint from before rAnswer reflected: reflect on the answer
		c := a.caller(t.node(rReflect))
		cctx, cancel := a.withDeadline(ctx, t.Deadline)
		defer cancel()
		got, err := a.reflect(cctx, c, s, s.Answer)
		if err != nil {
			return nil, err
		}
		v = &got
		w = append(w, rs.usage.Set(c.usage()))
	}
	if v.Failed {
		// without a reflection, stop here: done if anything was found
		return finish(true, verified > 0)
	}
	out := v.Out
	completed := out.IsCompleted && verified > 0
	done := completed || try >= t.MaxTries
	return finish(done, completed, rs.advice.Set(strings.TrimSpace(out.Advice)), rs.gaps.Set(out.Gaps),
		rs.nextQueries.Set(out.NextQueries))
}
