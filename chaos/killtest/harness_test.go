package killtest

import (
	"bufio"
	"bytes"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot/slackfake"
	"deepresearch/storage/pgtest"
)

// long reports whether the long versions run (CHAOS_LONG=1).
func long() bool { return os.Getenv("CHAOS_LONG") == "1" }

var (
	buildOnce sync.Once
	binPath   string
	binErr    error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds the real deepresearch binary once per test process.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			binErr = fmt.Errorf("go env GOMOD: %v %s", err, out)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if binDir, binErr = os.MkdirTemp("", "killtest-bin-"); binErr != nil {
			return
		}
		bin := filepath.Join(binDir, "deepresearch")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/deepresearch")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binPath = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// pgURL creates a fresh schema on the test Postgres server (dropped at the
// end) and returns a URL whose search_path selects it. Without a server the
// test skips, unless CI is set.
func pgURL(t *testing.T) string { return pgtest.Schema(t) }

// ---------------------------------------------------------------------------
// The fake LLM, with a record of every call and whether its answer was
// written completely.

// tagRE finds the run tag every question carries; every prompt of the
// agent repeats the question, so each LLM request can be attributed to its
// thread.
var tagRE = regexp.MustCompile(`RUNTAG-\d+`)

type llmCall struct {
	Tag, Node, Hash string
	Start, End      time.Time
	Status          int
	Complete        bool // 200 written and flushed without error
}

type llmFake struct {
	inner *llmtest.Server
	srv   *httptest.Server
	mu    sync.Mutex
	calls []llmCall
}

func newLLM(t *testing.T, respond llmtest.Responder) *llmFake {
	f := &llmFake{inner: llmtest.New(respond)}
	f.srv = httptest.NewServer(f)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		f.inner.Close()
	})
	return f
}

func (f *llmFake) URL() string { return f.srv.URL + "/v1" }

func (f *llmFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		f.inner.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	node := r.Header.Get("X-Deepresearch-Node")
	sum := sha256.Sum256(append([]byte(node+"\x00"), body...))
	c := llmCall{Tag: tagRE.FindString(string(body)), Node: node, Hash: hex.EncodeToString(sum[:8]), Start: time.Now()}
	sw := &statusWriter{ResponseWriter: w}
	func() {
		defer func() { _ = recover() }() // llmtest aborts hanging handlers at Close
		f.inner.ServeHTTP(sw, r)
	}()
	ferr := http.NewResponseController(w).Flush()
	c.End, c.Status = time.Now(), sw.status
	c.Complete = sw.status == http.StatusOK && sw.err == nil && ferr == nil && r.Context().Err() == nil
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

func (f *llmFake) Calls() []llmCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llmCall(nil), f.calls...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
	err    error
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ---------------------------------------------------------------------------
// A scripted research: agenttest's brain and pages, with replies that
// depend on the request alone (a request asked again after a kill gets the
// same answer), answered after a delay derived from the request.

// webAndSearch serves three of agenttest's pages and a SearXNG JSON API
// over them.
func webAndSearch(t *testing.T) (searxURL string) {
	pages := agenttest.NewWorld(agenttest.EnglishPages()[:3]...)
	web := httptest.NewServer(pages.WebHandler())
	t.Cleanup(web.Close)
	sx := httptest.NewServer(pages.SearXNGHandler(web.URL))
	t.Cleanup(sx.Close)
	return sx.URL
}

// scriptedResearch answers every node of the agent. maxDelay bounds the
// simulated latency of one call.
func scriptedResearch(maxDelay time.Duration) llmtest.Responder {
	b := agenttest.NewBrain()
	// the brain's own replan and tool selection count its calls
	b.Replan = func(string) llmtest.Reply {
		return llmtest.JSON(map[string]any{"subtasks": []map[string]any{{"title": "Enforcement", "queries": []string{"AI Act enforcement"}}}})
	}
	b.SelectTools = func(*llmtest.Request) llmtest.Reply {
		return llmtest.Error(400, "no tool selection scripted; the agent falls back to the subtask's queries")
	}
	if maxDelay > 0 {
		b.Wrap = func(r *llmtest.Request, reply llmtest.Reply) llmtest.Reply {
			sum := sha256.Sum256(r.Body)
			return llmtest.Delayed(time.Duration(uint64(sum[0])<<8|uint64(sum[1]))*maxDelay/65536, reply)
		}
	}
	return b.Respond
}

// ---------------------------------------------------------------------------
// The world: fake Slack, LLM, search and web, and the environment of a
// serve process pointed at them.

type world struct {
	slack *slackfake.Server
	llm   *llmFake
	env   map[string]string
	start time.Time
}

// newWorld starts the fakes; slackOpts are more options of the fake Slack
// (e.g. slackfake.WithTierLimits, to enforce Slack's rate limits).
func newWorld(t *testing.T, maxDelay time.Duration, dbURL string, slackOpts ...slackfake.Option) *world {
	t.Helper()
	fake, err := slackfake.Start("127.0.0.1:0", append([]slackfake.Option{slackfake.WithRedelivery(3*time.Second, 5)}, slackOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	w := &world{slack: fake, llm: newLLM(t, scriptedResearch(maxDelay)), start: time.Now()}
	w.env = map[string]string{
		"SLACK_BOT_TOKEN":                fake.BotToken(),
		"SLACK_APP_TOKEN":                fake.AppToken(),
		"SLACK_API_URL":                  fake.APIURL(),
		"OPENAI_API_KEY":                 "test",
		"OPENAI_BASE_URL":                w.llm.URL(),
		"DEEPRESEARCH_MODEL":             "fake",
		"SEARXNG_URL":                    webAndSearch(t),
		"DEEPRESEARCH_FETCH_ALLOW":       "127.0.0.1",
		"DEEPRESEARCH_HTTP_ADDR":         "off",
		"DEEPRESEARCH_DATA_DIR":          t.TempDir(),
		"DEEPRESEARCH_RUN_LEASE":         "2s",
		"DEEPRESEARCH_MAX_RUNS_PER_USER": "-1",
		"DEEPRESEARCH_LOG_LEVEL":         "info",
	}
	if dbURL != "" {
		w.env["DATABASE_URL"] = dbURL
	}
	return w
}

// ---------------------------------------------------------------------------
// A fleet of serve processes in numbered slots.

type proc struct {
	slot, life int
	cmd        *exec.Cmd
	logPath    string
	exited     chan struct{}
	killed     atomic.Bool
}

type fleet struct {
	t      *testing.T
	bin    string
	env    []string
	logDir string
	// slotEnv overrides variables of env in one slot (e.g. a /metrics
	// address per process); set before starting the slot.
	slotEnv map[int]map[string]string

	mu         sync.Mutex
	slots      []*proc
	all        []*proc
	kills      []time.Time
	stopping   bool
	unexpected []string
}

func newFleet(t *testing.T, w *world, n int) *fleet {
	f := &fleet{t: t, bin: binary(t), logDir: t.TempDir(), slots: make([]*proc, n)}
	for k, v := range w.env {
		f.env = append(f.env, k+"="+v)
	}
	sort.Strings(f.env)
	// Keep the children away from the developer's own settings.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLACK_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "DEEPRESEARCH_") ||
			strings.HasPrefix(k, "TAVILY_") || k == "DATABASE_URL" || k == "SEARXNG_URL" {
			continue
		}
		f.env = append(f.env, kv)
	}
	t.Cleanup(func() {
		f.stop()
		if t.Failed() {
			f.dumpLogs(40)
		}
	})
	return f
}

func (f *fleet) start(slot int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping {
		return
	}
	life := len(f.all)
	p := &proc{slot: slot, life: life, logPath: filepath.Join(f.logDir, fmt.Sprintf("serve-%d-%03d.log", slot, life)), exited: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		f.t.Errorf("log file: %v", err)
		return
	}
	p.cmd = exec.Command(f.bin, "serve")
	p.cmd.Env = f.env
	if len(f.slotEnv[slot]) > 0 {
		p.cmd.Env = slices.Clone(f.env)
		for k, v := range f.slotEnv[slot] {
			p.cmd.Env = append(p.cmd.Env, k+"="+v) // the last value of a name wins
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		f.t.Errorf("start serve: %v", err)
		return
	}
	f.slots[slot] = p
	f.all = append(f.all, p)
	go func() {
		err := p.cmd.Wait()
		logf.Close()
		close(p.exited)
		if !p.killed.Load() {
			f.mu.Lock()
			if !f.stopping {
				f.unexpected = append(f.unexpected, fmt.Sprintf("serve %d (life %d) exited by itself: %v\n%s", slot, life, err, tail(p.logPath, 20)))
			}
			f.mu.Unlock()
		}
	}()
}

// kill SIGKILLs the process in slot and waits for it to be gone.
func (f *fleet) kill(slot int) bool {
	f.mu.Lock()
	p := f.slots[slot]
	f.slots[slot] = nil
	f.mu.Unlock()
	if p == nil {
		return false
	}
	p.killed.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	f.mu.Lock()
	f.kills = append(f.kills, time.Now())
	f.mu.Unlock()
	return true
}

// stop asks every live process to shut down (SIGTERM) and kills what is
// left after 30 seconds.
func (f *fleet) stop() {
	f.mu.Lock()
	f.stopping = true
	live := append([]*proc(nil), f.slots...)
	f.mu.Unlock()
	for _, p := range live {
		if p != nil {
			p.killed.Store(true)
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range live {
		if p == nil {
			continue
		}
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.exited
		}
	}
}

func (f *fleet) killTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.kills...)
}

func (f *fleet) lives() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.all)
}

func (f *fleet) unexpectedExits() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.unexpected...)
}

// grepLogs counts log lines of every life containing s, per slot.
func (f *fleet) grepLogs(s string) map[int]int {
	out := map[int]int{}
	f.eachLogLine(s, func(p *proc, _ string) { out[p.slot]++ })
	return out
}

// logLines returns the log lines of every life containing s, each prefixed
// with its slot and life.
func (f *fleet) logLines(s string) []string {
	var out []string
	f.eachLogLine(s, func(p *proc, line string) { out = append(out, fmt.Sprintf("[%d/%d] %s", p.slot, p.life, line)) })
	return out
}

// eachLogLine calls fn with every log line of every life containing s.
func (f *fleet) eachLogLine(s string, fn func(p *proc, line string)) {
	f.mu.Lock()
	all := append([]*proc(nil), f.all...)
	f.mu.Unlock()
	for _, p := range all {
		fh, err := os.Open(p.logPath)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), s) {
				fn(p, sc.Text())
			}
		}
		fh.Close()
	}
}

func (f *fleet) dumpLogs(n int) {
	f.mu.Lock()
	all := append([]*proc(nil), f.all...)
	f.mu.Unlock()
	if len(all) > 6 {
		all = all[len(all)-6:]
	}
	for _, p := range all {
		f.t.Logf("--- serve %d life %d (%s)\n%s", p.slot, p.life, p.logPath, tail(p.logPath, n))
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ---------------------------------------------------------------------------
// Reading the fake Slack.

var statusTextRE = regexp.MustCompile(`^(Queued|Researching|Waiting for you|Done|Failed|Cancelled): `)

// streamStateRE finds the state in a streamed status's final blocks (the
// status picture's head: "✅ *Done:* question").
var streamStateRE = regexp.MustCompile(`\*(Queued|Researching|Waiting for you|Done|Failed|Cancelled):\*`)

// threadView is what the bot left in one thread.
type threadView struct {
	Reports     int       // completed report files shared in the thread
	Finals      int       // status messages that say Done
	Failed      int       // status messages that say Failed or Cancelled
	Status      int       // status messages (any state)
	Stale       int       // status messages left in an active state
	Approvals   int       // approval messages (pending or decided)
	FinalAt     time.Time // when the last Done picture became visible
	Streams     int       // streams started in the thread
	OpenStreams int       // streams never stopped
	Overlaps    int       // times a stream started while another of the thread was live
	Pending     []slackfake.Message
	ReportNames []string
}

// ackCounts returns how many envelopes fake saw acked, and how many acks
// beyond the first of each.
func ackCounts(fake *slackfake.Server) (acked, redelivered int) {
	acks := map[string]int{}
	for _, a := range fake.Acks() {
		acks[a.EnvelopeID]++
	}
	for _, n := range acks {
		redelivered += n - 1
	}
	return len(acks), redelivered
}

func inspect(fake *slackfake.Server, channel, ts string) threadView {
	return viewOf(fake.Files(), fake.Thread(channel, ts), streamsByTS(fake.Streams()), channel, ts)
}

// streamsByTS indexes streams by their message's channel and ts.
func streamsByTS(ss []slackfake.Stream) map[string]slackfake.Stream {
	out := make(map[string]slackfake.Stream, len(ss))
	for _, st := range ss {
		out[st.Channel+"/"+st.TS] = st
	}
	return out
}

// viewOf builds a thread's view from the fake's files and the thread's
// messages (inspect for one thread; the load test reads the fake once for
// many threads).
//
// A run's status is either an edited message ("Done: …" as its text) or a
// streamed message: open while the run works (a status left active if it
// stays open), and stopped with final blocks that name the state; a
// stream stopped without them was replaced and does not count.
func viewOf(files []slackfake.File, thread []slackfake.Message, streams map[string]slackfake.Stream, channel, ts string) threadView {
	var v threadView
	for _, f := range files {
		if f.Completed && f.ThreadTS == ts && len(f.Channels) > 0 && f.Channels[0] == channel {
			v.Reports++
			v.ReportNames = append(v.ReportNames, f.Name)
		}
	}
	for _, m := range thread {
		if !m.IsBot() {
			continue
		}
		st := statusTextRE.FindStringSubmatch(m.Text)
		shownAt := m.PostedAt // when the message's current version was shown
		if n := len(m.Edits); n > 0 {
			shownAt = m.Edits[n-1].At
		}
		if stream, ok := streams[m.Channel+"/"+m.TS]; ok && st == nil {
			switch {
			case stream.Open:
				st = []string{"", "Researching"}
			default:
				st = streamStateRE.FindStringSubmatch(string(stream.FinalBlocks))
				if st == nil {
					continue // replaced by a later stream
				}
				shownAt = stream.StoppedAt
			}
		}
		if st != nil {
			v.Status++
			switch st[1] {
			case "Done":
				v.Finals++
				if shownAt.After(v.FinalAt) {
					v.FinalAt = shownAt
				}
			case "Failed", "Cancelled":
				v.Failed++
			default:
				v.Stale++
			}
			continue
		}
		if m.ButtonValue("dr_approve") != "" {
			v.Approvals++
			v.Pending = append(v.Pending, m)
		} else if strings.Contains(m.Text, "Approved by") || strings.Contains(m.Text, "Draft ready") {
			v.Approvals++
		}
	}
	v.Streams, v.OpenStreams, v.Overlaps = streamCounts(streams, channel, ts)
	return v
}

// streamCounts counts a thread's streams, those left open, and the starts
// of one while an earlier one was still live (two live streams for one
// run: each thread holds one run).
func streamCounts(streams map[string]slackfake.Stream, channel, ts string) (total, open, overlaps int) {
	var mine []slackfake.Stream
	for _, st := range streams {
		if st.Channel == channel && st.ThreadTS == ts {
			mine = append(mine, st)
		}
	}
	slices.SortFunc(mine, func(a, b slackfake.Stream) int { return a.StartedAt.Compare(b.StartedAt) })
	for i, st := range mine {
		if st.Open {
			open++
		}
		for _, prev := range mine[:i] {
			if prev.Open || prev.StoppedAt.After(st.StartedAt) {
				overlaps++
				break
			}
		}
	}
	return len(mine), open, overlaps
}

// ---------------------------------------------------------------------------
// LLM call analysis.

// repeatStats counts LLM requests made again although an identical earlier
// request (same thread tag, node and body) had completed.
type repeatStats struct {
	Calls, Completed, Untagged int
	Repeats                    int // identical requests after a completed copy
	NearKill                   int // of which a kill landed within window after that copy's answer
	Unexplained                []string
}

func analyse(calls []llmCall, kills []time.Time, window time.Duration) repeatStats {
	var s repeatStats
	lastDone := map[string]llmCall{}
	for _, c := range calls {
		s.Calls++
		if c.Tag == "" {
			s.Untagged++
		}
		key := c.Tag + "|" + c.Node + "|" + c.Hash
		if prev, ok := lastDone[key]; ok && prev.End.Before(c.Start) {
			s.Repeats++
			near := false
			for _, k := range kills {
				if !k.Before(prev.End.Add(-50*time.Millisecond)) && !k.After(prev.End.Add(window)) {
					near = true
					break
				}
			}
			if near {
				s.NearKill++
			} else {
				s.Unexplained = append(s.Unexplained, fmt.Sprintf("%s %s: answered at %s, asked again at %s",
					c.Tag, c.Node, prev.End.Format("15:04:05.000"), c.Start.Format("15:04:05.000")))
			}
		}
		if c.Complete {
			s.Completed++
			lastDone[key] = c
		}
	}
	return s
}
