package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"deepresearch/graph"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
)

// counter counts statements, including those sent in a pipelined batch.
type counter struct{ n atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *counter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) { c.n.Add(1) }
func (c *counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

type chainState struct {
	Count int      `json:"count"`
	Log   []string `json:"log"`
}

func buildChain(tb testing.TB, k int, opts graph.Options) *graph.Graph[chainState] {
	s := graph.NewSchema[chainState]()
	count := graph.LastValue(s, "count", func(st *chainState) *int { return &st.Count })
	log := graph.Append(s, "log", func(st *chainState) *[]string { return &st.Log })
	b := graph.New(s)
	prev := graph.Start
	for i := range k {
		name := fmt.Sprintf("n%d", i)
		b.AddNode(name, func(ctx context.Context, st chainState) ([]graph.Write, error) {
			return []graph.Write{count.Set(st.Count + 1), log.Set([]string{name})}, nil
		})
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.End)
	g, err := b.Compile(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// BenchmarkW3 runs the shape of workload W3 (bench/graph/WORKLOADS.md): the
// 50-node chain on the Postgres store, a fresh thread per op, and reports
// statements and table bytes per op (Σ pg_total_relation_size of TableNames).
func BenchmarkW3(b *testing.B) {
	ctx := context.Background()
	var cnt counter
	dsn := pgtest.Schema(b)
	s, err := postgres.Open(ctx, postgres.Options{URL: dsn, Tracer: &cnt})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g := buildChain(b, 50, graph.Options{Saver: s})
	in := []graph.Write{{Channel: "count", Value: 0}}
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "warm-up", Input: in}); err != nil {
		b.Fatal(err)
	}
	if err := s.Truncate(ctx); err != nil {
		b.Fatal(err)
	}
	cnt.n.Store(0)
	ops := 0
	for b.Loop() {
		res, err := g.Invoke(ctx, graph.Config{ThreadID: fmt.Sprint("w3-", ops), Input: in})
		if err != nil {
			b.Fatal(err)
		}
		if res.State.Count != 50 || len(res.State.Log) != 50 {
			b.Fatalf("state = %+v", res.State)
		}
		ops++
	}
	stmts := cnt.n.Load()
	b.StopTimer()
	reportBytes(b, dsn, s, ops, stmts)

}

type draftState struct {
	Topic string   `json:"topic"`
	Text  string   `json:"text"`
	Final string   `json:"final"`
	Log   []string `json:"log"`
}

// BenchmarkW4 runs the shape of workload W4: draft → review with an
// interrupt before review, then a resume from Postgres; a fresh thread per op.
func BenchmarkW4(b *testing.B) {
	ctx := context.Background()
	var cnt counter
	dsn := pgtest.Schema(b)
	s, err := postgres.Open(ctx, postgres.Options{URL: dsn, Tracer: &cnt})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sc := graph.NewSchema[draftState]()
	topic := graph.LastValue(sc, "topic", func(st *draftState) *string { return &st.Topic })
	text := graph.LastValue(sc, "text", func(st *draftState) *string { return &st.Text })
	final := graph.LastValue(sc, "final", func(st *draftState) *string { return &st.Final })
	log := graph.Append(sc, "log", func(st *draftState) *[]string { return &st.Log })
	bl := graph.New(sc)
	bl.AddNode("draft", func(ctx context.Context, st draftState) ([]graph.Write, error) {
		return []graph.Write{text.Set("draft:" + st.Topic), log.Set([]string{"draft"})}, nil
	})
	bl.AddNode("review", func(ctx context.Context, st draftState) ([]graph.Write, error) {
		return []graph.Write{final.Set(st.Text + ":approved"), log.Set([]string{"review"})}, nil
	})
	bl.AddEdge(graph.Start, "draft")
	bl.AddEdge("draft", "review")
	bl.AddEdge("review", graph.End)
	g, err := bl.Compile(graph.Options{Saver: s, InterruptBefore: []string{"review"}})
	if err != nil {
		b.Fatal(err)
	}
	op := func(thread, t string) {
		res, err := g.Invoke(ctx, graph.Config{ThreadID: thread, Input: []graph.Write{topic.Set(t)}})
		if err != nil || res.State.Text != "draft:"+t || len(res.Interrupts) == 0 && len(res.Next) == 0 {
			b.Fatalf("first invoke: %+v, %v", res, err)
		}
		res, err = g.Invoke(ctx, graph.Config{ThreadID: thread, Resume: map[string]any{"": true}})
		if err != nil || res.State.Final != "draft:"+t+":approved" || len(res.State.Log) != 2 {
			b.Fatalf("resume: %+v, %v", res, err)
		}
	}
	op("warm-up", "w")
	if err := s.Truncate(ctx); err != nil {
		b.Fatal(err)
	}
	cnt.n.Store(0)
	ops := 0
	for b.Loop() {
		op(fmt.Sprint("w4-", ops), fmt.Sprint("t", ops))
		ops++
	}
	stmts := cnt.n.Load()
	b.StopTimer()
	reportBytes(b, dsn, s, ops, stmts)

}

func reportBytes(b *testing.B, dsn string, s *postgres.Store, ops int, stmts int64) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var bytes int64
	for _, t := range s.TableNames() {
		var n, rows int64
		if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass), (SELECT count(*) FROM `+t+`)`, t).Scan(&n, &rows); err != nil {
			b.Fatal(err)
		}
		bytes += n
		b.Logf("%s: %d bytes, %d rows", t, n, rows)
	}
	b.ReportMetric(float64(stmts)/float64(ops), "stmts/op")
	b.ReportMetric(float64(bytes)/float64(ops), "tablebytes/op")
}
