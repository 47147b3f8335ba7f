package agent

// OpenTelemetry spans of a research turn (see package tracing): one span per
// Start, Resume, Continue or Cancel of a thread, the graph's task spans
// under it (Options.TracerProvider is the graph's too), and under those a
// span per model call (GenAI conventions), search, page read and citation
// check. All of it is skipped when tracing is off (a.tr is nil).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"deepresearch/agent/citation"
	"deepresearch/agent/llm"
	"deepresearch/redact"
	"deepresearch/tools/search"
	"deepresearch/tracing"
)

// Values of tracing.Call on a turn's span.
const (
	callStart    = "start"
	callResume   = "resume"
	callContinue = "continue"
	callCancel   = "cancel"
)

// traceTurn starts the span of one call on a thread's turn. s is the
// thread's state as loaded: for a start, the previous turn (linked to);
// otherwise the turn being carried on, whose stored traceparent becomes
// the parent (the same trace, across processes and hours) and a link. end
// records where the call stopped.
func (a *core) traceTurn(ctx context.Context, call, thread string, s State, req Request) (context.Context, func(*Result, error)) {
	if a.tr == nil {
		return ctx, func(*Result, error) {}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	if prev, ok := tracing.SpanContext(s.TraceParent); ok {
		kind := tracing.LinkResumed
		if call == callStart {
			kind = tracing.LinkPreviousTurn
		} else if !trace.SpanContextFromContext(ctx).IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, prev)
		}
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: prev, Attributes: []attribute.KeyValue{tracing.LinkKind.String(kind)}}))
	}
	lang := s.Language
	if call == callStart {
		lang = req.Language
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName("deepresearch"),
		semconv.GenAIConversationID(thread), tracing.ThreadID.String(thread), tracing.Call.String(call),
	}
	if req.Tag != "" {
		attrs = append(attrs, tracing.RunID.String(req.Tag))
	}
	if req.Requester != "" {
		attrs = append(attrs, tracing.Requester.String(tracing.Hash(req.Requester)))
	}
	if lang != "" {
		attrs = append(attrs, tracing.Language.String(lang))
	}
	opts = append(opts, trace.WithAttributes(attrs...))
	ctx, span := a.tr.Start(ctx, "research "+call, opts...)
	return ctx, func(res *Result, err error) {
		outcome := "error"
		if res != nil {
			outcome = string(res.Status)
			if res.Repeated {
				span.SetAttributes(attribute.Bool("deepresearch.repeated", true))
			}
			if res.Language != "" {
				span.SetAttributes(tracing.Language.String(res.Language))
			}
		}
		if err != nil {
			switch {
			case errors.Is(err, ErrCancelled):
				outcome = string(StatusCancelled) // Cancel: for good
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				outcome = "stopped" // shut down or lease lost: continued later
			}
			span.SetStatus(codes.Error, errorKind(err))
			span.SetAttributes(tracing.ErrorKind.String(errorKind(err)))
		}
		span.SetAttributes(tracing.Outcome.String(outcome))
		span.End()
	}
}

// modelSpan starts the span of one model call (chat or structured), named
// "chat {model}" as the GenAI conventions say, and makes the client's
// notices (retries, slow answers) its events.
func (a *core) modelSpan(ctx context.Context, req llm.Request) (context.Context, trace.Span) {
	if a.tr == nil {
		return ctx, nil
	}
	model := req.Model
	if model == "" {
		if m, ok := a.llm.(interface{ ModelFor(llm.Role) string }); ok {
			model = m.ModelFor(req.Role)
		}
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI,
		tracing.Role.String(string(req.Role)), tracing.Node.String(llm.NodeFrom(ctx))}
	if model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(model))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*req.Temperature))
	}
	if a.traceContent {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(inputMessages(req.Messages)))
	}
	ctx, span := a.tr.Start(ctx, strings.TrimSpace("chat "+model), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, span
}

// modelNotice records a notice of the client on the call's span.
func modelNotice(span trace.Span, n llm.Notice) {
	if span == nil {
		return
	}
	switch n.Kind {
	case llm.NoticeRetry:
		span.AddEvent("gen_ai.retry", trace.WithAttributes(tracing.Attempts.Int(n.Attempt),
			tracing.Wait.Int64(n.Wait.Milliseconds()), tracing.ErrorKind.String(errorKind(n.Err))))
	case llm.NoticeSlow:
		span.AddEvent("gen_ai.slow", trace.WithAttributes(tracing.Attempts.Int(n.Attempt), tracing.Wait.Int64(n.Wait.Milliseconds())))
	}
}

// endModelSpan records the answer: tokens, finish reason, attempts, cost.
func (a *core) endModelSpan(span trace.Span, resp llm.Response, err error) {
	if span == nil {
		return
	}
	if resp.Model != "" {
		span.SetAttributes(semconv.GenAIResponseModel(resp.Model))
	}
	if resp.ID != "" {
		span.SetAttributes(semconv.GenAIResponseID(resp.ID))
	}
	if resp.FinishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(resp.FinishReason))
	}
	if resp.Usage.PromptTokens > 0 || resp.Usage.CompletionTokens > 0 {
		span.SetAttributes(semconv.GenAIUsageInputTokens(resp.Usage.PromptTokens), semconv.GenAIUsageOutputTokens(resp.Usage.CompletionTokens))
	}
	if resp.Attempts > 0 {
		span.SetAttributes(tracing.Attempts.Int(resp.Attempts))
	}
	if resp.Cost > 0 {
		span.SetAttributes(tracing.Cost.Float64(resp.Cost))
	}
	if a.traceContent && err == nil {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputMessages(resp)))
	}
	if err != nil {
		span.SetStatus(codes.Error, errorKind(err))
		span.SetAttributes(tracing.ErrorKind.String(errorKind(err)))
	}
	span.End()
}

// tracedSearcher gives every search a span: the provider, the number of
// results and (with content recording) the query.
type tracedSearcher struct {
	next    Searcher
	tr      trace.Tracer
	content bool
}

func (t tracedSearcher) Search(ctx context.Context, q search.Query) ([]search.Result, error) {
	attrs := []attribute.KeyValue{attribute.String("deepresearch.search.provider", fmt.Sprintf("%T", t.next))}
	if t.content {
		attrs = append(attrs, semconv.GenAIRetrievalQueryText(q.Text))
	}
	ctx, span := t.tr.Start(ctx, "search", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	rs, err := t.next.Search(ctx, q)
	span.SetAttributes(tracing.Results.Int(len(rs)))
	if err != nil {
		span.SetStatus(codes.Error, errorKind(err))
		span.SetAttributes(tracing.ErrorKind.String(errorKind(err)))
	}
	return rs, err
}

// pageSpan starts the span of one page read: the host and the URL with its
// secrets masked (redact.URL). The fetcher adds the status and size
// (notePage).
func (a *core) pageSpan(ctx context.Context, rawURL string) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{semconv.URLFull(redact.URL(rawURL))}
	if u, err := url.Parse(rawURL); err == nil && u.Hostname() != "" {
		attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
	}
	return a.tr.Start(ctx, "read page", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

func endPageSpan(span trace.Span, pg Page, shared bool, err error) {
	span.SetAttributes(tracing.CacheHit.Bool(shared))
	if err != nil {
		span.SetStatus(codes.Error, errorKind(err))
		span.SetAttributes(tracing.ErrorKind.String(errorKind(err)))
	} else {
		span.SetAttributes(attribute.Int("deepresearch.text_chars", len([]rune(pg.Text))))
	}
	span.End()
}

// notePage adds what the fetcher saw to the page read's span in ctx.
func notePage(ctx context.Context, status, bytes int) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if status > 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	}
	span.SetAttributes(tracing.Bytes.Int(bytes))
}

// checkCitations is checkDraft with a span: cited, verified, dropped.
func (a *core) checkCitations(ctx context.Context, text string, s State, ix evidenceIndex) (string, citation.Report) {
	var span trace.Span
	if a.tr != nil {
		_, span = a.tr.Start(ctx, "citation check")
	}
	out, rep := checkDraft(text, s, ix, a.opts.CitationMode)
	if span != nil {
		span.SetAttributes(tracing.Cited.Int(rep.Cited), tracing.Verified.Int(rep.Verified), tracing.Dropped.Int(rep.Dropped),
			attribute.Int("deepresearch.citations.repaired", rep.Repaired))
		span.End()
	}
	return out, rep
}

// errorKind describes err for a span without its message (which may quote
// a page, a prompt or a URL): the model client's error kind, a
// cancellation, else the error's Go type.
func errorKind(err error) string {
	var le *llm.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, llm.ErrBudgetExceeded):
		return "budget_exceeded"
	case errors.As(err, &le) && le.Kind != nil:
		k := strings.TrimPrefix(le.Kind.Error(), "llm: ")
		if le.Status > 0 {
			k = fmt.Sprintf("%s (%d)", k, le.Status)
		}
		return k
	}
	return tracing.ErrorType(err)
}

// inputMessages and outputMessages are the GenAI conventions' message
// JSON, recorded only with content recording on.
func inputMessages(ms []llm.Message) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type msg struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	out := make([]msg, 0, len(ms))
	for _, m := range ms {
		out = append(out, msg{Role: m.Role, Parts: []part{{Type: "text", Content: m.Content}}})
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func outputMessages(r llm.Response) string {
	b, _ := json.Marshal([]map[string]any{{
		"role": "assistant", "finish_reason": r.FinishReason,
		"parts": []map[string]string{{"type": "text", "content": r.Content}},
	}})
	return string(b)
}
