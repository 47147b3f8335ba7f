package faults

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/llm"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot"

	"deepresearch/bot/slackfake"
	"deepresearch/graph"
	"deepresearch/research"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlite"
	"deepresearch/tools/fetch"
	"deepresearch/tools/search"
)

// long reports whether the long versions were asked for (CHAOS_LONG=1).
func long() bool { return os.Getenv("CHAOS_LONG") == "1" }

// pages of the fake web site: path → title, text.
var pages = map[string][2]string{
	"/timeline":  {"AI Act timeline", "The EU AI Act entered into force on 1 August 2024. Prohibited practices apply from 2 February 2025."},
	"/penalties": {"AI Act penalties", "Fines for prohibited AI practices can reach 35 million euros or 7% of worldwide annual turnover."},
	"/sme":       {"AI Act and SMEs", "Small and medium-sized enterprises benefit from regulatory sandboxes under the act."},
}

// hostile pages served to the fetcher by the abuse test.
var hostilePaths = []string{"/huge", "/bomb", "/loop", "/sjis", "/latin1"}

// config describes one world.
type config struct {
	Postgres   bool // else SQLite
	PGProxy    bool // put a cuttable TCP proxy between the bot and Postgres
	LLMFaults  *llmtest.Faults
	LLMLatency time.Duration // mean simulated latency per LLM call (seeded)
	Hostile    bool          // search results also list the hostile pages
	Inject     string        // text the scripted LLM writes into the report and summary
	// Bot options.
	MaxConcurrentRuns int
	MaxRunsPerUser    int
	ApproveDraft      bool
	LLMTimeout        time.Duration
	PoolMax           int32
	Quiet             bool // log only errors
	// SlackLimits makes the fake Slack enforce Slack's rate limits
	// (chat.update Tier 3 per workspace, chat.postMessage ~1/s per
	// channel), answering 429 with Retry-After beyond them.
	SlackLimits bool
}

// world is the whole bot in this process against the fakes.
type world struct {
	t     testing.TB
	cfg   config
	slack *slackfake.Server
	llm   *llmtest.Server
	web   *httptest.Server
	sx    *httptest.Server
	proxy *Proxy

	searchDown atomic.Bool
	webHits    sync.Map // path → *atomic.Int64

	pg       *postgres.Store
	sq       *sqlite.Store
	store    research.Store
	bot      *bot.Bot
	fetcher  *fetch.Fetcher
	stop     context.CancelFunc
	done     chan error
	logs     *logSink
	llmCalls atomic.Int64
}

// logSink counts log records by level and keeps the errors.
type logSink struct {
	mu     sync.Mutex
	errors []string
	warns  int
}

func (l *logSink) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Level >= slog.LevelError {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		if len(l.errors) < 200 {
			l.errors = append(l.errors, b.String())
		}
	} else {
		l.warns++
	}
	return nil
}
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSink) WithGroup(string) slog.Handler      { return l }

func (l *logSink) Warns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.warns
}

func (l *logSink) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...)
}

func newWorld(t testing.TB, cfg config) *world {
	t.Helper()
	if cfg.MaxConcurrentRuns == 0 {
		cfg.MaxConcurrentRuns = 8
	}
	if cfg.MaxRunsPerUser == 0 {
		cfg.MaxRunsPerUser = -1
	}
	if cfg.LLMTimeout == 0 {
		cfg.LLMTimeout = 2 * time.Second
	}
	if cfg.PoolMax == 0 {
		cfg.PoolMax = 8
	}
	w := &world{t: t, cfg: cfg, logs: &logSink{}}
	log := slog.New(w.logs)

	fakeOpts := []slackfake.Option{slackfake.WithSeed(7), slackfake.WithPingInterval(2 * time.Second)}
	if cfg.SlackLimits {
		fakeOpts = append(fakeOpts, slackfake.WithTierLimits(slackfake.Limits{}))
	}
	w.slack = slackfake.New(fakeOpts...)
	t.Cleanup(w.slack.Close)
	w.startWeb()
	w.startSearch()
	w.startLLM()

	// Stores.
	ctx := context.Background()
	if cfg.Postgres {
		dsn := pgtest.Schema(t)
		if cfg.PGProxy {
			p, err := NewProxy("127.0.0.1:5432")
			if err != nil {
				t.Fatal(err)
			}
			w.proxy = p
			t.Cleanup(func() { p.Close() })
			dsn = strings.Replace(dsn, "127.0.0.1:5432", p.Addr(), 1)
		}
		s, err := postgres.Open(ctx, postgres.Options{URL: dsn, MaxConns: cfg.PoolMax})
		if err != nil {
			t.Fatal(err)
		}
		w.pg = s
		w.store = postgres.NewRuns(s)
	} else {
		s, err := sqlite.Open(ctx, sqlite.Options{Path: t.TempDir() + "/deepresearch.db"})
		if err != nil {
			t.Fatal(err)
		}
		w.sq = s
		w.store = sqlite.NewRuns(s)
	}
	var saver graph.Saver
	if w.pg != nil {
		saver = w.pg
	} else {
		saver = w.sq
	}

	// The agent, exactly as serve builds it, with small LLM timeouts.
	client, err := llm.New(llm.Options{APIKey: "test", BaseURL: w.llm.URL(), Model: "fake", Timeout: cfg.LLMTimeout,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, MaxRetryAfter: 5 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	sx, err := search.NewSearXNG(search.SearXNGOptions{BaseURL: w.sx.URL, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fetch.New(fetch.Options{Allow: "127.0.0.1", UserAgent: "deepresearch/chaos", Logger: log, TruncateOversize: true,
		Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.fetcher = f
	a, err := agent.New(agent.Deps{LLM: client, Search: sx, Fetch: agent.NewPageFetcher(f), Saver: saver, Notes: agent.NewMemNotes(), Logger: log},
		agent.Options{MinSources: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bot.New(research.NewRunner(a, research.RunnerOptions{Logger: log}), w.store, bot.Options{
		BotToken: w.slack.BotToken(), AppToken: w.slack.AppToken(), APIURL: w.slack.APIURL(),
		MaxConcurrentRuns: cfg.MaxConcurrentRuns, MaxRunsPerUser: cfg.MaxRunsPerUser,
		RunOptions:   research.RunOptions{ApproveDraft: cfg.ApproveDraft},
		Lease:        10 * time.Second,
		RecoverEvery: 500 * time.Millisecond,
		Logger:       log,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.bot = b
	rctx, stop := context.WithCancel(context.Background())
	w.stop = stop
	w.done = make(chan error, 1)
	go func() { w.done <- b.Run(rctx) }()
	t.Cleanup(w.close)
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := w.slack.WaitConnections(wctx, 1); err != nil {
		t.Fatalf("the bot did not connect: %v", err)
	}
	return w
}

// close stops the bot and the stores (idempotent).
func (w *world) close() {
	if w.stop == nil {
		return
	}
	w.stop()
	w.stop = nil
	select {
	case err := <-w.done:
		if err != nil {
			w.t.Errorf("bot.Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		os.WriteFile(os.TempDir()+"/chaos-stuck.txt", buf, 0o644)
		w.t.Errorf("the bot did not stop (goroutines in %s)", os.TempDir()+"/chaos-stuck.txt")
	}
	w.fetcher.Close()
	if w.pg != nil {
		w.pg.Close()
	}
	if w.sq != nil {
		w.sq.Close()
	}
}

func (w *world) hit(path string) {
	v, _ := w.webHits.LoadOrStore(path, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (w *world) hits(path string) int64 {
	v, ok := w.webHits.Load(path)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// gzipBomb is 64 MiB of zeros in ~64 KiB: 64 gzip members of 1 MiB each,
// which a reader decodes as one stream (RFC 1952 allows several members).
// Compressing 64 MiB in one member takes seconds under the race detector;
// one member repeated takes milliseconds. Built once, when first fetched.
var gzipBomb = sync.OnceValue(func() []byte {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return bytes.Repeat(member.Bytes(), 64)
})

// hugeLine repeated hugeLines times is the 48 MiB page, written as it is
// served (never held in memory).
const (
	hugeLine  = "<p>filler text that goes on and on. </p>\n"
	hugeLines = (48 << 20) / len(hugeLine)
)

// startWeb serves the article pages and the hostile ones.
func (w *world) startWeb() {
	// "日本語のページです。" in Shift_JIS, served as text/html without a
	// charset in the header but with a <meta> naming it.
	sjis := []byte("<html><head><meta charset=\"shift_jis\"><title>SJIS</title></head><body><article><p>\x93\xfa\x96\x7b\x8c\xea\x82\xcc\x83\x79\x81\x5b\x83\x57\x82\xc5\x82\xb7\x81\x42</p></article></body></html>")
	latin1 := []byte("<html><head><title>Latin-1</title></head><body><article><p>Caf\xe9 na\xefve r\xe9sum\xe9 \xa9 2025.</p></article></body></html>")

	w.web = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hit(r.URL.Path)
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(rw, r)
			return
		case "/huge":
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			bw := bufio.NewWriterSize(rw, 64<<10)
			for range hugeLines {
				if _, err := bw.WriteString(hugeLine); err != nil {
					return // the fetcher stopped reading at its cap
				}
			}
			bw.Flush()
			return
		case "/bomb":
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			rw.Header().Set("Content-Encoding", "gzip")
			rw.Write(gzipBomb())
			return
		case "/loop":
			http.Redirect(rw, r, "/loop2", http.StatusFound)
			return
		case "/loop2":
			http.Redirect(rw, r, "/loop", http.StatusFound)
			return
		case "/sjis":
			rw.Header().Set("Content-Type", "text/html")
			rw.Write(sjis)
			return
		case "/latin1":
			// Claims UTF-8, sends Latin-1.
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			rw.Write(latin1)
			return
		}
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, "<html><head><title>%s</title></head><body><nav>Home | About</nav><article><h1>%s</h1><p>%s</p><p>%s</p></article><footer>(c) site</footer></body></html>",
			p[0], p[0], p[1], strings.Repeat("More context about the regulation follows here. ", 5))
	}))
	w.t.Cleanup(w.web.Close)
}

// startSearch serves a SearXNG JSON API that answers 503 while searchDown.
func (w *world) startSearch() {
	w.sx = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.searchDown.Load() {
			http.Error(rw, "503 Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		var res []map[string]any
		if w.cfg.Hostile {
			for _, p := range hostilePaths {
				res = append(res, map[string]any{"url": w.web.URL + p, "title": "hostile " + p, "content": "a page", "engine": "fake"})
			}
		}
		for _, p := range []string{"/timeline", "/penalties", "/sme"} {
			res = append(res, map[string]any{"url": w.web.URL + p, "title": pages[p][0], "content": pages[p][1][:40], "engine": "fake"})
		}
		json.NewEncoder(rw).Encode(map[string]any{"query": r.URL.Query().Get("q"), "results": res})
	}))
	w.t.Cleanup(w.sx.Close)
}

var (
	pageRE     = regexp.MustCompile(`(?s)URL: (\S+)\n(.*?)(?:\n=== |\z)`)
	evidenceRE = regexp.MustCompile(`(?m)^\[E(\d+)\] (.*)\n  quote: "(.*)"\n  source: (.*), (\S+)$`)
)

// startLLM scripts the fake LLM for whole runs.
func (w *world) startLLM() {
	var opts []llmtest.Option
	if w.cfg.LLMFaults != nil {
		opts = append(opts, llmtest.WithFaults(*w.cfg.LLMFaults))
	}
	w.llm = llmtest.NewServer(w.t, w.respond, opts...)
}

func (w *world) respond(r *llmtest.Request) llmtest.Reply {
	n := w.llmCalls.Add(1)
	reply := w.answer(r)
	if d := w.cfg.LLMLatency; d > 0 {
		// A deterministic spread around the mean: 0.5×…1.5×.
		f := 0.5 + math.Mod(float64(n)*0.618033988749895, 1)
		reply = llmtest.Delayed(time.Duration(float64(d)*f), reply)
	}
	return reply
}

func (w *world) answer(r *llmtest.Request) llmtest.Reply {
	node := r.Node()
	kind := node
	if i := strings.LastIndex(node, "."); strings.HasPrefix(node, "researcher[") && i > 0 {
		kind = node[i+1:]
	}
	inject := w.cfg.Inject
	switch kind {
	case "coordinator":
		return llmtest.JSON(map[string]string{"intent": "research", "reply": "", "research_question": "", "clarifying_question": "", "instruction": ""})
	case "planner":
		return llmtest.JSON(map[string]any{"theme": "EU AI Act " + inject, "investigation_points": []string{"Timeline " + inject, "Penalties"},
			"search_queries": []string{"ai act timeline", "ai act fines"},
			"subtasks":       []map[string]any{{"title": "Timeline " + inject, "queries": []string{"ai act timeline"}}, {"title": "Penalties", "queries": []string{"ai act fines"}}},
			"plan_text":      "Two points. " + inject, "evaluation_types": []string{"attribution"}})
	case "supervisor":
		return llmtest.JSON(map[string]any{"subtasks": []map[string]any{{"title": "More detail", "queries": []string{"AI Act enforcement"}}}})
	case "select":
		return llmtest.Call("search", map[string]any{"queries": []string{"AI Act details"}})
	case "execute":
		var fs []map[string]string
		for _, m := range pageRE.FindAllStringSubmatch(r.LastUser(), -1) {
			if _, ok := pages[pathOf(m[1])]; !ok {
				continue // only the articles carry findings
			}
			s := strings.TrimSpace(m[2])
			if i := strings.Index(s, ". "); i > 0 {
				s = s[:i+1]
			}
			fs = append(fs, map[string]string{"claim": s, "quote": s, "url": m[1]})
		}
		return llmtest.JSON(map[string]any{"summary": "summary " + inject, "findings": fs})
	case "answer_subtask":
		return llmtest.Text("answer [E1] " + inject)
	case "reflect":
		return llmtest.JSON(map[string]any{"is_completed": true, "advice": "", "gaps": []string{}, "next_queries": []string{}})
	case "writer":
		var b strings.Builder
		fmt.Fprintf(&b, "# EU AI Act %s\n\n## Executive Summary\n\nThe act is in force. %s\n\n## Key Findings\n\n", inject, inject)
		ms := evidenceRE.FindAllStringSubmatch(r.LastUser(), -1)
		for i, m := range ms {
			fmt.Fprintf(&b, "- %s [^%d]\n", m[2], i+1)
		}
		fmt.Fprintf(&b, "\n## Detailed Analysis\n\nSee above. %s\n\n## References\n\n", inject)
		for i, m := range ms {
			fmt.Fprintf(&b, "[^%d]: \"%s\" — %s, %s\n", i+1, m[3], m[4], m[5])
		}
		return llmtest.Text(b.String())
	case "reviewer":
		return llmtest.JSON(map[string]any{"scores": map[string]float64{"fact_check": 1, "completeness": 0.9, "logic": 0.9, "format": 1},
			"evaluations": []any{}, "feedback": inject, "suggested_action": "write", "issues": []any{}})
	}
	return llmtest.Error(400, "unexpected node "+node)
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}
