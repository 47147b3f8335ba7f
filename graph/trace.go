package graph

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"deepresearch/tracing"
)

// taskSpan starts the span of one task: named after its node, with the
// step, the task's index and the namespace of a subgraph.
func (r *run[S]) taskSpan(ctx context.Context, t *task[S]) (context.Context, trace.Span) {
	attrs := []trace.SpanStartOption{trace.WithAttributes(
		tracing.Node.String(t.node.name), tracing.Step.Int(r.cur.step), tracing.Task.Int(t.idx))}
	if r.ns != "" {
		attrs = append(attrs, trace.WithAttributes(tracing.Namespace.String(r.ns)))
	}
	return r.g.tracer.Start(ctx, t.node.name, attrs...)
}

// endTaskSpan ends a task's span with its outcome: an error status for a
// task that failed; a pause for a person is not an error.
func endTaskSpan[S any](span trace.Span, t *task[S]) {
	switch {
	case t.intr != nil:
		span.AddEvent("interrupt")
	case t.err != nil:
		span.SetStatus(codes.Error, errorType(t.err))
		span.SetAttributes(tracing.ErrorKind.String(errorType(t.err)))
	}
	span.End()
}

// errorType is tracing.ErrorType of the node's own error.
func errorType(err error) string {
	var ne *NodeError
	if errors.As(err, &ne) && ne.Err != nil {
		err = ne.Err
	}
	return tracing.ErrorType(err)
}
