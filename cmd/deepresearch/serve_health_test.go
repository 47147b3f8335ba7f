package main

import (
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

	srv := startServe(t, fake, vars, 60*time.Second)
	wctx, logs := srv.ctx, srv.stderr
	srv.connected(1)
	waitHealth := func(code int, has string) {
		t.Helper()
		got, body := waitHealthz(httpAddr, code, has, 20*time.Second)
		if got != code || !strings.Contains(body, has) {
			t.Fatalf("/healthz = %d %q, want %d with %q\n%s", got, body, code, has, logs.String())
		}
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
	if _, body := healthz(httpAddr); !strings.Contains(body, llmAddr) {
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
	srv.exit()
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
			srv := startServe(t, fake, vars, 60*time.Second)
			logs := srv.stderr
			code, body := waitHealthz(httpAddr, http.StatusServiceUnavailable, "", 15*time.Second)
			if code != http.StatusServiceUnavailable || !strings.Contains(body, tc.want) {
				t.Errorf("/healthz = %d %q, want 503 naming %s\n%s", code, body, tc.want, logs.String())
			}
			if strings.Contains(logs.String()+body, "sk-wrong-7f3a") {
				t.Errorf("the key was logged:\n%s%s", logs.String(), body)
			}
			srv.exit()
		})
	}
}
