package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"deepresearch/agent/llm"
)

// defaultCheckEvery is how often serve checks the model endpoint again
// while it is not usable; once it is, every 10× as long.
const defaultCheckEvery = 30 * time.Second

// modelHealth is serve's cached answer to "can a research use the model
// now?": the last llm.Client.Check, re-run in the background, and made
// unhealthy at once when a run's call fails for a reason no retry fixes
// (refused key, unknown model, endpoint gone). bot.Options.Health and
// /healthz read it; it never makes a request on their path.
type modelHealth struct {
	check func(context.Context) error
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	err     error
	checked bool
	wake    chan struct{}
}

func newModelHealth(log *slog.Logger, every time.Duration) *modelHealth {
	if every <= 0 {
		every = defaultCheckEvery
	}
	return &modelHealth{log: log, every: every, wake: make(chan struct{}, 1)}
}

// Health is bot.Options.Health: why the model cannot be used, or nil. The
// error's text is a plain sentence for the person in Slack (which
// variable an admin should fix, no hosts or driver messages); it wraps the
// check's error, which /healthz and the log show.
func (h *modelHealth) Health(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return nil
	}
	return plainModelError(h.err)
}

// peopleError is an error whose text is meant for people; the detail it
// wraps is for operators.
type peopleError struct {
	plain  string
	detail error
}

func (e *peopleError) Error() string { return e.plain }
func (e *peopleError) Unwrap() error { return e.detail }

func plainModelError(err error) error {
	var plain string
	switch {
	case errors.Is(err, llm.ErrUnauthorized), errors.Is(err, llm.ErrForbidden), errors.Is(err, llm.ErrMissingAPIKey):
		plain = "the language model refuses the bot's API key (an admin should check OPENAI_API_KEY)"
	case errors.Is(err, llm.ErrModelNotFound):
		plain = "the language model server does not serve the configured model (an admin should check DEEPRESEARCH_MODEL and its per-role variants)"
	case errors.Is(err, llm.ErrConnection), errors.Is(err, llm.ErrTimeout):
		plain = "the language model server does not answer (an admin should check OPENAI_BASE_URL and that the server is running)"
	case errors.Is(err, llm.ErrConfig):
		plain = "the language model is not configured correctly (an admin should check DEEPRESEARCH_MODEL and OPENAI_BASE_URL)"
	default:
		plain = "the language model server is failing (an admin should check the bot's log)"
	}
	return &peopleError{plain: plain, detail: err}
}

// set records a check's outcome and logs when it changes.
func (h *modelHealth) set(err error, why string) {
	h.mu.Lock()
	was, first := h.err, !h.checked
	h.err, h.checked = err, true
	h.mu.Unlock()
	switch {
	case err != nil && (first || was == nil || was.Error() != err.Error()):
		h.log.Error("serve: the model endpoint is not usable; new researches are refused and /healthz reports not ready until it is fixed",
			"why", why, "err", err)
	case err == nil && (first || was != nil):
		h.log.Info("serve: the model endpoint is ready")
	}
}

// runCheck checks once.
func (h *modelHealth) runCheck(ctx context.Context) {
	err := h.check(ctx)
	if ctx.Err() != nil {
		return
	}
	h.set(err, "check")
}

// loop re-checks until ctx ends: every h.every while unhealthy, every
// 10×h.every while healthy, and soon after a run reported a failure.
func (h *modelHealth) loop(ctx context.Context) {
	for {
		wait := h.every
		if h.Health(ctx) == nil {
			wait *= 10
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-h.wake:
			t.Stop()
			// give a failing endpoint a moment before asking again
			select {
			case <-ctx.Done():
				return
			case <-time.After(h.every):
			}
		}
		h.runCheck(ctx)
	}
}

// notice is the client's OnNotice: a call that gave up because the key is
// refused, the model is not served or the endpoint does not answer makes
// the bot unready at once (the run in flight ends with the extractive
// report); the background check clears it when the endpoint is back.
func (h *modelHealth) notice(n llm.Notice) {
	if n.Kind != llm.NoticeFailed {
		return
	}
	for _, k := range []error{llm.ErrUnauthorized, llm.ErrForbidden, llm.ErrModelNotFound, llm.ErrConnection} {
		if errors.Is(n.Err, k) {
			h.set(n.Err, "a research's call failed")
			select {
			case h.wake <- struct{}{}:
			default:
			}
			return
		}
	}
}
