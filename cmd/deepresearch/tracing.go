package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"deepresearch/agent"
	"deepresearch/tracing"
)

// tracingFlush bounds the export of the last spans when a command ends.
const tracingFlush = 5 * time.Second

// startTracing sets up traces from the standard OpenTelemetry variables
// (tracing.New): off, a no-op provider, when none is set. stop exports
// what is buffered before the command returns (a failure is one line on
// stderr, not the command's error).
func startTracing(ctx context.Context, e env, stderr io.Writer) (*tracing.Setup, func(), error) {
	tr, err := tracing.New(ctx, tracing.Options{Getenv: e, Version: versionString()})
	if err != nil {
		return nil, nil, err
	}
	return tr, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlush)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil {
			fmt.Fprintf(stderr, "deepresearch: traces not all exported: %v\n", err)
		}
	}, nil
}

// traced sets the agent's tracing from tr.
func traced(o agent.Options, tr *tracing.Setup) agent.Options {
	if tr != nil {
		o.TracerProvider, o.TraceContent = tr.Provider, tr.Content
	}
	return o
}
