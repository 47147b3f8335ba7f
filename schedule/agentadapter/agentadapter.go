// Package agentadapter adapts the research agent (package agent) to
// schedule.Researcher: one agent thread per firing, run to its end without
// asking anyone (no clarifying question, no approvals).
package agentadapter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"deepresearch/agent"
	"deepresearch/schedule"
)

// Agent is the part of *agent.Agent used here.
type Agent interface {
	Start(ctx context.Context, threadID string, req agent.Request, events func(agent.Event)) (*agent.Result, error)
	Continue(ctx context.Context, threadID string, events func(agent.Event)) (*agent.Result, error)
	Get(ctx context.Context, threadID string) (*agent.Result, error)
}

// Researcher implements schedule.Researcher on the agent.
type Researcher struct {
	Agent Agent
}

var _ schedule.Researcher = Researcher{}

// Research starts the firing's thread, or continues it when a previous
// attempt (a process that died) left it unfinished, or returns its result
// when it already finished.
func (r Researcher) Research(ctx context.Context, req schedule.ResearchRequest) (schedule.Research, error) {
	res, err := r.Agent.Get(ctx, req.ThreadID)
	switch {
	case errors.Is(err, agent.ErrUnknownThread):
		res, err = r.Agent.Start(ctx, req.ThreadID, agent.Request{
			Question: req.Question, Language: req.Language, Depth: agent.Depth(req.Depth), NoClarify: true,
		}, nil)
	case err == nil && res.Status != agent.StatusDone:
		res, err = r.Agent.Continue(ctx, req.ThreadID, nil)
	}
	if err != nil {
		return schedule.Research{}, fmt.Errorf("agentadapter: %s: %w", req.ThreadID, err)
	}
	if res.Status != agent.StatusDone {
		return schedule.Research{}, fmt.Errorf("agentadapter: %s ended as %q, not a report", req.ThreadID, res.Status)
	}
	out := schedule.Research{Title: title(res.Report), Summary: res.Summary, Report: res.Report}
	for _, s := range res.Sources {
		if s.Cited {
			out.Sources = append(out.Sources, schedule.Source{URL: s.URL, Title: s.Title})
		}
	}
	if len(out.Sources) == 0 {
		for _, s := range res.Sources {
			if s.Retrieved {
				out.Sources = append(out.Sources, schedule.Source{URL: s.URL, Title: s.Title})
			}
		}
	}
	return out, nil
}

func title(report string) string {
	for _, line := range strings.Split(report, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}
