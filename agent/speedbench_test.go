package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/graph/memsaver"
)

// The simulated latencies (before scaling by SPEEDBENCH_SCALE).
const (
	modelLow, modelHigh   = 300 * time.Millisecond, 800 * time.Millisecond
	searchLow, searchHigh = 200 * time.Millisecond, 400 * time.Millisecond
	fetchLow, fetchHigh   = 100 * time.Millisecond, 300 * time.Millisecond
)

// chain is the longest chain of calls that truly depend on each other: the
// plan names the queries, a page is read from a search result, its summary
// needs the page, the reflection the summaries, the report the findings and
// the review the report. Everything else can overlap with these.
var chain = []string{"planner", "search", "fetch", "execute", "reflect", "writer", "reviewer"}

// speedWorld is one research on protocol fakes with seeded latencies: the
// production LLM client against llmtest, search and pages in process.
type speedWorld struct {
	srv *llmtest.Server
	a   *agent.Agent
	tr  *tracer

	mu      sync.Mutex
	nominal map[string]time.Duration // the longest simulated latency per kind of call
}

func (w *speedWorld) lat(kind, key string, lo, hi time.Duration, seed uint64, scale float64) time.Duration {
	d := time.Duration(float64(between(seed, key, lo, hi)) * scale)
	w.mu.Lock()
	w.nominal[kind] = max(w.nominal[kind], d)
	w.mu.Unlock()
	return d
}

// lowerBound adds up the longest simulated latency of each link of chain:
// what a run that overlaps everything else would take.
func (w *speedWorld) lowerBound() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var lb time.Duration
	for _, k := range chain {
		lb += w.nominal[k]
	}
	return lb
}

func newSpeedWorld(tb testing.TB, seed uint64, scale, faults, tps float64, overlapping, citeByID bool) *speedWorld {
	w := &speedWorld{tr: &tracer{}, nominal: map[string]time.Duration{}}
	// a model that wants more, as models do: every subtask's first
	// reflection asks for another try, and the first review a rewrite
	b := agenttest.NewBrain()
	// a writer that does what its prompt asks: cite evidence by id and
	// leave the References to the program
	b.CiteByID = citeByID
	b.ReflectDone = func(try int) bool { return try >= 2 }
	b.ReviewScores = func(n int) (agent.Scores, string) {
		if n == 1 {
			return agent.Scores{FactCheck: 0.95, Completeness: 0.6, Logic: 0.7, Format: 1}, "write"
		}
		return agent.Scores{FactCheck: 0.95, Completeness: 0.9, Logic: 0.9, Format: 1}, "write"
	}
	var opts []llmtest.Option
	if tps > 0 {
		// a real model takes time per output token, not only to start
		opts = append(opts, llmtest.WithTokensPerSecond(tps/scale))
	}
	if faults > 0 {
		opts = append(opts, llmtest.WithFaults(llmtest.Faults{Rate: faults, Seed: seed}))
	}
	seq := map[string]int{} // the server calls its responder under its lock
	w.srv = llmtest.NewServer(tb, func(r *llmtest.Request) llmtest.Reply {
		// the n-th request of a node takes the same time whatever the prompt
		seq[r.Node()]++
		d := w.lat(agenttest.Kind(r.Node()), r.Node()+"#"+strconv.Itoa(seq[r.Node()]), modelLow, modelHigh, seed, scale)
		return llmtest.Delayed(d, b.Respond(r))
	}, opts...)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	tb.Cleanup(hc.CloseIdleConnections)
	// the production client with its defaults (timeouts, backoff, Retry-After)
	client, err := llm.New(llm.Options{APIKey: "k", BaseURL: w.srv.URL(), Model: "fake", HTTPClient: hc,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	web := agenttest.NewWorld()
	if overlapping {
		web.Pages = append(web.Pages, agenttest.OverlappingPages()...)
	}
	search := &slowSearch{World: web, tr: w.tr, lat: func(key string) time.Duration {
		return w.lat("search", key, searchLow, searchHigh, seed, scale)
	}}
	fetch := &slowFetch{World: web, tr: w.tr, lat: func(key string) time.Duration {
		return w.lat("fetch", key, fetchLow, fetchHigh, seed, scale)
	}}
	w.a, err = agent.New(agent.Deps{LLM: tracedLLM{client, w.tr}, Search: search, Fetch: fetch,
		Saver: memsaver.New(memsaver.Options{}), Logger: slog.New(slog.DiscardHandler)}, agent.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// BenchmarkResearchSpeed runs whole researches, an English and a Japanese
// question, on simulated latencies (model 300–800 ms to the first token
// and then SPEEDBENCH_TPS output tokens a second, default 60 — 0 turns
// generation time off; search 200–400 ms, page 100–300 ms, seeded), clean
// and with 30 % of model calls failing (429 with Retry-After, 500, hangs,
// malformed JSON), and prints per run: wall time, calls and requests,
// tokens (every request's, wasted ones included) per report and per
// verified citation, effective parallelism (sum of call durations ÷ wall),
// the lower bound (see chain), the output tokens on the critical path, and
// what speculative calls saved against what they wasted. Each iteration is
// one run with the seed of its index. SPEEDBENCH_SCALE multiplies every
// latency and generation time (default 1). SPEEDBENCH_CITE=quotes makes
// the writer copy every quote and write a References section, as models
// did before the prompt asked for evidence ids (the default cites by id).
// SPEEDBENCH_TEAM is the team size of every run (default 1), and
// SPEEDBENCH_OVERLAP=1 adds pages of other sites restating the facts, alike
// or with other numbers (agenttest.OverlappingPages): each run also prints
// the corroborated claims and the disagreements its report cross-checked.
//
//	go test -run '^$' -bench ResearchSpeed -benchtime 3x ./agent/
func BenchmarkResearchSpeed(b *testing.B) {
	scale := 1.0
	if v, err := strconv.ParseFloat(os.Getenv("SPEEDBENCH_SCALE"), 64); err == nil && v > 0 {
		scale = v
	}
	tps := 60.0
	if v, err := strconv.ParseFloat(os.Getenv("SPEEDBENCH_TPS"), 64); err == nil && v >= 0 {
		tps = v
	}
	citeByID := os.Getenv("SPEEDBENCH_CITE") != "quotes"
	team, _ := strconv.Atoi(os.Getenv("SPEEDBENCH_TEAM"))
	overlapping := os.Getenv("SPEEDBENCH_OVERLAP") == "1"
	for _, faults := range []float64{0, 0.3} {
		for _, q := range []string{"What does the EU AI Act require?", "2026年の国内生成AI規制の動向を調べて"} {
			lang := agent.DetectLanguage(q)
			name := lang + "/clean"
			if faults > 0 {
				name = fmt.Sprintf("%s/faults%02.0f", lang, faults*100)
			}
			b.Run(name, func(b *testing.B) {
				var wallSum, parSum float64
				var tokSum, verSum, cpOutSum, corSum, disSum int
				failed := 0
				for i := 0; i < b.N; i++ {
					w := newSpeedWorld(b, uint64(i+1), scale, faults, tps, overlapping, citeByID)
					t0 := time.Now()
					res, err := w.a.Start(context.Background(), "speed-"+strconv.Itoa(i), agent.Request{Question: q, TeamSize: team}, nil)
					wall := time.Since(t0)
					status, tokens, verified := "error", 0, 0
					var usage agent.Usage
					if err == nil {
						status, tokens, verified, usage = string(res.Status), res.Usage.Total(), res.Citations.Verified, res.Usage
					}
					if err != nil || res.Status != agent.StatusDone {
						failed++
						b.Logf("run %d failed: %v", i, err)
					}
					var busy time.Duration
					n := map[string]int{}
					w.tr.mu.Lock()
					for _, s := range w.tr.spans {
						busy += s.end.Sub(s.start)
						n[s.kind]++
					}
					w.tr.mu.Unlock()
					if os.Getenv("SPEEDBENCH_TRACE") != "" {
						w.tr.dump(os.Stderr, t0)
					}
					par := busy.Seconds() / wall.Seconds()
					lb := w.lowerBound()
					cpBusy, cp := w.tr.criticalPath()
					cpOut, cpRefs := 0, 0
					for _, s := range cp {
						cpOut += s.out
						cpRefs += s.refs
					}
					fmt.Fprintf(os.Stderr, "speed %s seed %d: wall %v, model calls %d (%d requests, %v faulted), searches %d, fetches %d, tokens %d (%s), parallelism %.2f, lower bound %v (wall/bound %.2f), verified citations %d, %s\n",
						name, i+1, wall.Round(10*time.Millisecond), n["llm"], w.srv.Calls(), w.srv.Faulted(), n["search"], n["fetch"],
						tokens, usage.Spent()+", "+usage.PerVerified(verified), par, lb.Round(10*time.Millisecond), wall.Seconds()/lb.Seconds(), verified, status)
					fmt.Fprintf(os.Stderr, "  critical path %v of the wall's %v (%d calls, one after another, %d output tokens, %d of them a References section the program could write; %v generating in all): %s\n",
						cpBusy.Round(10*time.Millisecond), wall.Round(10*time.Millisecond), len(cp), cpOut, cpRefs, w.srv.GenerationTime().Round(10*time.Millisecond), pathString(cp))
					fmt.Fprintf(os.Stderr, "  speculation: saved %v of wall time, wasted %d tokens\n",
						time.Duration(usage.SpeculativeSavedMS)*time.Millisecond, usage.SpeculativeWasted)
					cor, dis := 0, 0
					if err == nil && res.CrossCheck != nil {
						cor, dis = len(res.CrossCheck.Corroborated), len(res.CrossCheck.Disagreements)
					}
					fmt.Fprintf(os.Stderr, "  team %d: %d corroborated claims, %d disagreements\n", max(team, 1), cor, dis)
					corSum += cor
					disSum += dis
					wallSum += wall.Seconds()
					parSum += par
					tokSum += tokens
					verSum += verified
					cpOutSum += cpOut
				}
				b.ReportMetric(wallSum/float64(b.N), "wall-s")
				b.ReportMetric(parSum/float64(b.N), "parallelism")
				b.ReportMetric(float64(tokSum)/float64(b.N), "tokens/report")
				if verSum > 0 {
					b.ReportMetric(float64(tokSum)/float64(verSum), "tokens/verified")
				}
				b.ReportMetric(float64(cpOutSum)/float64(b.N), "cp-out-tokens")
				b.ReportMetric(float64(failed), "failed")
				b.ReportMetric(float64(corSum)/float64(b.N), "corroborated")
				b.ReportMetric(float64(disSum)/float64(b.N), "disagreements")
			})
		}
	}
}

// pathString names a chain's calls: "planner 0.36 → search 0.30 → …".
func pathString(chain []span) string {
	parts := make([]string, len(chain))
	for i, s := range chain {
		name := s.kind
		if s.node != "" {
			name = s.node[strings.LastIndex(s.node, ".")+1:]
		}
		parts[i] = fmt.Sprintf("%s %.2f", name, s.end.Sub(s.start).Seconds())
	}
	return strings.Join(parts, " → ")
}

// dump prints the calls of a run in the order they started (offset from
// t0, duration, kind, node): SPEEDBENCH_TRACE=1 shows where a run waits.
func (tr *tracer) dump(wr io.Writer, t0 time.Time) {
	tr.mu.Lock()
	sp := append([]span(nil), tr.spans...)
	tr.mu.Unlock()
	sort.Slice(sp, func(i, j int) bool { return sp[i].start.Before(sp[j].start) })
	for _, s := range sp {
		fmt.Fprintf(wr, "  %6.2fs %6.2fs %-6s %s %s\n", s.start.Sub(t0).Seconds(), s.end.Sub(s.start).Seconds(), s.kind, s.node, s.ns)
	}
}
