package bot_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

// savedReports is a research.ReportStore that records what is saved.
type savedReports struct {
	mu    sync.Mutex
	saved []research.PastReport
}

func (s *savedReports) SaveReport(_ context.Context, r research.PastReport) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved = append(s.saved, r)
	return nil
}

func (s *savedReports) SearchReports(context.Context, research.ReportQuery) ([]research.PastReport, error) {
	return nil, nil
}

func (s *savedReports) PruneReports(context.Context, time.Time) (int, error) { return 0, nil }

func (s *savedReports) byChannel() map[string]research.PastReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]research.PastReport{}
	for _, r := range s.saved {
		out[r.Channel] = r
	}
	return out
}

// readsWorkspace is the fake researcher whose runs about a decision read
// the team's messages.
type readsWorkspace struct{ *fakeResearcher }

func (r readsWorkspace) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	out, err := r.fakeResearcher.Start(ctx, req, sink)
	if out.Result != nil && strings.Contains(req.Question, "decide") {
		res := *out.Result
		res.ReadWorkspace = true
		out.Result = &res
	}
	return out, err
}

// TestPostedReportsAreKeptWherePosted: a posted report is kept with where
// it was posted (team, channel, thread, private for a DM, requester) and
// the permalink of its thread; a report whose run read the workspace's
// messages is not kept.
func TestPostedReportsAreKeptWherePosted(t *testing.T) {
	h := newHarness(t)
	store := &savedReports{}
	h.startWith(readsWorkspace{h.res}, func(o *bot.Options) {
		o.Reports = store
		o.RunOptions = research.RunOptions{}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := h.mention(ctx, "U1", "C1", "what changed in AI regulation?", "")
	h.waitState(ctx, "C1", ch.TS, research.StateDone)
	dm := h.message(ctx, slackfake.MessageEvent{User: "U2", Channel: "D0U2", Text: "what is RAG?"})
	h.waitState(ctx, "D0U2", dm.TS, research.StateDone)
	ws := h.mention(ctx, "U1", "C2", "what did we decide about the billing rewrite?", "")
	h.waitState(ctx, "C2", ws.TS, research.StateDone)

	got := store.byChannel()
	if _, ok := got["C2"]; ok || len(got) != 2 {
		t.Errorf("kept %v; want the reports of C1 and D0U2 only (the run in C2 read the workspace)", got)
	}
	c1, d := got["C1"], got["D0U2"]
	wantLink := fmt.Sprintf("/archives/C1/p%s", strings.ReplaceAll(ch.TS, ".", ""))
	if !strings.HasPrefix(c1.URL, "https://") || !strings.HasSuffix(c1.URL, wantLink) || c1.Private || c1.Requester != "U1" ||
		c1.Thread != ch.TS || c1.Team == "" || !strings.Contains(c1.Text, "Findings for what changed in AI regulation?") ||
		c1.Question != "what changed in AI regulation?" || c1.RunID == "" || c1.CreatedAt.IsZero() {
		t.Errorf("channel report kept as %+v; want its thread's permalink (…%s), not private, U1's", c1, wantLink)
	}
	if !d.Private || d.Requester != "U2" || !strings.Contains(d.URL, "/archives/D0U2/p") {
		t.Errorf("DM report kept as %+v; want private, U2's", d)
	}
}
