package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/storage"
)

func mapEnv(m map[string]string) env { return func(k string) string { return m[k] } }

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
		code := run(context.Background(), []string{"serve"}, mapEnv(c.env), strings.NewReader(""), io.Discard, &stderr)
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
	e := mapEnv(serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off"}))
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
		e := mapEnv(serveEnv(t, fake, c.extra))
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e := mapEnv(serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": addr}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve"}, e, nil, io.Discard, stderr) }()

	wctx, wcancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer wcancel()
	if err := fake.WaitConnections(wctx, 1); err != nil {
		t.Fatalf("no connection: %v\n%s", err, stderr.String())
	}
	var health string
	for range 100 {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			health = string(b)
			if resp.StatusCode == 200 {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.TrimSpace(health) != "ok" {
		t.Errorf("/healthz = %q", health)
	}
	sent, err := fake.SendAppMention(wctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.WaitAck(sent.EnvelopeID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"deepresearch_bot_ack_latency_seconds", "deepresearch_bot_events_total", "go_goroutines",
		`deepresearch_db_pool_conns{state="total"}`, "deepresearch_db_pool_max_conns 1"} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	if strings.Contains(stderr.String(), fake.BotToken()) || strings.Contains(stderr.String(), fake.AppToken()) {
		t.Error("a token was logged")
	}
}

// The real serve wiring (bot + agentrun + agent + SQLite) against the fake
// Slack, the fake LLM, SearXNG and web site: a mention gets a status message
// with progress and a draft to approve; approving it posts a .md report in
// the thread whose footnotes all quote the pages they cite. Nothing the bot
// posts pings anyone, and the run is recorded in the database.
// servedProcess is `serve` running in the test's process on vars.
type servedProcess struct {
	t      *testing.T
	ctx    context.Context // the test's deadline, for calls to the fakes
	stop   context.CancelFunc
	stderr *syncBuffer
	done   chan int // serve's exit code
}

// startServe runs serve until the test ends or stop is called; ctx ends
// after timeout.
func startServe(t *testing.T, vars map[string]string, timeout time.Duration) *servedProcess {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	srvCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	p := &servedProcess{t: t, ctx: ctx, stop: stop, stderr: &syncBuffer{}, done: make(chan int, 1)}
	go func() { p.done <- run(srvCtx, []string{"serve"}, mapEnv(vars), nil, io.Discard, p.stderr) }()
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

func TestServeEndToEnd(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	vars := serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off"})
	srv := startServe(t, vars, 90*time.Second)
	ctx, stop, stderr, done, waitFor := srv.ctx, srv.stop, srv.stderr, srv.done, srv.waitFor
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatalf("no connection: %v\n%s", err, stderr.String())
	}
	sent, err := fake.SendAppMention(ctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "What does the EU AI Act require? @here"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.WaitAck(sent.EnvelopeID, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	// The draft waits for approval.
	var approval slackfake.Message
	waitFor("the draft approval", func() bool {
		for _, m := range fake.Thread("C1", sent.TS) {
			if m.IsBot() && buttonValue(m, "dr_approve") != "" {
				approval = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(string(approval.Blocks), "Citations:") {
		t.Errorf("approval message lacks the draft's citation check: %s", approval.Blocks)
	}
	click, err := fake.SendBlockAction(ctx, slackfake.BlockAction{User: "U1", Channel: "C1", MessageTS: approval.TS,
		ActionID: "dr_approve", Value: buttonValue(approval, "dr_approve")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.WaitAck(click.EnvelopeID, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	var report slackfake.File
	waitFor("the report file", func() bool {
		for _, f := range fake.Files() {
			if f.Completed && len(f.Channels) > 0 && f.Channels[0] == "C1" && f.ThreadTS == sent.TS {
				report = f
				return true
			}
		}
		return false
	})
	if !strings.HasSuffix(report.Name, ".md") {
		t.Errorf("report file name %q", report.Name)
	}
	checkFootnotes(t, string(report.Content))

	// The run is recorded as done in the database.
	threadID := research.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}.ThreadID()
	waitFor("the run to be done", func() bool {
		db, err := storage.Open(ctx, storage.Config{DataDir: vars["DEEPRESEARCH_DATA_DIR"]})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r, err := db.Runs().LatestRun(ctx, threadID)
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
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	if strings.Contains(stderr.String(), fake.BotToken()) || strings.Contains(stderr.String(), "run failed") {
		t.Errorf("log:\n%s", stderr.String())
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

// buttonValue returns the value of the button with actionID in a message.
func buttonValue(m slackfake.Message, actionID string) string {
	var blocks []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal(m.Blocks, &blocks) != nil {
		return ""
	}
	for _, b := range blocks {
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return e.Value
			}
		}
	}
	return ""
}
