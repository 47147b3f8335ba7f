package llm

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"deepresearch/agent/llm/llmtest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogsNoSecrets: even at debug level, with retries, a fallback and a
// repair, the logs never contain the API key or prompt text.
func TestLogsNoSecrets(t *testing.T) {
	srv := llmtest.NewServer(t, nil, llmtest.WithoutJSONSchema())
	srv.Enqueue(llmtest.RateLimited(0), llmtest.ServerError(), llmtest.Text("not json"), llmtest.JSON(verdict{Issues: []string{}}))
	var buf lockedBuffer
	c, _ := newTestClient(t, srv, func(o *Options) {
		o.APIKey = "sk-supersecret"
		o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var v verdict
	if _, err := Structured(WithNode(context.Background(), "review"), c, Request{Role: RoleReviewer,
		Messages: []Message{System("confidential system prompt"), User("private question")}}, &v); err != nil {
		t.Fatal(err)
	}
	logs := buf.String()
	for _, secret := range []string{"sk-supersecret", "confidential system prompt", "private question", "not json"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
	for _, want := range []string{"llm retry", "falling back", "repair", "node=review", "role=reviewer"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}
