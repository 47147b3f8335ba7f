package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"deepresearch/clock"
)

// Headers the client adds to every request so that servers (and the
// llmtest fake) can tell which agent step is asking. They carry no secrets.
const (
	HeaderRole = "X-Deepresearch-Role"
	HeaderNode = "X-Deepresearch-Node"
)

// Client calls an OpenAI-compatible Chat Completions API with retries,
// per-role models, structured outputs and usage accounting. It is safe for
// concurrent use.
type Client struct {
	api      *openai.Client
	base     string // the endpoint, for messages
	opts     Options
	provider Provider
	log      *slog.Logger
	clk      clock.Clock
	jsonMode atomic.Int32 // index into jsonModes; only ever increases
	noStream atomic.Bool  // the endpoint refused stream=true
	lat      latencies    // recent first-answer latencies, for hedging
}

var jsonModes = []JSONMode{JSONModeSchema, JSONModeObject, JSONModePrompt}

// New returns a client. It fails with ErrConfig if no model is set or the
// base URL is invalid, and with ErrMissingAPIKey if the endpoint (OpenAI or
// Azure) needs a key and none is given.
func New(opts Options) (*Client, error) {
	if opts.Model == "" {
		return nil, fmt.Errorf("%w: no model: set Options.Model (%s)", ErrConfig, EnvModel)
	}
	prov := opts.provider()
	switch prov {
	case ProviderOpenAI, ProviderAzure, ProviderOllama, ProviderVLLM:
	default:
		return nil, fmt.Errorf("%w: unknown provider %q", ErrConfig, prov)
	}
	if opts.APIKey == "" && keyRequired(opts.BaseURL, prov) {
		return nil, fmt.Errorf("%w: set %s (or point %s at a server that needs no key)", ErrMissingAPIKey, EnvAPIKey, EnvBaseURL)
	}
	base, err := apiBase(opts.BaseURL, prov)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	c := &Client{
		api:      openai.NewClientWithConfig(apiConfig(opts, prov, base)),
		base:     base,
		opts:     opts,
		provider: prov,
		log:      opts.Logger,
		clk:      opts.Clock,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.clk == nil {
		c.clk = clock.Real{}
	}
	mode := slices.Index(jsonModes, opts.JSONMode)
	if opts.JSONMode == "" {
		mode = 0
	}
	if mode < 0 {
		return nil, fmt.Errorf("%w: unknown JSON mode %q", ErrConfig, opts.JSONMode)
	}
	c.jsonMode.Store(int32(mode))
	return c, nil
}

// apiBase is the API's base URL: base (OpenAI's by default) without a
// trailing slash, with /v1 when it has no path (Azure's aside).
func apiBase(base string, prov Provider) (string, error) {
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	u, err := parseBaseURL(base)
	if err != nil {
		return "", fmt.Errorf("%w: base URL: %v", ErrConfig, err)
	}
	if prov != ProviderAzure && strings.Trim(u.Path, "/") == "" {
		u.Path = "/v1"
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// apiConfig configures the OpenAI client for the provider: Azure's API
// version and deployments, or the base URL; requests go through headerDoer.
func apiConfig(opts Options, prov Provider, base string) openai.ClientConfig {
	var cfg openai.ClientConfig
	if prov == ProviderAzure {
		cfg = openai.DefaultAzureConfig(opts.APIKey, base)
		cfg.APIVersion = opts.AzureAPIVersion
		if cfg.APIVersion == "" {
			cfg.APIVersion = DefaultAzureAPIVersion
		}
		deployments := opts.AzureDeployments
		cfg.AzureModelMapperFunc = func(model string) string {
			if d := deployments[model]; d != "" {
				return d
			}
			return model
		}
	} else {
		cfg = openai.DefaultConfig(opts.APIKey)
		cfg.BaseURL = base
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	cfg.HTTPClient = headerDoer{hc}
	return cfg
}

// withDefaults fills the retry, timeout and backoff options left zero and
// clamps the negative ones.
func (opts Options) withDefaults() Options {
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	} else if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	opts.Timeout = max(opts.Timeout, 0)
	opts.FirstTokenTimeout = max(opts.FirstTokenTimeout, 0) // 0: the default, by model (see firstTokenTimeout)
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.HedgeAfter == 0 {
		opts.HedgeAfter = DefaultHedgeAfter
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if opts.SlowAfter == 0 {
		opts.SlowAfter = DefaultSlowAfter
	}
	return opts
}

// headerDoer adds the role and node headers from the request context. It
// never modifies the caller's http.Client or request.
type headerDoer struct{ c *http.Client }

func (d headerDoer) Do(r *http.Request) (*http.Response, error) {
	resp, err := d.do(r)
	if err != nil {
		return resp, err
	}
	if box, ok := r.Context().Value(headerBoxKey{}).(*headerBox); ok {
		box.set(resp.Header)
		if resp.StatusCode/100 == 2 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			// a server that ignored stream=true: its plain answer is used
			if err := asStream(resp); err != nil {
				return nil, err
			}
		}
	}
	return resp, nil
}

func (d headerDoer) do(r *http.Request) (*http.Response, error) {
	role, _ := r.Context().Value(roleKey).(Role)
	node := NodeFrom(r.Context())
	if role != "" || node != "" {
		r = r.Clone(r.Context())
		if role != "" {
			r.Header.Set(HeaderRole, headerSafe(string(role)))
		}
		if node != "" {
			r.Header.Set(HeaderNode, headerSafe(node))
		}
	}
	return d.c.Do(r)
}

func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '_'
		}
		return r
	}, s)
}

// ModelFor returns the model used for a role.
func (c *Client) ModelFor(r Role) string {
	m, _ := c.opts.modelFor(r)
	return m
}

// JSONMode returns the JSON mode Structured currently uses (it steps down
// after the server rejects response_format).
func (c *Client) JSONMode() JSONMode { return jsonModes[c.jsonMode.Load()] }

func (c *Client) resolveModel(req Request) (model, env string) {
	if req.Model != "" {
		return req.Model, ""
	}
	return c.opts.modelFor(req.Role)
}

// Chat sends one chat completion request, retrying transient failures.
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	model, env := c.resolveModel(req)
	oreq := c.buildRequest(model, req)
	return c.do(ctx, req, model, env, oreq)
}

// Ping checks the endpoint and key by listing models (GET /models). Use it
// at start-up to fail fast with a clear message; some servers (Azure) do
// not serve the list and answer 404, which Ping ignores.
func (c *Client) Ping(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, c.plainTimeout())
	defer cancel()
	list, err := c.api.ListModels(actx)
	if err == nil {
		return nil
	}
	f := c.classify(ctx, err, list.Header(), "", "")
	if f.kind == ErrModelNotFound {
		return nil
	}
	return f.toError(1)
}

func isReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 { // "openai/o3-mini" on gateways
		m = m[i+1:]
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

var emptyParams = json.RawMessage(`{"type":"object","properties":{},"required":[],"additionalProperties":false}`)

func (c *Client) buildRequest(model string, req Request) openai.ChatCompletionRequest {
	o := openai.ChatCompletionRequest{Model: model, Seed: req.Seed}
	reasoning := isReasoningModel(model)
	if req.MaxTokens > 0 {
		if reasoning {
			o.MaxCompletionTokens = req.MaxTokens
		} else {
			// max_tokens, not max_completion_tokens: OpenAI-compatible
			// servers (vLLM, Ollama, older gateways) know only the former.
			o.MaxTokens = req.MaxTokens //nolint:staticcheck // SA1019: deliberate, see above
		}
	}
	if req.Temperature != nil && !reasoning {
		t := float32(*req.Temperature)
		if t == 0 {
			// go-openai omits a zero temperature (omitempty), which means
			// "server default" (often 1). Send the smallest positive value.
			t = math.SmallestNonzeroFloat32
		}
		o.Temperature = t
	}
	o.Messages = make([]openai.ChatCompletionMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		o.Messages = append(o.Messages, om)
	}
	for _, t := range req.Tools {
		var params any = emptyParams
		if t.Parameters != nil {
			params = t.Parameters
		}
		o.Tools = append(o.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Strict: t.Strict, Parameters: params,
		}})
	}
	switch req.ToolChoice {
	case "":
	case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		o.ToolChoice = req.ToolChoice
	default:
		o.ToolChoice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: req.ToolChoice}}
	}
	return o
}

// estimateTokens is a crude prompt size: characters/4 plus a little per
// message, tool schemas included.
func estimateTokens(o openai.ChatCompletionRequest) int {
	n := 0
	for _, m := range o.Messages {
		n += utf8.RuneCountInString(m.Content) + 16
		for _, tc := range m.ToolCalls {
			n += utf8.RuneCountInString(tc.Function.Arguments) + len(tc.Function.Name)
		}
	}
	for _, t := range o.Tools {
		if b, err := json.Marshal(t); err == nil {
			n += len(b)
		}
	}
	if o.ResponseFormat != nil && o.ResponseFormat.JSONSchema != nil {
		if b, err := o.ResponseFormat.JSONSchema.Schema.MarshalJSON(); err == nil {
			n += len(b)
		}
	}
	return (n + 3) / 4
}

func (c *Client) meter(ctx context.Context) *Meter {
	if m := MeterFrom(ctx); m != nil {
		return m
	}
	return c.opts.Meter
}

// do runs the request with retries and records usage.
func (c *Client) do(ctx context.Context, req Request, model, env string, oreq openai.ChatCompletionRequest) (Response, error) {
	node := NodeFrom(ctx)
	release, err := c.admit(ctx, req, oreq, node, model)
	if err != nil {
		return Response{}, err
	}
	defer release(nil) // no-op after a successful release

	if req.Role != "" {
		ctx = context.WithValue(ctx, roleKey, req.Role)
	}
	log := c.log.With("role", string(req.Role), "node", node, "model", model)
	start := time.Now()
	nt := notifier{fn: noticesTo(ctx, c.opts.OnNotice), base: Notice{Role: req.Role, Node: node, Model: model}, every: c.opts.SlowAfter}
	var pace retryPace
	// Every request that reached the server is paid for, answered or not:
	// failed attempts, lost hedges, a call cancelled in flight. Without
	// usage from the server, its prompt is estimated.
	promptEst := estimateTokens(oreq)
	var wasted Usage
	requests := 0
	waste := func(n int) {
		wasted.add(Usage{PromptTokens: n * promptEst, TotalTokens: n * promptEst})
	}
	// failed records the waste of a call that got no answer and returns
	// it with the error.
	failed := func(err error) (Response, error) {
		if requests > 0 {
			release(&Record{Time: c.clk.Now(), Role: req.Role, Node: node, Model: model, Failed: true,
				PromptTokens: wasted.PromptTokens, CompletionTokens: wasted.CompletionTokens,
				Requests: requests, WastedTokens: wasted.TotalTokens})
		}
		return Response{Requests: requests, Wasted: wasted}, err
	}
	for attempt := 1; ; attempt++ {
		log.DebugContext(ctx, "llm request", "attempt", attempt, "messages", len(oreq.Messages), "tools", len(oreq.Tools))
		stopWatch := nt.watch(attempt)
		resp, hdr, sent, err := c.attempt(ctx, oreq, model, nt, attempt)
		stopWatch()
		requests += sent
		if err == nil && len(resp.Choices) == 0 {
			err = fmt.Errorf("%w: no choices in response", ErrMalformedResponse)
		}
		if err == nil {
			waste(sent - 1) // the hedges that lost
			out := c.response(resp, oreq, attempt)
			out.Requests, out.Wasted = requests, wasted
			billed := out.Billed()
			rec := Record{Time: c.clk.Now(), Role: req.Role, Node: node, Model: model,
				PromptTokens: billed.PromptTokens, CompletionTokens: billed.CompletionTokens, Cost: out.Cost,
				Requests: requests, WastedTokens: wasted.TotalTokens}
			release(&rec)
			log.DebugContext(ctx, "llm response", "attempt", attempt, "finish", out.FinishReason,
				"prompt_tokens", out.Usage.PromptTokens, "completion_tokens", out.Usage.CompletionTokens,
				"tool_calls", len(out.ToolCalls), "requests", requests, "wasted_tokens", wasted.TotalTokens,
				"elapsed", time.Since(start))
			return out, nil
		}
		if ctx.Err() != nil {
			waste(sent)
			return failed(fmt.Errorf("llm: %s call canceled: %w", model, context.Cause(ctx)))
		}
		f := c.classify(ctx, err, hdr, model, env)
		waste(sent)
		if !f.retry || attempt > c.opts.MaxRetries {
			if f.retry {
				log.WarnContext(ctx, "llm giving up", "attempts", attempt, "status", f.status, "error", f.kind)
			}
			e := f.toError(attempt)
			nt.send(NoticeFailed, attempt, 0, e)
			return failed(e)
		}
		if f.retryAfter > c.opts.MaxRetryAfter {
			f.hint = fmt.Sprintf("the server asked to wait %s, longer than the %s limit", f.retryAfter, c.opts.MaxRetryAfter)
			e := f.toError(attempt)
			nt.send(NoticeFailed, attempt, 0, e)
			return failed(e)
		}
		wait := c.retryWait(f, &pace)
		log.WarnContext(ctx, "llm retry", "attempt", attempt, "status", f.status, "error", f.kind, "wait", wait)
		nt.send(NoticeRetry, attempt, wait, f.toError(attempt))
		if err := clock.Sleep(ctx, c.clk, wait); err != nil {
			return failed(fmt.Errorf("llm: %s call canceled while waiting to retry (%v): %w", model, f.toError(attempt), err))
		}
	}
}

// admit takes the request's estimated tokens from the meter, if any; the
// release records the call's usage (nil: none).
func (c *Client) admit(ctx context.Context, req Request, oreq openai.ChatCompletionRequest, node, model string) (func(*Record), error) {
	meter := c.meter(ctx)
	if meter == nil {
		return func(*Record) {}, nil
	}
	est := estimateTokens(oreq) + oreq.MaxTokens + oreq.MaxCompletionTokens //nolint:staticcheck // SA1019: buildRequest sets max_tokens for non-reasoning models
	rel, err := meter.acquire(est, req.Final)
	if err != nil {
		return nil, fmt.Errorf("%w [%s call, node %q, model %s]", err, orDefault(string(req.Role), "chat"), node, model)
	}
	return rel, nil
}

// retryPace is what a call's retries have used: the one immediate retry
// and the backoffs.
type retryPace struct {
	retriedAtOnce bool
	backoffs      int
}

// retryWait is how long to wait before retrying after failure f: the
// server's Retry-After (checked against the limit by the caller) is the
// whole wait; a glitch of one request (a broken body, a 500, a request
// that hung) is retried at once, once per call, since a fresh request is
// as likely to succeed now as later; anything else backs off.
func (c *Client) retryWait(f failure, pace *retryPace) time.Duration {
	switch {
	case f.retryAfter >= 0:
		return f.retryAfter
	case f.perRequest() && !pace.retriedAtOnce:
		pace.retriedAtOnce = true
		return 0
	default:
		pace.backoffs++
		return c.backoff(pace.backoffs)
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (c *Client) response(resp openai.ChatCompletionResponse, oreq openai.ChatCompletionRequest, attempts int) Response {
	ch := resp.Choices[0]
	out := Response{
		ID:           resp.ID,
		Model:        resp.Model,
		Content:      ch.Message.Content,
		Refusal:      ch.Message.Refusal,
		Reasoning:    ch.Message.ReasoningContent,
		FinishReason: string(ch.FinishReason),
		Usage: Usage{
			PromptTokens:     resp.Usage.PromptTokens,
			CompletionTokens: resp.Usage.CompletionTokens,
			TotalTokens:      resp.Usage.TotalTokens,
		},
		Attempts: attempts,
	}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if fc := ch.Message.FunctionCall; fc != nil && len(out.ToolCalls) == 0 { // legacy servers
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: "call_0", Name: fc.Name, Arguments: fc.Arguments})
	}
	if out.Usage.TotalTokens == 0 && out.Usage.PromptTokens == 0 && out.Usage.CompletionTokens == 0 {
		// Some servers send no usage; estimate so that budgets still work.
		out.Usage.PromptTokens = estimateTokens(oreq)
		n := utf8.RuneCountInString(out.Content) + utf8.RuneCountInString(out.Reasoning)
		for _, tc := range out.ToolCalls {
			n += utf8.RuneCountInString(tc.Arguments)
		}
		out.Usage.CompletionTokens = (n + 3) / 4
	}
	if out.Usage.TotalTokens == 0 {
		out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
	}
	if p, ok := priceFor(c.opts.Prices, oreq.Model, resp.Model); ok {
		out.Cost = p.Cost(out.Usage.PromptTokens, out.Usage.CompletionTokens)
	}
	return out
}
