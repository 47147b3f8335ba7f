package agenttest

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/llm"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/clock"
)

// Evidence is one item of the evidence the writer is given.
type Evidence struct {
	N                        int // the E number
	Claim, Quote, Title, URL string
}

var (
	evidenceRE = regexp.MustCompile(`(?m)^\[E(\d+)\] (.*)\n  quote: "(.*)"\n  source: (.*), (\S+)$`)
	questionRE = regexp.MustCompile(`(?m)^Question: (.*)$`)
	subtaskRE  = regexp.MustCompile(`(?m)^Subtask: (.*)$`)
	attemptRE  = regexp.MustCompile(`This is attempt (\d+) of`)
)

// ParseEvidence reads the evidence listed in a writer's prompt.
func ParseEvidence(prompt string) []Evidence {
	var ev []Evidence
	for _, m := range evidenceRE.FindAllStringSubmatch(prompt, -1) {
		e := Evidence{Claim: m[2], Quote: m[3], Title: m[4], URL: m[5]}
		e.N, _ = strconv.Atoi(m[1]) // \d+ parses; an E number too long for an int stays 0
		ev = append(ev, e)
	}
	return ev
}

// Kind is the kind of step a model call's node name names: the node itself
// for the main graph ("planner"), the step for a researcher's node
// ("researcher[1.2].select" → "select").
func Kind(node string) string {
	if i := strings.LastIndex(node, "."); strings.HasPrefix(node, "researcher[") && i > 0 {
		return node[i+1:]
	}
	return node
}

// Brain answers the agent's model calls: Respond is an llmtest.Responder.
// By default it researches every question, plans three subtasks (two in
// Japanese), searches each subtask, summarises the pages it is shown,
// finds each subtask done on the first try, writes a report whose
// footnotes quote the evidence, and approves it. The knobs change one step
// each; set them before the first call. A Brain is safe for concurrent use.
type Brain struct {
	// Intent decides the coordinator's answer to a message: "chat" (text
	// is the reply), "clarify" (text is the question), "rewrite", or
	// research (text, when set, restates the question).
	Intent func(msg string) (intent, text string)
	// Planner replies to the planner.
	Planner func(prompt string, ja bool) llmtest.Reply
	// Replan replies to the supervisor's replanning.
	Replan func(prompt string) llmtest.Reply
	// SelectTools replies to a researcher's select step.
	SelectTools func(r *llmtest.Request) llmtest.Reply
	// FindingQuote rewrites the quotes the summariser returns.
	FindingQuote func(quote string) string
	// ReflectDone decides a researcher's reflection on its try (from 1).
	ReflectDone func(try int) bool
	// Answer writes a researcher's subtask answer from its prompt.
	Answer func(prompt string) string
	// Writer writes the report from the writer's prompt.
	Writer func(prompt string, ja bool) string
	// CiteByID makes the default report cite evidence by id ("[E3]") and
	// leave the References to the program, as the writer's prompt asks.
	CiteByID bool
	// ExtraFootnotes are appended to every default report (fabrications).
	ExtraFootnotes []string
	// Inject is text the default script adds to its own prose (hostile
	// text: markup, mentions): the plan's theme, first subtask and plan
	// text, the summaries and subtask answers, the report's title, summary
	// and analysis, and the reviewer's feedback.
	Inject string
	// Table replies to the data analyst (its prompt lists the evidence
	// whose quotes write numbers); nil: no table (an empty proposal).
	Table func(prompt string) llmtest.Reply
	// ReviewScores are the reviewer's scores and suggested action for
	// review n (from 1); Feedback its feedback.
	ReviewScores func(n int) (agent.Scores, string)
	Feedback     func(n int) string
	// Issues are the issues review n (from 1) names (none by default).
	Issues func(n int) []agent.Issue
	// Route decides a routing question the rules could not (the prompt
	// says which): "research" or "write", and why. By default "write".
	Route func(prompt string) (next, reason string)
	// BadJSON makes every BadJSON-th structured reply broken JSON (the
	// client must repair it with one more call).
	BadJSON int
	// Wrap sees each request with the scripted reply and returns the reply
	// to give (faults, delays, hostile text).
	Wrap func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply

	mu            sync.Mutex
	calls         map[string]int
	total         int
	jsonCalls     int
	reviews       int
	writerPrompts []string
	lastReport    string
	hangKind      string
	entered       chan struct{}
	failKind      string
}

// NewBrain is a brain with the default script.
func NewBrain() *Brain { return &Brain{calls: map[string]int{}} }

// Count is how many calls of a kind (see Kind) were answered.
func (b *Brain) Count(kind string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[kind]
}

// Total is how many calls were answered.
func (b *Brain) Total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// JSONCalls is how many structured replies were asked for.
func (b *Brain) JSONCalls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.jsonCalls
}

// WriterPrompts are the system and user prompts the writer was given.
func (b *Brain) WriterPrompts() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.writerPrompts...)
}

// LastReport is the last report the default writer wrote.
func (b *Brain) LastReport() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastReport
}

// HangAt makes the calls of a kind hang until their request is cancelled,
// from now on ("" stops it). The channel is closed when the first one
// hangs.
func (b *Brain) HangAt(kind string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hangKind, b.entered = kind, make(chan struct{})
	return b.entered
}

// FailNext makes the next call of a kind answer 500.
func (b *Brain) FailNext(kind string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failKind = kind
}

// Respond answers one model call.
func (b *Brain) Respond(r *llmtest.Request) llmtest.Reply {
	reply := b.respond(r)
	if b.Wrap != nil {
		reply = b.Wrap(r, reply)
	}
	return reply
}

func (b *Brain) respond(r *llmtest.Request) llmtest.Reply {
	kind := Kind(r.Node())
	if reply, ok := b.fault(kind, r.FormatType() != "" && r.FormatType() != "text"); ok {
		return reply
	}
	c := call{r: r, user: r.LastUser()}
	if m := questionRE.FindStringSubmatch(c.user); m != nil {
		c.question = m[1]
	}
	c.ja = agent.DetectLanguage(c.user) == "ja"
	if h, ok := nodeReplies[kind]; ok {
		return h(b, c)
	}
	return llmtest.Error(400, "agenttest: unexpected node "+r.Node())
}

// fault counts the call and returns the fault it meets, if any: a hang
// or a failure set for its kind, or a broken reply every BadJSON
// structured calls.
func (b *Brain) fault(kind string, structured bool) (llmtest.Reply, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[kind]++
	b.total++
	bad := false
	if structured {
		b.jsonCalls++
		bad = b.BadJSON > 0 && b.jsonCalls%b.BadJSON == 0
	}
	hang := b.hangKind != "" && b.hangKind == kind
	if hang {
		select {
		case <-b.entered:
		default:
			close(b.entered)
		}
	}
	fail := b.failKind != "" && b.failKind == kind
	if fail {
		b.failKind = ""
	}
	switch {
	case hang:
		return llmtest.Hang(), true
	case fail:
		return llmtest.Error(500, "agenttest: overloaded"), true
	case bad:
		return llmtest.Text("Sure, here it is: {\"intent\": \"research\", \"reply\": "), true
	}
	return llmtest.Reply{}, false
}

// call is one model call as the node replies see it.
type call struct {
	r        *llmtest.Request
	user     string // the last user message
	question string // the question the prompt names, if it does
	ja       bool   // the user message is in Japanese
}

// nodeReplies answer the calls of each node.
var nodeReplies = map[string]func(*Brain, call) llmtest.Reply{
	"coordinator":    (*Brain).coordinate,
	"planner":        (*Brain).planReply,
	"supervisor":     (*Brain).supervise,
	"select":         (*Brain).selectTools,
	"execute":        (*Brain).summarisePages,
	"answer_subtask": (*Brain).answerSubtask,
	"reflect":        (*Brain).reflect,
	"writer":         (*Brain).write,
	"analyst":        (*Brain).table,
	"reviewer":       (*Brain).review,
	"route":          (*Brain).route,
}

func (b *Brain) coordinate(c call) llmtest.Reply {
	user := c.user
	msg := strings.TrimSpace(strings.TrimPrefix(user[max(strings.LastIndex(user, "Latest message:"), 0):], "Latest message:"))
	intent, extra := "research", ""
	if b.Intent != nil {
		intent, extra = b.Intent(msg)
	}
	switch intent {
	case "chat":
		return llmtest.JSON(map[string]string{"intent": "chat", "reply": extra, "research_question": "", "clarifying_question": "", "instruction": ""})
	case "clarify":
		return llmtest.JSON(map[string]string{"intent": "clarify", "reply": "", "research_question": "", "clarifying_question": extra, "instruction": ""})
	case "rewrite":
		return llmtest.JSON(map[string]string{"intent": "rewrite", "reply": "", "research_question": "", "clarifying_question": "", "instruction": msg})
	}
	return llmtest.JSON(map[string]string{"intent": "research", "reply": "", "research_question": extra, "clarifying_question": "", "instruction": ""})
}

func (b *Brain) planReply(c call) llmtest.Reply {
	if b.Planner != nil {
		return b.Planner(c.user, c.ja)
	}
	return b.plan(c.ja)
}

func (b *Brain) supervise(c call) llmtest.Reply {
	if b.Replan != nil {
		return b.Replan(c.user)
	}
	st := "more detail"
	if c.ja {
		st = "詳細"
	}
	return llmtest.JSON(map[string]any{"subtasks": []map[string]any{{"title": st, "queries": []string{c.question + " " + st + fmt.Sprint(b.Count("supervisor"))}}}})
}

func (b *Brain) selectTools(c call) llmtest.Reply {
	if b.SelectTools != nil {
		return b.SelectTools(c.r)
	}
	sub := ""
	if m := subtaskRE.FindStringSubmatch(c.user); m != nil {
		sub = m[1]
	}
	return llmtest.Call("search", map[string]any{"queries": []string{sub + " details " + fmt.Sprint(b.Count("select"))}})
}

// summarisePages finds one finding per page in the prompt: its first
// sentence.
func (b *Brain) summarisePages(c call) llmtest.Reply {
	var fs []map[string]string
	for _, part := range strings.Split(c.user, "\n=== Page ")[1:] {
		lines := strings.SplitN(part, "\n", 3)
		if len(lines) < 3 {
			continue
		}
		url := strings.TrimPrefix(lines[1], "URL: ")
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[2]), "Menu Home About"))
		s := FirstSentence(text)
		quote := s
		if b.FindingQuote != nil {
			quote = b.FindingQuote(s)
		}
		fs = append(fs, map[string]string{"claim": "Claim: " + s, "quote": quote, "url": url})
	}
	return llmtest.JSON(map[string]any{"summary": b.said(fmt.Sprintf("%d pages summarised.", len(fs))), "findings": fs})
}

func (b *Brain) answerSubtask(c call) llmtest.Reply {
	if b.Answer != nil {
		return llmtest.Text(b.Answer(c.user))
	}
	return llmtest.Text(b.said("The evidence shows the main facts [E1]."))
}

func (b *Brain) reflect(c call) llmtest.Reply {
	try := 1
	if m := attemptRE.FindStringSubmatch(c.r.System()); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			try = n
		}
	}
	done := true
	if b.ReflectDone != nil {
		done = b.ReflectDone(try)
	}
	return llmtest.JSON(map[string]any{"is_completed": done, "advice": "look for numbers", "gaps": []string{}, "next_queries": []string{"numbers " + fmt.Sprint(try)}})
}

func (b *Brain) write(c call) llmtest.Reply {
	b.mu.Lock()
	b.writerPrompts = append(b.writerPrompts, c.r.System()+"\n"+c.user)
	b.mu.Unlock()
	if b.Writer != nil {
		return llmtest.Text(b.Writer(c.user, c.ja))
	}
	return llmtest.Text(b.report(c.user, c.ja))
}

func (b *Brain) table(c call) llmtest.Reply {
	if b.Table != nil {
		return b.Table(c.user)
	}
	return llmtest.JSON(map[string]any{"title": "", "unit": "", "columns": []string{}, "cells": []any{}, "rates": []any{}})
}

func (b *Brain) review(call) llmtest.Reply {
	b.mu.Lock()
	b.reviews++
	n := b.reviews
	b.mu.Unlock()
	sc, act := agent.Scores{FactCheck: 0.95, Completeness: 0.9, Logic: 0.9, Format: 1}, "write"
	if b.ReviewScores != nil {
		sc, act = b.ReviewScores(n)
	}
	fb := b.said("Add more detail on penalties.")
	if b.Feedback != nil {
		fb = b.Feedback(n)
	}
	issues := []agent.Issue{}
	if b.Issues != nil {
		issues = b.Issues(n)
	}
	return llmtest.JSON(map[string]any{"scores": sc, "evaluations": []map[string]any{{"type": "attribution", "pass": true, "reason": "cited"}},
		"feedback": fb, "suggested_action": act, "issues": issues})
}

func (b *Brain) route(c call) llmtest.Reply {
	next, reason := "write", "The evidence covers the question; the text needs the work."
	if b.Route != nil {
		next, reason = b.Route(c.user)
	}
	return llmtest.JSON(map[string]string{"next": next, "reason": reason})
}

// said is s with Inject after it.
func (b *Brain) said(s string) string {
	if b.Inject == "" {
		return s
	}
	return s + " " + b.Inject
}

// plan is the default plan: the EU AI Act's timeline, penalties and SMEs,
// or Japan's law and guidelines.
func (b *Brain) plan(ja bool) llmtest.Reply {
	if ja {
		return llmtest.JSON(map[string]any{"theme": b.said("国内の生成AI規制"), "investigation_points": []string{"法制度", "ガイドライン"},
			"search_queries": []string{"AI推進法 成立", "AI事業者ガイドライン"},
			"subtasks":       []map[string]any{{"title": b.said("法制度"), "queries": []string{"AI推進法 成立"}}, {"title": "ガイドライン", "queries": []string{"AI事業者ガイドライン", "生成AI 著作権 文化庁"}}},
			"plan_text":      b.said("法制度とガイドラインを調べる。"), "evaluation_types": []string{"freshness", "attribution"}})
	}
	return llmtest.JSON(map[string]any{"theme": b.said("EU AI Act"), "investigation_points": []string{"Timeline", "Penalties", "SMEs"},
		"search_queries": []string{"EU AI Act timeline", "AI Act fines", "AI Act SMEs"},
		"subtasks":       []map[string]any{{"title": b.said("Timeline"), "queries": []string{"EU AI Act timeline"}}, {"title": "Penalties", "queries": []string{"AI Act fines"}}, {"title": "SMEs", "queries": []string{"AI Act SMEs sandboxes"}}},
		"plan_text":      b.said("Research timeline, penalties and SMEs."), "evaluation_types": []string{"completeness", "attribution"}})
}

// report is the default writer: up to four findings, each footnoted with
// its evidence's quote, title and URL.
func (b *Brain) report(user string, ja bool) string {
	ev := ParseEvidence(user)
	var sb strings.Builder
	title, summary, bullet := "Report", "This report summarises what the sources say about the question.", "Finding"
	if ja {
		title, summary, bullet = "調査レポート", "本レポートは、収集した情報源に基づき国内の生成AI規制の動向をまとめたものである。", "知見"
	}
	short := strings.Contains(user, "Instruction for this version")
	fmt.Fprintf(&sb, "# %s\n\n## Executive Summary\n\n%s\n\n## Key Findings\n\n", b.said(title), b.said(summary))
	n := 0
	for i, e := range ev {
		if i == 4 || short && i == 1 {
			break
		}
		n++
		if b.CiteByID {
			fmt.Fprintf(&sb, "- %s %d: %s [E%d]\n", bullet, n, e.Claim, e.N)
			continue
		}
		fmt.Fprintf(&sb, "- %s %d: %s [^%d]\n", bullet, n, e.Claim, n+10)
	}
	sb.WriteString("\n## Detailed Analysis\n\n### Analysis\n\n")
	switch {
	case len(ev) > 0 && b.CiteByID:
		fmt.Fprintf(&sb, "%s\n", b.said(fmt.Sprintf("As noted before [E%d], the picture is consistent.", ev[0].N)))
	case len(ev) > 0:
		fmt.Fprintf(&sb, "%s\n", b.said(fmt.Sprintf("As noted before [^%d], the picture is consistent.", 11)))
	}
	for i := range b.ExtraFootnotes {
		fmt.Fprintf(&sb, "Another claim %d [^x%d].\n", i, i)
	}
	if b.CiteByID {
		n = 0 // the program writes the references
	} else {
		sb.WriteString("\n## References\n\n")
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "[^%d]: \"%s\" — %s, %s\n", i+11, ev[i].Quote, ev[i].Title, ev[i].URL)
	}
	for i, f := range b.ExtraFootnotes {
		fmt.Fprintf(&sb, "[^x%d]: %s\n", i, f)
	}
	b.mu.Lock()
	b.lastReport = sb.String()
	b.mu.Unlock()
	return sb.String()
}

// Client is an llm.Client for the model server, tuned for tests (no sleep
// between retries, a short timeout, no logs); tune, when set, changes its
// options.
func Client(tb testing.TB, srv *llmtest.Server, tune func(*llm.Options)) *llm.Client {
	tb.Helper()
	o := llm.Options{APIKey: "test", BaseURL: srv.URL(), Model: "fake", HTTPClient: srv.Client(), Clock: clock.Instant{},
		Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	if tune != nil {
		tune(&o)
	}
	c, err := llm.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
