package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"deepresearch/tracing/tracingtest"
)

// TestAskDeliversTrace: ask with OTEL_EXPORTER_OTLP_ENDPOINT at an OTLP/HTTP
// receiver has delivered the research's trace when it returns (the
// provider is flushed on the way out): one trace under the turn's span, with
// the model calls, the searches and the page reads (status and size from
// the real fetcher) in it.
func TestAskDeliversTrace(t *testing.T) {
	vars := askWorld(t)
	rcv := tracingtest.NewReceiver(t)
	vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = rcv.URL
	vars["OTEL_SERVICE_NAME"] = "ask-test"
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "report.md")
	if err := runAsk(context.Background(), []string{"-o", out, "What does the EU AI Act require?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	// no waiting: what ask exported is here already
	spans := rcv.Spans()
	if bad := rcv.Rejected(); len(bad) > 0 {
		t.Fatalf("receiver rejected %v", bad)
	}
	var root *tracingtest.Span
	count := map[string]int{}
	for i, s := range spans {
		switch {
		case s.Name == "research start":
			root = &spans[i]
		case strings.HasPrefix(s.Name, "chat "):
			count["chat"]++
			if s.Attributes["gen_ai.request.model"] != "fake" || s.Attributes["error.type"] == "" && s.Attributes["gen_ai.usage.output_tokens"] == "" {
				t.Errorf("model span %v", s.Attributes)
			}
		case s.Name == "read page":
			count["read"]++
			if s.Attributes["http.response.status_code"] == "200" && s.Attributes["deepresearch.bytes"] != "" && s.Attributes["deepresearch.bytes"] != "0" &&
				s.Attributes["server.address"] == "127.0.0.1" {
				count["read with status"]++
			}
		default:
			count[s.Name]++
		}
	}
	if root == nil {
		t.Fatalf("no turn span among %d spans (stderr %s)", len(spans), stderr.String())
	}
	if root.Attributes["deepresearch.outcome"] != "done" || root.ParentSpanID != "" || root.ResourceAttrs["service.name"] != "ask-test" {
		t.Errorf("turn span %+v", *root)
	}
	for _, s := range spans {
		if s.TraceID != root.TraceID {
			t.Errorf("span %s in another trace", s.Name)
		}
	}
	for _, k := range []string{"chat", "read with status", "search", "planner", "writer", "citation check"} {
		if count[k] == 0 {
			t.Errorf("no %q span: %v", k, count)
		}
	}
}
