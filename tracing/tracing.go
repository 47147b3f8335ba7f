// Package tracing sets up OpenTelemetry traces from the standard
// environment variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME,
// OTEL_TRACES_SAMPLER, OTEL_SDK_DISABLED, …) and holds the few words the
// instrumented packages share: attribute names, the requester hash, and the
// traceparent a resumed run links back to.
//
// Tracing is off unless an exporter is configured; then Setup returns a
// no-op provider and the instrumented packages skip their spans altogether
// (see Active). No global is set here: the program hands the provider to
// the packages that trace (and may set the otel global itself).
package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The variables Setup reads (the OpenTelemetry SDK's standard ones, plus
// EnvContent). OTEL_BSP_* (batching) are read by the SDK itself.
const (
	EnvDisabled           = "OTEL_SDK_DISABLED"
	EnvExporter           = "OTEL_TRACES_EXPORTER"
	EnvEndpoint           = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint     = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol           = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol     = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvHeaders            = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders      = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvTimeout            = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvTracesTimeout      = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvServiceName        = "OTEL_SERVICE_NAME"
	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	EnvSampler            = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg         = "OTEL_TRACES_SAMPLER_ARG"
	// EnvContent=true records prompts and completions on model call spans
	// (gen_ai.input.messages, gen_ai.output.messages) and search queries.
	// Off by default: they may hold what people asked in private.
	EnvContent = "DEEPRESEARCH_TRACE_CONTENT"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is unset.
const DefaultServiceName = "deepresearch"

// Setup is the tracing of a process: a provider to hand to the packages
// that trace, and Shutdown to flush it before the process exits.
type Setup struct {
	// Provider is a no-op provider when tracing is off.
	Provider trace.TracerProvider
	// Content: record prompts, completions and queries (EnvContent).
	Content bool
	sdk     *sdktrace.TracerProvider
}

// Enabled reports whether spans are exported.
func (s *Setup) Enabled() bool { return s != nil && s.sdk != nil }

// Shutdown exports what is buffered and stops the exporter; a no-op when
// tracing is off. Call it before the process exits, with a deadline.
func (s *Setup) Shutdown(ctx context.Context) error {
	if s == nil || s.sdk == nil {
		return nil
	}
	if err := s.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// Options of New.
type Options struct {
	// Getenv reads the environment (os.Getenv in the program, a map in
	// tests). Required.
	Getenv func(string) string
	// Version is service.version.
	Version string
	// SpanProcessors are added to the provider (tests: a span recorder).
	// With one, tracing is on even if no exporter is configured.
	SpanProcessors []sdktrace.SpanProcessor
}

// New reads the standard variables. Tracing is on when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set,
// or OTEL_TRACES_EXPORTER=otlp (the default endpoint, localhost); it is off
// when none of them is, when OTEL_TRACES_EXPORTER=none, and when
// OTEL_SDK_DISABLED=true. A wrong value is an error naming the variable.
func New(ctx context.Context, o Options) (*Setup, error) {
	env := func(k string) string { return strings.TrimSpace(o.Getenv(k)) }
	s := &Setup{Provider: noop.NewTracerProvider()}
	content, err := boolVar(env, EnvContent)
	if err != nil {
		return nil, err
	}
	s.Content = content
	disabled, err := boolVar(env, EnvDisabled)
	if err != nil {
		return nil, err
	}
	if disabled {
		return s, nil
	}
	exporters, err := exportersFrom(ctx, env)
	if err != nil {
		return nil, err
	}
	if len(exporters) == 0 && len(o.SpanProcessors) == 0 {
		return s, nil
	}
	sampler, err := samplerFrom(env)
	if err != nil {
		return nil, err
	}
	res, err := resourceFrom(env, o.Version)
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSampler(sampler), sdktrace.WithResource(res)}
	for _, e := range exporters {
		opts = append(opts, sdktrace.WithBatcher(e))
	}
	for _, p := range o.SpanProcessors {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	s.sdk = sdktrace.NewTracerProvider(opts...)
	s.Provider = s.sdk
	return s, nil
}

// boolVar reads the variable k as a bool (false when unset).
func boolVar(env func(string) string, k string) (bool, error) {
	v := env(k)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", k, v)
	}
	return b, nil
}

// exportersFrom are the exporters the variables ask for: OTLP when an
// endpoint is set or OTEL_TRACES_EXPORTER=otlp, none otherwise.
func exportersFrom(ctx context.Context, env func(string) string) ([]sdktrace.SpanExporter, error) {
	switch ex := strings.ToLower(env(EnvExporter)); ex {
	case "none":
		return nil, nil
	case "", "otlp":
		if ex == "" && env(EnvEndpoint) == "" && env(EnvTracesEndpoint) == "" {
			return nil, nil // nothing configured: off
		}
		exp, err := otlpExporter(ctx, env)
		if err != nil {
			return nil, err
		}
		return []sdktrace.SpanExporter{exp}, nil
	default:
		return nil, fmt.Errorf("%s=%q: want otlp or none", EnvExporter, ex)
	}
}

// otlpExporter is the OTLP exporter the variables describe: HTTP with
// protobuf (the default) or gRPC.
func otlpExporter(ctx context.Context, env func(string) string) (sdktrace.SpanExporter, error) {
	protoVar, proto := EnvTracesProtocol, env(EnvTracesProtocol)
	if proto == "" {
		protoVar, proto = EnvProtocol, env(EnvProtocol)
	}
	headers, err := headersFrom(env)
	if err != nil {
		return nil, err
	}
	timeout, err := timeoutFrom(env)
	if err != nil {
		return nil, err
	}
	switch proto {
	case "", "http/protobuf":
		opts := []otlptracehttp.Option{otlptracehttp.WithHeaders(headers)}
		if timeout > 0 {
			opts = append(opts, otlptracehttp.WithTimeout(timeout))
		}
		if u, err := endpointURL(env, "/v1/traces"); err != nil {
			return nil, err
		} else if u != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP/HTTP exporter: %w", err)
		}
		return exp, nil
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithHeaders(headers)}
		if timeout > 0 {
			opts = append(opts, otlptracegrpc.WithTimeout(timeout))
		}
		if u, err := endpointURL(env, ""); err != nil {
			return nil, err
		} else if u != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(u))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP/gRPC exporter: %w", err)
		}
		return exp, nil
	}
	return nil, fmt.Errorf("%s=%q: want http/protobuf or grpc", protoVar, proto)
}

// endpointURL is the traces endpoint: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as
// it is, or OTEL_EXPORTER_OTLP_ENDPOINT with path appended (HTTP: /v1/traces).
// "" leaves the exporter's default (localhost).
func endpointURL(env func(string) string, path string) (string, error) {
	name, v := EnvTracesEndpoint, env(EnvTracesEndpoint)
	if v == "" {
		name, v = EnvEndpoint, env(EnvEndpoint)
		if v == "" {
			return "", nil
		}
		v = strings.TrimRight(v, "/") + path
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: want a URL such as http://localhost:4318", name)
	}
	return v, nil
}

// headersFrom reads "key=value,key2=value2" (values URL-encoded).
func headersFrom(env func(string) string) (map[string]string, error) {
	h := map[string]string{}
	for _, name := range []string{EnvHeaders, EnvTracesHeaders} { // the specific one wins
		for _, kv := range strings.Split(env(name), ",") {
			if strings.TrimSpace(kv) == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("%s: want key=value pairs separated by commas", name)
			}
			dv, err := url.PathUnescape(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("%s: header %s: %w", name, k, err)
			}
			h[k] = dv
		}
	}
	return h, nil
}

// timeoutFrom reads the export timeout in milliseconds (0: the default).
func timeoutFrom(env func(string) string) (time.Duration, error) {
	name, v := EnvTracesTimeout, env(EnvTracesTimeout)
	if v == "" {
		name, v = EnvTimeout, env(EnvTimeout)
	}
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 {
		return 0, fmt.Errorf("%s=%q: want milliseconds", name, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// samplerFrom reads OTEL_TRACES_SAMPLER and its argument; the default is
// parentbased_always_on.
func samplerFrom(env func(string) string) (sdktrace.Sampler, error) {
	arg := env(EnvSamplerArg)
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, fmt.Errorf("%s=%q: want a ratio from 0 to 1", EnvSamplerArg, arg)
		}
		return f, nil
	}
	switch v := env(EnvSampler); v {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if v == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	default:
		return nil, fmt.Errorf("%s=%q: want always_on, always_off, traceidratio or their parentbased_ forms", EnvSampler, v)
	}
}

// resourceFrom describes this process: service.name (OTEL_SERVICE_NAME, else
// OTEL_RESOURCE_ATTRIBUTES' service.name, else deepresearch), service.version
// and the other OTEL_RESOURCE_ATTRIBUTES.
func resourceFrom(env func(string) string, version string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName(DefaultServiceName)}
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	for _, kv := range strings.Split(env(EnvResourceAttributes), ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: want key=value pairs separated by commas", EnvResourceAttributes)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", EnvResourceAttributes, k, err)
		}
		attrs = append(attrs, attribute.String(k, dv))
	}
	if n := env(EnvServiceName); n != "" {
		attrs = append(attrs, semconv.ServiceName(n))
	}
	// later attributes of one key win
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL, attrs...))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// Active reports whether tp records anything: false for nil and for the
// no-op provider, so instrumented code can skip its spans (and their
// allocations) when tracing is off.
func Active(tp trace.TracerProvider) bool {
	if tp == nil {
		return false
	}
	_, isNoop := tp.(noop.TracerProvider)
	return !isNoop
}

// Hash is an opaque stable stand-in for an identifier that must not be
// exported as it is (a Slack user id): 16 hex digits of its SHA-256.
func Hash(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("deepresearch:" + id))
	return hex.EncodeToString(sum[:8])
}

// TraceParent is the W3C traceparent of the span in ctx ("" when there is
// none), to store with a run so a later process can link to it.
func TraceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// SpanContext parses a stored traceparent; ok is false for "" or a
// malformed one. The span context is marked remote.
func SpanContext(traceparent string) (trace.SpanContext, bool) {
	if traceparent == "" {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// ErrorType describes err for a span's error.type without its message
// (which may quote a page, a prompt or a URL): a cancellation, or the Go
// type of the first error in its chain that is more than a wrapper.
func ErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch t := fmt.Sprintf("%T", e); t {
		case "*fmt.wrapError", "*fmt.wrapErrors", "*errors.errorString", "*errors.joinError":
		default:
			return t
		}
	}
	return "error"
}
