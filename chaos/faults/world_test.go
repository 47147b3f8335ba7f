package faults

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot"

	"deepresearch/bot/slackfake"
	"deepresearch/graph"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlite"
	"deepresearch/tools/fetch"
	"deepresearch/tools/search"
)

// long reports whether the long versions were asked for (CHAOS_LONG=1).
func long() bool { return os.Getenv("CHAOS_LONG") == "1" }

// hostile pages served to the fetcher by the abuse test.
var hostilePaths = []string{"/huge", "/bomb", "/loop", "/sjis", "/latin1"}

// config describes one world.
type config struct {
	Postgres   bool // else SQLite
	PGProxy    bool // put a cuttable TCP proxy between the bot and Postgres
	LLMFaults  *llmtest.Faults
	LLMLatency time.Duration // mean simulated latency per LLM call (seeded)
	Hostile    bool          // search results list the hostile pages first
	Inject     string        // text the scripted LLM writes into the plan, report and summary
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
	pages *agenttest.World // the articles, behind web and sx
	web   *httptest.Server
	sx    *httptest.Server
	proxy *Proxy

	searchDown atomic.Bool
	webHits    sync.Map // path → *atomic.Int64

	pg       *postgres.Store
	sq       *sqlite.Store
	store    research.Store
	records  slackstate.Store
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
	w := &world{t: t, cfg: cfg, logs: &logSink{}, pages: agenttest.NewWorld(agenttest.EnglishPages()[:3]...)}
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
		w.store, w.records = postgres.NewRuns(s), postgres.NewSlack(s)
	} else {
		s, err := sqlite.Open(ctx, sqlite.Options{Path: t.TempDir() + "/deepresearch.db"})
		if err != nil {
			t.Fatal(err)
		}
		w.sq = s
		w.store, w.records = sqlite.NewRuns(s), sqlite.NewSlack(s)
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
	b, err := bot.New(research.NewRunner(a, research.RunnerOptions{Logger: log}), w.store, w.records, bot.Options{
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

	articles := w.pages.WebHandler()
	w.web = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hit(r.URL.Path)
		switch r.URL.Path {
		case "/huge":
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			bw := bufio.NewWriterSize(rw, 64<<10)
			for range hugeLines {
				if _, err := bw.WriteString(hugeLine); err != nil {
					return // the fetcher stopped reading at its cap
				}
			}
			bw.Flush()
		case "/bomb":
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			rw.Header().Set("Content-Encoding", "gzip")
			rw.Write(gzipBomb())
		case "/loop":
			http.Redirect(rw, r, "/loop2", http.StatusFound)
		case "/loop2":
			http.Redirect(rw, r, "/loop", http.StatusFound)
		case "/sjis":
			rw.Header().Set("Content-Type", "text/html")
			rw.Write(sjis)
		case "/latin1":
			// Claims UTF-8, sends Latin-1.
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			rw.Write(latin1)
		default:
			articles.ServeHTTP(rw, r)
		}
	}))
	w.t.Cleanup(w.web.Close)
}

// startSearch serves a SearXNG JSON API over the articles (the hostile
// pages first, when asked) that answers 503 while searchDown.
func (w *world) startSearch() {
	if w.cfg.Hostile {
		articles := w.pages.Pages
		w.pages.Find = func(string) []agenttest.Page {
			var ps []agenttest.Page
			for _, p := range hostilePaths {
				ps = append(ps, agenttest.Page{URL: w.web.URL + p, Title: "hostile " + p, Text: "a page"})
			}
			return append(ps, articles...)
		}
	}
	sx := w.pages.SearXNGHandler(w.web.URL)
	w.sx = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.searchDown.Load() {
			http.Error(rw, "503 Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		sx.ServeHTTP(rw, r)
	}))
	w.t.Cleanup(w.sx.Close)
}

// startLLM scripts the fake LLM for whole runs: agenttest's brain, with the
// injected text and a deterministic latency.
func (w *world) startLLM() {
	brain := agenttest.NewBrain()
	brain.Inject = w.cfg.Inject
	if d := w.cfg.LLMLatency; d > 0 {
		brain.Wrap = func(_ *llmtest.Request, reply llmtest.Reply) llmtest.Reply {
			// A deterministic spread around the mean: 0.5×…1.5×.
			f := 0.5 + math.Mod(float64(w.llmCalls.Add(1))*0.618033988749895, 1)
			return llmtest.Delayed(time.Duration(float64(d)*f), reply)
		}
	}
	var opts []llmtest.Option
	if w.cfg.LLMFaults != nil {
		opts = append(opts, llmtest.WithFaults(*w.cfg.LLMFaults))
	}
	w.llm = llmtest.NewServer(w.t, brain.Respond, opts...)
}
