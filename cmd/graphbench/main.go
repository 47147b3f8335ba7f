// Command graphbench runs the graph-runtime workloads W1, W1m, W2, W3, W3b and
// W4 of shared/bench/graph/WORKLOADS.md on our runtime and prints one JSON line
// per workload, in the format the LangGraph.js peer harness prints.
//
//	go run ./cmd/graphbench W1 W2        # one run each, in this process
//	go run ./cmd/graphbench -runs 3 all  # fresh child process per run, medians
//
// PG_URL selects the database for W3/W3b/W4 (default
// postgres://postgres@127.0.0.1:5432/bench; the database is created if it
// does not exist). WARMUP=N or WARMUP=full changes the untimed warm-up.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/graph"
	"deepresearch/graph/memsaver"
	"deepresearch/storage/postgres"
)

var all = []string{"W1", "W1m", "W2", "W3", "W3b", "W4"}

func main() {
	runs := flag.Int("runs", 1, "runs per workload; more than 1 starts a fresh process per run and prints medians")
	flag.Parse()
	names := flag.Args()
	if len(names) == 0 || slices.Contains(names, "all") {
		names = all
	}
	for _, n := range names {
		if !slices.Contains(all, n) {
			fmt.Fprintf(os.Stderr, "unknown workload %s; known: %s\n", n, strings.Join(all, " "))
			os.Exit(2)
		}
	}
	if *runs > 1 {
		if err := runChildren(names, *runs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	ctx := context.Background()
	b := &bench{}
	defer b.close()
	for _, n := range names {
		if err := b.run(ctx, n); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", n, err)
			os.Exit(1)
		}
	}
}

// runChildren runs every workload runs times, interleaved, each in a fresh
// process, and prints the per-workload medians.
func runChildren(names []string, runs int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	recs := map[string][]map[string]any{}
	for r := 1; r <= runs; r++ {
		for _, w := range names {
			fmt.Fprintf(os.Stderr, "run %d/%d %s ...\n", r, runs, w)
			cmd := exec.Command(self, w)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("%s run %d: %w", w, r, err)
			}
			fmt.Fprint(os.Stderr, string(out))
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				return fmt.Errorf("%s run %d printed %q: %w", w, r, out, err)
			}
			recs[w] = append(recs[w], m)
		}
	}
	for _, w := range names {
		printMedian(recs[w])
	}
	return nil
}

func printMedian(rs []map[string]any) {
	med := map[string]any{}
	var keys []string
	for k, v := range rs[0] {
		med[k] = v
		if _, ok := v.(float64); ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		var vals []float64
		for _, r := range rs {
			if f, ok := r[k].(float64); ok {
				vals = append(vals, f)
			}
		}
		sort.Float64s(vals)
		n := len(vals)
		if n%2 == 1 {
			med[k] = vals[n/2]
		} else {
			med[k] = (vals[n/2-1] + vals[n/2]) / 2
		}
	}
	med["runs"] = len(rs)
	var secs []float64
	for _, r := range rs {
		secs = append(secs, r["seconds"].(float64))
	}
	med["seconds_runs"] = secs
	printLine(med, orderedKeys(rs[0]))
}

// orderedKeys keeps the five required keys first.
func orderedKeys(m map[string]any) []string {
	head := []string{"workload", "ops", "seconds", "ops_per_s", "peak_rss_mb"}
	var rest []string
	for k := range m {
		if !slices.Contains(head, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(head, rest...)
}

func printLine(m map[string]any, keys []string) {
	for k := range m {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i, k := range keys {
		v, ok := m[k]
		if !ok {
			continue
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(v)
		sb.Write(kb)
		sb.WriteByte(':')
		sb.Write(vb)
	}
	sb.WriteString("}\n")
	os.Stdout.WriteString(sb.String())
}

type bench struct {
	pg      *postgres.Store
	counter *stmtCounter
	admin   *pgx.Conn
}

func (b *bench) close() {
	if b.pg != nil {
		b.pg.Close()
	}
	if b.admin != nil {
		b.admin.Close(context.Background())
	}
}

func (b *bench) run(ctx context.Context, name string) error {
	switch name {
	case "W1":
		return b.chain(ctx, "W1", 50, 200, nil, false)
	case "W1m":
		return b.chain(ctx, "W1m", 50, 200, memsaver.New(memsaver.Options{}), false)
	case "W2":
		return b.fan(ctx)
	case "W3":
		return b.pgChain(ctx, "W3", 50, false)
	case "W3b":
		return b.pgChain(ctx, "W3b", 10, true)
	case "W4":
		return b.w4(ctx)
	}
	return fmt.Errorf("unknown workload %s", name)
}

// ---------------------------------------------------------------- measuring

type measurement struct {
	ops      int
	seconds  float64
	peakRSS  float64
	rssStart float64
	cpu      float64
	warmup   int
	loadavg  float64
}

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize()) / (1 << 20)
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}

func warmupOps(ops int) int {
	w := os.Getenv("WARMUP")
	if w == "full" {
		return ops
	}
	if n, err := strconv.Atoi(w); err == nil && n >= 0 {
		return n
	}
	return 1
}

// measure runs warm-up ops, then beforeTimed, then the timed loop with an RSS
// sampler every 5 ms and after every op.
func measure(ctx context.Context, ops int, op func(k int, warm bool) error, beforeTimed func() error) (measurement, error) {
	m := measurement{ops: ops, warmup: warmupOps(ops)}
	for w := 0; w < m.warmup; w++ {
		if err := op(w, true); err != nil {
			return m, fmt.Errorf("warm-up: %w", err)
		}
	}
	if beforeTimed != nil {
		if err := beforeTimed(); err != nil {
			return m, err
		}
	}
	var peak atomic.Uint64
	sample := func() {
		v := uint64(rssMB() * 1000)
		for {
			old := peak.Load()
			if v <= old || peak.CompareAndSwap(old, v) {
				return
			}
		}
	}
	m.rssStart = rssMB()
	sample()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	m.loadavg = loadavg()
	cpu0 := cpuSeconds()
	t0 := time.Now()
	for k := 0; k < ops; k++ {
		if err := op(k, false); err != nil {
			close(stop)
			wg.Wait()
			return m, err
		}
		sample()
	}
	m.seconds = time.Since(t0).Seconds()
	m.cpu = cpuSeconds() - cpu0
	close(stop)
	wg.Wait()
	m.peakRSS = float64(peak.Load()) / 1000
	return m, nil
}

func round(v float64, d int) float64 {
	p := 1.0
	for range d {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

func emit(workload string, m measurement, extra map[string]any) {
	out := map[string]any{
		"workload":     workload,
		"ops":          m.ops,
		"seconds":      round(m.seconds, 6),
		"ops_per_s":    round(float64(m.ops)/m.seconds, 2),
		"peak_rss_mb":  round(m.peakRSS, 1),
		"runtime":      "go-deepresearch-graph",
		"cpu_s":        round(m.cpu, 3),
		"warmup_ops":   m.warmup,
		"rss_start_mb": round(m.rssStart, 1),
		"loadavg_1m":   m.loadavg,
		"warnings":     0,
		"go":           strings.TrimPrefix(goVersion(), "go"),
	}
	for k, v := range extra {
		out[k] = v
	}
	keys := []string{"workload", "ops", "seconds", "ops_per_s", "peak_rss_mb", "runtime"}
	printLine(out, keys)
}

// ---------------------------------------------------------------- W1, W1m, W3, W3b

type chainState struct {
	Count int      `json:"count"`
	Log   []string `json:"log"`
	Doc   string   `json:"doc,omitempty"`
}

const docLen = 10000

// docString is D(j) of WORKLOADS.md §W3b.
func docString(j int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	x := uint32(j+1) * 2654435761
	if x == 0 {
		x = 1
	}
	b := make([]byte, docLen)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = alphabet[x>>26]
	}
	return string(b)
}

func checkDocs(docs []string) error {
	want := map[int][2]string{
		0:  {"Uw3j7oQLaxB6vn92G-iG5s1-", "03242cbe25a0ff1258736b830787d68690cbbaf968cdaeeffda0a33a533083ca"},
		1:  {"ogL0HyTvcQFRjnr5KVZxY8wb", "4b805bfb6326e70ded7a7f97aa41455ff7ab2aced28c33af787016a8f005869b"},
		10: {"77nYWsFz2maO_FWUuHfEWDsJ", "5edce2dfd18a75270054b6c236df316d9ef28f43a715e68bd0e5e0cb3167036d"},
	}
	for j, w := range want {
		sum := sha256.Sum256([]byte(docs[j]))
		if docs[j][:24] != w[0] || hex.EncodeToString(sum[:]) != w[1] {
			return fmt.Errorf("D(%d) does not match the check values", j)
		}
	}
	return nil
}

func buildChain(n int, withDoc bool, docs []string, saver graph.Saver) (*graph.Graph[chainState], graph.Channel[int], graph.Channel[string], error) {
	s := graph.NewSchema[chainState]()
	count := graph.LastValue(s, "count", func(st *chainState) *int { return &st.Count })
	logc := graph.Append(s, "log", func(st *chainState) *[]string { return &st.Log })
	doc := graph.LastValue(s, "doc", func(st *chainState) *string { return &st.Doc })
	b := graph.New(s)
	prev := graph.Start
	for i := range n {
		name := "n" + strconv.Itoa(i)
		one := []string{name}
		if withDoc {
			d := docs[i+1]
			b.AddNode(name, func(ctx context.Context, st chainState) ([]graph.Write, error) {
				return []graph.Write{count.Set(st.Count + 1), logc.Set(one), doc.Set(d)}, nil
			})
		} else {
			b.AddNode(name, func(ctx context.Context, st chainState) ([]graph.Write, error) {
				return []graph.Write{count.Set(st.Count + 1), logc.Set(one)}, nil
			})
		}
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.End)
	g, err := b.Compile(graph.Options{Saver: saver, StepLimit: 1000})
	return g, count, doc, err
}

func verifyChain(st chainState, n int, withDoc bool, docs []string) error {
	if st.Count != n {
		return fmt.Errorf("count=%d, want %d", st.Count, n)
	}
	if len(st.Log) != n {
		return fmt.Errorf("len(log)=%d, want %d", len(st.Log), n)
	}
	for i, v := range st.Log {
		if v != "n"+strconv.Itoa(i) {
			return fmt.Errorf("log[%d]=%q", i, v)
		}
	}
	if withDoc && st.Doc != docs[n] {
		return errors.New("doc != D(10)")
	}
	return nil
}

func threadID(w string, k int, warm bool) string {
	tag := strconv.Itoa(k)
	if warm {
		tag = "warm" + tag
	}
	return fmt.Sprintf("%s-%d-%d-%s", strings.ToLower(w), os.Getpid(), time.Now().UnixMilli(), tag)
}

func (b *bench) chain(ctx context.Context, w string, n, ops int, saver graph.Saver, pgExtra bool) error {
	g, count, _, err := buildChain(n, false, nil, saver)
	if err != nil {
		return err
	}
	input := []graph.Write{count.Set(0)}
	m, err := measure(ctx, ops, func(k int, warm bool) error {
		res, err := g.Invoke(ctx, graph.Config{ThreadID: threadID(w, k, warm), Input: input})
		if err != nil {
			return err
		}
		return verifyChain(res.State, n, false, nil)
	}, nil)
	if err != nil {
		return err
	}
	extra := map[string]any{"nodes": n, "steps_per_s": round(float64(n*m.ops)/m.seconds, 1), "checkpointer": "none"}
	if saver != nil {
		extra["checkpointer"] = "memsaver"
		extra["durability"] = graph.DurabilityAsync.String()
	}
	emit(w, m, extra)
	return nil
}

// ---------------------------------------------------------------- W2

type fanState struct {
	Items []int `json:"items"`
	Total int   `json:"total"`
}

func (b *bench) fan(ctx context.Context) error {
	const fanout = 256
	s := graph.NewSchema[fanState]()
	items := graph.Append(s, "items", func(st *fanState) *[]int { return &st.Items })
	total := graph.LastValue(s, "total", func(st *fanState) *int { return &st.Total })
	var reduceRuns atomic.Int64
	gb := graph.New(s)
	gb.AddNode("plan", func(ctx context.Context, st fanState) ([]graph.Write, error) { return nil, nil })
	graph.AddWorker(gb, "work", func(ctx context.Context, arg struct{ I int }) ([]graph.Write, error) {
		return []graph.Write{items.Set([]int{2 * arg.I})}, nil
	})
	gb.AddNode("reduce", func(ctx context.Context, st fanState) ([]graph.Write, error) {
		reduceRuns.Add(1)
		sum := 0
		for _, v := range st.Items {
			sum += v
		}
		return []graph.Write{total.Set(sum)}, nil
	})
	gb.AddEdge(graph.Start, "plan")
	gb.AddConditionalEdges("plan", func(fanState) []graph.Route {
		rs := make([]graph.Route, fanout)
		for i := range rs {
			rs[i] = graph.Send("work", struct{ I int }{i})
		}
		return rs
	})
	gb.AddEdge("work", "reduce")
	gb.AddEdge("reduce", graph.End)
	g, err := gb.Compile(graph.Options{StepLimit: 1000})
	if err != nil {
		return err
	}
	input := []graph.Write{total.Set(0)}
	m, err := measure(ctx, 50, func(k int, warm bool) error {
		before := reduceRuns.Load()
		res, err := g.Invoke(ctx, graph.Config{Input: input})
		if err != nil {
			return err
		}
		if res.State.Total != 65280 || len(res.State.Items) != fanout {
			return fmt.Errorf("total=%d items=%d", res.State.Total, len(res.State.Items))
		}
		if reduceRuns.Load()-before != 1 {
			return fmt.Errorf("reduce ran %d times", reduceRuns.Load()-before)
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	emit("W2", m, map[string]any{
		"fanout": fanout, "tasks_per_op": fanout + 2,
		"tasks_per_s":  round(float64((fanout+2)*m.ops)/m.seconds, 1),
		"checkpointer": "none",
		"parallelism":  "goroutines: the 256 work tasks of a step run concurrently on GOMAXPROCS OS threads (2 here)",
	})
	return nil
}

// ---------------------------------------------------------------- Postgres

// stmtCounter counts the statements the client sends and the transactions it
// commits: explicit COMMITs, plus every writing statement or pipelined batch
// sent outside an explicit transaction (each is its own implicit
// transaction, committed and flushed by the server).
type stmtCounter struct {
	on                  atomic.Bool
	statements, commits atomic.Int64
	mu                  sync.Mutex
	inTx                map[*pgx.Conn]bool
	batchWrites         map[*pgx.Conn]bool
	kinds               map[string]sqlKind // by statement text: classified once, not in every timed query
}

type sqlKind uint8

const (
	sqlRead sqlKind = iota
	sqlBegin
	sqlCommit
	sqlRollback
	sqlWrite
)

func classify(sql string) sqlKind {
	s := strings.ToLower(strings.TrimSpace(sql))
	switch {
	case strings.HasPrefix(s, "begin"):
		return sqlBegin
	case s == "commit":
		return sqlCommit
	case s == "rollback":
		return sqlRollback
	case writeRE.MatchString(s):
		return sqlWrite
	}
	return sqlRead
}

var writeRE = regexp.MustCompile(`(?i)\b(insert|update|delete|truncate)\b`)

// query counts a statement sent alone (a transaction of its own unless one
// is open on conn) or, in a pipeline, one of the batch (inBatch: its writes
// commit with the pipeline's implicit transaction, counted at TraceBatchEnd).
// A pipeline may open and end its own transaction (BEGIN … COMMIT).
func (c *stmtCounter) query(conn *pgx.Conn, sql string, inBatch bool) {
	if !c.on.Load() {
		return
	}
	c.statements.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inTx == nil {
		c.inTx, c.batchWrites, c.kinds = map[*pgx.Conn]bool{}, map[*pgx.Conn]bool{}, map[string]sqlKind{}
	}
	k, ok := c.kinds[sql]
	if !ok {
		k = classify(sql)
		c.kinds[sql] = k
	}
	switch {
	case k == sqlBegin:
		c.inTx[conn] = true
	case k == sqlCommit:
		c.inTx[conn] = false
		c.commits.Add(1)
	case k == sqlRollback:
		c.inTx[conn] = false
	case !c.inTx[conn] && k == sqlWrite && inBatch:
		c.batchWrites[conn] = true
	case !c.inTx[conn] && k == sqlWrite:
		c.commits.Add(1)
	}
}

func (c *stmtCounter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.query(conn, d.SQL, false)
	return ctx
}
func (c *stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *stmtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *stmtCounter) TraceBatchQuery(_ context.Context, conn *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.query(conn, d.SQL, true)
}
func (c *stmtCounter) TraceBatchEnd(_ context.Context, conn *pgx.Conn, _ pgx.TraceBatchEndData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batchWrites[conn] && !c.inTx[conn] {
		c.commits.Add(1) // a pipeline runs as one implicit transaction
	}
	delete(c.batchWrites, conn)
}

// pgURL is PG_URL (default the local bench database). Without an sslmode
// it connects in plain text, as node-postgres (the peer's driver) does with
// the same URL; pgx alone would prefer TLS, which costs both ends CPU on
// every statement and makes the comparison unequal.
func pgURL() string {
	u := os.Getenv("PG_URL")
	if u == "" {
		u = "postgres://postgres@127.0.0.1:5432/bench"
	}
	if !strings.Contains(u, "sslmode=") {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + "sslmode=disable"
	}
	return u
}

func sslMode(u string) string {
	_, after, _ := strings.Cut(u, "sslmode=")
	mode, _, _ := strings.Cut(after, "&")
	return mode
}

func (b *bench) postgres(ctx context.Context) error {
	if b.pg != nil {
		return nil
	}
	url := pgURL()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	// create the bench database on first use
	if c, err := pgx.Connect(ctx, strings.Replace(url, "/"+cfg.Database, "/postgres", 1)); err == nil {
		var exists bool
		_ = c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname=$1)", cfg.Database).Scan(&exists)
		if !exists {
			_, _ = c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{cfg.Database}.Sanitize())
		}
		c.Close(ctx)
	}
	b.counter = &stmtCounter{}
	b.pg, err = postgres.Open(ctx, postgres.Options{URL: url, Tracer: b.counter})
	if err != nil {
		return err
	}
	b.admin, err = pgx.Connect(ctx, url)
	return err
}

type tableStats struct {
	total int64
	bytes map[string]int64
	rows  map[string]int64
}

func (b *bench) stats(ctx context.Context) (tableStats, error) {
	ts := tableStats{bytes: map[string]int64{}, rows: map[string]int64{}}
	for _, t := range b.pg.TableNames() {
		var by, n int64
		q := fmt.Sprintf("SELECT pg_total_relation_size($1::regclass)::bigint, (SELECT count(*) FROM %s)::bigint", pgx.Identifier{t}.Sanitize())
		if err := b.admin.QueryRow(ctx, q, t).Scan(&by, &n); err != nil {
			return ts, err
		}
		ts.bytes[t], ts.rows[t] = by, n
		ts.total += by
	}
	return ts, nil
}

func (b *bench) serverInfo(ctx context.Context) (map[string]any, error) {
	var v, sc, fs string
	err := b.admin.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('synchronous_commit'), current_setting('fsync')").Scan(&v, &sc, &fs)
	return map[string]any{"pg_version": v, "synchronous_commit": sc, "fsync": fs}, err
}

func (b *bench) pgMeasure(ctx context.Context, ops int, op func(k int, warm bool) error) (measurement, map[string]any, error) {
	if err := b.postgres(ctx); err != nil {
		return measurement{}, nil, err
	}
	info, err := b.serverInfo(ctx)
	if err != nil {
		return measurement{}, nil, err
	}
	var empty tableStats
	m, err := measure(ctx, ops, op, func() error {
		if err := b.pg.Truncate(ctx); err != nil {
			return err
		}
		var err error
		empty, err = b.stats(ctx)
		b.counter.statements.Store(0)
		b.counter.commits.Store(0)
		b.counter.on.Store(true)
		return err
	})
	b.counter.on.Store(false)
	if err != nil {
		return m, nil, err
	}
	after, err := b.stats(ctx)
	if err != nil {
		return m, nil, err
	}
	extra := map[string]any{
		"checkpointer":         "deepresearch/storage/postgres",
		"sslmode":              sslMode(pgURL()),
		"durability":           graph.DurabilityAsync.String() + " (group commit; every write is committed before Invoke returns)",
		"table_bytes":          after.total,
		"bytes_per_invocation": round(float64(after.total)/float64(ops), 1),
		"table_bytes_empty":    empty.total,
		"pg_statements_per_op": round(float64(b.counter.statements.Load())/float64(ops), 2),
		"pg_commits_per_op":    round(float64(b.counter.commits.Load())/float64(ops), 2),
	}
	for t, v := range after.bytes {
		extra["bytes_"+t] = v
		extra["rows_"+t] = after.rows[t]
	}
	for k, v := range info {
		extra[k] = v
	}
	return m, extra, nil
}

func (b *bench) pgChain(ctx context.Context, w string, n int, withDoc bool) error {
	var docs []string
	if withDoc {
		for j := 0; j <= 10; j++ {
			docs = append(docs, docString(j))
		}
		if err := checkDocs(docs); err != nil {
			return err
		}
	}
	if err := b.postgres(ctx); err != nil {
		return err
	}
	g, count, doc, err := buildChain(n, withDoc, docs, b.pg)
	if err != nil {
		return err
	}
	input := []graph.Write{count.Set(0)}
	if withDoc {
		input = append(input, doc.Set(docs[0]))
	}
	m, extra, err := b.pgMeasure(ctx, 100, func(k int, warm bool) error {
		res, err := g.Invoke(ctx, graph.Config{ThreadID: threadID(w, k, warm), Input: input})
		if err != nil {
			return err
		}
		return verifyChain(res.State, n, withDoc, docs)
	})
	if err != nil {
		return err
	}
	extra["nodes"] = n
	extra["steps_per_s"] = round(float64(n*m.ops)/m.seconds, 1)
	if withDoc {
		extra["doc_chars"] = docLen
	}
	emit(w, m, extra)
	return nil
}

// ---------------------------------------------------------------- W4

type draftState struct {
	Topic string   `json:"topic"`
	Text  string   `json:"text"`
	Final string   `json:"final"`
	Log   []string `json:"log"`
}

func (b *bench) w4(ctx context.Context) error {
	if err := b.postgres(ctx); err != nil {
		return err
	}
	s := graph.NewSchema[draftState]()
	topic := graph.LastValue(s, "topic", func(st *draftState) *string { return &st.Topic })
	text := graph.LastValue(s, "text", func(st *draftState) *string { return &st.Text })
	final := graph.LastValue(s, "final", func(st *draftState) *string { return &st.Final })
	logc := graph.Append(s, "log", func(st *draftState) *[]string { return &st.Log })
	gb := graph.New(s)
	gb.AddNode("draft", func(ctx context.Context, st draftState) ([]graph.Write, error) {
		return []graph.Write{text.Set("draft:" + st.Topic), logc.Set([]string{"draft"})}, nil
	})
	gb.AddNode("review", func(ctx context.Context, st draftState) ([]graph.Write, error) {
		return []graph.Write{final.Set(st.Text + ":approved"), logc.Set([]string{"review"})}, nil
	})
	gb.AddEdge(graph.Start, "draft").AddEdge("draft", "review").AddEdge("review", graph.End)
	g, err := gb.Compile(graph.Options{Saver: b.pg, InterruptBefore: []string{"review"}, StepLimit: 1000})
	if err != nil {
		return err
	}
	m, extra, err := b.pgMeasure(ctx, 100, func(k int, warm bool) error {
		tag := strconv.Itoa(k)
		if warm {
			tag = "warm" + tag
		}
		tp := "t" + tag
		thread := threadID("W4", k, warm)
		first, err := g.Invoke(ctx, graph.Config{ThreadID: thread, Input: []graph.Write{topic.Set(tp)}})
		if err != nil {
			return err
		}
		if first.State.Text != "draft:"+tp || first.State.Final != "" || !slices.Equal(first.State.Log, []string{"draft"}) {
			return fmt.Errorf("first invoke state %+v", first.State)
		}
		if !first.Interrupted() {
			return errors.New("first invoke did not report an interrupt")
		}
		// The resume reads the thread back from PostgreSQL (Invoke always
		// loads through the Saver; nothing of the first call is cached).
		second, err := g.Invoke(ctx, graph.Config{ThreadID: thread, Resume: map[string]any{first.Interrupts[0].ID: true}})
		if err != nil {
			return err
		}
		if second.State.Final != "draft:"+tp+":approved" || !slices.Equal(second.State.Log, []string{"draft", "review"}) {
			return fmt.Errorf("resumed state %+v", second.State)
		}
		return nil
	})
	if err != nil {
		return err
	}
	extra["invokes_per_op"] = 2
	extra["ms_per_round_trip"] = round(m.seconds*1000/float64(m.ops), 3)
	extra["resume"] = "Invoke(Config{Resume: {interruptID: true}}) (answer stored exactly once)"
	emit("W4", m, extra)
	return nil
}

func goVersion() string {
	v := strings.TrimSpace(runtimeVersion)
	return v
}
