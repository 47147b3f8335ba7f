package agentadapter_test

import (
	"context"
	"fmt"
	"testing"

	"deepresearch/agent"
	"deepresearch/schedule"
	"deepresearch/schedule/agentadapter"
)

type fakeAgent struct {
	results map[string]*agent.Result
	calls   []string
	req     agent.Request
}

func (f *fakeAgent) Get(_ context.Context, id string) (*agent.Result, error) {
	if r, ok := f.results[id]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("%w: %s", agent.ErrUnknownThread, id)
}

func (f *fakeAgent) Start(_ context.Context, id string, req agent.Request, _ func(agent.Event)) (*agent.Result, error) {
	f.calls, f.req = append(f.calls, "start"), req
	return &agent.Result{Status: agent.StatusDone, Report: "intro\n# The Title\nbody", Summary: "- a",
		Sources: []agent.SourceRef{{URL: "https://a.example", Title: "A", Cited: true}, {URL: "https://b.example", Retrieved: true}}}, nil
}

func (f *fakeAgent) Continue(_ context.Context, id string, _ func(agent.Event)) (*agent.Result, error) {
	f.calls = append(f.calls, "continue")
	return &agent.Result{Status: agent.StatusDone, Report: "# Continued"}, nil
}

func TestResearch(t *testing.T) {
	fa := &fakeAgent{results: map[string]*agent.Result{"unfinished": {Status: agent.StatusInterrupted}}}
	r := agentadapter.Researcher{Agent: fa}
	res, err := r.Research(context.Background(), schedule.ResearchRequest{ThreadID: "new", Question: "q", Depth: "deep", Language: "ja"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Title != "The Title" || len(res.Sources) != 1 || res.Sources[0].URL != "https://a.example" {
		t.Fatalf("res = %+v", res)
	}
	if !fa.req.NoClarify || fa.req.Depth != agent.DepthDeep || fa.req.Language != "ja" || fa.req.ApproveDraft || fa.req.ApprovePlan {
		t.Fatalf("request = %+v", fa.req)
	}
	res, err = r.Research(context.Background(), schedule.ResearchRequest{ThreadID: "unfinished"})
	if err != nil || res.Title != "Continued" || fa.calls[len(fa.calls)-1] != "continue" {
		t.Fatalf("continue: %+v %v %v", res, err, fa.calls)
	}
}
