package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"deepresearch/graph"
	"deepresearch/graph/savertest"
	"deepresearch/storage/pgtest"
)

type approvalState struct {
	Text  string   `json:"text"`
	Final string   `json:"final"`
	Log   []string `json:"log"`
}

// The one-round-trip answer (ResumeLoad) applies an answer exactly once, even
// when twenty answers race from two pools.
func TestResumeLoadAnswersOnce(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := open(t, dsn, savertest.Options{})
	b := open(t, dsn, savertest.Options{})
	var reviews atomic.Int64
	build := func(s graph.Saver) *graph.Graph[approvalState] {
		sc := graph.NewSchema[approvalState]()
		text := graph.LastValue(sc, "text", func(st *approvalState) *string { return &st.Text })
		final := graph.LastValue(sc, "final", func(st *approvalState) *string { return &st.Final })
		logc := graph.Append(sc, "log", func(st *approvalState) *[]string { return &st.Log })
		gb := graph.New(sc)
		gb.AddNode("draft", func(ctx context.Context, st approvalState) ([]graph.Write, error) {
			return []graph.Write{text.Set("d"), logc.Set([]string{"draft"})}, nil
		})
		gb.AddNode("review", func(ctx context.Context, st approvalState) ([]graph.Write, error) {
			reviews.Add(1)
			return []graph.Write{final.Set(st.Text + ":ok"), logc.Set([]string{"review"})}, nil
		})
		gb.AddEdge(graph.Start, "draft").AddEdge("draft", "review")
		g, err := gb.Compile(graph.Options{Saver: s, InterruptBefore: []string{"review"}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ga, gbb := build(a), build(b)
	ctx := context.Background()
	first, err := ga.Invoke(ctx, graph.Config{ThreadID: "rl", Input: []graph.Write{{Channel: "text", Value: ""}}})
	if err != nil || !first.Interrupted() {
		t.Fatalf("first invoke: %+v %v", first, err)
	}
	id := first.Interrupts[0].ID
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := ga
			if i%2 == 1 {
				g = gbb
			}
			res, err := g.Invoke(ctx, graph.Config{ThreadID: "rl", Resume: map[string]any{id: true}})
			switch {
			case err == nil && res.State.Final == "d:ok":
				ok.Add(1)
			case errors.Is(err, graph.ErrAlreadyResumed):
				refused.Add(1)
			default:
				t.Errorf("resume: %+v %v", res, err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != 19 || reviews.Load() != 1 {
		t.Fatalf("applied %d, refused %d, review ran %d; want 1, 19, 1", ok.Load(), refused.Load(), reviews.Load())
	}
	snap, err := gbb.State(ctx, "rl", 0)
	if err != nil || !slices.Equal(snap.State.Log, []string{"draft", "review"}) {
		t.Fatalf("final state %+v %v", snap, err)
	}
}
