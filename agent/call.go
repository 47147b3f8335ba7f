package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"deepresearch/agent/dataviz"
	"deepresearch/agent/llm"
	"deepresearch/graph"
	"deepresearch/prompts"
)

// caller makes the LLM calls of one node execution and adds up their usage,
// which the node returns as a write (so usage survives the process).
type caller struct {
	a    *core
	node string
	mu   sync.Mutex
	u    Usage
}

func (a *core) caller(node string) *caller { return &caller{a: a, node: node} }

func (c *caller) usage() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.u
}

type speculativeKey struct{}

// withSpeculative marks the calls of ctx as speculative (on): made before
// it is known whether their answer will be used.
func withSpeculative(ctx context.Context, on bool) context.Context {
	if !on {
		return ctx
	}
	return context.WithValue(ctx, speculativeKey{}, true)
}

func speculativeFrom(ctx context.Context) bool {
	on, _ := ctx.Value(speculativeKey{}).(bool)
	return on
}

// speculation times a speculative call against the judgement it runs
// alongside: when its answer is used, the wall time saved is how long the
// two overlapped (the call would otherwise have started after the
// judgement); when it is not, its tokens are wasted.
type speculation struct {
	on                 bool
	t0, done, judgedAt time.Time
	resp               llm.Response
	err                error
}

func (s *speculation) start(on bool) { s.on, s.t0 = on, time.Now() }

// answered runs in the call's goroutine, before the channel it closes.
func (s *speculation) answered(resp llm.Response, err error) {
	s.done, s.resp, s.err = time.Now(), resp, err
}

func (s *speculation) judged() { s.judgedAt = time.Now() }

// settle adds what the speculation saved or wasted to c's usage, once the
// call has returned.
func (c *caller) settle(s speculation, superseded bool) {
	if !s.on || s.done.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !superseded && s.err == nil:
		end := s.done
		if s.judgedAt.Before(end) {
			end = s.judgedAt
		}
		c.u.SpeculativeSavedMS += max(end.Sub(s.t0), 0).Milliseconds()
	case superseded && s.err == nil:
		// answered before it was called off, and replaced all the same
		n := s.resp.Billed().TotalTokens
		c.u.WastedTokens += n
		c.u.SpeculativeWasted += n
	}
}

func (c *caller) record(ctx context.Context, resp llm.Response, err error) {
	calledOff := err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil
	c.mu.Lock()
	// what reached the server is paid for, answered or not
	c.u.Requests += resp.Requests
	c.u.PromptTokens += resp.Wasted.PromptTokens
	c.u.CompletionTokens += resp.Wasted.CompletionTokens
	c.u.WastedTokens += resp.Wasted.TotalTokens
	if calledOff && speculativeFrom(ctx) {
		c.u.SpeculativeWasted += resp.Wasted.TotalTokens
	}
	if err != nil && !calledOff { // called off (a run cancelled, an answer no longer needed): not a failure
		c.u.Failures++
	}
	if resp.Usage.TotalTokens > 0 || resp.Usage.PromptTokens > 0 {
		c.u.Calls++
		c.u.PromptTokens += resp.Usage.PromptTokens
		c.u.CompletionTokens += resp.Usage.CompletionTokens
		c.u.Cost += resp.Cost
	}
	c.mu.Unlock()
	if calledOff {
		return
	}
	if err != nil {
		c.a.log.Warn("llm call failed", "node", c.node, "err", err)
		return
	}
	t := &Tokens{Node: c.node, Call: resp.Usage.PromptTokens + resp.Usage.CompletionTokens}
	if m := llm.MeterFrom(ctx); m != nil {
		t.Used, t.Budget = m.Used(), m.Budget()
	}
	emit(ctx, Event{Kind: EventTokens, Tokens: t})
}

func messages(p prompts.Prompt) []llm.Message {
	return []llm.Message{llm.System(p.System), llm.User(p.User)}
}

// structured asks for JSON matching T's schema.
func structured[T any](ctx context.Context, c *caller, role llm.Role, p prompts.Prompt, final bool, out *T) error {
	schema, err := llm.SchemaFor[T]()
	if err != nil {
		return err
	}
	ctx = llm.WithNode(ctx, c.node)
	req := llm.Request{Role: role, Messages: messages(p), Final: final, SchemaName: schemaTitle(out)}
	// graph.Memo stores the answer before returning it, so a node re-run
	// after a crash or a later failure does not pay for this call again.
	m, err := graph.Memo(ctx, memoKey(c.node, req, schemaName[T]()), func() (_ memoJSON, err error) {
		ctx, span := c.a.modelSpan(ctx, req)
		ctx = c.watchModel(ctx, span)
		var resp llm.Response
		defer func() { c.a.endModelSpan(span, resp, err) }()
		release, err := c.a.modelSlot(ctx)
		if err != nil {
			return memoJSON{}, err
		}
		defer release()
		resp, err = c.a.llm.ChatJSON(ctx, req, schema, out)
		if err != nil {
			return memoJSON{Resp: resp}, err
		}
		raw, err := json.Marshal(out)
		return memoJSON{Resp: resp, Out: raw}, err
	})
	resp := m.Resp
	if err == nil && m.Out != nil {
		err = json.Unmarshal(m.Out, out)
	}
	c.record(ctx, resp, err)
	if err != nil {
		return fmt.Errorf("%s: %w", c.node, err)
	}
	return nil
}

// chat asks for text (or tool calls).
func (c *caller) chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	ctx = llm.WithNode(ctx, c.node)
	resp, err := graph.Memo(ctx, memoKey(c.node, req, ""), func() (resp llm.Response, err error) {
		ctx, span := c.a.modelSpan(ctx, req)
		ctx = c.watchModel(ctx, span)
		defer func() { c.a.endModelSpan(span, resp, err) }()
		release, err := c.a.modelSlot(ctx)
		if err != nil {
			return llm.Response{}, err
		}
		defer release()
		return c.a.llm.Chat(ctx, req)
	})
	c.record(ctx, resp, err)
	if err != nil {
		return resp, fmt.Errorf("%s: %w", c.node, err)
	}
	return resp, nil
}

// memoJSON is a structured call's stored answer.
type memoJSON struct {
	Resp llm.Response    `json:"resp"`
	Out  json.RawMessage `json:"out"`
}

// memoKey identifies an LLM request within a node's task.
func memoKey(node string, req llm.Request, schema string) string {
	b, _ := json.Marshal(struct {
		Node   string
		Req    llm.Request
		Schema string
	}{node, req, schema})
	sum := sha256.Sum256(b)
	return "llm:" + node + ":" + hex.EncodeToString(sum[:12])
}

// schemaTitle names a structured call's JSON schema for what it asks (the
// API recommends a meaningful name; traces and servers show it) rather
// than the client's generic "response".
func schemaTitle(out any) string {
	switch out.(type) {
	case *coordOut:
		return "route"
	case *planOut:
		return "plan"
	case *replanOut:
		return "replan"
	case *summaryOut:
		return "findings"
	case *reflectOut:
		return "check"
	case *reviewOut:
		return "review"
	case *routeOut:
		return "next_step"
	case *dataviz.Proposal:
		return "table"
	}
	return ""
}

func schemaName[T any]() string {
	var zero T
	return fmt.Sprintf("%T", zero)
}

// budgetErr reports which budget err says ran out ("" when the LLM failed
// instead).
func budgetErr(err error) Budget {
	switch {
	case errors.Is(err, llm.ErrBudgetExceeded):
		return BudgetTokens
	case errors.Is(err, context.DeadlineExceeded):
		return BudgetTime
	}
	return ""
}

// exhausted reports which budget (if any) is spent: tokens once only the
// reserve for the final answer is left, time after the deadline.
func (a *core) exhausted(ctx context.Context, deadline time.Time) Budget {
	if m := llm.MeterFrom(ctx); m != nil && m.MustFinalize() {
		return BudgetTokens
	}
	if !deadline.IsZero() && !a.now().Before(deadline) {
		return BudgetTime
	}
	return ""
}

// withDeadline bounds research work by the run's wall-clock budget (on the
// agent's clock, which tests may fake).
func (a *core) withDeadline(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, deadline.Sub(a.now()))
}

// emit sends a progress event from a node.
func emit(ctx context.Context, e Event) { graph.Emit(ctx, e) }

// watchModel shows the run's waits on the model in its own progress (a
// retry, an answer slow to come) instead of minutes of silence, and as
// events on the call's span (nil: untraced).
func (c *caller) watchModel(ctx context.Context, span trace.Span) context.Context {
	return llm.WithNotices(ctx, func(n llm.Notice) {
		modelNotice(span, n)
		switch n.Kind {
		case llm.NoticeRetry:
			emit(ctx, Event{Kind: EventWaiting, Message: fmt.Sprintf("waiting for the model (retry %d)", n.Retry)})
		case llm.NoticeSlow:
			emit(ctx, Event{Kind: EventWaiting, Message: fmt.Sprintf("waiting for the model (%s without an answer)", n.Wait.Round(time.Second))})
		}
	})
}

func phase(ctx context.Context, p Phase) { emit(ctx, Event{Kind: EventPhase, Phase: p}) }

func today(t time.Time) string { return t.Format("2006-01-02") }
