package llmtest

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func streamLines(ctx context.Context, t *testing.T, s *Server) []string {
	t.Helper()
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(body))
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// A stream=true request gets server-sent events: deltas, the finish reason,
// the usage, then [DONE].
func TestStream(t *testing.T) {
	s := NewServer(t, func(*Request) Reply { return Text(strings.Repeat("abc ", 20)) })
	lines := streamLines(context.Background(), t, s)
	if len(lines) < 5 || lines[len(lines)-1] != "data: [DONE]" {
		t.Fatalf("lines %q", lines)
	}
	var text strings.Builder
	for _, l := range lines {
		if !strings.HasPrefix(l, "data: ") {
			t.Errorf("not an event: %q", l)
		}
		if i := strings.Index(l, `"content":"`); i >= 0 {
			text.WriteString(strings.SplitN(l[i+len(`"content":"`):], `"`, 2)[0])
		}
	}
	if text.String() != strings.Repeat("abc ", 20) {
		t.Errorf("content %q", text.String())
	}
	if !strings.Contains(lines[len(lines)-2], `"usage":{"prompt_tokens"`) || !strings.Contains(lines[len(lines)-3], `"finish_reason":"stop"`) {
		t.Errorf("no finish reason and usage at the end: %q", lines[len(lines)-3:])
	}
}

// A stalled stream sends its first chunks and then nothing, without ending.
func TestStreamStall(t *testing.T) {
	s := NewServer(t, func(*Request) Reply { return Stalled(2, Text(strings.Repeat("abc ", 20))) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	lines := streamLines(ctx, t, s)
	if len(lines) != 2 || ctx.Err() == nil {
		t.Fatalf("lines %q, ended before the client gave up: %v", lines, ctx.Err() == nil)
	}
}
