package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"deepresearch/clock"
)

// RetryPolicy says how a provider retries 429, 5xx, timeouts and network
// errors. Other 4xx answers are never retried. The zero value is usable.
type RetryPolicy struct {
	// MaxAttempts counts the first try; default 3. 1 disables retries.
	MaxAttempts int
	// BaseDelay is the first backoff (default 500ms); it doubles per
	// retry up to MaxDelay (default 8s), with jitter in [d/2, d).
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter caps how long a Retry-After header may make us wait
	// (default 30s); a longer demand fails at once with ErrRateLimited.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done; tests inject a fake. Default:
	// a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0,1) for jitter; default math/rand/v2.
	Rand func() float64
	// Now is the clock used to read HTTP-date Retry-After values.
	Now func() time.Time
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 8 * time.Second
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 30 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// sleepCtx is the default Sleep: it waits on the system clock.
func sleepCtx(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, clock.Real{}, d) }

// backoff returns the wait before retry number n (1-based): "equal
// jitter", half fixed and half random, so retries from many clients spread
// out but never collapse to zero.
func (p RetryPolicy) backoff(n int) time.Duration {
	return clock.Backoff{Initial: p.BaseDelay, Max: p.MaxDelay, Jitter: 0.5, Rand: p.Rand}.Delay(n)
}

// parseRetryAfter reads a Retry-After value: delta-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || secs > 1e6 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// httpDoer runs HTTP requests with a per-attempt timeout and retries. It is
// shared by the HTTP providers.
type httpDoer struct {
	provider string
	client   *http.Client
	timeout  time.Duration
	maxBytes int64
	retry    RetryPolicy
	log      *slog.Logger
}

type httpResponse struct {
	status int
	header http.Header
	body   []byte
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// do sends the request built by newReq until it gets a non-retryable
// answer or runs out of attempts. It returns the last HTTP answer (whatever
// its status) or an error wrapping ErrUnavailable for transport failures,
// or the context's error when ctx ends.
func (d *httpDoer) do(ctx context.Context, newReq func(ctx context.Context) (*http.Request, error)) (*httpResponse, error) {
	p := d.retry
	var lastErr error
	for attempt := 1; ; attempt++ {
		resp, err := d.once(ctx, newReq)
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", d.provider, ctx.Err())
		}
		var wait time.Duration
		switch {
		case err != nil:
			var bad *buildError
			if errors.As(err, &bad) {
				return nil, fmt.Errorf("%s: %w: %w", d.provider, ErrMisconfigured, bad.err)
			}
			lastErr = err
			wait = p.backoff(attempt)
		case retryableStatus(resp.status):
			lastErr = nil
			var ok bool
			if wait, ok = d.statusWait(attempt, resp); !ok {
				return resp, nil
			}
		default:
			return resp, nil
		}
		if attempt >= p.MaxAttempts {
			return d.last(resp, lastErr, fmt.Sprintf("after %d attempts", attempt))
		}
		if dl, ok := ctx.Deadline(); ok && p.Now().Add(wait).After(dl) {
			// Waiting would outlive the caller; report what we have.
			return d.last(resp, lastErr, "(no time left to retry)")
		}
		status := 0
		if resp != nil {
			status = resp.status
		}
		d.log.Info("search: retrying", "provider", d.provider, "attempt", attempt,
			"status", status, "error", errString(lastErr), "wait", wait)
		if err := p.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%s: %w", d.provider, err)
		}
	}
}

// statusWait is how long to wait before retrying a retryable status: the
// backoff, or the Retry-After the provider asks for; false when it asks
// for more than MaxRetryAfter (no retry).
func (d *httpDoer) statusWait(attempt int, resp *httpResponse) (time.Duration, bool) {
	p := d.retry
	backoff := p.backoff(attempt) // drawn even when unused: the jitter sequence stays the same
	ra, ok := parseRetryAfter(resp.header.Get("Retry-After"), p.Now())
	if !ok {
		return backoff, true
	}
	if ra > p.MaxRetryAfter {
		d.log.Warn("search: provider asks to wait too long; not retrying",
			"provider", d.provider, "status", resp.status, "retry_after", ra)
		return 0, false
	}
	return ra, true
}

// last is what do returns when it stops retrying: the last transport
// error as ErrUnavailable (why says why it stopped), else the last answer.
func (d *httpDoer) last(resp *httpResponse, lastErr error, why string) (*httpResponse, error) {
	if lastErr != nil {
		return nil, fmt.Errorf("%s: %w %s: %w", d.provider, ErrUnavailable, why, lastErr)
	}
	return resp, nil
}

type buildError struct{ err error }

func (b *buildError) Error() string { return b.err.Error() }

func (d *httpDoer) once(ctx context.Context, newReq func(ctx context.Context) (*http.Request, error)) (*httpResponse, error) {
	actx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := newReq(actx)
	if err != nil {
		return nil, &buildError{err}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("timed out after %s: %w", d.timeout, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, d.maxBytes))
	if err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	// Drain a little so the connection can be reused.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	return &httpResponse{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// send runs one provider call: method to target with body (nil for none),
// asking for JSON. header, when set, adds the provider's own headers
// (credentials) to each attempt; a body is sent as JSON.
func (d *httpDoer) send(ctx context.Context, method, target string, body []byte, header func(ctx context.Context, h http.Header) error) (*httpResponse, error) {
	return d.do(ctx, func(ctx context.Context) (*http.Request, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		r, err := http.NewRequestWithContext(ctx, method, target, rd)
		if err != nil {
			return nil, err
		}
		if header != nil {
			if err := header(ctx, r.Header); err != nil {
				return nil, err
			}
		}
		if body != nil {
			r.Header.Set("Content-Type", "application/json")
		}
		r.Header.Set("Accept", "application/json")
		return r, nil
	})
}

// query checks q and returns its text and the number of results wanted.
func (d *httpDoer) query(q Query) (string, int, error) {
	text, err := q.Validate()
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", d.provider, err)
	}
	return text, ClampMaxResults(q.MaxResults), nil
}

// postJSON sends v, encoded as JSON, by POST to target.
func (d *httpDoer) postJSON(ctx context.Context, target string, v any, header func(ctx context.Context, h http.Header) error) (*httpResponse, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", d.provider, err)
	}
	return d.send(ctx, http.MethodPost, target, body, header)
}

// decode reads a 200 answer into v. A malformed answer is logged and
// reported false: the provider then returns no results rather than an error.
func (d *httpDoer) decode(resp *httpResponse, v any) bool {
	if err := json.Unmarshal(resp.body, v); err != nil {
		d.log.Error("search: malformed response; returning no results", "provider", d.provider,
			"error", err, "bytes", len(resp.body), "body_start", truncate(string(resp.body), 120))
		return false
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// newDoer fills in the defaults of the HTTP fields every provider's Options share.
func newDoer(provider string, client *http.Client, timeout time.Duration, maxBytes int64, retry RetryPolicy, log *slog.Logger) *httpDoer {
	if client == nil {
		client = &http.Client{}
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if maxBytes <= 0 {
		maxBytes = 16 << 20
	}
	if log == nil {
		log = slog.Default()
	}
	return &httpDoer{provider: provider, client: client, timeout: timeout, maxBytes: maxBytes,
		retry: retry.withDefaults(), log: log}
}

// statusError maps a non-2xx answer to an error wrapping a sentinel. detail
// is the provider's own message, if it gave one; hint tells the operator
// what to do for 401/403.
func statusError(provider string, status int, detail, authHint string) error {
	msg := fmt.Sprintf("HTTP %d", status)
	if detail != "" {
		msg += ": " + truncate(detail, 300)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%s: %w (%s): %s", provider, ErrUnauthorized, msg, authHint)
	case status == http.StatusTooManyRequests:
		return fmt.Errorf("%s: %w (%s)", provider, ErrRateLimited, msg)
	case status >= 500 || status == http.StatusRequestTimeout:
		return fmt.Errorf("%s: %w (%s)", provider, ErrUnavailable, msg)
	}
	return fmt.Errorf("%s: %w (%s)", provider, ErrBadRequest, msg)
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && n < len(s) && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
