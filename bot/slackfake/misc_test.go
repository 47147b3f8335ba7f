package slackfake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

func TestMentionsBroadcast(t *testing.T) {
	cases := []struct {
		text string
		want bool
	}{
		{"plain report", false},
		{"<!channel> look", true},
		{"<!here>", true},
		{"<!here|here>", true},
		{"<!everyone>", true},
		{"hi <!subteam^S0123ABC|@research-team>", true},
		{"thanks <@U012AB3CD>", true},
		{"thanks <@W012AB3CD|bob>", true},
		{"<#C012AB3CD|general> and <https://example.com|link>", false},
		{"<!date^1392734382^{date}|Feb 18>", false},
		{"email me@here.com or @channel in plain text", false},
		{"a < b and c > d", false},
		{`[{"type":"section","text":{"type":"mrkdwn","text":"\u003c!channel\u003e"}}]`, true},
		{`[{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[{"type":"broadcast","range":"here"}]}]}]`, true},
		{`[{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[{"type":"user","user_id":"U1"}]}]}]`, true},
		{`[{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[{"type":"usergroup","usergroup_id":"S1"}]}]}]`, true},
		{`[{"type":"input","element":{"type":"users_select","action_id":"u"}}]`, false},
	}
	for _, c := range cases {
		if got := MentionsBroadcast(c.text); got != c.want {
			t.Errorf("MentionsBroadcast(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestPingsScansBotOutput(t *testing.T) {
	fake, api, ctx := newFake(t)
	// A user's own mention is not bot output.
	fake.AddMessage(Message{Channel: "C1", User: "U1", Text: "<!here> hi"})
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("clean", false)); err != nil {
		t.Fatal(err)
	}
	if p := fake.Pings(); len(p) != 0 {
		t.Fatalf("pings = %+v", p)
	}
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("ok", false),
		slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "cc <!channel>", false, false), nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Editing it away still leaves the earlier version on record.
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("ok", false)); err != nil {
		t.Fatal(err)
	}
	p := fake.Pings()
	if len(p) != 1 || p[0].Where != "edit" || p[0].TS != ts {
		t.Fatalf("pings = %+v", p)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("@here news", false), slack.MsgOptionLinkNames(true)); err != nil {
		t.Fatal(err)
	}
	if p := fake.Pings(); len(p) != 2 {
		t.Fatalf("link_names ping not found: %+v", p)
	}
}

func adminPost(t *testing.T, fake *Server, op string, body any, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(fake.URL()+"/_fake/"+op, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", op, resp.StatusCode)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

func adminGet(t *testing.T, fake *Server, path string, out any) {
	t.Helper()
	resp, err := http.Get(fake.URL() + "/_fake/" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// A standalone server driven only over HTTP, as a parent test would drive a
// cmd/slackfake child process.
func TestStartAndAdminAPI(t *testing.T) {
	fake, err := Start("127.0.0.1:0", WithPingInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	b := startBot(t, fake, true)
	ctx := testCtx(t)
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}

	var sent Sent
	adminPost(t, fake, "app_mention", AppMention{User: "U1", Channel: "C1", Text: "hello"}, &sent)
	if sent.EnvelopeID == "" || sent.TS == "" {
		t.Fatalf("sent = %+v", sent)
	}
	b.next(t, socketmode.EventTypeEventsAPI)
	var ack Ack
	adminGet(t, fake, "wait_ack?timeout=5s&envelope_id="+sent.EnvelopeID, &ack)
	if ack.EnvelopeID != sent.EnvelopeID {
		t.Fatalf("ack = %+v", ack)
	}

	adminPost(t, fake, "fault", map[string]any{"Method": "chat.postMessage", "Status": 429, "RetryAfter": int64(3 * time.Second), "Times": 1}, nil)
	api := newAPI(fake)
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("r", false), slack.MsgOptionTS(sent.TS)); err == nil {
		t.Fatal("want rate limit")
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("reply", false), slack.MsgOptionTS(sent.TS)); err != nil {
		t.Fatal(err)
	}
	var thread []Message
	adminGet(t, fake, "messages?channel=C1&thread="+sent.TS, &thread)
	if len(thread) != 2 || thread[1].Text != "reply" {
		t.Fatalf("thread = %+v", thread)
	}
	var calls []Call
	adminGet(t, fake, "calls?method=chat.postMessage", &calls)
	if len(calls) != 2 || calls[0].Status != 429 {
		t.Fatalf("calls = %+v", calls)
	}

	adminPost(t, fake, "disconnect", map[string]string{"Reason": ReasonRefreshRequested}, nil)
	if err := fake.Wait(ctx, func() bool { return fake.Calls("apps.connections.open") == 2 && len(fake.Connections()) == 1 }); err != nil {
		t.Fatal(err)
	}
}

func TestCloseIsIdempotentAndStopsDelivery(t *testing.T) {
	fake := New()
	startBot(t, fake, true)
	ctx := testCtx(t)
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Close()
	fake.Close()
	if _, err := fake.SendMessage(ctx, MessageEvent{User: "U1", Channel: "C1", Text: "x"}); err == nil {
		t.Fatal("send after close succeeded")
	}
}

func TestMessageButtonValue(t *testing.T) {
	m := Message{Blocks: json.RawMessage(`[
		{"type":"section","text":{"type":"mrkdwn","text":"plan"},"accessory":{"type":"button","action_id":"dr_open","value":"o1"}},
		{"type":"actions","elements":[{"type":"button","action_id":"dr_approve","value":"a1"},{"type":"button","action_id":"dr_cancel","value":"c1"}]}
	]`)}
	for _, tc := range []struct{ id, want string }{
		{"dr_open", "o1"},
		{"dr_approve", "a1"},
		{"dr_cancel", "c1"},
		{"dr_missing", ""},
	} {
		if got := m.ButtonValue(tc.id); got != tc.want {
			t.Errorf("ButtonValue(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
	if got := (Message{Blocks: json.RawMessage(`not json`)}).ButtonValue("dr_approve"); got != "" {
		t.Errorf("ButtonValue of broken blocks = %q", got)
	}
}
