package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/tracing"
)

// traced makes the env's agents trace into a span recorder.
func traced(e *env) *tracetest.SpanRecorder {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e.t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e.opts.TracerProvider = tp
	return rec
}

// spanTree indexes ended spans by id.
type spanTree struct {
	spans []sdktrace.ReadOnlySpan
	byID  map[trace.SpanID]sdktrace.ReadOnlySpan
}

func treeOf(spans []sdktrace.ReadOnlySpan) spanTree {
	t := spanTree{spans: spans, byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, s := range spans {
		t.byID[s.SpanContext().SpanID()] = s
	}
	return t
}

func (t spanTree) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range t.spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func (t spanTree) parent(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	return t.byID[s.Parent().SpanID()]
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func attrString(s sdktrace.ReadOnlySpan, key string) string {
	v, _ := attr(s, attribute.Key(key))
	return v.String()
}

func hasEvent(s sdktrace.ReadOnlySpan, name string) bool {
	for _, ev := range s.Events() {
		if ev.Name == name {
			return true
		}
	}
	return false
}

// TestTraceOfOneResearch: one research is one trace. The turn's span is
// the root (run id, thread, hashed requester, language, outcome); each
// graph node is a child span, each researcher's steps are children of its
// subtask's span; every model call is a "chat {model}" span with the GenAI
// attributes under the node that made it, a retried call carries the
// retry as an event; searches, page reads and the citation check have
// their spans; no prompt or completion is recorded by default.
func TestTraceOfOneResearch(t *testing.T) {
	e := newEnv(t)
	rec := traced(e)
	e.brain.FailNext("planner") // one 500: the planner's call is retried
	res := e.start("t-trace", agent.Request{Question: "What does the EU AI Act require?", Tag: "run-7", Requester: "U0SECRET"})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	tr := treeOf(rec.Ended())

	roots := tr.named("research start")
	if len(roots) != 1 {
		t.Fatalf("%d turn spans, want 1", len(roots))
	}
	root := roots[0]
	if root.Parent().IsValid() {
		t.Error("the turn's span has a parent")
	}
	for key, want := range map[string]string{
		"deepresearch.run.id": "run-7", "deepresearch.thread.id": "t-trace", "deepresearch.language": "en",
		"deepresearch.outcome": "done", "deepresearch.requester.hash": tracing.Hash("U0SECRET"),
		"gen_ai.operation.name": "invoke_agent",
	} {
		if got := attrString(root, key); got != want {
			t.Errorf("turn span %s = %q, want %q", key, got, want)
		}
	}
	for _, s := range tr.spans {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %q is in another trace", s.Name())
		}
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "U0SECRET") {
				t.Errorf("span %q attribute %s holds the requester's id", s.Name(), kv.Key)
			}
			if kv.Key == "gen_ai.input.messages" || kv.Key == "gen_ai.output.messages" || kv.Key == "gen_ai.retrieval.query.text" {
				t.Errorf("span %q records content (%s) without DEEPRESEARCH_TRACE_CONTENT", s.Name(), kv.Key)
			}
		}
	}

	// graph nodes under the turn; the researchers' steps under their subtask
	for _, node := range []string{"coordinator", "planner", "supervisor", "researcher", "writer", "reviewer", "finalize"} {
		spans := tr.named(node)
		if len(spans) == 0 {
			t.Errorf("no span for node %s", node)
		}
		for _, s := range spans {
			if p := tr.parent(s); p == nil || p.Name() != "research start" {
				t.Errorf("node span %s is not a child of the turn", node)
			}
		}
	}
	subtasks := tr.named("researcher")
	if len(subtasks) != 3 {
		t.Errorf("%d subtask spans, want the plan's 3", len(subtasks))
	}
	steps := 0
	for _, s := range tr.spans {
		if p := tr.parent(s); p != nil && p.Name() == "researcher" {
			if _, ok := attr(s, tracing.Node); ok {
				steps++
			}
		}
	}
	if steps < 3 {
		t.Errorf("%d researcher step spans under the subtasks", steps)
	}

	// model calls
	var chats, retried int
	for _, s := range tr.spans {
		if !strings.HasPrefix(s.Name(), "chat ") {
			continue
		}
		chats++
		if s.Name() != "chat fake" || attrString(s, "gen_ai.operation.name") != "chat" || attrString(s, "gen_ai.request.model") != "fake" {
			t.Errorf("model span %q: %v", s.Name(), s.Attributes())
		}
		for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
			if v, ok := attr(s, attribute.Key(k)); !ok || v.AsInt64() <= 0 {
				t.Errorf("model span %s: %s = %v", attrString(s, "deepresearch.graph.node"), k, v.String())
			}
		}
		if v, ok := attr(s, "gen_ai.response.finish_reasons"); !ok || len(v.AsStringSlice()) != 1 {
			t.Errorf("model span without finish reason: %v", s.Attributes())
		}
		if p := tr.parent(s); p == nil || p.Name() == "research start" {
			t.Errorf("model span %s is not under a node", s.Name())
		}
		if hasEvent(s, "gen_ai.retry") {
			retried++
			if p := tr.parent(s); p == nil || p.Name() != "planner" {
				t.Errorf("the retried call is not the planner's")
			}
			if v, _ := attr(s, tracing.Attempts); v.AsInt64() != 2 {
				t.Errorf("retried call: attempts %d, want 2", v.AsInt64())
			}
		}
	}
	if chats == 0 || retried != 1 {
		t.Errorf("%d model spans, %d with a retry event; want some and 1", chats, retried)
	}

	// tools and the citation check
	if n := len(tr.named("search")); n == 0 {
		t.Error("no search spans")
	}
	reads := tr.named("read page")
	if len(reads) == 0 {
		t.Error("no page read spans")
	}
	for _, s := range reads {
		if attrString(s, "server.address") == "" {
			t.Errorf("page read without host: %v", s.Attributes())
		}
		if _, ok := attr(s, tracing.CacheHit); !ok {
			t.Errorf("page read without cache hit: %v", s.Attributes())
		}
	}
	checks := tr.named("citation check")
	if len(checks) == 0 {
		t.Fatal("no citation check span")
	}
	if v, _ := attr(checks[len(checks)-1], tracing.Verified); v.AsInt64() == 0 {
		t.Errorf("citation check verified nothing: %v", checks[len(checks)-1].Attributes())
	}
}

// TestTraceContent: with TraceContent the model spans carry the prompt and
// the completion.
func TestTraceContent(t *testing.T) {
	e := newEnv(t)
	rec := traced(e)
	e.opts.TraceContent = true
	e.start("t-content", agent.Request{Question: "What does the EU AI Act require?"})
	found := false
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), "chat ") {
			in, out := attrString(s, "gen_ai.input.messages"), attrString(s, "gen_ai.output.messages")
			if !strings.Contains(in, `"role":"system"`) || !strings.Contains(out, `"role":"assistant"`) {
				t.Fatalf("model span content: in %.80q out %.80q", in, out)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no model spans")
	}
}

// TestTraceOfResumedRun: a turn paused for approval and resumed by another
// process (a new Agent over the same store) continues the same trace: the
// resume's span is a child of the first call's span and links to it. The
// thread's next turn is a new trace that links to the previous one.
func TestTraceOfResumedRun(t *testing.T) {
	e := newEnv(t)
	rec := traced(e)
	ctx := context.Background()
	res := e.start("t-resume", agent.Request{Question: "What does the EU AI Act require?", ApprovePlan: true, Tag: "run-1"})
	if len(res.Interrupts) != 1 {
		t.Fatalf("%+v", res)
	}
	first := treeOf(rec.Ended()).named("research start")
	if len(first) != 1 || attrString(first[0], "deepresearch.outcome") != string(agent.StatusInterrupted) {
		t.Fatalf("first call's span: %d, %v", len(first), first)
	}
	firstSC := first[0].SpanContext()

	res, err := e.agent().Resume(ctx, "t-resume", map[string]agent.Answer{res.Interrupts[0].ID: {Action: agent.ActionApprove}}, nil)
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("resume: %v %+v", err, res)
	}
	tr := treeOf(rec.Ended())
	resumed := tr.named("research resume")
	if len(resumed) != 1 {
		t.Fatalf("%d resume spans", len(resumed))
	}
	r := resumed[0]
	if r.SpanContext().TraceID() != firstSC.TraceID() || r.Parent().SpanID() != firstSC.SpanID() || !r.Parent().IsRemote() {
		t.Errorf("the resume is not a child of the first call: parent %v, first %v", r.Parent(), firstSC)
	}
	if l := r.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != firstSC.SpanID() || !hasAttr(l[0].Attributes, tracing.LinkKind, tracing.LinkResumed) {
		t.Errorf("resume links %+v", r.Links())
	}
	if attrString(r, "deepresearch.run.id") != "run-1" || attrString(r, "deepresearch.outcome") != "done" {
		t.Errorf("resume span %v", r.Attributes())
	}
	writers := tr.named("writer")
	if len(writers) == 0 || tr.parent(writers[0]) != r {
		t.Error("the writer's span is not under the resume")
	}

	// the next turn: a new trace, linked to the one before
	e.start("t-resume", agent.Request{Question: "And what about fines?", Tag: "run-2"})
	var next sdktrace.ReadOnlySpan
	for _, s := range treeOf(rec.Ended()).named("research start") {
		if attrString(s, "deepresearch.run.id") == "run-2" {
			next = s
		}
	}
	if next == nil {
		t.Fatal("no span for the second turn")
	}
	if next.SpanContext().TraceID() == firstSC.TraceID() || next.Parent().IsValid() {
		t.Error("the next turn is in the first turn's trace")
	}
	if l := next.Links(); len(l) != 1 || l[0].SpanContext.TraceID() != firstSC.TraceID() || !hasAttr(l[0].Attributes, tracing.LinkKind, tracing.LinkPreviousTurn) {
		t.Errorf("next turn links %+v", next.Links())
	}
}

func hasAttr(kvs []attribute.KeyValue, k attribute.Key, v string) bool {
	for _, kv := range kvs {
		if kv.Key == k && kv.Value.AsString() == v {
			return true
		}
	}
	return false
}

// TestTraceOfContinuedRun: a turn cut short (the process "dies" in the
// middle of research) and continued by a new Agent carries on in the same
// trace; the first call's span says how it ended.
func TestTraceOfContinuedRun(t *testing.T) {
	e := newEnv(t)
	rec := traced(e)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	e.web.OnSearch = researchSearches(func(_ context.Context, n int) error {
		if n == 2 {
			once.Do(cancel)
		}
		return nil
	})
	if _, err := e.agent().Start(ctx, "t-crash", agent.Request{Question: "What does the EU AI Act require?", Tag: "run-c"}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	e.web.OnSearch = nil
	if _, err := e.agent().Continue(context.Background(), "t-crash", nil); err != nil {
		t.Fatal(err)
	}
	tr := treeOf(rec.Ended())
	first, cont := tr.named("research start"), tr.named("research continue")
	if len(first) != 1 || len(cont) != 1 {
		t.Fatalf("%d start and %d continue spans", len(first), len(cont))
	}
	if got := attrString(first[0], "deepresearch.outcome"); got != "stopped" {
		t.Errorf("the cut-short call's outcome %q", got)
	}
	c := cont[0]
	if c.SpanContext().TraceID() != first[0].SpanContext().TraceID() || c.Parent().SpanID() != first[0].SpanContext().SpanID() {
		t.Error("the continued call is not in the first call's trace")
	}
	if attrString(c, "deepresearch.run.id") != "run-c" || attrString(c, "deepresearch.outcome") != "done" {
		t.Errorf("continue span %v", c.Attributes())
	}
}

// BenchmarkResearchTracing runs one whole research (scripted model behind
// the fake server, scripted web) untraced, with the no-op provider
// tracing.New returns when no variable is set, and traced by the SDK (spans
// batched to an exporter that drops them).
func BenchmarkResearchTracing(b *testing.B) {
	off, err := tracing.New(context.Background(), tracing.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	on := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = on.Shutdown(context.Background()) })
	for _, c := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"none", nil}, {"off", off.Provider}, {"sdk", on}} {
		b.Run(c.name, func(b *testing.B) {
			brain := agenttest.NewBrain()
			srv := llmtest.NewServer(b, brain.Respond)
			web := agenttest.NewWorld()
			a, err := agent.New(agent.Deps{LLM: agenttest.Client(b, srv, nil), Search: web, Fetch: web, Logger: slog.New(slog.DiscardHandler)},
				agent.Options{TracerProvider: c.tp})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				res, err := a.Start(context.Background(), fmt.Sprint("bench-", i), agent.Request{Question: "What does the EU AI Act require?"}, nil)
				if err != nil || res.Status != agent.StatusDone {
					b.Fatalf("%v %v", err, res)
				}
			}
		})
	}
}
