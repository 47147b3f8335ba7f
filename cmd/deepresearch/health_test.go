package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"deepresearch/agent/llm"
)

// A run's call that gives up for a reason no retry fixes makes serve
// unready at once; a transient one does not; the next good check clears it.
func TestModelHealthFollowsFailures(t *testing.T) {
	var logs bytes.Buffer
	h := newModelHealth(slog.New(slog.NewTextHandler(&logs, nil)), 0)
	var checkErr error
	h.check = func(context.Context) error { return checkErr }
	ctx := context.Background()
	h.runCheck(ctx)
	if err := h.Health(ctx); err != nil {
		t.Fatalf("healthy endpoint reported %v", err)
	}
	for _, tc := range []struct {
		name      string
		n         llm.Notice
		unhealthy bool
	}{
		{"retry", llm.Notice{Kind: llm.NoticeRetry, Err: &llm.Error{Kind: llm.ErrUnauthorized}}, false},
		{"server error gave up", llm.Notice{Kind: llm.NoticeFailed, Err: &llm.Error{Kind: llm.ErrServer, Status: 503}}, false},
		{"bad request", llm.Notice{Kind: llm.NoticeFailed, Err: &llm.Error{Kind: llm.ErrBadRequest}}, false},
		{"key revoked", llm.Notice{Kind: llm.NoticeFailed, Err: &llm.Error{Kind: llm.ErrUnauthorized, Status: 401, Hint: "check OPENAI_API_KEY"}}, true},
		{"forbidden", llm.Notice{Kind: llm.NoticeFailed, Err: &llm.Error{Kind: llm.ErrForbidden, Status: 403}}, true},
		{"model removed", llm.Notice{Kind: llm.NoticeFailed, Err: &llm.Error{Kind: llm.ErrModelNotFound, Status: 404}}, true},
		{"endpoint gone", llm.Notice{Kind: llm.NoticeFailed, Err: &llm.Error{Kind: llm.ErrConnection}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.runCheck(ctx) // healthy again
			h.notice(tc.n)
			err := h.Health(ctx)
			if (err != nil) != tc.unhealthy {
				t.Fatalf("Health = %v, want unhealthy %v", err, tc.unhealthy)
			}
			if tc.unhealthy && !errors.Is(err, tc.n.Err.(*llm.Error).Kind) {
				t.Errorf("Health = %v, want the run's error", err)
			}
		})
	}
	checkErr = errors.New("llm: unauthorized (HTTP 401) — check OPENAI_API_KEY")
	h.runCheck(ctx)
	if err := h.Health(ctx); err == nil {
		t.Fatal("a failing check left serve ready")
	}
	checkErr = nil
	h.runCheck(ctx)
	if err := h.Health(ctx); err != nil {
		t.Fatalf("a good check left serve unready: %v", err)
	}
	if !strings.Contains(logs.String(), "not usable") || !strings.Contains(logs.String(), "is ready") {
		t.Errorf("transitions not logged:\n%s", logs.String())
	}
}
