package llm

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"deepresearch/agent/llm/llmtest"
)

// TestHedgeIsASpanEvent: a hedged request is an event on the span of the
// call (the caller's span in ctx).
func TestHedgeIsASpanEvent(t *testing.T) {
	srv := llmtest.NewServer(t, nil)
	srv.Enqueue(llmtest.Text("warm"), llmtest.Delayed(time.Minute, llmtest.Text("slow")), llmtest.Text("hedge"))
	c, _ := newTestClient(t, srv, func(o *Options) { o.HedgeAfter = 50 * time.Millisecond })
	if _, err := c.Chat(context.Background(), Request{Messages: []Message{User("x")}}); err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, span := tp.Tracer("test").Start(context.Background(), "chat test-model")
	if _, err := c.Chat(ctx, Request{Messages: []Message{User("x")}}); err != nil {
		t.Fatal(err)
	}
	span.End()
	evs := rec.Ended()[0].Events()
	if len(evs) != 1 || evs[0].Name != "gen_ai.hedge" {
		t.Fatalf("events %+v", evs)
	}
}
