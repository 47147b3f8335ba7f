package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/graph"
	"deepresearch/graph/memsaver"
)

type chainState struct {
	Count int      `json:"count"`
	Log   []string `json:"log"`
}

type chainSchema struct {
	s     *graph.Schema[chainState]
	count graph.Channel[int]
	log   graph.Channel[[]string]
}

func newChainSchema() chainSchema {
	s := graph.NewSchema[chainState]()
	return chainSchema{
		s:     s,
		count: graph.LastValue(s, "count", func(st *chainState) *int { return &st.Count }),
		log:   graph.Append(s, "log", func(st *chainState) *[]string { return &st.Log }),
	}
}

// buildChain builds START → n0 → … → n(k-1) → END.
func buildChain(t testing.TB, k int, opts graph.Options, runs *atomic.Int64) *graph.Graph[chainState] {
	t.Helper()
	cs := newChainSchema()
	b := graph.New(cs.s)
	prev := graph.Start
	for i := range k {
		name := fmt.Sprintf("n%d", i)
		b.AddNode(name, func(ctx context.Context, s chainState) ([]graph.Write, error) {
			if runs != nil {
				runs.Add(1)
			}
			return []graph.Write{cs.count.Set(s.Count + 1), cs.log.Set([]string{name})}, nil
		})
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.End)
	g, err := b.Compile(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func wantLog(k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i)
	}
	return out
}

func TestChain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		saver bool
		dur   graph.Durability
	}{
		{"no saver", false, graph.DurabilityAsync},
		{"memsaver async", true, graph.DurabilityAsync},
		{"memsaver sync", true, graph.DurabilitySync},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := graph.Options{Durability: tc.dur}
			var store *memsaver.Store
			if tc.saver {
				store = memsaver.New(memsaver.Options{})
				opts.Saver = store
			}
			g := buildChain(t, 50, opts, nil)
			cs := newChainSchema()
			res, err := g.Invoke(context.Background(), graph.Config{ThreadID: "t1", Input: []graph.Write{cs.count.Set(0)}})
			if err != nil {
				t.Fatal(err)
			}
			if res.State.Count != 50 || !slices.Equal(res.State.Log, wantLog(50)) {
				t.Fatalf("state = %+v", res.State)
			}
			if res.Interrupted() || len(res.Next) != 0 {
				t.Fatalf("unexpected interrupts/next: %+v", res)
			}
			if store == nil {
				return
			}
			// The stored thread rebuilds to the same state, from any process.
			st, err := g.State(context.Background(), "t1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if st.State.Count != 50 || !slices.Equal(st.State.Log, wantLog(50)) {
				t.Fatalf("stored state = %+v", st.State)
			}
			hist, err := store.List(context.Background(), "t1", "", graph.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 51 {
				t.Fatalf("checkpoints = %d, want 51 (input + one per step)", len(hist))
			}
			// every intermediate checkpoint rebuilds to its step's state
			for _, h := range hist {
				s, err := g.State(context.Background(), "t1", h.ID)
				if err != nil {
					t.Fatal(err)
				}
				if want := h.Step + 1; s.State.Count != want || len(s.State.Log) != want {
					t.Fatalf("checkpoint %d (step %d): count %d log %d", h.ID, h.Step, s.State.Count, len(s.State.Log))
				}
			}
		})
	}
}

type fanState struct {
	Items []int `json:"items"`
	Total int   `json:"total"`
}

func buildFan(t testing.TB, n int, opts graph.Options, reduceRuns *atomic.Int64, failOnce map[int]bool) *graph.Graph[fanState] {
	t.Helper()
	s := graph.NewSchema[fanState]()
	items := graph.Append(s, "items", func(st *fanState) *[]int { return &st.Items })
	total := graph.LastValue(s, "total", func(st *fanState) *int { return &st.Total })
	var mu sync.Mutex
	b := graph.New(s)
	b.AddNode("plan", func(ctx context.Context, st fanState) ([]graph.Write, error) { return nil, nil })
	graph.AddWorker(b, "work", func(ctx context.Context, arg struct{ I int }) ([]graph.Write, error) {
		mu.Lock()
		fail := failOnce[arg.I]
		delete(failOnce, arg.I)
		mu.Unlock()
		if fail {
			return nil, errors.New("transient")
		}
		return []graph.Write{items.Set([]int{2 * arg.I})}, nil
	})
	b.AddNode("reduce", func(ctx context.Context, st fanState) ([]graph.Write, error) {
		reduceRuns.Add(1)
		sum := 0
		for _, v := range st.Items {
			sum += v
		}
		return []graph.Write{total.Set(sum)}, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddConditionalEdges("plan", func(fanState) []graph.Route {
		rs := make([]graph.Route, n)
		for i := range rs {
			rs[i] = graph.Send("work", struct{ I int }{i})
		}
		return rs
	})
	b.AddEdge("work", "reduce")
	b.AddEdge("reduce", graph.End)
	g, err := b.Compile(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFanOutBarrier(t *testing.T) {
	for _, saver := range []bool{false, true} {
		t.Run(fmt.Sprint("saver=", saver), func(t *testing.T) {
			var runs atomic.Int64
			opts := graph.Options{}
			if saver {
				opts.Saver = memsaver.New(memsaver.Options{})
			}
			g := buildFan(t, 256, opts, &runs, nil)
			res, err := g.Invoke(context.Background(), graph.Config{ThreadID: "f", Input: []graph.Write{{Channel: "total", Value: 0}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.State.Total != 65280 || len(res.State.Items) != 256 || runs.Load() != 1 {
				t.Fatalf("total %d items %d reduce runs %d", res.State.Total, len(res.State.Items), runs.Load())
			}
			for i, v := range res.State.Items {
				if v != 2*i {
					t.Fatalf("items not in task order at %d: %d", i, v)
				}
			}
		})
	}
}

// A failing task leaves its siblings' writes stored; the next Invoke runs
// only the failed task.
func TestResumeAfterFailureRunsOnlyUnfinishedTasks(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	var reduce atomic.Int64
	fail := map[int]bool{3: true, 7: true}
	g := buildFan(t, 10, graph.Options{Saver: store}, &reduce, fail)
	var mu sync.Mutex
	started := map[string]int{}
	events := func(e graph.Event) {
		if e.Kind == graph.EventNodeStart {
			mu.Lock()
			started[fmt.Sprintf("%s/%d/%d", e.Node, e.CheckpointID, e.Task)]++
			mu.Unlock()
		}
	}
	_, err := g.Invoke(context.Background(), graph.Config{ThreadID: "r", Input: []graph.Write{{Channel: "total", Value: 0}}, Events: events})
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "work" {
		t.Fatalf("err = %v, want a NodeError from work", err)
	}
	res, err := g.Invoke(context.Background(), graph.Config{ThreadID: "r", Events: events})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Total != 90 || reduce.Load() != 1 {
		t.Fatalf("total %d reduce %d", res.State.Total, reduce.Load())
	}
	for k, n := range started {
		if strings.HasPrefix(k, "work/") {
			task := k[strings.LastIndex(k, "/")+1:]
			want := 1
			if task == "3" || task == "7" {
				want = 2
			}
			if n != want {
				t.Errorf("task %s started %d times, want %d", k, n, want)
			}
		}
	}
}

type draftState struct {
	Topic string   `json:"topic"`
	Text  string   `json:"text"`
	Final string   `json:"final"`
	Log   []string `json:"log"`
}

func buildDraft(t testing.TB, saver graph.Saver, dynamic bool) *graph.Graph[draftState] {
	t.Helper()
	s := graph.NewSchema[draftState]()
	topic := graph.LastValue(s, "topic", func(st *draftState) *string { return &st.Topic })
	text := graph.LastValue(s, "text", func(st *draftState) *string { return &st.Text })
	final := graph.LastValue(s, "final", func(st *draftState) *string { return &st.Final })
	logc := graph.Append(s, "log", func(st *draftState) *[]string { return &st.Log })
	_ = topic
	b := graph.New(s)
	b.AddNode("draft", func(ctx context.Context, st draftState) ([]graph.Write, error) {
		return []graph.Write{text.Set("draft:" + st.Topic), logc.Set([]string{"draft"})}, nil
	})
	b.AddNode("review", func(ctx context.Context, st draftState) ([]graph.Write, error) {
		suffix := ":approved"
		if dynamic {
			ans, err := graph.PauseAs[string](ctx, map[string]string{"question": "approve " + st.Text + "?"})
			if err != nil {
				return nil, err
			}
			suffix = ":" + ans
		}
		return []graph.Write{final.Set(st.Text + suffix), logc.Set([]string{"review"})}, nil
	})
	b.AddEdge(graph.Start, "draft").AddEdge("draft", "review").AddEdge("review", graph.End)
	opts := graph.Options{Saver: saver}
	if !dynamic {
		opts.InterruptBefore = []string{"review"}
	}
	g, err := b.Compile(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestInterruptBeforeAndResumeFromAnotherProcess(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	ctx := context.Background()
	g1 := buildDraft(t, store, false)
	res, err := g1.Invoke(ctx, graph.Config{ThreadID: "w4", Input: []graph.Write{{Channel: "topic", Value: "t0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted() || res.State.Text != "draft:t0" || res.State.Final != "" || !slices.Equal(res.State.Log, []string{"draft"}) {
		t.Fatalf("first invoke: %+v", res)
	}
	in := res.Interrupts[0]
	if in.Kind != "before" || !slices.Equal(in.Nodes, []string{"review"}) {
		t.Fatalf("interrupt = %+v", in)
	}
	// invoking again without an answer reports the same interrupt
	again, err := g1.Invoke(ctx, graph.Config{ThreadID: "w4"})
	if err != nil || !again.Interrupted() || again.Interrupts[0].ID != in.ID {
		t.Fatalf("re-invoke: %+v %v", again, err)
	}
	g2 := buildDraft(t, store, false) // "another process": same store, new graph
	res, err = g2.Invoke(ctx, graph.Config{ThreadID: "w4", Resume: map[string]any{in.ID: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted() || res.State.Final != "draft:t0:approved" || !slices.Equal(res.State.Log, []string{"draft", "review"}) {
		t.Fatalf("resumed: %+v", res)
	}
	_, err = g2.Invoke(ctx, graph.Config{ThreadID: "w4", Resume: map[string]any{in.ID: true}})
	if !errors.Is(err, graph.ErrNoInterrupt) {
		t.Fatalf("second resume: err = %v, want refusal", err)
	}
}

func TestPauseInsideNode(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	ctx := context.Background()
	g := buildDraft(t, store, true)
	res, err := g.Invoke(ctx, graph.Config{ThreadID: "d", Input: []graph.Write{{Channel: "topic", Value: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted() || res.Interrupts[0].Kind != "node" {
		t.Fatalf("%+v", res)
	}
	var payload map[string]string
	if err := json.Unmarshal(res.Interrupts[0].Payload, &payload); err != nil || payload["question"] != "approve draft:x?" {
		t.Fatalf("payload %s", res.Interrupts[0].Payload)
	}
	res, err = g.Invoke(ctx, graph.Config{ThreadID: "d", Resume: map[string]any{"": "ok-by-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Final != "draft:x:ok-by-alice" {
		t.Fatalf("final = %q", res.State.Final)
	}
}

// Twenty concurrent resumes of one interrupt: exactly one is applied.
func TestConcurrentResumeAppliesOnce(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	ctx := context.Background()
	var reviews atomic.Int64
	g := buildDraft(t, store, false)
	res, err := g.Invoke(ctx, graph.Config{ThreadID: "c", Input: []graph.Write{{Channel: "topic", Value: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Interrupts[0].ID
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := g.Invoke(ctx, graph.Config{ThreadID: "c", Resume: map[string]any{id: true}, Events: func(e graph.Event) {
				if e.Kind == graph.EventNodeStart && e.Node == "review" {
					reviews.Add(1)
				}
			}})
			if err == nil && r.State.Final != "" {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || reviews.Load() != 1 {
		t.Fatalf("resumes applied %d, review ran %d; want 1 and 1", ok.Load(), reviews.Load())
	}
}

func TestRetryAndStepLimit(t *testing.T) {
	cs := newChainSchema()
	var calls atomic.Int64
	var slept []time.Duration
	b := graph.New(cs.s)
	b.AddNode("flaky", func(ctx context.Context, s chainState) ([]graph.Write, error) {
		if calls.Add(1) < 3 {
			return nil, errors.New("503")
		}
		return []graph.Write{cs.count.Set(s.Count + 1)}, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, Initial: time.Second}))
	b.AddEdge(graph.Start, "flaky")
	b.AddConditionalEdges("flaky", func(s chainState) []graph.Route {
		if s.Count < 1000 {
			return []graph.Route{graph.To("flaky")}
		}
		return nil
	})
	g, err := b.Compile(graph.Options{StepLimit: 20, Sleep: func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(context.Background(), graph.Config{Input: []graph.Write{cs.count.Set(0)}})
	if !errors.Is(err, graph.ErrStepLimit) {
		t.Fatalf("err = %v, want step limit", err)
	}
	if !slices.Equal(slept, []time.Duration{time.Second, 2 * time.Second}) {
		t.Fatalf("backoffs = %v", slept)
	}
}

func TestNodeErrorsAndPanics(t *testing.T) {
	cs := newChainSchema()
	b := graph.New(cs.s)
	b.AddNode("boom", func(ctx context.Context, s chainState) ([]graph.Write, error) { panic("kaput") })
	b.AddEdge(graph.Start, "boom")
	g, err := b.Compile(graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(context.Background(), graph.Config{Input: []graph.Write{cs.count.Set(0)}})
	if err == nil || !strings.Contains(err.Error(), "kaput") {
		t.Fatalf("err = %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	cs := newChainSchema()
	b := graph.New(cs.s)
	b.AddNode("a", func(ctx context.Context, s chainState) ([]graph.Write, error) { return nil, nil })
	b.AddNode("a", func(ctx context.Context, s chainState) ([]graph.Write, error) { return nil, nil })
	b.AddNode("count", func(ctx context.Context, s chainState) ([]graph.Write, error) { return nil, nil })
	b.AddEdge("a", "missing")
	_, err := b.Compile(graph.Options{InterruptBefore: []string{"ghost"}})
	for _, want := range []string{"added twice", "name of a channel", "unknown node \"missing\"", "no edge from Start", "\"ghost\""} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("compile error %v does not mention %q", err, want)
		}
	}
}

func TestGotoMergeAndEvents(t *testing.T) {
	type st struct {
		Seen  map[string]int `json:"seen"`
		Steps []string       `json:"steps"`
	}
	s := graph.NewSchema[st]()
	seen := graph.MergeByKey(s, "seen", func(x *st) *map[string]int { return &x.Seen })
	steps := graph.Append(s, "steps", func(x *st) *[]string { return &x.Steps })
	b := graph.New(s)
	b.AddNode("a", func(ctx context.Context, x st) ([]graph.Write, error) {
		graph.Emit(ctx, "progress from a")
		return []graph.Write{seen.Set(map[string]int{"a": 1}), steps.Set([]string{"a"}), graph.Goto(graph.To("c"))}, nil
	})
	b.AddNode("c", func(ctx context.Context, x st) ([]graph.Write, error) {
		return []graph.Write{seen.Set(map[string]int{"a": 2, "c": 1}), steps.Set([]string{"c"})}, nil
	})
	b.AddEdge(graph.Start, "a")
	g, err := b.Compile(graph.Options{Saver: memsaver.New(memsaver.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var kinds []string
	res, err := g.Invoke(context.Background(), graph.Config{ThreadID: "g", Input: []graph.Write{steps.Set(nil)}, Events: func(e graph.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == graph.EventCustom {
			kinds = append(kinds, "custom:"+e.Payload.(string))
		} else {
			kinds = append(kinds, e.Kind.String()+":"+e.Node)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Seen["a"] != 2 || res.State.Seen["c"] != 1 || !slices.Equal(res.State.Steps, []string{"a", "c"}) {
		t.Fatalf("state %+v", res.State)
	}
	for _, want := range []string{"node_start:a", "custom:progress from a", "node_end:a", "node_start:c", "writes_saved:a", "checkpoint:"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("events %v lack %q", kinds, want)
		}
	}
}

// Two graphs racing on one thread from the same head: the chain never forks.
func TestOneWriterPerThread(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	ctx := context.Background()
	g := buildChain(t, 5, graph.Options{Saver: store}, nil)
	cs := newChainSchema()
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "x", Input: []graph.Write{cs.count.Set(0)}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var wins, conflicts atomic.Int64
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := g.Invoke(ctx, graph.Config{ThreadID: "x", Input: []graph.Write{cs.count.Set(100)}})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, graph.ErrConflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load()+conflicts.Load() != 10 || wins.Load() < 1 {
		t.Fatalf("wins %d conflicts %d", wins.Load(), conflicts.Load())
	}
	hist, err := store.List(ctx, "x", "", graph.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// a linear chain: every checkpoint's parent is the previous one
	for i := 0; i+1 < len(hist); i++ {
		if hist[i].ParentID != hist[i+1].ID {
			t.Fatalf("chain forked at %d: parent %d, previous %d", hist[i].ID, hist[i].ParentID, hist[i+1].ID)
		}
	}
	// A loser may have stored its first steps before another writer moved
	// the head (the chain stays linear: the next writer continues from
	// them); the head is a finished run of one of the winners.
	if least := 6 * (1 + int(wins.Load())); len(hist) < least {
		t.Fatalf("checkpoints %d, want at least %d", len(hist), least)
	}
	head, err := g.State(ctx, "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(head.Next) != 0 || head.State.Count != 105 {
		t.Fatalf("head is not a finished run: next %v count %d", head.Next, head.State.Count)
	}
}

func TestForkFromEarlierCheckpoint(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	ctx := context.Background()
	g := buildChain(t, 4, graph.Options{Saver: store}, nil)
	cs := newChainSchema()
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "f", Input: []graph.Write{cs.count.Set(0)}}); err != nil {
		t.Fatal(err)
	}
	hist, _ := store.List(ctx, "f", "", graph.ListOptions{})
	var at2 int64
	for _, h := range hist {
		if h.Step == 1 { // after n0 and n1
			at2 = h.ID
		}
	}
	res, err := g.Invoke(ctx, graph.Config{ThreadID: "f", CheckpointID: at2})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Count != 4 || !slices.Equal(res.State.Log, wantLog(4)) {
		t.Fatalf("fork replay state %+v", res.State)
	}
	// the original branch is intact
	orig, err := g.State(ctx, "f", hist[0].ID)
	if err != nil || orig.State.Count != 4 {
		t.Fatalf("original head: %+v %v", orig, err)
	}
	// and the fork hangs off the chosen checkpoint
	hist2, _ := store.List(ctx, "f", "", graph.ListOptions{})
	var forkRoot *graph.CheckpointInfo
	for i := range hist2 {
		if hist2[i].ParentID == at2 && hist2[i].ID > hist[0].ID {
			forkRoot = &hist2[i]
		}
	}
	if forkRoot == nil {
		t.Fatalf("no checkpoint branches off %d: %+v", at2, hist2)
	}
}

func TestSubgraphWorkersResumeInsideAfterFailure(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	ctx := context.Background()
	// the subgraph: a 3-node chain whose middle node fails once for job 1
	type sub struct {
		Job  int      `json:"job"`
		Done []string `json:"done"`
	}
	ss := graph.NewSchema[sub]()
	job := graph.LastValue(ss, "job", func(s *sub) *int { return &s.Job })
	done := graph.Append(ss, "done", func(s *sub) *[]string { return &s.Done })
	var mu sync.Mutex
	runs := map[string]int{}
	failed := false
	sb := graph.New(ss)
	for i, n := range []string{"a", "b", "c"} {
		sb.AddNode(n, func(ctx context.Context, s sub) ([]graph.Write, error) {
			mu.Lock()
			runs[fmt.Sprintf("%d%s", s.Job, n)]++
			fail := n == "b" && s.Job == 1 && !failed
			if fail {
				failed = true
			}
			mu.Unlock()
			if fail {
				return nil, errors.New("flaky")
			}
			return []graph.Write{done.Set([]string{n})}, nil
		})
		if i == 0 {
			sb.AddEdge(graph.Start, n)
		}
	}
	sb.AddEdge("a", "b").AddEdge("b", "c")
	subG, err := sb.Compile(graph.Options{Saver: store})
	if err != nil {
		t.Fatal(err)
	}
	type parent struct {
		Results []string `json:"results"`
	}
	ps := graph.NewSchema[parent]()
	results := graph.Append(ps, "results", func(p *parent) *[]string { return &p.Results })
	pb := graph.New(ps)
	pb.AddNode("plan", func(ctx context.Context, p parent) ([]graph.Write, error) { return nil, nil })
	graph.AddSubgraphWorker(pb, "research", subG,
		func(j int) []graph.Write { return []graph.Write{job.Set(j)} },
		func(s sub) []graph.Write {
			return []graph.Write{results.Set([]string{fmt.Sprintf("%d:%s", s.Job, strings.Join(s.Done, ""))})}
		})
	pb.AddEdge(graph.Start, "plan")
	pb.AddConditionalEdges("plan", func(parent) []graph.Route {
		return []graph.Route{graph.Send("research", 0), graph.Send("research", 1), graph.Send("research", 2)}
	})
	pg, err := pb.Compile(graph.Options{Saver: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Invoke(ctx, graph.Config{ThreadID: "p", Input: []graph.Write{results.Set(nil)}}); err == nil {
		t.Fatal("expected the flaky subgraph to fail the first run")
	}
	res, err := pg.Invoke(ctx, graph.Config{ThreadID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.State.Results, []string{"0:abc", "1:abc", "2:abc"}) {
		t.Fatalf("results %v", res.State.Results)
	}
	// job 1's "a" ran once: the rerun resumed inside the subgraph
	for k, n := range runs {
		want := 1
		if k == "1b" {
			want = 2
		}
		if n != want {
			t.Errorf("%s ran %d times, want %d", k, n, want)
		}
	}
}

func TestUpdateStateAndPrune(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	ctx := context.Background()
	g := buildChain(t, 30, graph.Options{Saver: store, SnapshotEvery: 10}, nil)
	cs := newChainSchema()
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "u", Input: []graph.Write{cs.count.Set(0)}}); err != nil {
		t.Fatal(err)
	}
	snap, err := g.UpdateState(ctx, "u", []graph.Write{cs.count.Set(7), cs.log.Set([]string{"manual"})}, "")
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Count != 7 || snap.State.Log[len(snap.State.Log)-1] != "manual" {
		t.Fatalf("after update: %+v", snap.State)
	}
	n, err := g.Prune(ctx, "u", 5)
	if err != nil {
		t.Fatal(err)
	}
	if n != 27 {
		t.Fatalf("pruned %d, want 27 of 32", n)
	}
	after, err := g.State(ctx, "u", 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.Count != 7 || len(after.State.Log) != 31 {
		t.Fatalf("state after prune: %+v", after.State)
	}
	hist, _ := g.History(ctx, "u", graph.ListOptions{})
	if len(hist) != 5 {
		t.Fatalf("history has %d checkpoints, want 5", len(hist))
	}
	for _, h := range hist {
		if _, err := g.State(ctx, "u", h.ID); err != nil {
			t.Fatalf("kept checkpoint %d does not load: %v", h.ID, err)
		}
	}
}

func TestDeletedThreadStaysDeleted(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	ctx := context.Background()
	g := buildDraft(t, store, false)
	res, err := g.Invoke(ctx, graph.Config{ThreadID: "del", Input: []graph.Write{{Channel: "topic", Value: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteThread(ctx, "del"); err != nil {
		t.Fatal(err)
	}
	// a late resume from another process must not resurrect it
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "del", Resume: map[string]any{res.Interrupts[0].ID: true}}); !errors.Is(err, graph.ErrThreadDeleted) {
		t.Fatalf("resume after delete: %v", err)
	}
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "del", Input: []graph.Write{{Channel: "topic", Value: "y"}}}); !errors.Is(err, graph.ErrThreadDeleted) {
		t.Fatalf("new input after delete: %v", err)
	}
}

func TestTaskBudget(t *testing.T) {
	var runs atomic.Int64
	g := buildFan(t, 10, graph.Options{}, &runs, nil)
	_, err := g.Invoke(context.Background(), graph.Config{Input: []graph.Write{{Channel: "total", Value: 0}}, MaxTasks: 5})
	if !errors.Is(err, graph.ErrTaskLimit) {
		t.Fatalf("err = %v, want task budget", err)
	}
}

func TestCancelledContextStopsAndResumes(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	cs := newChainSchema()
	ctx, cancel := context.WithCancel(context.Background())
	b := graph.New(cs.s)
	b.AddNode("a", func(c context.Context, s chainState) ([]graph.Write, error) {
		return []graph.Write{cs.log.Set([]string{"a"})}, nil
	})
	b.AddNode("b", func(c context.Context, s chainState) ([]graph.Write, error) {
		cancel()
		<-c.Done()
		return nil, c.Err()
	})
	b.AddEdge(graph.Start, "a").AddEdge("a", "b")
	g, err := b.Compile(graph.Options{Saver: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "cx", Input: []graph.Write{cs.count.Set(0)}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	snap, err := g.State(context.Background(), "cx", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(snap.State.Log, []string{"a"}) || !slices.Equal(snap.Next, []string{"b"}) {
		t.Fatalf("after cancel: %+v", snap)
	}
}

// A node whose second call fails is run again; its first call is not.
func TestMemoSurvivesRerun(t *testing.T) {
	store := memsaver.New(memsaver.Options{})
	cs := newChainSchema()
	var calls sync.Map
	count := func(k string) int {
		v, _ := calls.Load(k)
		n, _ := v.(int)
		return n
	}
	failSecond := true
	b := graph.New(cs.s)
	b.AddNode("llm", func(ctx context.Context, s chainState) ([]graph.Write, error) {
		a, err := graph.Memo(ctx, "first", func() (string, error) {
			calls.Store("first", count("first")+1)
			return "answer-1", nil
		})
		if err != nil {
			return nil, err
		}
		bv, err := graph.Memo(ctx, "second", func() (string, error) {
			calls.Store("second", count("second")+1)
			if failSecond {
				failSecond = false
				return "", errors.New("503")
			}
			return "answer-2", nil
		})
		if err != nil {
			return nil, err
		}
		return []graph.Write{cs.log.Set([]string{a, bv})}, nil
	})
	b.AddEdge(graph.Start, "llm")
	for _, tc := range []struct {
		name  string
		saver graph.Saver
		first int
	}{{"memsaver", store, 1}, {"no saver", nil, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			calls = sync.Map{}
			failSecond = true
			g, err := b.Compile(graph.Options{Saver: tc.saver})
			if err != nil {
				t.Fatal(err)
			}
			var hits atomic.Int64
			ev := func(e graph.Event) {
				if e.Kind == graph.EventMemoHit {
					hits.Add(1)
				}
			}
			if _, err := g.Invoke(context.Background(), graph.Config{ThreadID: "m", Input: []graph.Write{cs.count.Set(0)}, Events: ev}); err == nil {
				t.Fatal("first invoke should fail on the second call")
			}
			var res *graph.Result[chainState]
			if tc.saver != nil {
				res, err = g.Invoke(context.Background(), graph.Config{ThreadID: "m", Events: ev})
			} else {
				res, err = g.Invoke(context.Background(), graph.Config{Input: []graph.Write{cs.count.Set(0)}, Events: ev})
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.State.Log, []string{"answer-1", "answer-2"}) {
				t.Fatalf("log %v", res.State.Log)
			}
			if count("first") != tc.first || count("second") != 2 {
				t.Fatalf("first called %d (want %d), second %d (want 2)", count("first"), tc.first, count("second"))
			}
			if tc.saver != nil && hits.Load() != 1 {
				t.Fatalf("memo hits %d, want 1", hits.Load())
			}
		})
	}
}
