package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage"
)

func TestServeConfigErrors(t *testing.T) {
	good := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		env  map[string]string
		want string
	}{
		{with("SLACK_BOT_TOKEN", ""), "SLACK_BOT_TOKEN: not set"},
		{with("SLACK_BOT_TOKEN", "xapp-oops"), "SLACK_BOT_TOKEN: must be a bot token starting with xoxb-"},
		{with("SLACK_APP_TOKEN", ""), "SLACK_APP_TOKEN: not set"},
		{with("SLACK_APP_TOKEN", "xoxb-oops"), "SLACK_APP_TOKEN: must be an app-level token starting with xapp-"},
		{with("SLACK_API_URL", "slack.example"), "SLACK_API_URL:"},
		{with("DEEPRESEARCH_MAX_RUNS_PER_USER", "many"), "DEEPRESEARCH_MAX_RUNS_PER_USER:"},
		{with("DEEPRESEARCH_APPROVE_DRAFT", "perhaps"), "DEEPRESEARCH_APPROVE_DRAFT:"},
		{with("DEEPRESEARCH_LOG_LEVEL", "loud"), "DEEPRESEARCH_LOG_LEVEL:"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"serve"}, getenv(c.env), strings.NewReader(""), io.Discard, &stderr)
		out := stderr.String()
		if code != 1 || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("env %v: exit %d, stderr %q; want one line with %q", c.env, code, out, c.want)
		}
		if strings.Contains(out, "xoxb-1") || strings.Contains(out, "xapp-1") {
			t.Errorf("a token was printed: %q", out)
		}
	}
}

func TestServeAuthFailure(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	fake.FailAuthTest("invalid_auth")
	var stderr bytes.Buffer
	e := getenv(serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off"}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if code := run(ctx, []string{"serve"}, e, nil, io.Discard, &stderr); code != 1 {
		t.Fatalf("exit %d", code)
	}
	last := lastLine(stderr.String())
	if !strings.Contains(last, "invalid_auth") || !strings.Contains(last, "SLACK_BOT_TOKEN") {
		t.Errorf("last line = %q", last)
	}
}

// serveEnv is the environment of a serve process against the fake Slack,
// the fake LLM, a SearXNG fake and a web site (askWorld), with SQLite under a
// temporary directory, plus extra.
func serveEnv(t *testing.T, fake *slackfake.Server, extra map[string]string) map[string]string {
	t.Helper()
	m := askWorld(t)
	m["SLACK_BOT_TOKEN"], m["SLACK_APP_TOKEN"], m["SLACK_API_URL"] = fake.BotToken(), fake.AppToken(), fake.APIURL()
	for k, v := range extra {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// A missing or wrong setting of the agent or the database stops start-up
// with one line naming it.
func TestServeDepsErrors(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	for _, c := range []struct {
		extra map[string]string
		want  string
	}{
		{map[string]string{"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}, "OPENAI_API_KEY"},
		{map[string]string{"SEARXNG_URL": ""}, "SEARXNG_URL"},
		{map[string]string{"DATABASE_URL": "mysql://db/x"}, "DATABASE_URL"},
	} {
		var stderr bytes.Buffer
		e := getenv(serveEnv(t, fake, c.extra))
		code := run(context.Background(), []string{"serve"}, e, nil, io.Discard, &stderr)
		out := stderr.String()
		if code != 1 || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("env %v: exit %d, stderr %q; want one line with %q", c.extra, code, out, c.want)
		}
	}
	if fake.Calls("auth.test") != 0 {
		t.Error("serve reached Slack with a broken configuration")
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The binary's serve command starts against the fake with only the
// documented variables, serves /healthz and /metrics, and stops cleanly.
func TestServeStartsAgainstFake(t *testing.T) {
	fake := slackfake.New(slackfake.WithPingInterval(200 * time.Millisecond))
	defer fake.Close()
	addr := freeAddr(t)
	srv := startServe(t, fake, serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": addr}), 30*time.Second)
	srv.connected(1)
	if _, health := waitHealthz(addr, http.StatusOK, "", 5*time.Second); strings.TrimSpace(health) != "ok" {
		t.Errorf("/healthz = %q", health)
	}
	srv.acked(fake.SendAppMention(srv.ctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "hello"}))
	// The envelope is counted right after its ack: look again for a moment.
	want := []string{"deepresearch_bot_ack_latency_seconds", "deepresearch_bot_events_total", "go_goroutines",
		`deepresearch_db_pool_conns{state="total"}`, "deepresearch_db_pool_max_conns 1"}
	var lacks []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lacks = lacks[:0]
		for _, m := range want {
			if !strings.Contains(string(metrics), m) {
				lacks = append(lacks, m)
			}
		}
		if len(lacks) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range lacks {
		t.Errorf("/metrics lacks %s", m)
	}
	srv.exitClean()
	if log := srv.stderr.String(); strings.Contains(log, fake.BotToken()) || strings.Contains(log, fake.AppToken()) {
		t.Error("a token was logged")
	}
}

// servedProcess is `serve` running in the test's process on vars, against
// the fake Slack.
type servedProcess struct {
	t      *testing.T
	fake   *slackfake.Server
	ctx    context.Context // the test's deadline, for calls to the fakes
	stop   context.CancelFunc
	stderr *syncBuffer
	done   chan int // serve's exit code
}

// startServe runs serve until the test ends or stop is called; ctx ends
// after timeout.
func startServe(t *testing.T, fake *slackfake.Server, vars map[string]string, timeout time.Duration) *servedProcess {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	srvCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	p := &servedProcess{t: t, fake: fake, ctx: ctx, stop: stop, stderr: &syncBuffer{}, done: make(chan int, 1)}
	go func() { p.done <- run(srvCtx, []string{"serve"}, getenv(vars), nil, io.Discard, p.stderr) }()
	return p
}

// waitFor polls cond until it holds; serve exiting or the deadline fails
// the test with serve's log.
func (p *servedProcess) waitFor(what string, cond func() bool) {
	p.t.Helper()
	for !cond() {
		select {
		case code := <-p.done:
			p.t.Fatalf("serve exited (%d) while waiting for %s\n%s", code, what, p.stderr.String())
		case <-p.ctx.Done():
			p.t.Fatalf("waiting for %s: %v\n%s", what, p.ctx.Err(), p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// connected waits until serve holds n Socket Mode connections.
func (p *servedProcess) connected(n int) {
	p.t.Helper()
	if err := p.fake.WaitConnections(p.ctx, n); err != nil {
		p.t.Fatalf("no connection: %v\n%s", err, p.stderr.String())
	}
}

// acked fails the test unless the envelope was sent and serve acked it.
func (p *servedProcess) acked(s slackfake.Sent, err error) slackfake.Ack {
	p.t.Helper()
	if err != nil {
		p.t.Fatal(err)
	}
	a, err := p.fake.WaitAck(s.EnvelopeID, 5*time.Second)
	if err != nil {
		p.t.Fatalf("no ack: %v\n%s", err, p.stderr.String())
	}
	return a
}

// exit stops serve and returns its exit code.
func (p *servedProcess) exit() int {
	p.t.Helper()
	p.stop()
	select {
	case code := <-p.done:
		return code
	case <-time.After(20 * time.Second):
		p.t.Fatal("serve did not stop")
		return -1
	}
}

// exitClean stops serve and fails the test unless it exits with 0.
func (p *servedProcess) exitClean() {
	p.t.Helper()
	if code := p.exit(); code != 0 {
		p.t.Errorf("exit %d\n%s", code, p.stderr.String())
	}
}

// latestRun is the latest run of a thread in serve's database.
func latestRun(ctx context.Context, vars map[string]string, threadID string) (research.Run, error) {
	db, err := storage.Open(ctx, storage.Config{DataDir: vars["DEEPRESEARCH_DATA_DIR"]})
	if err != nil {
		return research.Run{}, err
	}
	defer db.Close()
	return db.Runs().LatestRun(ctx, threadID)
}

// threadFile is the first completed file shared in a thread.
func threadFile(fake *slackfake.Server, channel, threadTS string) (slackfake.File, bool) {
	for _, f := range fake.Files() {
		if f.Completed && len(f.Channels) > 0 && f.Channels[0] == channel && f.ThreadTS == threadTS {
			return f, true
		}
	}
	return slackfake.File{}, false
}

// healthz fetches /healthz at addr.
func healthz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitHealthz polls /healthz at addr until it answers code with has in
// the body, for up to wait; it returns the last answer.
func waitHealthz(addr string, code int, has string, wait time.Duration) (int, string) {
	var got int
	var body string
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, body = healthz(addr); got == code && strings.Contains(body, has) {
			break
		}
	}
	return got, body
}

// The real serve wiring (bot + research.Runner + agent + SQLite) against the fake
// Slack, the fake LLM, SearXNG and web site: a mention gets a status message
// with progress and a draft to approve; approving it posts a .md report in
// the thread whose footnotes all quote the pages they cite. Nothing the bot
// posts pings anyone, and the run is recorded in the database.
func TestServeEndToEnd(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	vars := serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off"})
	srv := startServe(t, fake, vars, 90*time.Second)
	ctx, waitFor := srv.ctx, srv.waitFor
	srv.connected(1)
	sent, err := fake.SendAppMention(ctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "What does the EU AI Act require? @here"})
	srv.acked(sent, err)

	// The draft waits for approval.
	var approval slackfake.Message
	waitFor("the draft approval", func() bool {
		for _, m := range fake.Thread("C1", sent.TS) {
			if m.IsBot() && m.ButtonValue("dr_approve") != "" {
				approval = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(string(approval.Blocks), "Citations:") {
		t.Errorf("approval message lacks the draft's citation check: %s", approval.Blocks)
	}
	srv.acked(fake.SendBlockAction(ctx, slackfake.BlockAction{User: "U1", Channel: "C1", MessageTS: approval.TS,
		ActionID: "dr_approve", Value: approval.ButtonValue("dr_approve")}))

	var report slackfake.File
	waitFor("the report file", func() (ok bool) {
		report, ok = threadFile(fake, "C1", sent.TS)
		return ok
	})
	if !strings.HasSuffix(report.Name, ".md") {
		t.Errorf("report file name %q", report.Name)
	}
	checkFootnotes(t, string(report.Content))

	// The run is recorded as done in the database.
	threadID := slackstate.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}.ThreadID()
	waitFor("the run to be done", func() bool {
		r, err := latestRun(ctx, vars, threadID)
		return err == nil && r.State == research.StateDone
	})
	// The status message showed the research as it went, and its end.
	statusHas := func(m slackfake.Message, parts ...string) bool {
		for _, e := range append(m.Edits, slackfake.Edit{Blocks: m.Blocks}) {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(string(e.Blocks), p)
			}
			if ok {
				return true
			}
		}
		return false
	}
	waitFor("the status message to say done", func() bool {
		for _, m := range fake.Thread("C1", sent.TS) {
			if m.IsBot() && strings.Contains(string(m.Blocks), "Done") && statusHas(m, "sources read") {
				return true
			}
		}
		return false
	})
	var sawProgress bool
	for _, m := range fake.Thread("C1", sent.TS) {
		sawProgress = sawProgress || m.IsBot() && statusHas(m, "Plan", "Timeline", "Subtasks", "sources read", "tokens")
	}
	if !sawProgress {
		for _, m := range fake.Thread("C1", sent.TS) {
			t.Logf("message %s edits %d: %s", m.TS, len(m.Edits), m.Blocks)
			for _, e := range m.Edits {
				t.Logf("  edit: %s", e.Blocks)
			}
		}
		t.Error("no status message version with the plan, subtasks, sources read and tokens")
	}
	if p := fake.Pings(); len(p) > 0 {
		t.Errorf("the bot pinged: %+v", p)
	}
	srv.exitClean()
	if log := srv.stderr.String(); strings.Contains(log, fake.BotToken()) || strings.Contains(log, "run failed") {
		t.Errorf("log:\n%s", log)
	}
}

var (
	footnoteDefRE = regexp.MustCompile(`(?m)^\[\^([^\]]+)\]: "(.*)" — (.*), (\S+)$`)
	footnoteRefRE = regexp.MustCompile(`\[\^([^\]]+)\]`)
)

// checkFootnotes verifies a report's footnotes: every marker is defined,
// every definition is used, and each quotes the page it links to verbatim.
func checkFootnotes(t *testing.T, report string) {
	t.Helper()
	defs := footnoteDefRE.FindAllStringSubmatch(report, -1)
	if len(defs) < 2 {
		t.Fatalf("report has %d footnotes:\n%s", len(defs), report)
	}
	body := footnoteDefRE.ReplaceAllString(report, "")
	used := map[string]bool{}
	for _, m := range footnoteRefRE.FindAllStringSubmatch(body, -1) {
		used[m[1]] = true
	}
	defined := map[string]bool{}
	for _, d := range defs {
		label, quote, rawURL := d[1], d[2], d[4]
		defined[label] = true
		if !used[label] {
			t.Errorf("footnote %s is not referenced", label)
		}
		u, err := url.Parse(rawURL)
		if err != nil {
			t.Errorf("footnote %s: bad URL %q", label, rawURL)
			continue
		}
		page, ok := askPages[u.Path]
		if !ok || !strings.Contains(page[1], quote) {
			t.Errorf("footnote %s quotes %q, which is not on %s", label, quote, rawURL)
		}
	}
	for label := range used {
		if !defined[label] {
			t.Errorf("marker [^%s] has no footnote", label)
		}
	}
	if strings.Contains(report, "unverified") {
		t.Errorf("report has unverified citations:\n%s", report)
	}
}
