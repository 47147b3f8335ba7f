package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
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
	e := mapEnv(map[string]string{"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(),
		"SLACK_API_URL": fake.APIURL(), "DEEPRESEARCH_HTTP_ADDR": "off"})
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
	e := mapEnv(map[string]string{"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(),
		"SLACK_API_URL": fake.APIURL(), "DEEPRESEARCH_HTTP_ADDR": addr})
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
	for _, m := range []string{"deepresearch_bot_ack_latency_seconds", "deepresearch_bot_events_total", "go_goroutines"} {
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
