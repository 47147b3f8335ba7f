package graph_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"deepresearch/graph"
	"deepresearch/graph/memsaver"
)

// holdingSaver is a memsaver with ResumeHold: the answer is stored at once
// (memsaver has no transactions) and the hold records how it ended.
type holdingSaver struct {
	graph.Saver
	mu    sync.Mutex
	ended []string // "commit" (with a batch of n checkpoints) or "release", per hold
	holds int
}

func (s *holdingSaver) ResumeHold(ctx context.Context, thread, ns string, cp int64, w graph.PendingWrite) (*graph.Chain, graph.HeldResume, error) {
	if err := s.PutResume(ctx, thread, ns, cp, w); err != nil {
		return nil, nil, err
	}
	chain, err := s.Load(ctx, thread, ns, 0)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.holds++
	s.mu.Unlock()
	return chain, &recordedHold{s: s}, nil
}

func (s *holdingSaver) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ended)
}

type recordedHold struct {
	s    *holdingSaver
	once sync.Once
}

func (h *recordedHold) end(how string) {
	ended := false
	h.once.Do(func() { ended = true })
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if !ended {
		how = "ended twice: " + how
	}
	h.s.ended = append(h.s.ended, how)
}

func (h *recordedHold) Commit(ctx context.Context, b *graph.Batch) error {
	if len(b.Checkpoints) == 0 {
		h.end("commit without a checkpoint")
	} else {
		h.end("commit")
	}
	return h.s.Commit(ctx, b)
}

func (h *recordedHold) Release(ctx context.Context) error {
	h.end("release")
	return nil
}

type heldState struct {
	Text string   `json:"text"`
	Log  []string `json:"log"`
}

func heldGraph(t *testing.T, s graph.Saver, hold time.Duration, review func(ctx context.Context) error) *graph.Graph[heldState] {
	t.Helper()
	sc := graph.NewSchema[heldState]()
	text := graph.LastValue(sc, "text", func(st *heldState) *string { return &st.Text })
	logc := graph.Append(sc, "log", func(st *heldState) *[]string { return &st.Log })
	gb := graph.New(sc)
	gb.AddNode("draft", func(ctx context.Context, st heldState) ([]graph.Write, error) {
		return []graph.Write{text.Set("d"), logc.Set([]string{"draft"})}, nil
	})
	gb.AddNode("review", func(ctx context.Context, st heldState) ([]graph.Write, error) {
		if err := review(ctx); err != nil {
			return nil, err
		}
		return []graph.Write{logc.Set([]string{"review"})}, nil
	})
	gb.AddNode("publish", func(ctx context.Context, st heldState) ([]graph.Write, error) {
		return []graph.Write{logc.Set([]string{"publish"})}, nil
	})
	gb.AddEdge(graph.Start, "draft").AddEdge("draft", "review").AddEdge("review", "publish")
	g, err := gb.Compile(graph.Options{Saver: s, InterruptBefore: []string{"review"}, ResumeHold: hold})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The answer's hold ends exactly once in every case: with the step's
// checkpoint when the step ends in time, alone when it does not, alone when
// the step fails.
func TestResumeHoldEndsOnce(t *testing.T) {
	errReview := context.DeadlineExceeded
	for _, tc := range []struct {
		name    string
		hold    time.Duration
		review  func(s *holdingSaver) func(ctx context.Context) error
		want    []string
		wantLog []string
		wantErr bool
	}{
		{"the step ends within the hold", time.Minute,
			func(*holdingSaver) func(context.Context) error { return func(context.Context) error { return nil } },
			[]string{"commit"}, []string{"draft", "review", "publish"}, false},
		{"the step outlasts the hold", time.Millisecond,
			func(s *holdingSaver) func(context.Context) error {
				return func(ctx context.Context) error {
					// the answer is committed alone while the step still runs
					for len(s.log()) == 0 {
						if err := ctx.Err(); err != nil {
							return err
						}
						time.Sleep(time.Millisecond)
					}
					return nil
				}
			},
			[]string{"release"}, []string{"draft", "review", "publish"}, false},
		{"the step fails", time.Minute,
			func(*holdingSaver) func(context.Context) error {
				return func(context.Context) error { return errReview }
			},
			[]string{"release"}, []string{"draft"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s := &holdingSaver{Saver: memsaver.New(memsaver.Options{})}
			g := heldGraph(t, s, tc.hold, tc.review(s))
			first, err := g.Invoke(ctx, graph.Config{ThreadID: "t", Input: []graph.Write{{Channel: "text", Value: ""}}})
			if err != nil || !first.Interrupted() {
				t.Fatalf("first invoke: %+v %v", first, err)
			}
			_, err = g.Invoke(ctx, graph.Config{ThreadID: "t", Resume: map[string]any{first.Interrupts[0].ID: true}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("resume: %v (want an error: %v)", err, tc.wantErr)
			}
			if s.holds != 1 || !slices.Equal(s.log(), tc.want) {
				t.Errorf("%d holds ended as %q, want 1 ended as %q", s.holds, s.log(), tc.want)
			}
			snap, err := g.State(ctx, "t", 0)
			if err != nil || !slices.Equal(snap.State.Log, tc.wantLog) {
				t.Errorf("stored state %+v %v, want log %q", snap, err, tc.wantLog)
			}
		})
	}
}
