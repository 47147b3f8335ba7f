package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"deepresearch/clock"
)

// failure is a classified error of one attempt.
type failure struct {
	kind       error
	retry      bool
	retryAfter time.Duration // -1: the server did not say
	status     int
	code       string
	msg        string
	model      string
	hint       string
	err        error
}

func (f failure) toError(attempts int) *Error {
	return &Error{Kind: f.kind, Status: f.status, Code: f.code, Message: f.msg, Model: f.model,
		Hint: f.hint, Attempts: attempts, Err: f.err}
}

// classify maps an attempt's error to a sentinel, decides whether to retry,
// and reads Retry-After from the response headers. go-openai stores the
// headers of error responses in the response value too (it calls SetHeader
// before checking the status), so no transport-level recording is needed.
func (c *Client) classify(ctx context.Context, err error, hdr http.Header, model, env string) failure {
	f := failure{retryAfter: -1, model: model, err: err}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		f.status = apiErr.HTTPStatusCode
		f.msg = apiErr.Message
		if apiErr.Code != nil {
			f.code = fmt.Sprint(apiErr.Code)
		}
		if f.code == "" {
			f.code = apiErr.Type
		}
	case errors.As(err, &reqErr):
		f.status = reqErr.HTTPStatusCode
		f.msg = bodyMessage(reqErr.Body)
	}
	if f.status != 0 {
		if d, ok := retryAfter(hdr, c.clk.Now()); ok {
			f.retryAfter = d
		}
		c.classifyStatus(&f, env)
		return f
	}
	var jsonSyntax *json.SyntaxError
	var jsonType *json.UnmarshalTypeError
	var netErr net.Error
	var urlErr *url.Error
	var stall *stallError
	switch {
	case errors.As(err, &stall) && ctx.Err() == nil:
		f.kind, f.retry = ErrTimeout, true
		f.msg = stall.Error()
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		f.kind, f.retry = ErrTimeout, true
		f.hint = fmt.Sprintf("no answer within %s per attempt; raise %s for slow local models", c.plainTimeout(), EnvTimeout)
	case errors.As(err, &jsonSyntax), errors.As(err, &jsonType), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, ErrMalformedResponse):
		f.kind, f.retry = ErrMalformedResponse, true
	case errors.As(err, &urlErr), errors.As(err, &netErr), errors.Is(err, io.EOF):
		f.kind, f.retry = ErrConnection, true
		f.hint = fmt.Sprintf("check %s and that the server is running", EnvBaseURL)
	default:
		// go-openai's own validation (e.g. unsupported parameters for a
		// reasoning model): retrying cannot help.
		f.kind = ErrBadRequest
	}
	return f
}

// perRequest reports whether the failure belongs to the one request (a
// malformed or cut-off body, a request that got no answer in time) rather
// than to a server. A 5xx is the server's: a retry at once meets the same
// trouble (and, from every caller at once, makes it worse), so it backs off.
func (f failure) perRequest() bool {
	switch f.kind {
	case ErrMalformedResponse, ErrTimeout:
		return f.status == 0 || f.status/100 == 2
	}
	return false
}

func (c *Client) classifyStatus(f *failure, env string) {
	lower := strings.ToLower(f.msg + " " + f.code)
	switch s := f.status; {
	case s == http.StatusUnauthorized:
		f.kind = ErrUnauthorized
		f.hint = fmt.Sprintf("the server rejected the API key: check %s", EnvAPIKey)
	case s == http.StatusForbidden:
		f.kind = ErrForbidden
		f.hint = fmt.Sprintf("the key in %s has no access to this model or endpoint", EnvAPIKey)
	case s == http.StatusNotFound:
		f.kind = ErrModelNotFound
		f.hint = c.notFoundHint(f.model, env)
	case s == http.StatusTooManyRequests:
		f.kind = ErrRateLimited
		if outOfQuota(lower) {
			f.hint = "the account is out of quota or credits; retrying will not help"
			return
		}
		f.retry = true
	case s == http.StatusRequestTimeout:
		f.kind, f.retry = ErrTimeout, true
	case s >= 500:
		f.kind, f.retry = ErrServer, true
	case contextTooLong(lower):
		f.kind = ErrContextLength
		f.hint = "shorten the prompt or use a model with a larger context window"
	case s >= 200 && s < 300:
		f.kind, f.retry = ErrMalformedResponse, true
	default:
		f.kind = ErrBadRequest
	}
}

// notFoundHint says what to do about a 404: the deployment or model to
// set in env, or the base URL to check.
func (c *Client) notFoundHint(model, env string) string {
	switch {
	case env != "" && c.provider == ProviderAzure:
		return fmt.Sprintf("no Azure deployment for model %q: set %s to a deployed model or map it in %s", model, env, EnvDeployments)
	case env != "":
		return fmt.Sprintf("set %s to a model the server has (GET /v1/models lists them; for Ollama run `ollama pull`), or check %s", env, EnvBaseURL)
	default:
		return fmt.Sprintf("the model or endpoint does not exist; check the model name and %s", EnvBaseURL)
	}
}

// outOfQuota reports whether a 429's lower-cased message and code say the
// account has no quota left (not a rate to wait out).
func outOfQuota(lower string) bool {
	return strings.Contains(lower, "insufficient_quota") || strings.Contains(lower, "exceeded your current quota")
}

// contextTooLong reports whether a lower-cased message and code say the
// prompt exceeds the model's context window.
func contextTooLong(lower string) bool {
	return strings.Contains(lower, "context_length_exceeded") || strings.Contains(lower, "maximum context length") ||
		strings.Contains(lower, "context length")
}

// bodyMessage extracts a short message from a non-standard error body (vLLM
// sends {"message": ...} at the top level; proxies send HTML).
func bodyMessage(body []byte) string {
	var v struct {
		Message string `json:"message"`
		Detail  any    `json:"detail"`
		Error   any    `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil {
		switch {
		case v.Message != "":
			return v.Message
		case v.Error != nil:
			if s, ok := v.Error.(string); ok {
				return s
			}
			b, _ := json.Marshal(v.Error)
			return truncate(string(b), 300)
		case v.Detail != nil:
			return truncate(fmt.Sprint(v.Detail), 300)
		}
	}
	return truncate(strings.TrimSpace(string(body)), 300)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// retryAfter reads retry-after-ms (milliseconds, OpenAI/Azure) or
// Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// backoff returns the wait before retry number attempt (1-based):
// MinBackoff·2^(attempt-1) capped at MaxBackoff, minus up to half of it at
// random (jitter from Options.Jitter), so parallel callers spread out.
func (c *Client) backoff(attempt int) time.Duration {
	return clock.Backoff{Initial: c.opts.MinBackoff, Max: c.opts.MaxBackoff, Jitter: 0.5, Rand: c.opts.Jitter}.Delay(attempt)
}
