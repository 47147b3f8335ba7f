package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"deepresearch/agent"
	"deepresearch/tools/search"
)

// pastStore is an agent.PastReports with one report (or an error), that
// records the audiences it was asked for.
type pastStore struct {
	mu   sync.Mutex
	auds []agent.Audience
	err  error
}

const pastLink = "https://example.slack.com/archives/C1/p1700000000000100"

func (p *pastStore) SearchReports(_ context.Context, aud agent.Audience, q search.Query) ([]search.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.auds = append(p.auds, aud)
	if p.err != nil {
		return nil, p.err
	}
	return []search.Result{{Title: "Our report of 2026-10-01: Project Kite", URL: pastLink,
		Content: "Project Kite launches on 14 March 2027 in Osaka. The launch was moved once, from January."}}, nil
}

func pastEnv(t *testing.T, p *pastStore) (*env, *agent.Agent) {
	t.Helper()
	e := newEnv(t)
	e.opts.MaxRounds = 1
	a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Saver: e.store, Notes: e.notes,
		Logger: slog.New(slog.DiscardHandler), Reports: p}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, a
}

// TestPastReportAnswersWithVerifiedQuote: a question whose answer is only
// in an earlier report gets a report citing it by its permalink with a
// verified quote; the store is asked with the run's audience.
func TestPastReportAnswersWithVerifiedQuote(t *testing.T) {
	p := &pastStore{}
	e, a := pastEnv(t, p)
	e.web.Empty = func(string) bool { return true }
	res, err := a.Start(context.Background(), "kite", agent.Request{Question: "When does Project Kite launch?", NoClarify: true,
		Requester: "U1", Audience: &agent.Audience{Channel: "C1", Team: "T1"}}, e.record)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Report, pastLink) || res.Citations.Verified == 0 {
		t.Errorf("the earlier report is not cited by a verified quote (%+v):\n%s", res.Citations, res.Report)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, aud := range p.auds {
		if aud != (agent.Audience{Channel: "C1", Team: "T1", Requester: "U1"}) {
			t.Errorf("searched for audience %+v", aud)
		}
	}
	if len(p.auds) == 0 {
		t.Error("the past reports were never searched")
	}
}

// TestPastReportStoreDownCostsOnlyItself: a store that fails costs its
// reports, not the web's findings.
func TestPastReportStoreDownCostsOnlyItself(t *testing.T) {
	e, a := pastEnv(t, &pastStore{err: errors.New("database is locked")})
	res, err := a.Start(context.Background(), "t", agent.Request{Question: "What is the EU AI Act timeline?", NoClarify: true,
		Audience: &agent.Audience{Channel: "C1"}}, e.record)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusDone || res.Citations.Verified == 0 || strings.Contains(res.Report, pastLink) {
		t.Errorf("status %s, citations %+v:\n%s", res.Status, res.Citations, res.Report)
	}
	warned := false
	e.mu.Lock()
	for _, ev := range e.events {
		warned = warned || (ev.Kind == agent.EventWarning && strings.Contains(ev.Message, "past report search failed"))
	}
	e.mu.Unlock()
	if !warned {
		t.Error("no warning that the past reports could not be searched")
	}
}
