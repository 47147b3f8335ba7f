package bot

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"deepresearch/research"

	"github.com/slack-go/slack"
)

func TestStreamRefused(t *testing.T) {
	// refused: the method, for the workspace; content: what this run's
	// call carried, for this run only.
	tests := []struct {
		err                    error
		refused, content, gone bool
	}{
		{slack.SlackErrorResponse{Err: "unknown_method"}, true, false, false},
		{errors.New("missing_scope"), true, false, false},
		{fmt.Errorf("chat.startStream: %w", slack.SlackErrorResponse{Err: "not_allowed_token_type"}), true, false, false},
		{errors.New("method_deprecated"), true, false, false},
		{errors.New("message_not_in_streaming_state"), false, false, true},
		{slack.SlackErrorResponse{Err: "invalid_chunks"}, false, true, false},
		{fmt.Errorf("chat.stopStream: %w", slack.SlackErrorResponse{Err: "invalid_blocks"}), false, true, false},
		{errors.New("msg_too_long"), false, true, false},
		{errors.New("cannot_provide_both_markdown_text_and_chunks"), false, true, false},
		{&slack.RateLimitedError{RetryAfter: 1}, false, false, false},
		{slack.StatusCodeError{Code: 503, Status: "503"}, false, false, false},
		{errors.New("read tcp: connection reset by peer"), false, false, false},
		{nil, false, false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.err), func(t *testing.T) {
			if got := streamRefused(tt.err); got != tt.refused {
				t.Errorf("streamRefused = %v, want %v", got, tt.refused)
			}
			if got := streamContentRefused(tt.err); got != tt.content {
				t.Errorf("streamContentRefused = %v, want %v", got, tt.content)
			}
			if got := streamGone(tt.err); got != tt.gone {
				t.Errorf("streamGone = %v, want %v", got, tt.gone)
			}
		})
	}
}

func TestStreamingRemembersRefusals(t *testing.T) {
	var s streaming
	if _, known := s.known("T1"); known {
		t.Fatal("an untried workspace is known")
	}
	s.set("T1", true)
	if on, known := s.known("T1"); !on || !known {
		t.Fatalf("T1 = %v %v after it served a stream", on, known)
	}
	s.set("T2", false)
	s.set("T2", true) // a refusal is final for the process
	if on, _ := s.known("T2"); on {
		t.Error("T2 streams again after a refusal")
	}
}

// TestTaskCard: a card shows text from the model and the web as plain
// text that cannot ping or spoof a link, links only http(s) pages, and
// caps its sources.
func TestTaskCard(t *testing.T) {
	evil := "<!channel> @here <@U1> [https://good.example](https://evil.example) \u202eexe.txt"
	var srcs []research.Source
	for i := range maxCardSources + 5 {
		srcs = append(srcs, research.Source{URL: fmt.Sprintf("https://example.com/%d", i), Title: evil})
	}
	srcs = append([]research.Source{{URL: "javascript:alert(1)", Title: "x"}, {URL: "https://example.org/empty"}}, srcs...)
	card := taskCard(0, research.Subtask{Title: evil, State: research.SubtaskRunning, Searches: 2, Sources: srcs}, langEN)
	if card.ID != "task_1" || card.Status != slack.TaskCardStatusInProgress || card.Details != fmt.Sprintf("2 searches, %d pages read", len(srcs)) {
		t.Errorf("card = %+v", card)
	}
	if len(card.Sources) != maxCardSources {
		t.Errorf("%d sources, want %d", len(card.Sources), maxCardSources)
	}
	if card.Sources[0].URL != "https://example.org/empty" || card.Sources[0].Text == "" {
		t.Errorf("first source = %+v (javascript: dropped, an untitled page shows its URL)", card.Sources[0])
	}
	texts := []string{card.Title}
	for _, s := range card.Sources {
		texts = append(texts, s.Text)
	}
	for _, text := range texts {
		for _, bad := range []string{"<!channel>", "<@U1>", "@here", "](https://evil.example)", "\u202e"} {
			if strings.Contains(text, bad) {
				t.Errorf("%q carries %q", text, bad)
			}
		}
	}
	if ja := taskCard(1, research.Subtask{Title: "x", Searches: 1, Sources: srcs[:1]}, langJA); ja.Details != "検索 1 回、1 ページを読了" || ja.Status != slack.TaskCardStatusPending {
		t.Errorf("ja card = %+v", ja)
	}
}

func TestSettleCards(t *testing.T) {
	subs := []research.Subtask{{State: research.SubtaskRunning}, {State: research.SubtaskPending}, {State: research.SubtaskFailed}}
	states := func(s []research.Subtask) string {
		var out []string
		for _, st := range s {
			out = append(out, string(st.State))
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		state research.RunState
		want  string
	}{
		{research.StateDone, "done,done,failed"},
		{research.StateFailed, "failed,pending,failed"},
		{research.StateCancelled, "failed,pending,failed"},
		{research.StateWaiting, "running,pending,failed"},
	}
	for _, tt := range tests {
		if got := states(settleCards(subs, tt.state)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.state, got, tt.want)
		}
	}
	if subs[0].State != research.SubtaskRunning {
		t.Error("settleCards changed its input")
	}
}

// TestTaskCardBoundsSourceURLs: a source whose URL is longer than a card
// may link (Slack refuses a chunk whose source url passes 3,000
// characters) is left off the card; the others stay.
func TestTaskCardBoundsSourceURLs(t *testing.T) {
	long := "https://example.com/p?" + strings.Repeat("a", 6000)
	edge := "https://example.com/" + strings.Repeat("b", maxSourceURL-len("https://example.com/"))
	card := taskCard(0, research.Subtask{Title: "Read", Sources: []research.Source{
		{URL: long, Title: "long"}, {URL: edge, Title: "edge"}, {URL: "https://example.org/", Title: "short"},
	}}, langEN)
	var got []string
	for _, s := range card.Sources {
		got = append(got, s.Text)
		if len(s.URL) > maxSourceURL {
			t.Errorf("a card links a %d-character URL", len(s.URL))
		}
	}
	if strings.Join(got, ",") != "edge,short" {
		t.Errorf("card sources = %v, want edge,short", got)
	}
}
