package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of the streaming deadlines and of hedging (see Options).
const (
	DefaultFirstTokenTimeout = 60 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
	DefaultHedgeAfter        = time.Second
	// reasoningFirstToken is the default first-token deadline of reasoning
	// models (o1, o3, gpt-5 …), which may think for minutes.
	reasoningFirstToken = 5 * time.Minute
	// hedgeInitial is the wait before hedging while nothing has been seen.
	hedgeInitial = 3 * time.Second
	// maxHedges is how many extra requests one attempt may send.
	maxHedges      = 2
	latencySamples = 32
)

// stallError is an attempt that got no first chunk, or no next chunk, in
// time. It counts as a timeout (errors.Is context.DeadlineExceeded).
type stallError struct {
	what  string // "first token" or "next token"
	after time.Duration
}

func (e *stallError) Error() string {
	return fmt.Sprintf("no %s from the model within %s", e.what, e.after)
}

func (e *stallError) Is(target error) bool { return target == context.DeadlineExceeded }

// latencies remembers, per model, how long the last answers took to start.
type latencies struct {
	mu sync.Mutex
	m  map[string][]time.Duration
}

func (l *latencies) add(model string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string][]time.Duration{}
	}
	s := append(l.m[model], d)
	if len(s) > latencySamples {
		s = s[len(s)-latencySamples:]
	}
	l.m[model] = s
}

// slowest returns the slowest recent first answer of model (0: none seen).
func (l *latencies) slowest(model string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m time.Duration
	for _, d := range l.m[model] {
		m = max(m, d)
	}
	return m
}

// hedgeAfter is how long an attempt waits for its first chunk before a
// second, identical request is sent (0: never): half as long again as the
// slowest first answer of the last latencySamples — later than nearly every
// answer starts, so a hedge is rarely an extra request, and soon enough that
// a hung request costs little more than a slow one.
func (c *Client) hedgeAfter(model string) time.Duration {
	if c.opts.HedgeAfter < 0 {
		return 0
	}
	d := hedgeInitial
	if s := c.lat.slowest(model); s > 0 {
		d = s + s/2
	} else if isReasoningModel(model) {
		return 0 // it thinks before its first token: wait to learn how long
	}
	d = max(d, c.opts.HedgeAfter)
	if ft := c.firstTokenTimeout(model); d >= ft {
		return 0 // the first-token deadline comes first
	}
	return d
}

// firstTokenTimeout is FirstTokenTimeout, or for a reasoning model (which
// streams nothing while it thinks) reasoningFirstToken unless it was set.
func (c *Client) firstTokenTimeout(model string) time.Duration {
	d := c.opts.FirstTokenTimeout
	if d <= 0 {
		d = DefaultFirstTokenTimeout
		if isReasoningModel(model) {
			d = reasoningFirstToken
		}
	}
	if c.opts.Timeout > 0 && c.opts.Timeout < d {
		d = c.opts.Timeout
	}
	return d
}

type result struct {
	resp openai.ChatCompletionResponse
	hdr  http.Header
	err  error
}

// attempt makes one attempt of a call: one request, and up to maxHedges
// more (hedges) while none has started answering well after the latency
// seen so far. The first answer wins and the others are cancelled. A
// request that fails before any has started answering ends the attempt
// (the retry loop then honours Retry-After and backoff).
//
// sent is how many requests of the attempt reached the server (were written
// whole to a connection): the request and its hedges, not one called off
// before it went out.
func (c *Client) attempt(ctx context.Context, oreq openai.ChatCompletionRequest, model string, nt notifier, attempt int) (_ openai.ChatCompletionResponse, _ http.Header, sent int, _ error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wrote atomic.Int32
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			wrote.Add(1)
		}
	}})
	defer func() { sent = int(wrote.Load()) }()
	results := make(chan result, 1+maxHedges)
	startedCh := make(chan struct{})
	var once sync.Once
	mark := func() { once.Do(func() { close(startedCh) }) }
	launch := func() {
		go func() {
			resp, hdr, err := c.send(ctx, oreq, model, mark)
			results <- result{resp, hdr, err}
		}()
	}
	launch()
	running, hedges, answering := 1, 0, false
	started := (<-chan struct{})(startedCh)
	var hedge <-chan time.Time
	d := c.hedgeAfter(model)
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		hedge = t.C
	}
	var giveUp <-chan time.Time
	for {
		select {
		case <-started:
			started, hedge, giveUp, answering = nil, nil, nil, true // no hedge needed
		case <-giveUp:
			// the request and every hedge hang: waiting on for the
			// first-token deadline would only wait; a fresh attempt may not
			return openai.ChatCompletionResponse{}, nil, 0,
				&stallError{what: "first token", after: time.Duration(hedges+1) * d}
		case <-hedge:
			hedges++
			hedge = nil
			if hedges < maxHedges {
				hedge = time.After(d)
			} else {
				giveUp = time.After(d)
			}
			c.log.WarnContext(ctx, "llm hedging a slow attempt", "model", model, "attempt", attempt, "hedge", hedges)
			trace.SpanFromContext(ctx).AddEvent("gen_ai.hedge", trace.WithAttributes(attribute.Int("deepresearch.attempts", attempt), attribute.Int("deepresearch.hedge", hedges)))
			nt.send(NoticeSlow, attempt, time.Duration(hedges)*d, nil)
			running++
			launch()
		case r := <-results:
			running--
			if r.err == nil || running == 0 || !answering {
				return r.resp, r.hdr, 0, r.err
			}
		}
	}
}

// send makes one request, streamed unless the endpoint does not stream;
// first is called when the answer starts.
func (c *Client) send(ctx context.Context, oreq openai.ChatCompletionRequest, model string, first func()) (openai.ChatCompletionResponse, http.Header, error) {
	if c.opts.NoStream || c.noStream.Load() {
		actx, cancel := context.WithTimeout(ctx, c.plainTimeout())
		defer cancel()
		t0 := time.Now()
		resp, err := c.api.CreateChatCompletion(actx, oreq)
		if err == nil {
			first()
			c.lat.add(model, time.Since(t0))
		}
		return resp, resp.Header(), err
	}
	resp, hdr, err := c.stream(ctx, oreq, model, first)
	if err != nil && ctx.Err() == nil && streamRefused(err) {
		if c.noStream.CompareAndSwap(false, true) {
			c.log.InfoContext(ctx, "llm: the server does not stream; using plain requests", "model", model, "error", err)
		}
		return c.send(ctx, oreq, model, first)
	}
	return resp, hdr, err
}

func (c *Client) plainTimeout() time.Duration {
	if c.opts.Timeout > 0 {
		return c.opts.Timeout
	}
	return DefaultTimeout
}

// streamRefused reports whether a 400 blames streaming.
func streamRefused(err error) bool {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	msg := ""
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode == http.StatusBadRequest:
		msg = apiErr.Message
		if apiErr.Param != nil {
			msg += " " + *apiErr.Param
		}
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode == http.StatusBadRequest:
		msg = string(reqErr.Body)
	default:
		return false
	}
	return strings.Contains(strings.ToLower(msg), "stream")
}

type headerBoxKey struct{}

// headerBox keeps the headers of a streamed request's response, which
// go-openai drops when the status is an error (Retry-After lives there).
type headerBox struct {
	mu sync.Mutex
	h  http.Header
}

func (b *headerBox) set(h http.Header) {
	b.mu.Lock()
	b.h = h
	b.mu.Unlock()
}

func (b *headerBox) get() http.Header {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.h
}

// stream makes one streamed request and accumulates the answer into a
// chat completion. The attempt fails when no chunk arrives within the
// first-token deadline, or no next chunk within the idle deadline; Timeout,
// when set, bounds the whole attempt too.
func (c *Client) stream(ctx context.Context, oreq openai.ChatCompletionRequest, model string, first func()) (openai.ChatCompletionResponse, http.Header, error) {
	var cancel context.CancelFunc
	if c.opts.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	box := &headerBox{}
	ctx = context.WithValue(ctx, headerBoxKey{}, box)

	var stalled atomic.Pointer[stallError]
	ft, idle := c.firstTokenTimeout(model), c.opts.IdleTimeout
	watchdog := time.AfterFunc(ft, func() {
		stalled.CompareAndSwap(nil, &stallError{what: "first token", after: ft})
		cancel()
	})
	defer func() { watchdog.Stop() }()
	fail := func(err error) (openai.ChatCompletionResponse, http.Header, error) {
		if s := stalled.Load(); s != nil {
			err = s
		}
		return openai.ChatCompletionResponse{}, box.get(), err
	}

	sreq := oreq
	sreq.Stream = true
	sreq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	t0 := time.Now()
	st, err := c.api.CreateChatCompletionStream(ctx, sreq)
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	var acc accumulator
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(err)
		}
		if !watchdog.Stop() {
			// it fired: the attempt is being cancelled
			return fail(context.DeadlineExceeded)
		}
		if acc.chunks == 0 {
			first()
			c.lat.add(model, time.Since(t0))
			watchdog = time.AfterFunc(idle, func() {
				stalled.CompareAndSwap(nil, &stallError{what: "next token", after: idle})
				cancel()
			})
		} else {
			watchdog.Reset(idle)
		}
		acc.add(chunk)
	}
	if acc.chunks == 0 || acc.finish == "" {
		return fail(fmt.Errorf("%w: the stream ended before the answer was complete", ErrMalformedResponse))
	}
	return acc.response(), box.get(), nil
}

// accumulator puts a streamed answer back together.
type accumulator struct {
	chunks                      int
	id, model                   string
	content, reasoning, refusal strings.Builder
	tools                       []openai.ToolCall
	fn                          *openai.FunctionCall
	finish                      openai.FinishReason
	usage                       openai.Usage
}

func (a *accumulator) add(ch openai.ChatCompletionStreamResponse) {
	a.chunks++
	if ch.ID != "" {
		a.id = ch.ID
	}
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.Usage != nil {
		a.usage = *ch.Usage
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		d := c.Delta
		a.content.WriteString(d.Content)
		a.reasoning.WriteString(d.ReasoningContent)
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			a.addToolCall(tc)
		}
		if f := d.FunctionCall; f != nil {
			if a.fn == nil {
				a.fn = &openai.FunctionCall{}
			}
			a.fn.Name += f.Name
			a.fn.Arguments += f.Arguments
		}
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
	}
}

// addToolCall adds a tool call's delta: to the call its index names, else
// to the last call (a new one when it carries an ID or is the first).
func (a *accumulator) addToolCall(tc openai.ToolCall) {
	i := len(a.tools) - 1
	if tc.Index != nil {
		i = *tc.Index
	} else if tc.ID != "" || i < 0 {
		i = len(a.tools)
	}
	for len(a.tools) <= i {
		a.tools = append(a.tools, openai.ToolCall{Type: openai.ToolTypeFunction})
	}
	t := &a.tools[i]
	if tc.ID != "" {
		t.ID = tc.ID
	}
	if tc.Type != "" {
		t.Type = tc.Type
	}
	t.Function.Name += tc.Function.Name
	t.Function.Arguments += tc.Function.Arguments
}

func (a *accumulator) response() openai.ChatCompletionResponse {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: a.content.String(),
		ReasoningContent: a.reasoning.String(), Refusal: a.refusal.String(), ToolCalls: a.tools, FunctionCall: a.fn}
	return openai.ChatCompletionResponse{ID: a.id, Object: "chat.completion", Model: a.model,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: a.finish}}, Usage: a.usage}
}

// asStream turns the plain JSON answer of a server that ignored stream=true
// into the events of a stream, so the request is not made twice.
func asStream(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var cc openai.ChatCompletionResponse
	if err := json.Unmarshal(body, &cc); err != nil || len(cc.Choices) == 0 {
		return fmt.Errorf("%w: a plain answer to a streamed request that is not a chat completion", ErrMalformedResponse)
	}
	ch := cc.Choices[0]
	chunk := openai.ChatCompletionStreamResponse{ID: cc.ID, Model: cc.Model, Usage: &cc.Usage,
		Choices: []openai.ChatCompletionStreamChoice{{FinishReason: ch.FinishReason, Delta: openai.ChatCompletionStreamChoiceDelta{
			Role: ch.Message.Role, Content: ch.Message.Content, Refusal: ch.Message.Refusal,
			ReasoningContent: ch.Message.ReasoningContent, FunctionCall: ch.Message.FunctionCall}}}}
	for i, tc := range ch.Message.ToolCalls {
		idx := i
		tc.Index = &idx
		chunk.Choices[0].Delta.ToolCalls = append(chunk.Choices[0].Delta.ToolCalls, tc)
	}
	if chunk.Choices[0].FinishReason == "" {
		chunk.Choices[0].FinishReason = openai.FinishReasonStop
	}
	b, err := json.Marshal(chunk)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "data: %s\n\ndata: [DONE]\n\n", b)
	resp.Body = io.NopCloser(&out)
	resp.Header.Set("Content-Type", "text/event-stream")
	return nil
}
