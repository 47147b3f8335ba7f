package slackfake

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/slack-go/slack"
)

// TestHistoryAsSlackReadsIt: conversations.history answers with the
// channel's top-level messages newest first, between oldest and latest
// (each included only with inclusive), a page at a time (default 100) with
// has_more and response_metadata.next_cursor; the blocks keep their
// block_id; a message's metadata comes only with include_all_metadata; and
// a bot token cannot read a channel its bot is not in (not_in_channel).
func TestHistoryAsSlackReadsIt(t *testing.T) {
	fake := New()
	defer fake.Close()
	ctx := testCtx(t)
	api := newAPI(fake)
	fake.AddChannel(Channel{ID: "C1", Name: "research"})
	fake.AddChannel(Channel{ID: "C2", Name: "nobot", BotAbsent: true})
	var ts []string
	for i := range 250 {
		ts = append(ts, fake.AddMessage(Message{Channel: "C1", User: "U1", Text: fmt.Sprint(i)}).TS)
	}
	fake.AddMessage(Message{Channel: "C1", ThreadTS: ts[0], User: "U2", Text: "a reply: not in the history"})
	marked := fake.AddMessage(Message{Channel: "C1", User: fake.BotUserID(), BotID: "B1", Text: "marked",
		Blocks:   json.RawMessage(`[{"type":"header","block_id":"sched_digest:r1","text":{"type":"plain_text","text":"News"}}]`),
		Metadata: json.RawMessage(`{"event_type":"digest","event_payload":{"run":"r1"}}`)})

	read := func(p slack.GetConversationHistoryParameters) (pages []int, msgs []slack.Message) {
		t.Helper()
		for {
			resp, err := api.GetConversationHistoryContext(ctx, &p)
			if err != nil {
				t.Fatal(err)
			}
			if resp.HasMore != (resp.ResponseMetaData.NextCursor != "") {
				t.Fatalf("has_more %v with next_cursor %q", resp.HasMore, resp.ResponseMetaData.NextCursor)
			}
			pages = append(pages, len(resp.Messages))
			msgs = append(msgs, resp.Messages...)
			if resp.ResponseMetaData.NextCursor == "" {
				return pages, msgs
			}
			p.Cursor = resp.ResponseMetaData.NextCursor
		}
	}

	tests := []struct {
		name  string
		p     slack.GetConversationHistoryParameters
		pages []int
		first string // the newest message read
		last  string // the oldest
	}{
		{"default page", slack.GetConversationHistoryParameters{ChannelID: "C1"}, []int{100, 100, 51}, marked.TS, ts[0]},
		{"limit 200", slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 200}, []int{200, 51}, marked.TS, ts[0]},
		{"oldest excluded", slack.GetConversationHistoryParameters{ChannelID: "C1", Oldest: ts[240], Limit: 200}, []int{10}, marked.TS, ts[241]},
		{"oldest included", slack.GetConversationHistoryParameters{ChannelID: "C1", Oldest: ts[240], Inclusive: true, Limit: 200}, []int{11}, marked.TS, ts[240]},
		{"latest", slack.GetConversationHistoryParameters{ChannelID: "C1", Latest: ts[10], Limit: 200}, []int{10}, ts[9], ts[0]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pages, msgs := read(tc.p)
			if fmt.Sprint(pages) != fmt.Sprint(tc.pages) {
				t.Fatalf("pages %v, want %v", pages, tc.pages)
			}
			if msgs[0].Timestamp != tc.first || msgs[len(msgs)-1].Timestamp != tc.last {
				t.Fatalf("read %s … %s, want %s … %s", msgs[0].Timestamp, msgs[len(msgs)-1].Timestamp, tc.first, tc.last)
			}
		})
	}

	for _, all := range []bool{false, true} {
		resp, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 1, IncludeAllMetadata: all})
		if err != nil || len(resp.Messages) != 1 {
			t.Fatalf("history = %+v, %v", resp, err)
		}
		m := resp.Messages[0]
		if len(m.Blocks.BlockSet) != 1 || m.Blocks.BlockSet[0].ID() != "sched_digest:r1" || m.User != fake.BotUserID() || m.BotID != "B1" {
			t.Errorf("message read back: %+v", m)
		}
		if got := m.Metadata.EventType != ""; got != all {
			t.Errorf("include_all_metadata %v: metadata %+v", all, m.Metadata)
		}
	}

	if _, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C2"}); err == nil || err.Error() != "not_in_channel" {
		t.Errorf("history of a channel without the bot: %v, want not_in_channel", err)
	}
}
