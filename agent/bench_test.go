package agent_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/clock"
	"deepresearch/graph"
	"deepresearch/graph/memsaver"
	"deepresearch/tools/search"
)

// Simulated latencies: the 300–800 ms scaled down by 10 (30–80 ms)
// so that a benchmark run takes seconds; the ratio is what matters.
const latLow, latHigh = 30 * time.Millisecond, 80 * time.Millisecond

func latency(key string) time.Duration { return between(0, key, latLow, latHigh) }

// between is a seeded latency in [lo, hi] for a call identified by key.
func between(seed uint64, key string, lo, hi time.Duration) time.Duration {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", seed, key)
	return lo + time.Duration(h.Sum64()%uint64(hi-lo+1))
}

// span is one call to an external service (LLM, search, fetch).
type span struct {
	start, end time.Time
	ns         string
	step, task int
	kind       string // "llm", "search" or "fetch"
	node       string // the LLM call's node
	out        int    // the LLM call's output tokens (every request's)
	refs       int    // of which a References section (characters/4)
}

type tracer struct {
	mu    sync.Mutex
	spans []span
}

func (tr *tracer) track(ctx context.Context, kind string, fn func()) {
	tr.trackLLM(ctx, kind, func() llm.Response { fn(); return llm.Response{} })
}

// trackLLM is track for a model call: its output tokens, and those of a
// References section the model wrote (text the program has).
func (tr *tracer) trackLLM(ctx context.Context, kind string, fn func() llm.Response) {
	s := span{start: time.Now(), kind: kind}
	if kind == "llm" {
		s.node = llm.NodeFrom(ctx)
	}
	if ti, ok := graph.CurrentTask(ctx); ok {
		s.ns, s.step, s.task = ti.NS, ti.Step, ti.Task
	}
	r := fn()
	s.out = r.Billed().CompletionTokens
	if i := strings.Index(r.Content, "\n## References"); i >= 0 {
		refs := r.Content[i:]
		if j := strings.Index(refs[1:], "\n## "); j >= 0 {
			refs = refs[:j+1]
		}
		s.refs = (utf8.RuneCountInString(refs) + 3) / 4
	}
	s.end = time.Now()
	tr.mu.Lock()
	tr.spans = append(tr.spans, s)
	tr.mu.Unlock()
}

// subgraph returns the researcher instance of a namespace: "cp.task".
func subgraph(ns string) (cp, inst string) {
	i := strings.LastIndex(ns, ":")
	if i < 0 {
		return "", ""
	}
	inst = ns[i+1:]
	cp, _, _ = strings.Cut(inst, ".")
	return cp, inst
}

// independent reports whether two calls cannot depend on each other: tasks
// of the same superstep, or researchers fanned out by the same step, except
// a page read, which every researcher of the run shares (agent/pages.go).
func independent(p, c span) bool {
	if p.kind == "fetch" {
		return false
	}
	if p.ns == c.ns {
		return p.step == c.step && p.task != c.task
	}
	pcp, pi := subgraph(p.ns)
	ccp, ci := subgraph(c.ns)
	return pi != "" && ci != "" && pcp == ccp && pi != ci
}

// criticalPath is the longest chain of dependent calls and its length: a
// call depends on every call that ended before it started, except calls it
// is provably independent of (see independent). Each call costs its
// measured duration.
func (tr *tracer) criticalPath() (time.Duration, []span) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	f := make([]time.Duration, len(tr.spans))
	prev := make([]int, len(tr.spans))
	order := make([]int, len(tr.spans))
	for i := range order {
		order[i] = i
	}
	// by end time, so predecessors are computed first
	sortByEnd(order, tr.spans)
	var best time.Duration
	last := -1
	for _, ci := range order {
		c := tr.spans[ci]
		var pre time.Duration
		prev[ci] = -1
		for _, pi := range order {
			p := tr.spans[pi]
			if !p.end.After(c.start) && pi != ci && !independent(p, c) && f[pi] > pre {
				pre, prev[ci] = f[pi], pi
			}
		}
		f[ci] = pre + c.end.Sub(c.start)
		if f[ci] > best {
			best, last = f[ci], ci
		}
	}
	var chain []span
	for i := last; i >= 0; i = prev[i] {
		chain = append(chain, tr.spans[i])
	}
	slices.Reverse(chain)
	return best, chain
}

func sortByEnd(idx []int, sp []span) {
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && sp[idx[j]].end.Before(sp[idx[j-1]].end); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

type tracedLLM struct {
	agent.LLM
	tr *tracer
}

func (t tracedLLM) Chat(ctx context.Context, req llm.Request) (r llm.Response, err error) {
	t.tr.trackLLM(ctx, "llm", func() llm.Response { r, err = t.LLM.Chat(ctx, req); return r })
	return
}

func (t tracedLLM) ChatJSON(ctx context.Context, req llm.Request, s *llm.Schema, out any) (r llm.Response, err error) {
	t.tr.trackLLM(ctx, "llm", func() llm.Response { r, err = t.LLM.ChatJSON(ctx, req, s, out); return r })
	return
}

type slowSearch struct {
	*agenttest.World
	tr  *tracer
	lat func(key string) time.Duration
}

func (s *slowSearch) Search(ctx context.Context, q search.Query) (rs []search.Result, err error) {
	s.tr.track(ctx, "search", func() {
		time.Sleep(s.lat("search " + q.Text))
		rs, err = s.World.Search(ctx, q)
	})
	return
}

type slowFetch struct {
	*agenttest.World
	tr  *tracer
	lat func(key string) time.Duration
}

func (f *slowFetch) Fetch(ctx context.Context, u string) (p agent.Page, err error) {
	f.tr.track(ctx, "fetch", func() {
		time.Sleep(f.lat("fetch " + u))
		p, err = f.World.Fetch(ctx, u)
	})
	return
}

type benchWorld struct {
	srv *llmtest.Server
	a   *agent.Agent
	tr  *tracer
}

func newBenchWorld(tb testing.TB, scale float64, conc int) *benchWorld {
	b := agenttest.NewBrain()
	var calls sync.Map
	srv := llmtest.New(func(r *llmtest.Request) llmtest.Reply {
		n, _ := calls.LoadOrStore(r.Node(), new(int))
		_ = n
		d := time.Duration(float64(latency(r.Node()+strconv.Itoa(len(r.Body)))) * scale)
		return llmtest.Delayed(d, b.Respond(r))
	})
	tb.Cleanup(srv.Close)
	tr := &tracer{}
	scaled := func(key string) time.Duration { return time.Duration(float64(latency(key)) * scale) }
	web := agenttest.NewWorld()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * conc, MaxIdleConnsPerHost: 4 * conc}}
	client, err := llm.New(llm.Options{APIKey: "k", BaseURL: srv.URL(), Model: "fake", HTTPClient: hc, Clock: clock.Instant{}, Logger: slog.New(slog.DiscardHandler), Timeout: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := agent.New(agent.Deps{LLM: tracedLLM{client, tr}, Search: &slowSearch{World: web, tr: tr, lat: scaled}, Fetch: &slowFetch{World: web, tr: tr, lat: scaled},
		Saver: memsaver.New(memsaver.Options{}), Logger: slog.New(slog.DiscardHandler)}, agent.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return &benchWorld{srv: srv, a: a, tr: tr}
}

// BenchmarkCriticalPath reports the wall time of a full research over its
// critical path (the longest chain of dependent LLM/search/fetch calls).
// Target: ≤ 1.10.
func BenchmarkCriticalPath(b *testing.B) {
	for _, q := range []string{"What does the EU AI Act require?", "2026年の国内生成AI規制の動向を調べて"} {
		b.Run(agent.DetectLanguage(q), func(b *testing.B) {
			var ratio, wallSum, cpSum float64
			for i := 0; i < b.N; i++ {
				w := newBenchWorld(b, 1, 1)
				t0 := time.Now()
				res, err := w.a.Start(context.Background(), "bench-"+strconv.Itoa(i), agent.Request{Question: q}, nil)
				wall := time.Since(t0)
				if err != nil || res.Status != agent.StatusDone {
					b.Fatalf("%v %+v", err, res)
				}
				cp, _ := w.tr.criticalPath()
				ratio += float64(wall) / float64(cp)
				wallSum += wall.Seconds()
				cpSum += cp.Seconds()
				if i == 0 {
					fmt.Fprintf(os.Stderr, "%s: %d calls, wall %v, critical path %v, ratio %.3f\n", agent.DetectLanguage(q), len(w.tr.spans), wall.Round(time.Millisecond), cp.Round(time.Millisecond), float64(wall)/float64(cp))
				}
			}
			b.ReportMetric(ratio/float64(b.N), "wall/critical")
			b.ReportMetric(wallSum/float64(b.N), "wall-s")
			b.ReportMetric(cpSum/float64(b.N), "critical-s")
		})
	}
}

func peakRSS() (uint64, uint64) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	var hwm, rss uint64
	for _, ln := range strings.Split(string(data), "\n") {
		f := strings.Fields(ln)
		if len(f) >= 2 && f[0] == "VmHWM:" {
			hwm, _ = strconv.ParseUint(f[1], 10, 64)
		}
		if len(f) >= 2 && f[0] == "VmRSS:" {
			rss, _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	return hwm * 1024, rss * 1024
}

// BenchmarkConcurrentRuns runs 1,000 researches at once in one process (the
// fake LLM server included) and reports the peak RSS. Target: < 1 GiB.
func BenchmarkConcurrentRuns(b *testing.B) {
	const n = 1000
	for i := 0; i < b.N; i++ {
		w := newBenchWorld(b, 1, n)
		runtime.GC()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		t0 := time.Now()
		for j := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := "What does the EU AI Act require?"
				if j%2 == 1 {
					q = "2026年の国内生成AI規制の動向を調べて"
				}
				res, err := w.a.Start(context.Background(), fmt.Sprintf("c%d-%d", i, j), agent.Request{Question: q}, nil)
				if err == nil && res.Status != agent.StatusDone {
					err = fmt.Errorf("status %s", res.Status)
				}
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		wall := time.Since(t0)
		close(errs)
		failed := 0
		for err := range errs {
			if failed == 0 {
				b.Logf("first failure: %v", err)
			}
			failed++
		}
		hwm, _ := peakRSS()
		fmt.Fprintf(os.Stderr, "%d concurrent runs: %d failed, wall %v, peak RSS %.0f MiB, %d LLM calls\n", n, failed, wall.Round(time.Millisecond), float64(hwm)/(1<<20), w.srv.Calls())
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(failed), "failed")
		b.ReportMetric(wall.Seconds(), "wall-s")
	}
}
