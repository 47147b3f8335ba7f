package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"deepresearch/graph"
	"deepresearch/tracing"
)

// TestTaskSpans: with a recording TracerProvider every task is a span named
// after its node, a child of the span in the Invoke context; a retried
// attempt is an event on it and a failure its status.
func TestTaskSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	failed := 0
	s := graph.NewSchema[struct{ N int }]()
	n := graph.LastValue(s, "n", func(st *struct{ N int }) *int { return &st.N })
	b := graph.New(s)
	b.AddNode("a", func(_ context.Context, st struct{ N int }) ([]graph.Write, error) {
		return []graph.Write{n.Set(st.N + 1)}, nil
	})
	b.AddNode("flaky", func(_ context.Context, st struct{ N int }) ([]graph.Write, error) {
		if failed++; failed == 1 {
			return nil, errors.New("glitch")
		}
		return []graph.Write{n.Set(st.N + 1)}, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
	b.AddEdge(graph.Start, "a")
	b.AddEdge("a", "flaky")
	b.AddEdge("flaky", graph.End)
	g, err := b.Compile(graph.Options{TracerProvider: tp, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("test").Start(context.Background(), "root")
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "t", Input: []graph.Write{n.Set(0)}}); err != nil {
		t.Fatal(err)
	}
	root.End()
	got := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		got[sp.Name()] = sp
	}
	for _, name := range []string{"a", "flaky"} {
		sp := got[name]
		if sp == nil {
			t.Fatalf("no span for node %s: %v", name, got)
		}
		if sp.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("span %s is not a child of the Invoke's span", name)
		}
	}
	if evs := got["flaky"].Events(); len(evs) != 1 || evs[0].Name != "retry" {
		t.Errorf("flaky's events: %+v", evs)
	}
}

// BenchmarkTracedChain50 is BenchmarkChain50 untraced (no provider), with
// the no-op provider tracing.New returns when nothing is configured, and
// with a recording SDK provider.
func BenchmarkTracedChain50(b *testing.B) {
	off, err := tracing.New(context.Background(), tracing.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"none", nil},
		{"off", off.Provider},
		{"sdk", sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := buildChain(b, 50, graph.Options{TracerProvider: c.tp}, nil)
			in := []graph.Write{{Channel: "count", Value: 0}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := g.Invoke(context.Background(), graph.Config{ThreadID: fmt.Sprint("b", i), Input: in}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
