package bot_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"deepresearch/bot"
	"deepresearch/research"
	"deepresearch/tracing"
)

// tracedTurns is a researcher whose finished turns carry a trace context,
// as research.Runner's do when the agent is traced.
type tracedTurns struct {
	bot.Researcher
	traceparent string
}

func (r tracedTurns) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	out, err := r.Researcher.Start(ctx, req, sink)
	if out.Result != nil {
		out.Result.TraceParent = r.traceparent
	}
	return out, err
}

// TestUploadAndEnvelopeSpans: with a TracerProvider the report upload is a
// span in the research turn's trace (a child of the turn's span, the
// requester hashed), and each acked envelope a span with its ack latency
// as an event.
func TestUploadAndEnvelopeSpans(t *testing.T) {
	const turn = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHarness(t)
	h.startWith(tracedTurns{Researcher: h.res, traceparent: turn}, noDraftApproval, func(o *bot.Options) { o.TracerProvider = tp })
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)

	var uploads, envelopes int
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "slack upload":
			uploads++
			if s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
				t.Errorf("the upload is not in the turn's trace: parent %v", s.Parent())
			}
			for _, kv := range s.Attributes() {
				if kv.Key == tracing.Requester && kv.Value.AsString() != tracing.Hash("U1") {
					t.Errorf("requester %q", kv.Value.AsString())
				}
			}
			if s.Status().Code != 0 {
				t.Errorf("upload status %v", s.Status())
			}
		case "slack envelope":
			envelopes++
			evs := s.Events()
			if len(evs) != 1 || evs[0].Name != "slack.ack" || len(evs[0].Attributes) != 1 || evs[0].Attributes[0].Key != tracing.AckLatency {
				t.Errorf("envelope events %+v", evs)
			}
		}
	}
	if uploads != 1 || envelopes == 0 {
		t.Errorf("%d upload spans, %d envelope spans", uploads, envelopes)
	}
}
