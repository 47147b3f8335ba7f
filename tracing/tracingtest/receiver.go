// Package tracingtest is an OTLP/HTTP trace receiver for tests: an
// httptest server that decodes the protobuf export requests the
// OpenTelemetry exporter sends (POST /v1/traces) and keeps their spans.
package tracingtest

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span with its resource's attributes.
type Span struct {
	Name               string
	TraceID, SpanID    string // hex
	ParentSpanID       string // hex; "" for a root
	Attributes         map[string]string
	Events             []string
	Links              []Link
	ResourceAttrs      map[string]string
	InstrumentationLib string
}

// Link is a span link.
type Link struct {
	TraceID, SpanID string
	Attributes      map[string]string
}

// Receiver collects exported spans.
type Receiver struct {
	URL string // the base URL, for OTEL_EXPORTER_OTLP_ENDPOINT

	mu       sync.Mutex
	spans    []Span
	requests int
	bad      []string
}

// NewReceiver starts a receiver, closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	fail := func(code int, why string) {
		r.mu.Lock()
		r.bad = append(r.bad, why)
		r.mu.Unlock()
		http.Error(w, why, code)
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		fail(http.StatusNotFound, req.Method+" "+req.URL.Path)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		fail(http.StatusUnsupportedMediaType, "content type "+ct)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	var er coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &er); err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	var got []Span
	for _, rs := range er.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				got = append(got, convert(sp, res, ss.GetScope().GetName()))
			}
		}
	}
	r.mu.Lock()
	r.requests++
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

func convert(sp *tracepb.Span, res map[string]string, scope string) Span {
	s := Span{Name: sp.GetName(), TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
		Attributes: attrs(sp.GetAttributes()), ResourceAttrs: res, InstrumentationLib: scope}
	if p := sp.GetParentSpanId(); len(p) > 0 {
		s.ParentSpanID = hex.EncodeToString(p)
	}
	for _, ev := range sp.GetEvents() {
		s.Events = append(s.Events, ev.GetName())
	}
	for _, l := range sp.GetLinks() {
		s.Links = append(s.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId()), Attributes: attrs(l.GetAttributes())})
	}
	return s
}

// attrs renders attribute values as strings (numbers in decimal, arrays
// of strings joined by commas).
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(x.BoolValue)
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, e := range x.ArrayValue.GetValues() {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.GetKey()] = strings.Join(parts, ",")
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Requests is the number of export requests decoded.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Rejected lists the requests that were not OTLP/HTTP protobuf exports.
func (r *Receiver) Rejected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}
