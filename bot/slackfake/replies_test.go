package slackfake

import (
	"fmt"
	"testing"

	"github.com/slack-go/slack"
)

// TestRepliesPaginateLongThread: conversations.replies pages a thread of
// 250 replies as Slack does — limit per page (at most 1000, default 1000),
// has_more and response_metadata.next_cursor until the last page, whose
// next_cursor is empty — and refuses a cursor it never handed out.
func TestRepliesPaginateLongThread(t *testing.T) {
	fake := New()
	defer fake.Close()
	ctx := testCtx(t)
	api := newAPI(fake)
	parent := fake.AddMessage(Message{Channel: "C1", User: "U1", Text: "a long thread"})
	for i := range 250 {
		fake.AddMessage(Message{Channel: "C1", ThreadTS: parent.TS, User: "U2", Text: fmt.Sprint(i)})
	}

	tests := []struct {
		name  string
		limit int
		pages []int // messages on each page
	}{
		{"limit 200", 200, []int{200, 51}},
		{"limit 100", 100, []int{100, 100, 51}},
		{"default", 0, []int{251}},
		{"above the maximum", 5000, []int{251}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cursor := ""
			var got []int
			seen := map[string]bool{}
			for {
				msgs, more, next, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS, Limit: tc.limit, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if more != (next != "") {
					t.Fatalf("has_more %v with next_cursor %q", more, next)
				}
				for _, m := range msgs {
					if seen[m.Timestamp] {
						t.Fatalf("message %s on two pages", m.Timestamp)
					}
					seen[m.Timestamp] = true
				}
				got = append(got, len(msgs))
				if next == "" {
					break
				}
				cursor = next
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.pages) {
				t.Errorf("pages %v, want %v", got, tc.pages)
			}
		})
	}

	for _, bad := range []string{"not base64!", "b2Zmc2V0Oi0x" /* offset:-1 */, "aGVsbG8=" /* hello */} {
		_, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS, Cursor: bad})
		if err == nil || err.Error() != "invalid_cursor" {
			t.Errorf("cursor %q: %v, want invalid_cursor", bad, err)
		}
	}
}
