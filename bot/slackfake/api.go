package slackfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

const maxBody = 32 << 20

// Call is one Web API request the server received.
type Call struct {
	Method    string
	At        time.Time
	TokenKind string     // "bot", "app", "invalid" or "none"
	Params    url.Values // form/query values; for JSON bodies, top-level fields (objects as JSON text)
	JSON      bool       // the body was JSON
	Status    int        // HTTP status answered
	Error     string     // the "error" answered, "" when ok
	Limited   bool       // answered 429 by the tier limits (WithTierLimits), not by an injected fault
}

// apiRequest is a parsed Web API request.
type apiRequest struct {
	method string
	token  string
	params url.Values
	json   bool
	body   []byte
}

func (r *apiRequest) get(k string) string { return r.params.Get(k) }

// apiResult is a handler's answer: an ok body or an error code.
type apiResult struct {
	body map[string]any
	err  string
}

func ok(fields map[string]any) apiResult {
	b := map[string]any{"ok": true}
	maps.Copy(b, fields)
	return apiResult{body: b}
}

func fail(code string) apiResult { return apiResult{err: code} }

type apiHandler func(*apiRequest) apiResult

func (s *Server) apiHandlers() map[string]apiHandler {
	return map[string]apiHandler{
		"apps.connections.open":                 s.appsConnectionsOpen,
		"auth.test":                             s.authTest,
		"chat.postMessage":                      s.chatPostMessage,
		"chat.update":                           s.chatUpdate,
		"chat.postEphemeral":                    s.chatPostEphemeral,
		"chat.delete":                           s.chatDelete,
		"chat.getPermalink":                     s.chatGetPermalink,
		"conversations.replies":                 s.conversationsReplies,
		"conversations.history":                 s.conversationsHistory,
		"conversations.info":                    s.conversationsInfo,
		"conversations.members":                 s.conversationsMembers,
		"bots.info":                             s.botsInfo,
		"users.info":                            s.usersInfo,
		"views.open":                            s.viewsOpen,
		"views.push":                            s.viewsOpen,
		"views.publish":                         s.viewsPublish,
		"views.update":                          s.viewsUpdate,
		"assistant.threads.setStatus":           s.assistantSetStatus,
		"assistant.threads.setSuggestedPrompts": s.assistantSetSuggestedPrompts,
		"assistant.threads.setTitle":            s.assistantSetTitle,
		"files.getUploadURLExternal":            s.filesGetUploadURLExternal,
		"files.completeUploadExternal":          s.filesCompleteUploadExternal,
		"files.delete":                          s.filesDelete,
		"chat.startStream":                      s.chatStartStream,
		"assistant.search.context":              s.assistantSearchContext,
		"chat.appendStream":                     s.chatAppendStream,
		"chat.stopStream":                       s.chatStopStream,
		"files.upload":                          s.filesUploadRetired,
	}
}

func parseAPIRequest(w http.ResponseWriter, r *http.Request) (*apiRequest, error) {
	req := &apiRequest{method: strings.TrimPrefix(r.URL.Path, "/api/"), params: url.Values{}}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	req.body = body
	for k, v := range r.URL.Query() {
		req.params[k] = append(req.params[k], v...)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		req.json = true
		var fields map[string]json.RawMessage
		if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &fields); err != nil {
				return nil, fmt.Errorf("json body: %w", err)
			}
		}
		for k, v := range fields {
			var str string
			if json.Unmarshal(v, &str) == nil {
				req.params.Set(k, str)
			} else {
				req.params.Set(k, string(v))
			}
		}
	case "multipart/form-data":
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := r.ParseMultipartForm(maxBody); err != nil {
			return nil, fmt.Errorf("multipart body: %w", err)
		}
		for k, v := range r.MultipartForm.Value {
			req.params[k] = append(req.params[k], v...)
		}
	default:
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("form body: %w", err)
		}
		for k, v := range vals {
			req.params[k] = append(req.params[k], v...)
		}
	}
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
		req.token = strings.TrimSpace(strings.TrimPrefix(a, "Bearer "))
	} else {
		req.token = req.params.Get("token")
	}
	req.params.Del("token")
	return req, nil
}

func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	req, err := parseAPIRequest(w, r)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_request", "detail": err.Error()})
		return
	}
	call := Call{Method: req.method, At: at, TokenKind: s.tokenKind(req.token), Params: req.params, JSON: req.json}

	if f := s.takeFault(req.method); f != nil {
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
			case <-s.ctx.Done():
			}
			t.Stop()
		}
		if status, code, done := s.writeFault(w, f); done {
			call.Status, call.Error = status, code
			s.recordCall(call)
			return
		}
	}

	if s.checkToken(req).err == "" {
		s.mu.Lock()
		limited, retryAfter := s.tierLimitLocked(req, time.Now())
		s.mu.Unlock()
		if limited {
			writeRateLimited(w, retryAfter)
			call.Status, call.Error, call.Limited = http.StatusTooManyRequests, "ratelimited", true
			s.recordCall(call)
			return
		}
	}

	h, known := s.handlers[req.method]
	var res apiResult
	switch {
	case !known:
		s.mu.Lock()
		s.unknown = append(s.unknown, req.method)
		s.mu.Unlock()
		s.log.Warn("slackfake: unknown method", "method", req.method)
		res = fail("unknown_method")
	default:
		res = s.checkToken(req)
		if res.err == "" {
			res = h(req)
		}
	}
	call.Status = http.StatusOK
	if res.err != "" {
		call.Error = res.err
		s.recordCall(call)
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": res.err})
		return
	}
	s.recordCall(call)
	writeJSON(w, http.StatusOK, res.body)
}

// checkToken answers "" (ok) or Slack's error for the presented token.
func (s *Server) checkToken(req *apiRequest) apiResult {
	kind := s.tokenKind(req.token)
	want := "bot"
	if req.method == "apps.connections.open" {
		want = "app"
	}
	switch {
	case kind == "none":
		return fail("not_authed")
	case kind == "invalid":
		return fail("invalid_auth")
	case kind != want:
		return fail("not_allowed_token_type")
	}
	return apiResult{}
}

func (s *Server) recordCall(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.notifyLocked()
	s.mu.Unlock()
}

// Calls counts the calls of a Web API method ("" counts all), including
// failed and fault-injected ones.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			n++
		}
	}
	return n
}

// CallLog returns the calls of a method ("" for all), in arrival order.
func (s *Server) CallLog(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			c.Params = cloneValues(c.Params)
			out = append(out, c)
		}
	}
	return out
}

// UnknownMethods lists the unknown methods called, in order.
func (s *Server) UnknownMethods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unknown)
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Fault describes an injected failure of a Web API method.
type Fault struct {
	// Status is the HTTP status to answer (429, 500, 503, ...). Zero answers
	// 200 with Error (or only delays, when Error is empty too).
	Status int
	// RetryAfter is sent as the Retry-After header (whole seconds, rounded
	// up) with a 429. slack-go reads it into RateLimitedError.RetryAfter.
	RetryAfter time.Duration
	// Error is the error code of a 200 {"ok":false,"error":...} answer, e.g.
	// "ratelimited", "invalid_auth", "channel_not_found".
	Error string
	// Times limits the fault to that many matching calls; zero means every
	// matching call until ClearFaults.
	Times int
	// Rate, when in (0,1), applies the fault to that fraction of calls at random.
	Rate float64
	// Delay holds the answer back this long first (slow Slack).
	Delay time.Duration
}

type faultState struct {
	Fault
	left int
}

// InjectFault makes calls of method ("*" for every method) fail as f
// describes. Faults of a method are consulted in the order injected, before
// the "*" ones.
func (s *Server) InjectFault(method string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], &faultState{Fault: f, left: f.Times})
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

// RateLimit makes the next times calls of method answer 429 with Retry-After.
func (s *Server) RateLimit(method string, times int, retryAfter time.Duration) {
	s.InjectFault(method, Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter, Times: times})
}

// FailAuthTest makes every auth.test answer {"ok":false,"error":code}
// (e.g. "invalid_auth", "account_inactive", "token_revoked") until ClearFaults.
func (s *Server) FailAuthTest(code string) {
	s.InjectFault("auth.test", Fault{Error: code})
}

func (s *Server) takeFault(method string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range []string{method, "*"} {
		for _, f := range s.faults[key] {
			if f.Times > 0 && f.left <= 0 {
				continue
			}
			if f.Rate > 0 && f.Rate < 1 && s.rng.Float64() >= f.Rate {
				continue
			}
			if f.Times > 0 {
				f.left--
			}
			cp := f.Fault
			return &cp
		}
	}
	return nil
}

// writeFault answers the fault; done is false when the fault is only a delay.
func (s *Server) writeFault(w http.ResponseWriter, f *Fault) (status int, code string, done bool) {
	switch {
	case f.Status == http.StatusTooManyRequests:
		secs := int64((f.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeJSON(w, f.Status, map[string]any{"ok": false, "error": "ratelimited"})
		return f.Status, "ratelimited", true
	case f.Status != 0 && f.Status != http.StatusOK:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.Status)
		_, _ = fmt.Fprintf(w, "<html><body><h1>%d %s</h1></body></html>", f.Status, http.StatusText(f.Status))
		return f.Status, http.StatusText(f.Status), true
	case f.Error != "":
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": f.Error})
		return http.StatusOK, f.Error, true
	}
	return 0, "", false
}
