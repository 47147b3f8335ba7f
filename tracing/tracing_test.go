package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"deepresearch/tracing"
	"deepresearch/tracing/tracingtest"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestExport: each way of turning tracing on or off, checked at a real
// OTLP/HTTP receiver: spans arrive (after Shutdown, which flushes) only
// when an exporter is configured and the SDK is not disabled.
func TestExport(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    map[string]string // RECEIVER is replaced by the receiver's URL
		export bool
	}{
		{"nothing set", map[string]string{}, false},
		{"only the service name", map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RECEIVER"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "RECEIVER/v1/traces"}, true},
		{"http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RECEIVER", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RECEIVER", "OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RECEIVER", "OTEL_TRACES_EXPORTER": "none"}, false},
		{"sampler always_off", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RECEIVER", "OTEL_TRACES_SAMPLER": "always_off"}, false},
		{"ratio 0", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RECEIVER", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rcv := tracingtest.NewReceiver(t)
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = strings.ReplaceAll(v, "RECEIVER", rcv.URL)
			}
			ctx := context.Background()
			s, err := tracing.New(ctx, tracing.Options{Getenv: envOf(env), Version: "1.2.3"})
			if err != nil {
				t.Fatal(err)
			}
			if want := c.export || c.env["OTEL_TRACES_SAMPLER"] != ""; s.Enabled() != want {
				t.Errorf("Enabled() = %v", s.Enabled())
			}
			if _, isNoop := s.Provider.(noop.TracerProvider); isNoop == s.Enabled() || isNoop == tracing.Active(s.Provider) {
				t.Errorf("provider %T with Enabled() %v", s.Provider, s.Enabled())
			}
			_, span := s.Provider.Tracer("test").Start(ctx, "one")
			span.End()
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			spans := rcv.Spans()
			if !c.export {
				if rcv.Requests() != 0 {
					t.Fatalf("%d export requests, %d spans", rcv.Requests(), len(spans))
				}
				return
			}
			if len(spans) != 1 || spans[0].Name != "one" {
				t.Fatalf("spans %+v, rejected %v", spans, rcv.Rejected())
			}
			if got := spans[0].ResourceAttrs; got["service.name"] != "deepresearch" || got["service.version"] != "1.2.3" {
				t.Errorf("resource %v", got)
			}
		})
	}
}

// TestResource: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES describe the
// process; headers reach the receiver's request.
func TestResource(t *testing.T) {
	rcv := tracingtest.NewReceiver(t)
	ctx := context.Background()
	s, err := tracing.New(ctx, tracing.Options{Getenv: envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_SERVICE_NAME": "research-eu",
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=staging,service.name=ignored",
	})})
	if err != nil {
		t.Fatal(err)
	}
	_, span := s.Provider.Tracer("test").Start(ctx, "one")
	span.End()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	if r := spans[0].ResourceAttrs; r["service.name"] != "research-eu" || r["deployment.environment.name"] != "staging" {
		t.Errorf("resource %v", r)
	}
}

// TestWrongSettings: a wrong value stops start-up with the variable's name.
func TestWrongSettings(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "5s"}, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{map[string]string{"OTEL_SDK_DISABLED": "yes please"}, "OTEL_SDK_DISABLED"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"DEEPRESEARCH_TRACE_CONTENT": "maybe"}, "DEEPRESEARCH_TRACE_CONTENT"},
	} {
		_, err := tracing.New(context.Background(), tracing.Options{Getenv: envOf(c.env)})
		if err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%v: err %v, want one naming %s", c.env, err, c.name)
		}
	}
}

// TestTraceParent: a span's traceparent survives a round trip through
// storage, as a remote span context; nothing parses from "" or garbage.
func TestTraceParent(t *testing.T) {
	if tp := tracing.TraceParent(context.Background()); tp != "" {
		t.Errorf("traceparent without a span: %q", tp)
	}
	for _, bad := range []string{"", "00-zz", "00-00000000000000000000000000000000-0000000000000000-01"} {
		if _, ok := tracing.SpanContext(bad); ok {
			t.Errorf("SpanContext(%q) ok", bad)
		}
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := tracing.SpanContext(tp)
	if !ok || !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("SpanContext(%q) = %v %v", tp, sc, ok)
	}
	if h := tracing.Hash("U123"); h == "U123" || h != tracing.Hash("U123") || len(h) != 16 || tracing.Hash("") != "" {
		t.Error("Hash")
	}
}

// TestGRPCExporter: OTEL_EXPORTER_OTLP_PROTOCOL=grpc sets up the gRPC
// exporter (it connects lazily: nothing is sent without spans).
func TestGRPCExporter(t *testing.T) {
	s, err := tracing.New(context.Background(), tracing.Options{Getenv: envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20x",
	})})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Enabled() {
		t.Fatal("not enabled")
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestHeaders: OTEL_EXPORTER_OTLP_HEADERS reach the receiver (URL-decoded).
func TestHeaders(t *testing.T) {
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	ctx := context.Background()
	s, err := tracing.New(ctx, tracing.Options{Getenv: envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc",
	})})
	if err != nil {
		t.Fatal(err)
	}
	_, span := s.Provider.Tracer("test").Start(ctx, "one")
	span.End()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != "Bearer abc" {
		t.Errorf("Authorization %q", h)
	}
}
