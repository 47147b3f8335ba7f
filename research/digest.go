package research

import (
	"context"
	"errors"
	"fmt"

	"deepresearch/agent"
)

// Research runs a scheduled digest's research to its end without asking
// anyone (no clarifying question, no approvals): it starts the firing's
// thread, continues it when an earlier attempt (a process that died) left
// it unfinished, or returns its result when it already finished.
func (r *Runner) Research(ctx context.Context, req DigestRequest) (Result, error) {
	res, err := r.a.Get(ctx, req.ThreadID)
	switch {
	case errors.Is(err, agent.ErrUnknownThread):
		res, err = r.a.Start(ctx, req.ThreadID, agent.Request{
			Question: req.Question, Language: req.Language, Depth: agent.Depth(req.Depth), NoClarify: true,
			Audience: &agent.Audience{Channel: req.Channel, Team: req.Team},
		}, nil)
	case err == nil && res.Status != agent.StatusDone:
		res, err = r.a.Continue(ctx, req.ThreadID, nil)
	}
	if err != nil {
		return Result{}, fmt.Errorf("research: digest %s: %w", req.ThreadID, err)
	}
	if res.Status != agent.StatusDone {
		return Result{}, fmt.Errorf("research: digest %s ended as %q, not a report", req.ThreadID, res.Status)
	}
	out := toResult(res)
	// A digest shows the writer's summary as it is and no made-up title.
	out.Title, out.Summary = reportHeading(res.Report), res.Summary
	return out, nil
}
