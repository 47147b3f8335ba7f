// Package prompts holds every prompt the research agent sends to a language
// model, as embedded text/template files: one place to read every word the
// LLM is told. Each file defines a "system" and a "user" template; Render
// executes both with a typed data value from this package.
package prompts

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"sync"
	"text/template"
)

//go:embed templates/*.tmpl
var files embed.FS

// Name names one prompt (a file templates/<name>.tmpl).
type Name string

// The agent's prompts.
const (
	Coordinator Name = "coordinator" // intent: chat, research, clarify, rewrite
	Planner     Name = "planner"     // the research plan: theme, points, queries, subtasks
	Replan      Name = "replan"      // follow-up research round from feedback and gaps
	Select      Name = "select"      // researcher: choose actions (tool calling)
	Summarize   Name = "summarize"   // per-query summary with exact quotes
	Answer      Name = "answer"      // researcher: a subtask's answer from its evidence
	Reflect     Name = "reflect"     // researcher: is the subtask answered? gaps, next queries
	Writer      Name = "writer"      // the cited markdown report
	Reviewer    Name = "reviewer"    // review: scores, evaluations, issues, next action
	Route       Name = "route"       // the next step where the rules cannot decide: research or write
	Analyst     Name = "analyst"     // data analysis: a table of the evidence's numbers, each citing its evidence
)

// Names lists every prompt.
var Names = []Name{Coordinator, Planner, Replan, Select, Summarize, Answer, Reflect, Writer, Reviewer, Route, Analyst}

// Prompt is a rendered prompt.
type Prompt struct {
	System string
	User   string
}

var funcs = template.FuncMap{
	"inc":  func(i int) int { return i + 1 },
	"join": strings.Join,
	"langName": func(code string) string {
		return LanguageName(code)
	},
	"clip": func(n int, s string) string {
		r := []rune(s)
		if len(r) <= n {
			return s
		}
		return string(r[:n]) + "…"
	},
}

// LanguageName returns the English name of a language code the agent uses.
func LanguageName(code string) string {
	switch strings.ToLower(code) {
	case "ja", "ja-jp":
		return "Japanese"
	case "", "en", "en-us", "en-gb":
		return "English"
	case "zh", "zh-cn", "zh-tw":
		return "Chinese"
	case "ko":
		return "Korean"
	case "de":
		return "German"
	case "fr":
		return "French"
	case "es":
		return "Spanish"
	}
	return code
}

var parsed = sync.OnceValues(func() (map[Name]*template.Template, error) {
	out := make(map[Name]*template.Template, len(Names))
	for _, n := range Names {
		t, err := template.New(string(n)).Funcs(funcs).Option("missingkey=error").ParseFS(files, "templates/"+string(n)+".tmpl")
		if err != nil {
			return nil, fmt.Errorf("prompts: parse %s: %w", n, err)
		}
		for _, part := range []string{"system", "user"} {
			if t.Lookup(part) == nil {
				return nil, fmt.Errorf("prompts: %s defines no %q template", n, part)
			}
		}
		out[n] = t
	}
	return out, nil
})

// Render executes the prompt name with data (the matching *Data type).
func Render(name Name, data any) (Prompt, error) {
	ts, err := parsed()
	if err != nil {
		return Prompt{}, err
	}
	t := ts[name]
	if t == nil {
		return Prompt{}, fmt.Errorf("prompts: unknown prompt %q", name)
	}
	var p Prompt
	for _, part := range []struct {
		name string
		dst  *string
	}{{"system", &p.System}, {"user", &p.User}} {
		var b bytes.Buffer
		if err := t.ExecuteTemplate(&b, part.name, data); err != nil {
			return Prompt{}, fmt.Errorf("prompts: render %s/%s: %w", name, part.name, err)
		}
		*part.dst = tidy(b.String())
	}
	return p, nil
}

// tidy trims the template's edges and squeezes runs of blank lines.
func tidy(s string) string {
	s = strings.TrimSpace(s)
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return s
}
