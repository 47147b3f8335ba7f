package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot/slackfake"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// While the model endpoint does not answer, serve is not ready: /healthz
// answers 503 with the reason, the log says why, and a mention is told
// instead of researched. Once the endpoint answers, the periodic check
// makes it ready.
func TestServeModelEndpointHealth(t *testing.T) {
	fake := slackfake.New(slackfake.WithPingInterval(200 * time.Millisecond))
	defer fake.Close()
	llmAddr, httpAddr := freeAddr(t), freeAddr(t)
	vars := serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": httpAddr,
		"OPENAI_BASE_URL": "http://" + llmAddr + "/v1", "DEEPRESEARCH_LLM_CHECK_EVERY": "100ms"})
	_, model := newAskWorld(t, worldOpts{}) // the model that will answer on llmAddr

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve"}, mapEnv(vars), nil, io.Discard, logs) }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := fake.WaitConnections(wctx, 1); err != nil {
		t.Fatalf("no connection: %v\n%s", err, logs.String())
	}
	healthz := func() (int, string) {
		resp, err := http.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitHealth := func(code int, has string) {
		t.Helper()
		var got int
		var body string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got, body = healthz(); got == code && strings.Contains(body, has) {
				return
			}
		}
		t.Fatalf("/healthz = %d %q, want %d with %q\n%s", got, body, code, has, logs.String())
	}
	waitHealth(http.StatusServiceUnavailable, "OPENAI_BASE_URL")
	if !strings.Contains(logs.String(), "the model endpoint is not usable") {
		t.Errorf("the log does not say why:\n%s", logs.String())
	}

	sent, err := fake.SendAppMention(wctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "What does the EU AI Act require?"})
	if err != nil {
		t.Fatal(err)
	}
	told := func() bool {
		for _, m := range fake.BotMessages("C1") {
			if strings.Contains(m.Text, "OPENAI_BASE_URL") {
				return true
			}
		}
		return false
	}
	if err := fake.Wait(wctx, told); err != nil {
		t.Fatalf("the person was not told why (mention %s): %v\n%s", sent.EnvelopeID, err, logs.String())
	}
	for _, m := range fake.BotMessages("C1") {
		// a plain sentence for people; hosts and dial errors stay in the log
		if strings.Contains(m.Text, llmAddr) || strings.Contains(m.Text, "dial tcp") {
			t.Errorf("internal detail reached the channel: %q", m.Text)
		}
	}
	if _, body := healthz(); !strings.Contains(body, llmAddr) {
		t.Errorf("/healthz lacks the operator's detail: %q", body)
	}
	if model.Calls() != 0 {
		t.Errorf("%d model calls while the endpoint was down", model.Calls())
	}

	// the endpoint comes up: serve becomes ready on its own
	ln, err := net.Listen("tcp", llmAddr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", llmAddr, err)
	}
	hs := &http.Server{Handler: model}
	go hs.Serve(ln)
	defer hs.Close()
	waitHealth(http.StatusOK, "ok")
	if !strings.Contains(logs.String(), "the model endpoint is ready") {
		t.Errorf("the log does not say it is ready:\n%s", logs.String())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// A refused key or an unserved model: serve starts, but /healthz is not
// ready and names the variable to fix.
func TestServeNotReadyReasons(t *testing.T) {
	for _, tc := range []struct {
		name string
		llm  []llmtest.Option
		set  map[string]string
		want string
	}{
		{"wrong key", []llmtest.Option{llmtest.WithAPIKey("right")}, map[string]string{"OPENAI_API_KEY": "sk-wrong-7f3a"}, "OPENAI_API_KEY"},
		{"model not served", []llmtest.Option{llmtest.WithModels("other")}, nil, "DEEPRESEARCH_MODEL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slackfake.New(slackfake.WithPingInterval(200 * time.Millisecond))
			defer fake.Close()
			httpAddr := freeAddr(t)
			llmVars, _ := newAskWorld(t, worldOpts{llm: tc.llm})
			extra := map[string]string{"DEEPRESEARCH_HTTP_ADDR": httpAddr, "OPENAI_BASE_URL": llmVars["OPENAI_BASE_URL"]}
			for k, v := range tc.set {
				extra[k] = v
			}
			vars := serveEnv(t, fake, extra)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			logs := &syncBuffer{}
			done := make(chan int, 1)
			go func() { done <- run(ctx, []string{"serve"}, mapEnv(vars), nil, io.Discard, logs) }()
			var code int
			var body string
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				resp, err := http.Get("http://" + httpAddr + "/healthz")
				if err != nil {
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if code, body = resp.StatusCode, string(b); code == http.StatusServiceUnavailable {
					break
				}
			}
			if code != http.StatusServiceUnavailable || !strings.Contains(body, tc.want) {
				t.Errorf("/healthz = %d %q, want 503 naming %s\n%s", code, body, tc.want, logs.String())
			}
			if strings.Contains(logs.String()+body, "sk-wrong-7f3a") {
				t.Errorf("the key was logged:\n%s%s", logs.String(), body)
			}
			cancel()
			<-done
		})
	}
}
