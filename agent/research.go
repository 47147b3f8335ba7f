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

func (a *Agent) buildResearcher(opts graph.Options) (*graph.Graph[rState], error) {
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
func (a *Agent) researchOut(s rState) []graph.Write {
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
func (a *Agent) rSelect(ctx context.Context, s rState) ([]graph.Write, error) {
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
		qs := dedupQueries(t.Subtask.Queries, prev, a.opts.MaxQueries)
		if len(qs) == 0 {
			qs = dedupQueries([]string{t.Subtask.Title}, prev, 1)
		}
		if len(ext) == 0 {
			return append([]graph.Write{rs.actions.Set([]action{{Kind: actSearch, Queries: qs}})}, extra...), nil
		}
		planned = qs
	}
	if a.coder == nil && a.search != nil && len(ext) == 0 {
		// the reflection that asked for this try named its searches, as the
		// planner named the first try's; only coding needs the select step
		if qs := dedupQueries(s.NextQueries, prev, a.opts.MaxQueries); len(qs) > 0 {
			return append([]graph.Write{rs.actions.Set([]action{{Kind: actSearch, Queries: qs}})}, extra...), nil
		}
	}
	c := a.caller(t.node(rSelect))
	links := unread(s)
	var know []string
	for _, f := range s.Findings {
		if f.Verified || f.Kind == FindingComputed {
			know = append(know, clip(f.Claim, 200))
		}
	}
	p, err := prompts.Render(prompts.Select, prompts.SelectData{
		Question: t.Question, Language: t.Language, Today: today(a.now()), Subtask: t.Subtask.Title,
		Try: s.Try + 1, MaxTries: t.MaxTries, Advice: s.Advice, PreviousQueries: prev, Knowledge: know,
		Links: links, AllowVisit: len(links) > 0 && a.fetch != nil, AllowCoding: a.coder != nil, MaxQueries: a.opts.MaxQueries,
		NoSearch: a.search == nil, Planned: planned, Sources: selectTools(ext), Strategy: strategyOf(t.Member).hint,
	})
	if err != nil {
		return nil, err
	}
	var tools []llm.Tool
	add := func(tl llm.Tool, err error) {
		if err == nil {
			tools = append(tools, tl)
		}
	}
	if a.search != nil {
		add(llm.NewTool[searchArgs](string(actSearch), "Run new web search queries."))
	}
	if len(links) > 0 && a.fetch != nil {
		add(llm.NewTool[visitArgs](string(actVisit), "Read pages seen in search results."))
	}
	if a.coder != nil {
		add(llm.NewTool[codingArgs](string(actCoding), "Compute exactly with a short JavaScript program (console.log the result)."))
	}
	if len(know) > 0 {
		add(llm.NewTool[answerArgs](string(actAnswer), "Enough is known to answer the subtask."))
	}
	tools = append(tools, llmTools(ext)...)
	cctx, cancel := a.withDeadline(ctx, t.Deadline)
	defer cancel()
	resp, err := c.chat(cctx, llm.Request{Role: llm.RoleResearcher, Messages: messages(p), Tools: tools, ToolChoice: llm.ToolChoiceRequired})
	var acts []action
	if err == nil {
		acts = a.parseActions(resp.ToolCalls, prev, links)
		acts = append(acts, toolActions(resp.ToolCalls, ext, a.opts.MaxQueries)...)
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if len(acts) == 0 && err == nil && len(resp.ToolCalls) > 0 {
		// the model chose answer (or only repeated queries)
		return append([]graph.Write{rs.actions.Set(nil), rs.usage.Set(c.usage())}, extra...), nil
	}
	if len(acts) == 0 {
		// fallback: the planned queries on a first try; else the
		// reflection's queries, or a rewrite of the subtask
		qs := planned
		if s.Try > 0 {
			qs = dedupQueries(append(append([]string(nil), s.NextQueries...), t.Subtask.Title+" "+s.Advice), prev, a.opts.MaxQueries)
		}
		if len(qs) > 0 && a.search != nil {
			acts = []action{{Kind: actSearch, Queries: qs}}
		}
	}
	return append([]graph.Write{rs.actions.Set(acts), rs.usage.Set(c.usage())}, extra...), nil
}

func (a *Agent) parseActions(calls []llm.ToolCall, prev []string, links []prompts.Link) []action {
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
func (a *Agent) rExecute(ctx context.Context, s rState) ([]graph.Write, error) {
	rs, t := a.rsc, s.Task
	if len(s.Actions) == 0 {
		return nil, nil
	}
	ctx2, cancel := a.withDeadline(ctx, t.Deadline)
	defer cancel()
	c := a.caller(t.node(rExecute))
	ex := &execution{a: a, s: s, c: c, claimed: map[string]bool{}, sources: map[string]Source{}}
	ex.threadID = "-"
	if ti, ok := graph.CurrentTask(ctx); ok {
		ex.threadID = ti.ThreadID
	}
	for _, u := range t.Known {
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
	// pages already read would fill the top results: ask for as many more
	// (up to twice as many), so a query still leads to pages not yet read
	results := a.opts.ResultsPerQuery
	if k := len(ex.claimed); k > 0 {
		results = min(results+k, 2*results, search.MaxMaxResults)
	}
	var wg sync.WaitGroup
	for _, act := range s.Actions {
		switch act.Kind {
		case actSearch:
			if a.search == nil || len(act.Queries) == 0 {
				continue // (no queries: nothing to search, and no divide by zero)
			}
			per := (a.opts.MaxURLs + len(act.Queries) - 1) / len(act.Queries)
			for _, q := range act.Queries {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ex.searchAndRead(ctx2, q, results, per)
				}()
			}
		case actVisit:
			wg.Add(1)
			go func() {
				defer wg.Done()
				ex.visit(ctx2, act.URLs)
			}()
		case actCoding:
			wg.Add(1)
			go func() {
				defer wg.Done()
				ex.code(ctx2, act)
			}()
		case actTool:
			if a.tools == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ex.callTool(ctx2, act)
			}()
		}
	}
	wg.Wait()
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

type execution struct {
	a        *Agent
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
		u := normURL(r.URL)
		src := Source{URL: u, Title: r.Title, Snippet: r.Snippet, Query: q, Provider: r.Source, Published: r.Published}
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
			pg, err := a.readPage(ctx, r.URL)
			if err != nil || strings.TrimSpace(pg.Text) == "" {
				a.log.Debug("fetch failed", "url", r.URL, "err", err)
				return
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
			if c := canonicalURL(r.URL, pg); c != u {
				src.URL = c
				src = withAlias(src, u)
			}
			src.Digest = textKey(src.Text)
			out[i] = &src
		}()
	}
	wg.Wait()
	var pages []Source
	ex.mu.Lock()
	for _, p := range out {
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
	ex.mu.Unlock()
	for _, p := range pages {
		emit(ctx, Event{Kind: EventSourceRead, URL: p.URL, Title: p.Title, Query: q, Subtask: ex.s.Task.ref()})
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
	var pp []prompts.Page
	for i, p := range pages {
		pp = append(pp, prompts.Page{N: i + 1, Title: p.Title, URL: p.URL, Text: clip(p.Text, a.opts.ExcerptChars)})
	}
	var out summaryOut
	err := func() error {
		p, err := prompts.Render(prompts.Summarize, prompts.SummarizeData{Question: t.Question, Subtask: t.Subtask.Title, Query: q, Language: t.Language, Pages: pp})
		if err != nil {
			return err
		}
		return structured(ctx, ex.c, llm.RoleResearcher, p, false, &out)
	}()
	if err != nil {
		out = extractiveSummary(pages, a.opts.ExcerptChars)
	}
	// quotes are checked against the excerpt the model was shown; a
	// quote nearly right is replaced by the excerpt's exact text
	m := citation.NewMatcher()
	docs := make([]citation.Doc, len(pages))
	for i, p := range pages {
		docs[i] = citation.Doc{URL: p.URL, Text: clip(p.Text, a.opts.ExcerptChars)}
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
	var urls []string
	for _, p := range pages {
		urls = append(urls, p.URL)
	}
	for _, f := range out.Findings {
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
		fd.Claim = markClaim(fd.Claim, fd.Quote, t.Language)
		fs = append(fs, fd)
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
func (a *Agent) rAnswer(ctx context.Context, s rState) ([]graph.Write, error) {
	rs, t := a.rsc, s.Task
	ev := evidenceOf(s.Findings, 30)
	var b strings.Builder
	for _, e := range ev {
		fmt.Fprintf(&b, "- %s [E%d]\n", e.Claim, e.N)
	}
	for _, cpt := range s.Computations {
		fmt.Fprintf(&b, "- %s\n", cpt)
	}
	// nothing found: no answer (the subtask stays a gap), never a sentence
	// the writer could take for a finding
	fallback := b.String()
	stopped := s.Stopped != "" || a.exhausted(ctx, t.Deadline) != ""
	cctx, cancel := a.withDeadline(ctx, t.Deadline)
	defer cancel()

	reflecting := !stopped && (a.search != nil || a.fetch != nil || a.tools != nil)
	n := len(evidenceOf(s.Findings, 0)) + len(s.Computations)
	var v verdict
	reused := false
	if prev := s.Reflection; reflecting && prev != nil && !prev.Failed && s.Try > 0 && prev.Evidence == n {
		// this try found nothing new: the last verdict on the same evidence
		// stands, and asking again adds nothing
		reflecting, v, reused = false, *prev, true
		if anotherTry(v, len(ev), s) {
			return []graph.Write{rs.reflection.Set(&v)}, nil // another try follows; the answer can wait
		}
	}

	c := a.caller(t.node(rAnswer))
	ans := fallback
	actx, cancelAnswer := context.WithCancel(cctx)
	defer cancelAnswer()
	answered := make(chan struct{})
	// the answer is asked for while the reflection judges the evidence:
	// speculation that saves the reflection's wait when the answer stands,
	// and wastes the answer's tokens when another try replaces it
	var spec speculation
	if len(ev) == 0 && len(s.Computations) == 0 || stopped {
		close(answered)
	} else {
		p, err := prompts.Render(prompts.Answer, prompts.AnswerData{Question: t.Question, Subtask: t.Subtask.Title, Language: t.Language,
			Evidence: ev, Computations: s.Computations, Advice: s.Advice})
		if err != nil {
			return nil, err
		}
		spec.start(reflecting)
		go func() {
			defer close(answered)
			resp, err := c.chat(withSpeculative(actx, reflecting), llm.Request{Role: llm.RoleResearcher, Messages: messages(p)})
			spec.answered(resp, err)
			if txt := strings.TrimSpace(resp.Content); err == nil && txt != "" {
				ans = txt
			}
		}()
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
			<-answered
			return nil, err
		}
		v.Evidence = n
		spec.judged()
		superseded := !v.Failed && anotherTry(v, len(ev), s)
		if superseded {
			cancelAnswer() // another try follows; its answer replaces this one
		}
		w = []graph.Write{rs.reflection.Set(&v), rs.usage.Set(rc.usage())}
		<-answered
		c.settle(spec, superseded)
	}
	<-answered
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return append(w, rs.answer.Set(ans), rs.usage.Set(c.usage())), nil
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
func (a *Agent) reflect(ctx context.Context, c *caller, s rState, answer string) (verdict, error) {
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
func (a *Agent) rReflect(ctx context.Context, s rState) ([]graph.Write, error) {
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
