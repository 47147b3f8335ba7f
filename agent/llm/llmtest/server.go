// Package llmtest is an in-process fake of an OpenAI-compatible Chat
// Completions server for tests. It speaks the real wire protocol, so the
// production client (agent/llm, or any OpenAI SDK) talks to it unchanged.
//
// Replies come, in this order of precedence, from: injected faults (a
// seeded share of calls fails), the FIFO queue (Enqueue), rules (On: first
// matching rule wins), and the Responder given to New. A request nothing
// answers gets a 400 explaining that no reply was scripted.
//
// Endpoints: POST /v1/chat/completions, /chat/completions and Azure's
// /openai/deployments/{name}/chat/completions; GET /v1/models, /models and
// /v1/models/{id}.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// Responder computes a reply for a request.
type Responder func(*Request) Reply

// Fault is a kind of injected failure.
type Fault string

// Fault kinds.
const (
	Fault429       Fault = "429"       // 429 with Retry-After
	Fault500       Fault = "500"       // 500 server error
	FaultHang      Fault = "hang"      // no answer until the client gives up
	FaultMalformed Fault = "malformed" // 200 with a truncated body
)

// AllFaults lists every fault kind.
var AllFaults = []Fault{Fault429, Fault500, FaultHang, FaultMalformed}

// Faults configures fault injection. For each chat request (in arrival
// order) the seeded RNG decides whether it fails (probability Rate) and how
// (uniformly among Kinds). With sequential calls the outcome is exactly
// reproducible for a seed.
type Faults struct {
	Rate       float64
	Seed       uint64
	Kinds      []Fault       // default AllFaults
	RetryAfter time.Duration // for Fault429 (default 1s)
}

// Option configures a Server.
type Option func(*Server)

// WithFaults enables fault injection.
func WithFaults(f Faults) Option { return func(s *Server) { s.setFaults(f) } }

// WithAPIKey makes the server require "Authorization: Bearer key" (or the
// Azure "api-key" header); others get 401 invalid_api_key.
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// WithModels sets the models listed by GET /v1/models and makes a chat
// request for any other model answer 404 model_not_found.
func WithModels(models ...string) Option {
	return func(s *Server) { s.models = append([]string(nil), models...) }
}

// WithoutJSONSchema makes the server reject response_format json_schema
// with a 400, like older vLLM/llama.cpp servers and some proxies.
func WithoutJSONSchema() Option { return func(s *Server) { s.noJSONSchema = true } }

// WithoutResponseFormat makes the server reject any response_format other
// than text.
func WithoutResponseFormat() Option { return func(s *Server) { s.noResponseFormat = true } }

// WithoutStreaming makes the server reject stream=true with a 400, like
// servers that do not stream.
func WithoutStreaming() Option { return func(s *Server) { s.noStream = true } }

// WithTokensPerSecond makes the server take time to generate, as a real
// model does: each answer's output tokens (content, reasoning, tool call
// arguments; characters/4) come at tps per second, after the reply's
// Delay (its latency). A streamed answer's chunks are spaced by the time
// their tokens take; a whole answer is sent when all would be done.
func WithTokensPerSecond(tps float64) Option { return func(s *Server) { s.tps = max(tps, 0) } }

// Server is the fake. Safe for concurrent use.
type Server struct {
	ts        *httptest.Server
	responder Responder
	closing   chan struct{}
	closeOnce sync.Once

	apiKey           string
	models           []string
	noJSONSchema     bool
	noResponseFormat bool
	noStream         bool
	tps              float64 // output tokens per second (0: instant)

	mu         sync.Mutex
	queue      []Reply
	rules      []*rule
	requests   []*Request
	faults     Faults
	rng        *rand.Rand
	faulted    map[Fault]int
	unscripted int
	nextID     int
	generated  time.Duration // generation time waited out (WithTokensPerSecond)
}

type rule struct {
	match   Match
	replies []Reply
	used    int
}

// New starts a server answering with h (which may be nil when the queue or
// rules are used). The caller must Close it.
func New(h Responder, opts ...Option) *Server {
	s := &Server{responder: h, closing: make(chan struct{}), faulted: map[Fault]int{}}
	for _, o := range opts {
		o(s)
	}
	s.ts = httptest.NewServer(s)
	return s
}

// NewServer is New for tests: with a non-nil t the server is closed by
// t.Cleanup.
func NewServer(t testing.TB, h Responder, opts ...Option) *Server {
	if t != nil {
		t.Helper()
	}
	s := New(h, opts...)
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// URL returns the base URL to configure clients with (OPENAI_BASE_URL),
// ending in /v1.
func (s *Server) URL() string { return s.ts.URL + "/v1" }

// RootURL returns the server root without /v1 (for Azure-style clients).
func (s *Server) RootURL() string { return s.ts.URL }

// Client returns an http.Client for the server.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// Close releases hanging and delayed requests and stops the server.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.ts.Close()
	})
}

// Enqueue appends replies answered first-in first-out before rules and the
// responder.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// On adds a rule: requests matching m get the replies in order; the last one
// repeats. Rules are tried in the order they were added.
func (s *Server) On(m Match, replies ...Reply) {
	if len(replies) == 0 {
		panic("llmtest: On needs at least one reply")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{match: m, replies: replies})
}

// SetFaults replaces the fault configuration and reseeds the RNG.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setFaults(f)
}

func (s *Server) setFaults(f Faults) {
	if len(f.Kinds) == 0 {
		f.Kinds = AllFaults
	}
	if f.RetryAfter <= 0 {
		f.RetryAfter = time.Second
	}
	s.faults = f
	s.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
}

// Requests returns the chat requests received so far, in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// LastRequest returns the most recent chat request, or nil.
func (s *Server) LastRequest() *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

// Calls returns the number of chat requests received.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Faulted returns how many requests got each injected fault.
func (s *Server) Faulted() map[Fault]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Fault]int, len(s.faulted))
	for k, v := range s.faulted {
		out[k] = v
	}
	return out
}

// Unscripted returns how many requests found no scripted reply.
func (s *Server) Unscripted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unscripted
}

// Pending returns the number of queued replies not yet used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// ServeHTTP implements the API, so the fake can also be mounted elsewhere.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	var serve func()
	switch {
	case r.Method == http.MethodPost && chatPath(path):
		serve = func() { s.chat(w, r) }
	case r.Method == http.MethodGet && (path == "/v1/models" || path == "/models"):
		serve = func() { s.listModels(w) }
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/models/"):
		serve = func() { s.getModel(w, strings.TrimPrefix(path, "/v1/models/")) }
	default:
		writeError(w, http.StatusNotFound, nil, fmt.Sprintf("llmtest: no route for %s %s", r.Method, path), "invalid_request_error", "unknown_url", "")
		return
	}
	if s.authorized(w, r) {
		serve()
	}
}

// chatPath reports whether path is the chat completions route: OpenAI's,
// with or without /v1, or an Azure deployment's.
func chatPath(path string) bool {
	return path == "/v1/chat/completions" || path == "/chat/completions" ||
		strings.HasPrefix(path, "/openai/deployments/") && strings.HasSuffix(path, "/chat/completions")
}

// getModel answers a model lookup: 404 for a model not served.
func (s *Server) getModel(w http.ResponseWriter, id string) {
	if len(s.models) > 0 && !contains(s.models, id) {
		writeError(w, http.StatusNotFound, nil, fmt.Sprintf("The model '%s' does not exist", id), "invalid_request_error", "model_not_found", "model")
		return
	}
	writeJSON(w, http.StatusOK, nil, map[string]any{"id": id, "object": "model", "created": 0, "owned_by": "llmtest"})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.apiKey == "" {
		return true
	}
	got := r.Header.Get("api-key")
	if auth := r.Header.Get("Authorization"); auth != "" {
		got = strings.TrimPrefix(auth, "Bearer ")
	}
	switch got {
	case s.apiKey:
		return true
	case "":
		// OpenAI's answer to a request without a key: no code.
		writeError(w, http.StatusUnauthorized, nil, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
			"invalid_request_error", "", "")
	default:
		// OpenAI echoes the key masked (its start and last four characters).
		writeError(w, http.StatusUnauthorized, nil, "Incorrect API key provided: "+maskKey(got)+". You can find your API key in your account settings.",
			"invalid_request_error", "invalid_api_key", "")
	}
	return false
}

// maskKey shows a key the way OpenAI's 401 does: the first three and last
// four characters.
func maskKey(k string) string {
	if len(k) < 12 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + "********" + k[len(k)-4:]
}

func (s *Server) listModels(w http.ResponseWriter) {
	models := s.models
	if len(models) == 0 {
		models = []string{"llmtest"}
	}
	data := make([]map[string]any, 0, len(models))
	for _, m := range models {
		data = append(data, map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "llmtest"})
	}
	writeJSON(w, http.StatusOK, nil, map[string]any{"object": "list", "data": data})
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, "llmtest: reading body: "+err.Error(), "invalid_request_error", "", "")
		return
	}
	req := &Request{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	if strings.HasPrefix(r.URL.Path, "/openai/deployments/") {
		req.Deployment = strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/openai/deployments/"), "/chat/completions")
	}
	if err := json.Unmarshal(body, &req.ChatCompletionRequest); err != nil {
		writeError(w, http.StatusBadRequest, nil, "We could not parse the JSON body of your request (llmtest): "+err.Error(), "invalid_request_error", "", "")
		return
	}

	s.mu.Lock()
	req.Call = len(s.requests) + 1
	s.requests = append(s.requests, req)
	var reply Reply
	if rej := s.rejectRequest(req); rej != nil {
		// Checked first so that a rejected request consumes no scripted reply.
		reply = *rej
	} else {
		reply = s.pickLocked(req)
	}
	s.nextID++
	id := s.nextID
	s.mu.Unlock()

	s.write(w, r, req, reply, id)
}

// pickLocked decides the reply: fault, queue, rules, responder.
func (s *Server) pickLocked(req *Request) Reply {
	if s.faults.Rate > 0 && s.rng != nil && s.rng.Float64() < s.faults.Rate {
		kind := s.faults.Kinds[s.rng.IntN(len(s.faults.Kinds))]
		s.faulted[kind]++
		switch kind {
		case Fault429:
			return RateLimited(s.faults.RetryAfter)
		case Fault500:
			return ServerError()
		case FaultHang:
			return Hang()
		default:
			return Malformed()
		}
	}
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r
	}
	for _, ru := range s.rules {
		if ru.match.matches(req) {
			r := ru.replies[min(ru.used, len(ru.replies)-1)]
			ru.used++
			return r
		}
	}
	if s.responder != nil {
		// The responder runs under the lock so scripted sequences see calls
		// in a consistent order; keep it quick.
		return s.responder(req)
	}
	s.unscripted++
	return Reply{Status: http.StatusBadRequest, Message: fmt.Sprintf(
		"llmtest: no reply scripted for call #%d (role=%q node=%q model=%q schema=%q system=%q)",
		req.Call, req.Role(), req.Node(), req.Model, req.SchemaName(), clip(req.System(), 120))}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// rejectRequest answers what a real server refuses regardless of the
// script: streaming (WithoutStreaming), unknown models (WithModels) and unsupported
// response_format (WithoutJSONSchema, WithoutResponseFormat).
func (s *Server) rejectRequest(req *Request) *Reply {
	if req.Stream && s.noStream {
		r := Error(http.StatusBadRequest, "llmtest: stream=true is not supported")
		return &r
	}
	if len(s.models) > 0 && !contains(s.models, req.Model) && req.Deployment == "" {
		r := Reply{Status: http.StatusNotFound, Body: errorBody(
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model),
			"invalid_request_error", "model_not_found", "")}
		return &r
	}
	ft := req.FormatType()
	if s.noResponseFormat && ft != "" && ft != "text" || s.noJSONSchema && ft == "json_schema" {
		r := Reply{Status: http.StatusBadRequest, Body: errorBody(
			fmt.Sprintf("Invalid parameter: 'response_format' of type '%s' is not supported with this model.", ft),
			"invalid_request_error", "", "response_format")}
		return &r
	}
	return nil
}

func (s *Server) write(w http.ResponseWriter, r *http.Request, req *Request, reply Reply, id int) {
	if req.Stream && (reply.Status == 0 || reply.Status == http.StatusOK) && reply.Body == "" {
		s.writeStream(w, r, req, reply, id)
		return
	}
	if !s.pause(r, reply.Delay, false) || reply.Hang && !s.pause(r, 0, true) {
		return
	}
	switch {
	case reply.Status != 0 && reply.Status != http.StatusOK:
		writeFailure(w, reply)
		return
	case reply.Malformed:
		writeRaw(w, http.StatusOK, reply.Header,
			`{"id":"chatcmpl-broken","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
		return
	case reply.Body != "":
		writeRaw(w, http.StatusOK, reply.Header, reply.Body)
		return
	}
	resp, err := completion(req, reply, id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, nil, err.Error(), "server_error", "", "")
		return
	}
	if !s.pause(r, s.generation(resp.Usage.CompletionTokens), false) {
		return
	}
	writeJSON(w, http.StatusOK, reply.Header, resp)
}

// writeFailure writes a reply with an error status: its body as given, or
// an OpenAI error of the type the status implies.
func writeFailure(w http.ResponseWriter, reply Reply) {
	if reply.Body != "" {
		writeRaw(w, reply.Status, reply.Header, reply.Body)
		return
	}
	typ := "invalid_request_error"
	switch {
	case reply.Status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case reply.Status >= 500:
		typ = "server_error"
	}
	msg := reply.Message
	if msg == "" {
		msg = http.StatusText(reply.Status)
	}
	writeRaw(w, reply.Status, reply.Header, errorBody(msg, typ, "", ""))
}

// completion is the reply as a chat completion.
func completion(req *Request, reply Reply, id int) (openai.ChatCompletionResponse, error) {
	content, err := reply.content()
	if err != nil {
		return openai.ChatCompletionResponse{}, err
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content,
		Refusal: reply.Refusal, ReasoningContent: reply.Reasoning}
	completionChars := utf8.RuneCountInString(content) + utf8.RuneCountInString(reply.Reasoning)
	for i, tc := range reply.ToolCalls {
		args, err := tc.args()
		if err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		callID := tc.ID
		if callID == "" {
			callID = fmt.Sprintf("call_%d_%d", id, i)
		}
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: callID, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: tc.Name, Arguments: args}})
		completionChars += utf8.RuneCountInString(args) + len(tc.Name)
	}
	finish := openai.FinishReason(reply.FinishReason)
	if finish == "" {
		finish = openai.FinishReasonStop
		if len(msg.ToolCalls) > 0 {
			finish = openai.FinishReasonToolCalls
		}
	}
	model := reply.Model
	if model == "" {
		model = req.Model
	}
	if model == "" {
		model = "llmtest"
	}
	usage := openai.Usage{PromptTokens: PromptTokens(req), CompletionTokens: tokens(completionChars)}
	if reply.Usage != nil {
		usage = *reply.Usage
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	return openai.ChatCompletionResponse{
		ID:      fmt.Sprintf("chatcmpl-llmtest-%d", id),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   usage,
	}, nil
}

// generation is how long the fake takes to produce n output tokens; it
// counts toward GenerationTime.
func (s *Server) generation(n int) time.Duration {
	if s.tps <= 0 || n <= 0 {
		return 0
	}
	d := time.Duration(float64(n) / s.tps * float64(time.Second))
	s.mu.Lock()
	s.generated += d
	s.mu.Unlock()
	return d
}

// GenerationTime is the time the server spent generating output tokens
// (WithTokensPerSecond), summed over every answer.
func (s *Server) GenerationTime() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.generated
}

// PromptTokens is the fake's crude prompt count: characters/4 over every
// message (content, tool calls), rounded up, plus 4 per message.
func PromptTokens(req *Request) int {
	n := 0
	for _, m := range req.Messages {
		n += utf8.RuneCountInString(messageText(m))
		for _, tc := range m.ToolCalls {
			n += utf8.RuneCountInString(tc.Function.Arguments) + len(tc.Function.Name)
		}
	}
	return tokens(n) + 4*len(req.Messages)
}

func tokens(chars int) int { return max((chars+3)/4, 1) }

func errorBody(msg, typ, code, param string) string {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return string(b)
}

func writeError(w http.ResponseWriter, status int, h http.Header, msg, typ, code, param string) {
	writeRaw(w, status, h, errorBody(msg, typ, code, param))
}

func writeJSON(w http.ResponseWriter, status int, h http.Header, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeError(w, http.StatusInternalServerError, nil, "llmtest: encoding response: "+err.Error(), "server_error", "", "")
		return
	}
	writeRaw(w, status, h, b.String())
}

func writeRaw(w http.ResponseWriter, status int, h http.Header, body string) {
	for k, vs := range h {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// ClosedURL returns an OpenAI base URL on a local port nothing listens on:
// an endpoint that does not answer (the connection is refused). The port
// stays bound, without listening, until the test ends, so that nothing
// else takes it meanwhile: a port listened on and closed again is handed
// out again, and under load another test's server (of this package or of
// another one run at the same time) listening there would answer.
func ClosedURL(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("llmtest: socket: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("llmtest: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("llmtest: getsockname: %v", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("llmtest: bound to %T", sa)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/v1", in4.Port)
}
