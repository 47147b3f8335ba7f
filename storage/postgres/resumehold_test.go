package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/graph"
	"deepresearch/graph/savertest"
	"deepresearch/storage/pgtest"
)

type approvalState struct {
	Text  string   `json:"text"`
	Final string   `json:"final"`
	Log   []string `json:"log"`
}

// approval is a draft → review graph that pauses before review; review
// calls inReview (if set) before it writes.
type approval struct {
	reviews  atomic.Int64
	inReview func(ctx context.Context) error
}

func (a *approval) build(t *testing.T, s graph.Saver, hold time.Duration) *graph.Graph[approvalState] {
	t.Helper()
	sc := graph.NewSchema[approvalState]()
	text := graph.LastValue(sc, "text", func(st *approvalState) *string { return &st.Text })
	final := graph.LastValue(sc, "final", func(st *approvalState) *string { return &st.Final })
	logc := graph.Append(sc, "log", func(st *approvalState) *[]string { return &st.Log })
	gb := graph.New(sc)
	gb.AddNode("draft", func(ctx context.Context, st approvalState) ([]graph.Write, error) {
		return []graph.Write{text.Set("d"), logc.Set([]string{"draft"})}, nil
	})
	gb.AddNode("review", func(ctx context.Context, st approvalState) ([]graph.Write, error) {
		a.reviews.Add(1)
		if a.inReview != nil {
			if err := a.inReview(ctx); err != nil {
				return nil, err
			}
		}
		return []graph.Write{final.Set(st.Text + ":ok"), logc.Set([]string{"review"})}, nil
	})
	gb.AddEdge(graph.Start, "draft").AddEdge("draft", "review")
	g, err := gb.Compile(graph.Options{Saver: s, InterruptBefore: []string{"review"}, ResumeHold: hold})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// draft runs the graph to its interrupt and returns the interrupt's id.
func draft(t *testing.T, g *graph.Graph[approvalState], thread string) string {
	t.Helper()
	first, err := g.Invoke(context.Background(), graph.Config{ThreadID: thread, Input: []graph.Write{{Channel: "text", Value: ""}}})
	if err != nil || !first.Interrupted() {
		t.Fatalf("first invoke: %+v %v", first, err)
	}
	return first.Interrupts[0].ID
}

func wantReviewed(t *testing.T, g *graph.Graph[approvalState], thread string) {
	t.Helper()
	snap, err := g.State(context.Background(), thread, 0)
	if err != nil || snap.State.Final != "d:ok" || !slices.Equal(snap.State.Log, []string{"draft", "review"}) {
		t.Fatalf("final state %+v %v", snap, err)
	}
}

// blockingReview is an approval whose review step signals started and then
// waits for finish (or its context).
func blockingReview() (app *approval, started, finish chan struct{}) {
	started, finish = make(chan struct{}), make(chan struct{})
	var once sync.Once
	app = &approval{inReview: func(ctx context.Context) error {
		once.Do(func() { close(started) })
		select {
		case <-finish:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	return app, started, finish
}

// resumeInBackground answers the interrupt on another goroutine.
func resumeInBackground(ctx context.Context, g *graph.Graph[approvalState], thread, id string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(ctx, graph.Config{ThreadID: thread, Resume: map[string]any{id: true}})
		done <- err
	}()
	return done
}

// The one-round-trip answer (ResumeHold) applies an answer exactly once, even
// when twenty answers race from two pools.
func TestResumeHoldAnswersOnce(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := open(t, dsn, savertest.Options{})
	b := open(t, dsn, savertest.Options{})
	var app approval
	ga, gbb := app.build(t, a, 0), app.build(t, b, 0)
	ctx := context.Background()
	id := draft(t, ga, "rl")
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
	if ok.Load() != 1 || refused.Load() != 19 || app.reviews.Load() != 1 {
		t.Fatalf("applied %d, refused %d, review ran %d; want 1, 19, 1", ok.Load(), refused.Load(), app.reviews.Load())
	}
	wantReviewed(t, gbb, "rl")
}

// A step that ends within the hold is made durable with its answer by one
// transaction: the answer's row and the checkpoints after it share an xmin.
func TestResumeHoldCommitsAnswerAndStepTogether(t *testing.T) {
	dsn := pgtest.Schema(t)
	s := open(t, dsn, savertest.Options{})
	var app approval
	g := app.build(t, s, time.Minute)
	id := draft(t, g, "one")
	ctx := context.Background()
	before, err := g.State(ctx, "one", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "one", Resume: map[string]any{id: true}}); err != nil {
		t.Fatal(err)
	}
	// the answer's writes hang on the checkpoint it answers ("before");
	// the draft step's own writes may still sit on the one before that
	// (a task whose write was saved before its step's checkpoint: under
	// load, 1 run in a few hundred), in an earlier transaction
	var answer, after []string
	err = s.Pool().QueryRow(ctx, `SELECT
		(SELECT array_agg(DISTINCT xmin::text) FROM graph_writes WHERE checkpoint_id >= $1),
		(SELECT array_agg(DISTINCT xmin::text) FROM graph_checkpoints WHERE id > $1)`, before.CheckpointID).Scan(&answer, &after)
	if err != nil {
		t.Fatal(err)
	}
	if len(answer) != 1 || !slices.Equal(answer, after) {
		t.Errorf("transactions of the answer %v and of the checkpoints after it %v; want one and the same", answer, after)
	}
	wantReviewed(t, g, "one")
}

// A step slower than the hold lets its answer commit alone: a second
// resumer is refused while the first one's step is still running, instead
// of waiting for it.
func TestResumeHoldLetsGoOfASlowStep(t *testing.T) {
	dsn := pgtest.Schema(t)
	s := open(t, dsn, savertest.Options{})
	app, started, finish := blockingReview()
	g := app.build(t, s, 20*time.Millisecond)
	id := draft(t, g, "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := resumeInBackground(ctx, g, "slow", id)
	<-started
	// (with the answer's transaction held across the step, this waits for
	// the step, which waits for this: the context's deadline fails the test)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if _, err := g.Invoke(wctx, graph.Config{ThreadID: "slow", Resume: map[string]any{id: true}}); !errors.Is(err, graph.ErrAlreadyResumed) {
		t.Errorf("second resume while the first one's step runs: %v, want ErrAlreadyResumed", err)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := app.reviews.Load(); n != 1 {
		t.Errorf("review ran %d times, want 1", n)
	}
	wantReviewed(t, g, "slow")
}

// If the process holding an answer dies before it commits, the server rolls
// the answer back: it was never given, and another resumer can give it.
func TestResumeHoldDiesWithItsConnection(t *testing.T) {
	dsn := pgtest.Schema(t)
	s := open(t, dsn, savertest.Options{})
	app, started, finish := blockingReview()
	g := app.build(t, s, time.Hour)
	id := draft(t, g, "dies")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := resumeInBackground(ctx, g, "dies", id)
	<-started
	// the holder's backend: the one holding a row lock on this schema's
	// graph_chains; terminating it is what the server sees of a SIGKILL
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var pid int32
	err = s.Pool().QueryRow(ctx, `SELECT l.pid FROM pg_locks l
		JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = 'graph_chains' AND l.mode = 'RowExclusiveLock' AND l.granted
		LIMIT 1`, cfg.RuntimeParams["search_path"]).Scan(&pid)
	if err != nil {
		t.Fatalf("find the holding backend: %v", err)
	}
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	close(finish)
	if err := <-done; err == nil {
		t.Fatal("the run whose connection died reported success")
	}
	other := open(t, dsn, savertest.Options{})
	res, err := app.build(t, other, 0).Invoke(ctx, graph.Config{ThreadID: "dies", Resume: map[string]any{id: true}})
	if err != nil || res.State.Final != "d:ok" {
		t.Fatalf("answer after the holder died: %+v %v", res, err)
	}
	wantReviewed(t, g, "dies")
}
