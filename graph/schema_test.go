package graph_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"deepresearch/graph"
	"deepresearch/graph/memsaver"
)

type namedState struct {
	Count  int            `json:"count_key,omitempty"`
	Plain  string         // no JSON tag: the Go name
	Items  []string       `json:"items"`
	Marks  map[string]int `json:"marks"`
	Hidden string         `json:"-"`
	hidden int
}

func TestChannelNamedAfterField(t *testing.T) {
	s := graph.NewSchema[namedState]()
	for _, tc := range []struct{ got, want string }{
		{graph.LastValue(s, "", func(st *namedState) *int { return &st.Count }).Name(), "count_key"},
		{graph.LastValue(s, "", func(st *namedState) *string { return &st.Plain }).Name(), "Plain"},
		{graph.Append(s, "", func(st *namedState) *[]string { return &st.Items }).Name(), "items"},
		{graph.MergeByKey(s, "", func(st *namedState) *map[string]int { return &st.Marks }).Name(), "marks"},
		{graph.Reduce(graph.NewSchema[namedState](), "", func(st *namedState) *int { return &st.Count },
			func(a, b int) int { return a + b }).Name(), "count_key"},
		{graph.LastValue(graph.NewSchema[namedState](), "given", func(st *namedState) *int { return &st.Count }).Name(), "given"},
	} {
		if tc.got != tc.want {
			t.Errorf("channel named %q, want %q", tc.got, tc.want)
		}
	}
	var elsewhere int
	for name, declare := range map[string]func(){
		"a field stored nowhere": func() {
			graph.LastValue(graph.NewSchema[namedState](), "", func(st *namedState) *string { return &st.Hidden })
		},
		"an unexported field": func() {
			graph.LastValue(graph.NewSchema[namedState](), "", func(st *namedState) *int { return &st.hidden })
		},
		"no field of the state": func() {
			graph.LastValue(graph.NewSchema[namedState](), "", func(*namedState) *int { return &elsewhere })
		},
		"a state that is no struct": func() {
			graph.LastValue(graph.NewSchema[int](), "", func(st *int) *int { return st })
		},
		"the same field twice": func() {
			s := graph.NewSchema[namedState]()
			graph.LastValue(s, "", func(st *namedState) *int { return &st.Count })
			graph.LastValue(s, "", func(st *namedState) *int { return &st.Count })
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("declared without a panic")
				}
			}()
			declare()
		})
	}
}

type turnState struct {
	Turn    int      `json:"turn"`
	Asked   string   `json:"asked"`   // per turn, written by the input
	Scratch string   `json:"scratch"` // per turn, written by the node
	Seen    []string `json:"seen"`    // the thread's: what the node found in scratch
}

// A PerTurn channel starts every turn from zero (unless the input writes
// it); the reset is stored with the input, so another process that loads
// the turn, or continues it, finds it too. The other channels carry over.
func TestPerTurnResetsEachTurn(t *testing.T) {
	ctx := context.Background()
	saver := memsaver.New(memsaver.Options{})
	fail := errors.New("node failed")
	build := func(failing bool) (*graph.Graph[turnState], func(int, string) []graph.Write) {
		s := graph.NewSchema[turnState]()
		turn := graph.LastValue(s, "", func(st *turnState) *int { return &st.Turn })
		asked := graph.LastValue(s, "", func(st *turnState) *string { return &st.Asked }, graph.PerTurn())
		scratch := graph.LastValue(s, "", func(st *turnState) *string { return &st.Scratch }, graph.PerTurn())
		seen := graph.Append(s, "", func(st *turnState) *[]string { return &st.Seen })
		b := graph.New(s)
		b.AddNode("work", func(ctx context.Context, st turnState) ([]graph.Write, error) {
			if failing {
				return nil, fail
			}
			return []graph.Write{seen.Set([]string{st.Scratch}), scratch.Set("scratch of " + st.Asked)}, nil
		})
		b.AddEdge(graph.Start, "work").AddEdge("work", graph.End)
		g, err := b.Compile(graph.Options{Saver: saver})
		if err != nil {
			t.Fatal(err)
		}
		return g, func(n int, q string) []graph.Write { return []graph.Write{turn.Set(n), asked.Set(q)} }
	}
	g, input := build(false)
	res, err := g.Invoke(ctx, graph.Config{ThreadID: "t", Input: input(1, "q1")})
	if err != nil || res.State.Scratch != "scratch of q1" {
		t.Fatalf("turn 1: %+v %v", res, err)
	}
	// turn 2 stops after its input; another process finds the reset stored
	failing, _ := build(true)
	if _, err := failing.Invoke(ctx, graph.Config{ThreadID: "t", Input: input(2, "q2")}); !errors.Is(err, fail) {
		t.Fatalf("turn 2: %v, want the node's failure", err)
	}
	g2, _ := build(false)
	snap, err := g2.State(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (turnState{Turn: 2, Asked: "q2", Seen: []string{""}}); !equalTurn(snap.State, want) {
		t.Errorf("stored state of turn 2's input %+v, want %+v", snap.State, want)
	}
	res, err = g2.Invoke(ctx, graph.Config{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (turnState{Turn: 2, Asked: "q2", Scratch: "scratch of q2", Seen: []string{"", ""}}); !equalTurn(res.State, want) {
		t.Errorf("turn 2 continued: %+v, want %+v (the node must not see turn 1's scratch)", res.State, want)
	}
}

func equalTurn(a, b turnState) bool {
	return a.Turn == b.Turn && a.Asked == b.Asked && a.Scratch == b.Scratch && slices.Equal(a.Seen, b.Seen)
}
