package agent

import (
	"context"
	"slices"

	"deepresearch/tools/search"
)

// PastReports searches the team's finished reports ("what did we find last
// month about X"). It returns only the reports a report seen by aud may
// use; results carry the report's text as Content and, as URL, the Slack
// permalink of the thread it was posted in (or deepresearch://report/ID),
// so they are read and quoted like pages without a fetch.
// research.ReportSource implements it over the database.
type PastReports interface {
	SearchReports(ctx context.Context, aud Audience, q search.Query) ([]search.Result, error)
}

// pastReportsProvider is the Source.Provider of a past report.
const pastReportsProvider = "reports"

// pastReportHits is how many past reports one query reads at most.
const pastReportHits = 3

// pastReports are the past reports this researcher's audience may see that
// match q; a store that fails costs only them. A task without an audience
// (an older checkpoint) reads none.
func (ex *execution) pastReports(ctx context.Context, q search.Query) []search.Result {
	a, t := ex.a, ex.s.Task
	if a.past == nil || t.Audience == nil {
		return nil
	}
	q.MaxResults = min(max(q.MaxResults, 1), pastReportHits)
	res, err := a.past.SearchReports(ctx, *t.Audience, q)
	if err != nil {
		a.log.Warn("past report search failed", "query", q.Text, "err", err)
		emit(ctx, Event{Kind: EventWarning, Query: q.Text, Message: "past report search failed: " + err.Error()})
		return nil
	}
	res = slices.Clone(res) // the store's slice is not ours to change
	for i := range res {
		res[i].Source = pastReportsProvider
	}
	return res
}
