package research_test

import (
	"context"
	"strings"
	"testing"

	"deepresearch/research"
)

// A digest runs to its end without asking anyone, lists the sources its
// report cites, and keeps the writer's own summary.
func TestDigestResearch(t *testing.T) {
	w := newWorld(t)
	r, _ := w.researcher()
	ctx := testCtx(t)
	req := research.DigestRequest{ThreadID: "schedule:s1:1", Question: question, Depth: "quick", Language: "en"}
	res, err := r.Research(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Title != reportTitle || len(res.Cited) == 0 || res.Reply {
		t.Fatalf("result = %+v", res)
	}
	for _, s := range res.Cited {
		if !strings.HasPrefix(s.URL, "https://") {
			t.Errorf("cited source %+v", s)
		}
	}
	if strings.Contains(res.Summary, "could not be verified") {
		t.Errorf("summary = %q, want the writer's own", res.Summary)
	}
	// The same firing again (a retry after the digest was posted but not
	// recorded) returns the finished report without asking the model.
	planners, writers := w.brain.Count("planner"), w.brain.Count("writer")
	again, err := r.Research(ctx, req)
	if err != nil || again.Title != res.Title {
		t.Fatalf("again: %+v, %v", again, err)
	}
	if w.brain.Count("planner") != planners || w.brain.Count("writer") != writers {
		t.Error("a finished digest was researched again")
	}
}

// A firing whose process stopped mid-way is continued from its checkpoint
// by another process, not planned again.
func TestDigestContinuesUnfinishedThread(t *testing.T) {
	w := newWorld(t)
	r, _ := w.researcher()
	ctx := testCtx(t)
	req := research.DigestRequest{ThreadID: "schedule:s1:2", Question: question, Depth: "quick"}
	w.stopInWriter(ctx, func(ctx context.Context) error {
		_, err := r.Research(ctx, req)
		return err
	})
	planners := w.brain.Count("planner")
	r2, _ := w.researcher()
	res, err := r2.Research(ctx, req)
	if err != nil || res.Title == "" {
		t.Fatalf("continued: %+v, %v", res, err)
	}
	if w.brain.Count("planner") != planners {
		t.Error("the continued digest planned again")
	}
}
