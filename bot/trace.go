package bot

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"deepresearch/clock"
	"deepresearch/research"
	"deepresearch/tracing"
)

// tracerOf is the bot's tracer; nil when tp records nothing.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if !tracing.Active(tp) {
		return nil
	}
	return tp.Tracer("deepresearch/bot")
}

// spans trace Socket Mode envelopes and report uploads; a nil tracer
// traces nothing.
type spans struct {
	tracer trace.Tracer // nil: untraced
	clock  clock.Clock
}

// traceAck records a Socket Mode envelope from its arrival to its ack, the
// ack latency as an event.
func (sp *spans) traceAck(ctx context.Context, envelopeID string, start time.Time) {
	if sp.tracer == nil {
		return
	}
	now := sp.clock.Now()
	_, span := sp.tracer.Start(ctx, "slack envelope", trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("slack.envelope.id", envelopeID)))
	span.AddEvent("slack.ack", trace.WithTimestamp(now), trace.WithAttributes(tracing.AckLatency.Float64(float64(now.Sub(start).Microseconds())/1000)))
	span.End(trace.WithTimestamp(now))
}

// traceUpload starts the span of a run's report upload (every round of
// it), in the research turn's trace when the result carries it. end
// records the outcome.
func (sp *spans) traceUpload(ctx context.Context, sc runScope, res research.Result) (context.Context, func(error)) {
	if sp.tracer == nil {
		return ctx, func(error) {}
	}
	var opts []trace.SpanStartOption
	if turn, ok := tracing.SpanContext(res.TraceParent); ok && !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, turn)
	}
	opts = append(opts, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		tracing.RunID.String(sc.run.ID), tracing.Requester.String(tracing.Hash(sc.run.Requester)),
		attribute.Bool("deepresearch.reply", res.Reply), tracing.Bytes.Int(len(res.Report))))
	ctx, span := sp.tracer.Start(ctx, "slack upload", opts...)
	return ctx, func(err error) {
		if err != nil {
			kind := tracing.ErrorType(err)
			span.SetStatus(codes.Error, kind)
			span.SetAttributes(tracing.ErrorKind.String(kind))
		}
		span.End()
	}
}
