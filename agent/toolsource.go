package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"deepresearch/agent/llm"
	"deepresearch/prompts"
)

// Audience is where a run's report is seen: the channel it is posted in,
// and whether nobody but the requester sees it (a direct message with the
// bot, the assistant pane, the command line, an MCP client). A source
// whose results may not appear there is never used for the run.
//
// Team and Requester decide which of the team's past reports the run may
// use (PastReports): those posted in the same channel of the same team, or,
// for a private answer, the same requester's private answers.
type Audience struct {
	Channel   string `json:"channel,omitempty"`
	Private   bool   `json:"private,omitempty"`
	Team      string `json:"team,omitempty"`
	Requester string `json:"requester,omitempty"`
}

// ExternalTool is a tool of an external source (an MCP server) offered to
// the researcher's select step next to web search.
type ExternalTool struct {
	// Name is the function name the model calls (unique across sources,
	// never one of the built-in actions).
	Name string
	// Source names the server, for the report and the logs.
	Source      string
	Description string
	// Schema is the JSON schema of the arguments as the source published
	// it (nil: no arguments).
	Schema json.RawMessage
}

// ToolResult is one document a tool call returned: read like a page
// (Text is what the citation check finds quotes in) and cited by URL.
type ToolResult struct {
	URL   string
	Title string
	Text  string
}

// ErrSourceUnreachable marks a ToolSource error that means the source
// itself could not be reached (down, crashed, timed out), as opposed to a
// tool that answered with an error; the report names such sources.
var ErrSourceUnreachable = errors.New("agent: source unreachable")

// ToolSource offers external tools as research sources.
// tools/mcpsource implements it over MCP servers.
type ToolSource interface {
	// Tools lists the tools a report seen by aud may use, and names the
	// sources it would have offered that could not be reached.
	Tools(ctx context.Context, aud Audience) (tools []ExternalTool, unreachable []string)
	// Call runs a tool for a run (run keys the per-run call limit) and
	// returns the documents it gave. The source checks aud again: a tool
	// whose results may not appear there is refused.
	Call(ctx context.Context, run string, aud Audience, name string, args json.RawMessage) ([]ToolResult, error)
}

// toolsFor lists the external tools a researcher may offer the model and
// records the sources that could not be reached.
func (a *researching) toolsFor(ctx context.Context, t researchTask) ([]ExternalTool, []string) {
	if a.tools == nil {
		return nil, nil
	}
	var aud Audience // a task without an audience (an older checkpoint): a channel report
	if t.Audience != nil {
		aud = *t.Audience
	}
	ctx, cancel := a.withDeadline(ctx, t.Deadline)
	defer cancel()
	tools, down := a.tools.Tools(ctx, aud)
	builtin := []actionKind{actSearch, actVisit, actCoding, actAnswer}
	tools = slices.DeleteFunc(tools, func(x ExternalTool) bool { return slices.Contains(builtin, actionKind(x.Name)) })
	return tools, down
}

// audienceOf is the audience a request's report has. A request that says
// nothing is treated as a channel report: only sources whose results may
// appear anywhere are used.
func audienceOf(r Request) *Audience {
	aud := Audience{}
	if r.Audience != nil {
		aud = *r.Audience
	}
	if aud.Requester == "" {
		aud.Requester = r.Requester
	}
	return &aud
}

// llmTools turns external tools into the model's tool definitions, their
// schemas as the sources published them (a schema the client cannot
// represent leaves the tool without declared parameters).
func llmTools(ts []ExternalTool) []llm.Tool {
	out := make([]llm.Tool, 0, len(ts))
	for _, t := range ts {
		tl := llm.Tool{Name: t.Name, Description: clip(t.Description, 1000)}
		if len(t.Schema) > 0 {
			var m map[string]any
			if json.Unmarshal(t.Schema, &m) == nil {
				tl.Parameters = schemaOf(m, 0)
				if len(tl.Parameters.Type) == 0 {
					tl.Parameters.Type = []string{"object"} // function parameters are an object
				}
			}
		}
		out = append(out, tl)
	}
	return out
}

// schemaOf converts a JSON schema (decoded) to llm.Schema, keeping the
// keywords it has.
func schemaOf(m map[string]any, depth int) *llm.Schema {
	if depth > 8 {
		return &llm.Schema{}
	}
	s := &llm.Schema{}
	switch t := m["type"].(type) {
	case string:
		s.Type = []string{t}
	case []any:
		s.Type = stringsOf(t)
	}
	s.Description, _ = m["description"].(string)
	s.Format, _ = m["format"].(string)
	s.Pattern, _ = m["pattern"].(string)
	s.Ref, _ = m["$ref"].(string)
	if e, ok := m["enum"].([]any); ok {
		s.Enum = e
	}
	s.Minimum, s.Maximum = numberAt(m, "minimum"), numberAt(m, "maximum")
	s.MinItems, s.MaxItems = countAt(m, "minItems"), countAt(m, "maxItems")
	if it, ok := m["items"].(map[string]any); ok {
		s.Items = schemaOf(it, depth+1)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		s.Properties = propertiesOf(props, depth+1)
	}
	if req, ok := m["required"].([]any); ok {
		s.Required = stringsOf(req)
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		s.AdditionalProperties = ap
	case map[string]any:
		s.AdditionalProperties = schemaOf(ap, depth+1)
	}
	if alts, ok := m["anyOf"].([]any); ok {
		s.AnyOf = schemasOf(alts, depth+1)
	}
	if defs, ok := m["$defs"].(map[string]any); ok {
		s.Defs = map[string]*llm.Schema{}
		for k, v := range defs {
			if d, ok := v.(map[string]any); ok {
				s.Defs[k] = schemaOf(d, depth+1)
			}
		}
	}
	return s
}

// stringsOf are the strings among xs.
func stringsOf(xs []any) []string {
	var out []string
	for _, x := range xs {
		if v, ok := x.(string); ok {
			out = append(out, v)
		}
	}
	return out
}

// numberAt is m[k] when it is a number.
func numberAt(m map[string]any, k string) *float64 {
	if v, ok := m[k].(float64); ok {
		return &v
	}
	return nil
}

// countAt is m[k] as an int when it is a number.
func countAt(m map[string]any, k string) *int {
	if v, ok := m[k].(float64); ok {
		n := int(v)
		return &n
	}
	return nil
}

// propertiesOf are an object's properties, sorted by name.
func propertiesOf(props map[string]any, depth int) []llm.Property {
	var out []llm.Property
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if p, ok := props[k].(map[string]any); ok {
			out = append(out, llm.Property{Name: k, Schema: schemaOf(p, depth)})
		}
	}
	return out
}

// schemasOf are the schemas among xs.
func schemasOf(xs []any, depth int) []*llm.Schema {
	var out []*llm.Schema
	for _, x := range xs {
		if v, ok := x.(map[string]any); ok {
			out = append(out, schemaOf(v, depth))
		}
	}
	return out
}

// selectTools is the prompt's list of external tools.
func selectTools(ts []ExternalTool) []prompts.SourceTool {
	out := make([]prompts.SourceTool, 0, len(ts))
	for _, t := range ts {
		out = append(out, prompts.SourceTool{Name: t.Name, Source: t.Source, Description: clip(oneLine(t.Description), 300)})
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// toolActions are the model's calls of offered external tools.
func toolActions(calls []llm.ToolCall, offered []ExternalTool, limit int) []action {
	var acts []action
	for _, tc := range calls {
		i := slices.IndexFunc(offered, func(t ExternalTool) bool { return t.Name == tc.Name })
		if i < 0 || len(acts) >= limit {
			continue
		}
		args := json.RawMessage(strings.TrimSpace(tc.Arguments))
		if len(args) == 0 || !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		acts = append(acts, action{Kind: actTool, Tool: tc.Name, Source: offered[i].Source, Args: args})
	}
	return acts
}

// callTool runs one external tool and reads what it returned like the
// pages of a search: new documents become sources, summarised into a note
// whose findings quote them. A source that cannot be reached is recorded
// for the report; it costs only its own results.
func (ex *execution) callTool(ctx context.Context, act action) {
	a, t := ex.a, ex.s.Task
	q := "tool: " + act.Tool + " " + clip(string(act.Args), 200)
	var aud Audience
	if t.Audience != nil {
		aud = *t.Audience
	}
	res, err := a.tools.Call(ctx, fmt.Sprintf("%s#%d", ex.threadID, t.Turn), aud, act.Tool, act.Args)
	ex.mu.Lock()
	ex.queries = append(ex.queries, q)
	if errors.Is(err, ErrSourceUnreachable) {
		ex.unreachable = append(ex.unreachable, act.Source)
	}
	ex.mu.Unlock()
	if err != nil {
		a.log.Warn("tool call failed", "tool", act.Tool, "err", err)
		emit(ctx, Event{Kind: EventWarning, Query: q, Message: "tool " + act.Tool + " failed: " + err.Error()})
		return
	}
	emit(ctx, Event{Kind: EventSearched, Query: q, Results: len(res), Subtask: t.ref()})
	var pages []Source
	ex.mu.Lock()
	for _, r := range res {
		u := normURL(r.URL)
		if u == "" || strings.TrimSpace(r.Text) == "" || ex.claimed[u] {
			continue
		}
		ex.claimed[u] = true
		src := Source{URL: u, Title: r.Title, Text: clip(r.Text, a.opts.PageChars), Retrieved: true, Query: q, Provider: "mcp:" + act.Source}
		ex.sources[u] = src
		pages = append(pages, src)
	}
	ex.mu.Unlock()
	for _, p := range pages {
		emit(ctx, Event{Kind: EventSourceRead, URL: p.URL, Title: p.Title, Query: q, Subtask: t.ref()})
	}
	ex.summarize(ctx, q, pages)
}

// unreachableLines are the report's lines naming the sources that could
// not be reached in this turn.
func unreachableLines(s State, lang string) []string {
	var names []string
	for n, turn := range s.Unreachable {
		if turn == s.Turn {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		out = append(out, label(lang, "Source could not be reached: ", "接続できなかった情報源: ")+n)
	}
	return out
}

// mergeUnreachable keeps, per source, the latest turn it could not be
// reached in. It copies, never mutates.
func mergeUnreachable(old, upd map[string]int) map[string]int {
	out := maps.Clone(old)
	if out == nil {
		out = map[string]int{}
	}
	for k, v := range upd {
		if cur, ok := out[k]; !ok || v > cur {
			out[k] = v
		}
	}
	return out
}

// unreachableSet is the update recording names as unreachable in turn.
func unreachableSet(names []string, turn int) map[string]int {
	if len(names) == 0 {
		return nil
	}
	m := map[string]int{}
	for _, n := range names {
		m[n] = turn
	}
	return m
}
