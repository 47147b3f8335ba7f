package slackfake

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestAuthTestAndTokens(t *testing.T) {
	fake := New()
	defer fake.Close()
	ctx := testCtx(t)

	res, err := newAPI(fake).AuthTestContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.UserID != fake.BotUserID() || res.TeamID != fake.TeamID() || res.BotID == "" {
		t.Fatalf("auth.test = %+v", res)
	}

	wrong := slack.New("xoxb-wrong", slack.OptionAPIURL(fake.APIURL()))
	if _, err := wrong.AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("wrong token = %v", err)
	}
	var serr slack.SlackErrorResponse
	if _, _, err := wrong.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); !errors.As(err, &serr) || serr.Err != "invalid_auth" {
		t.Fatalf("wrong token post = %v", err)
	}
	appAsBot := slack.New(fake.AppToken(), slack.OptionAPIURL(fake.APIURL()))
	if _, err := appAsBot.AuthTestContext(ctx); err == nil || err.Error() != "not_allowed_token_type" {
		t.Fatalf("app token = %v", err)
	}

	fake.FailAuthTest("account_inactive")
	if _, err := newAPI(fake).AuthTestContext(ctx); err == nil || err.Error() != "account_inactive" {
		t.Fatalf("failed auth.test = %v", err)
	}
	fake.ClearFaults()
	if _, err := newAPI(fake).AuthTestContext(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fake.Calls("auth.test"); got != 5 {
		t.Fatalf("auth.test calls = %d", got)
	}
	if log := fake.CallLog("auth.test"); log[1].TokenKind != "invalid" || log[1].Error != "invalid_auth" {
		t.Fatalf("call log = %+v", log)
	}
}

func TestPostUpdateDeleteAndReplies(t *testing.T) {
	fake, api, ctx := newFake(t)

	parent := fake.AddMessage(Message{Channel: "C1", User: "U1", Text: "<@U0FAKEBOT01> question"})
	blocks := slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*調査中* …", false, false), nil, nil))
	ch, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("調査中", false), blocks, slack.MsgOptionTS(parent.TS))
	if err != nil {
		t.Fatal(err)
	}
	if ch != "C1" || ts == "" || !tsLess(parent.TS, ts) {
		t.Fatalf("post = %s %s", ch, ts)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("完了", false)); err != nil {
		t.Fatal(err)
	}
	_, ts2, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("second", false), slack.MsgOptionTS(parent.TS))
	if err != nil {
		t.Fatal(err)
	}

	thread := fake.Thread("C1", parent.TS)
	if len(thread) != 3 || thread[1].TS != ts || thread[2].TS != ts2 {
		t.Fatalf("thread = %+v", thread)
	}
	m := thread[1]
	if m.Text != "完了" || !m.IsBot() || len(m.Edits) != 1 || m.Edits[0].Text != "調査中" || !strings.Contains(string(m.Edits[0].Blocks), "調査中") {
		t.Fatalf("edited = %+v", m)
	}

	msgs, hasMore, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS})
	if err != nil {
		t.Fatal(err)
	}
	if hasMore || len(msgs) != 3 || msgs[0].ReplyCount != 2 || msgs[1].Text != "完了" || msgs[1].BotID == "" || msgs[1].Edited == nil || msgs[2].ThreadTimestamp != parent.TS {
		t.Fatalf("replies = %+v", msgs)
	}
	// Pagination.
	page1, more, cursor, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS, Limit: 2})
	if err != nil || !more || len(page1) != 2 || cursor == "" {
		t.Fatalf("page1 = %v %v %q %v", len(page1), more, cursor, err)
	}
	page2, more, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS, Limit: 2, Cursor: cursor})
	if err != nil || more || len(page2) != 1 || page2[0].Timestamp != ts2 {
		t.Fatalf("page2 = %+v %v %v", page2, more, err)
	}

	link, err := api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: "C1", Ts: ts})
	if err != nil || !strings.Contains(link, "/archives/C1/p"+strings.ReplaceAll(ts, ".", "")) || !strings.Contains(link, "thread_ts="+parent.TS) {
		t.Fatalf("permalink = %q %v", link, err)
	}

	// The bot may not edit or delete a user's message.
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", parent.TS, slack.MsgOptionText("x", false)); err == nil || err.Error() != "cant_update_message" {
		t.Fatalf("update user message = %v", err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, "C1", parent.TS); err == nil || err.Error() != "cant_delete_message" {
		t.Fatalf("delete user message = %v", err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, "C1", ts2); err != nil {
		t.Fatal(err)
	}
	if got := len(fake.Thread("C1", parent.TS)); got != 2 {
		t.Fatalf("after delete %d", got)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts2, slack.MsgOptionText("x", false)); err == nil || err.Error() != "message_not_found" {
		t.Fatalf("update deleted = %v", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1"); err == nil || err.Error() != "no_text" {
		t.Fatalf("empty post = %v", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText(strings.Repeat("あ", 40001), false)); err == nil || err.Error() != "msg_too_long" {
		t.Fatalf("long post = %v", err)
	}
	long := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", 3001), false, false), nil, nil)
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionBlocks(long)); err == nil || err.Error() != "invalid_blocks" {
		t.Fatalf("long section = %v", err)
	}

	// A DM to a user id lands in the user's D channel.
	dm, _, err := api.PostMessageContext(ctx, "U9", slack.MsgOptionText("hi", false))
	if err != nil || dm != "D9" || len(fake.Messages("D9")) != 1 {
		t.Fatalf("dm = %q %v", dm, err)
	}
	hist, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1"})
	if err != nil || len(hist.Messages) != 1 || hist.Messages[0].Timestamp != parent.TS {
		t.Fatalf("history = %+v %v", hist, err)
	}
}

func TestEphemeralUsersAndConversations(t *testing.T) {
	fake, api, ctx := newFake(t)

	ts, err := api.PostEphemeralContext(ctx, "C1", "U1", slack.MsgOptionText("only you", false), slack.MsgOptionTS("1.000001"))
	if err != nil || ts == "" {
		t.Fatalf("ephemeral = %q %v", ts, err)
	}
	if e := fake.Ephemerals(); len(e) != 1 || e[0].User != "U1" || e[0].Text != "only you" || e[0].ThreadTS != "1.000001" {
		t.Fatalf("ephemerals = %+v", e)
	}
	if len(fake.Messages("C1")) != 0 {
		t.Fatal("ephemeral stored as a message")
	}

	fake.AddUser(User{ID: "U1", Name: "taro", RealName: "山田太郎", TZ: "Asia/Tokyo", Locale: "ja-JP"})
	fake.AddUser(User{ID: "U2", Name: "bob", TZ: "America/New_York"})
	u, err := api.GetUserInfoContext(ctx, "U1")
	if err != nil {
		t.Fatal(err)
	}
	if u.TZ != "Asia/Tokyo" || u.TZOffset != 9*3600 || u.TZLabel != "Japan Standard Time" || u.RealName != "山田太郎" || u.Locale != "ja-JP" {
		t.Fatalf("user = %+v", u)
	}
	u, err = api.GetUserInfoContext(ctx, "U2")
	if err != nil || (u.TZOffset != -5*3600 && u.TZOffset != -4*3600) {
		t.Fatalf("user2 = %+v %v", u, err)
	}
	if _, err := api.GetUserInfoContext(ctx, "U404"); err == nil || err.Error() != "user_not_found" {
		t.Fatalf("unknown user = %v", err)
	}

	fake.AddChannel(Channel{ID: "C2", Name: "research"})
	c, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C2"})
	if err != nil || c.Name != "research" || !c.IsChannel || c.IsIM {
		t.Fatalf("channel = %+v %v", c, err)
	}
	fake.AddChannel(Channel{ID: "D3", IsIM: true, User: "U1"})
	c, err = api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "D3"})
	if err != nil || !c.IsIM || c.User != "U1" {
		t.Fatalf("im = %+v %v", c, err)
	}
	if _, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C404"}); err == nil || err.Error() != "channel_not_found" {
		t.Fatalf("unknown channel = %v", err)
	}
}

func TestViews(t *testing.T) {
	fake := New(WithTriggerTTL(100 * time.Millisecond))
	defer fake.Close()
	ctx := testCtx(t)
	api := newAPI(fake)

	home := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "Schedules", false, false), nil, nil)}}}
	v1, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: home})
	if err != nil {
		t.Fatal(err)
	}
	hash := v1.Hash
	v2, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: home, Hash: &hash})
	if err != nil || v2.ID != v1.ID || v2.Hash == hash {
		t.Fatalf("republish = %+v %v", v2, err)
	}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: home, Hash: &hash}); err == nil || err.Error() != "hash_conflict" {
		t.Fatalf("stale hash = %v", err)
	}
	hv, ok := fake.HomeView("U1")
	if !ok || hv.Type != "home" || len(hv.History) != 1 || !strings.Contains(string(hv.JSON), "Schedules") {
		t.Fatalf("home view = %+v", hv)
	}

	modal := slack.ModalViewRequest{Type: slack.VTModal, Title: slack.NewTextBlockObject(slack.PlainTextType, "New schedule", false, false), CallbackID: "sched", PrivateMetadata: "m1"}
	if _, err := api.OpenViewContext(ctx, "bogus", modal); err == nil || err.Error() != "invalid_trigger_id" {
		t.Fatalf("bogus trigger = %v", err)
	}
	old := fake.NewTriggerID()
	time.Sleep(150 * time.Millisecond)
	if _, err := api.OpenViewContext(ctx, old, modal); err == nil || err.Error() != "expired_trigger_id" {
		t.Fatalf("old trigger = %v", err)
	}
	vr, err := api.OpenViewContext(ctx, fake.NewTriggerID(), modal)
	if err != nil {
		t.Fatal(err)
	}
	modal.Title = slack.NewTextBlockObject(slack.PlainTextType, "Saved", false, false)
	upd, err := api.UpdateViewContext(ctx, modal, "", vr.Hash, vr.ID)
	if err != nil || upd.ID != vr.ID || upd.Title.Text != "Saved" {
		t.Fatalf("update = %+v %v", upd, err)
	}
	if _, err := api.UpdateViewContext(ctx, modal, "", "", "V404"); err == nil || err.Error() != "not_found" {
		t.Fatalf("update unknown = %v", err)
	}
	views := fake.Views()
	if len(views) != 2 || views[1].Type != "modal" || views[1].PrivateMetadata != "m1" || views[1].Method != "views.update" {
		t.Fatalf("views = %+v", views)
	}
}

func TestAssistantThreads(t *testing.T) {
	fake, api, ctx := newFake(t)
	if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: "D1", ThreadTS: "1.1", Status: "is searching…", LoadingMessages: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: "D1", ThreadTS: "1.1"}); err != nil {
		t.Fatal(err)
	}
	st := fake.Statuses()
	if len(st) != 2 || st[0].Status != "is searching…" || len(st[0].LoadingMessages) != 2 || st[1].Status != "" {
		t.Fatalf("statuses = %+v", st)
	}
	parent := fake.AddMessage(Message{Channel: "D1", User: "U1", Text: "question"})
	p := slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D1", ThreadTS: parent.TS, Title: "Try"}
	p.AddPrompt("Weekly", "every monday: competitors")
	if err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "D1", ThreadTS: parent.TS, Title: "AI規制"}); err != nil {
		t.Fatal(err)
	}
	if sp := fake.SuggestedPrompts(); len(sp) != 1 || sp[0].Prompts[0].Message != "every monday: competitors" {
		t.Fatalf("prompts = %+v", sp)
	}
	if ti := fake.Titles(); len(ti) != 1 || ti[0].Title != "AI規制" {
		t.Fatalf("titles = %+v", ti)
	}
}

func TestUploadFileV2(t *testing.T) {
	fake, api, ctx := newFake(t)
	parent := fake.AddMessage(Message{Channel: "C1", User: "U1", Text: "question"})
	report := "# レポート\n\n本文 [1]\n"
	fs, err := api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: "report.md", FileSize: len(report), Content: report, Title: "Report",
		Channel: "C1", ThreadTimestamp: parent.TS, InitialComment: "summary: done",
	})
	if err != nil {
		t.Fatal(err)
	}
	files := fake.Files()
	if len(files) != 1 {
		t.Fatalf("files = %+v", files)
	}
	f := files[0]
	if fs.ID != f.ID || f.Name != "report.md" || f.Title != "Report" || string(f.Content) != report || !f.Completed ||
		len(f.Channels) != 1 || f.Channels[0] != "C1" || f.ThreadTS != parent.TS || f.InitialComment != "summary: done" || f.Length != len(report) {
		t.Fatalf("file = %+v", f)
	}
	thread := fake.Thread("C1", parent.TS)
	if len(thread) != 2 || thread[1].Text != "summary: done" || len(thread[1].Files) != 1 || thread[1].Files[0] != f.ID || f.MessageTS != thread[1].TS {
		t.Fatalf("thread = %+v", thread)
	}
	// conversations.replies shows the file, and its url_private serves the bytes to the bot token.
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS})
	if err != nil || len(msgs) != 2 || len(msgs[1].Files) != 1 || msgs[1].Files[0].Name != "report.md" {
		t.Fatalf("replies = %+v %v", msgs, err)
	}
	var sb strings.Builder
	if err := api.GetFileContext(ctx, msgs[1].Files[0].URLPrivateDownload, &sb); err != nil || sb.String() != report {
		t.Fatalf("download = %q %v", sb.String(), err)
	}
	// Completing an id that was never uploaded fails.
	if _, err := api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: "F404"}}, Channel: "C1"}); err == nil || err.Error() != "file_not_found" {
		t.Fatalf("complete unknown = %v", err)
	}
}

func TestRateLimitAndServerErrors(t *testing.T) {
	fake := New()
	defer fake.Close()
	ctx := testCtx(t)

	// Without retries, slack-go returns *RateLimitedError carrying Retry-After.
	fake.RateLimit("chat.postMessage", 1, 2*time.Second)
	_, _, err := newAPI(fake).PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("err = %#v", err)
	}
	if got := len(fake.Messages("C1")); got != 0 {
		t.Fatalf("rate-limited post stored %d", got)
	}

	// With slack.OptionRetry, slack-go sleeps Retry-After (at least 1s) and retries.
	fake.RateLimit("chat.postMessage", 1, 0)
	api := newAPI(fake, slack.OptionRetryConfig(slack.RetryConfig{MaxRetries: 2}))
	start := time.Now()
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("retried after %s, slack-go waits at least 1s", d)
	}
	if n := fake.Calls("chat.postMessage"); n != 3 {
		t.Fatalf("calls = %d", n)
	}
	if log := fake.CallLog("chat.postMessage"); log[1].Status != http.StatusTooManyRequests || log[2].Status != http.StatusOK {
		t.Fatalf("log = %+v", log)
	}

	// 5xx: StatusCodeError (not retried by OptionRetry's default handlers).
	fake.InjectFault("conversations.replies", Fault{Status: http.StatusServiceUnavailable, Times: 1})
	_, _, _, err = newAPI(fake).GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.1"})
	var sc slack.StatusCodeError
	if !errors.As(err, &sc) || sc.Code != http.StatusServiceUnavailable {
		t.Fatalf("5xx err = %#v", err)
	}
	// A 200 with "ratelimited" in the body is a plain SlackErrorResponse.
	fake.InjectFault("*", Fault{Error: "ratelimited", Times: 1})
	if _, err := newAPI(fake).AuthTestContext(ctx); err == nil || err.Error() != "ratelimited" {
		t.Fatalf("ratelimited body = %v", err)
	}
	// Rates: about half of the calls fail.
	fake.InjectFault("users.info", Fault{Error: "internal_error", Rate: 0.5})
	fake.AddUser(User{ID: "U1"})
	failed := 0
	for range 40 {
		if _, err := newAPI(fake).GetUserInfoContext(ctx, "U1"); err != nil {
			failed++
		}
	}
	if failed < 8 || failed > 32 {
		t.Fatalf("failed %d of 40 at rate 0.5", failed)
	}
	fake.ClearFaults()
	// Delay only.
	fake.InjectFault("auth.test", Fault{Delay: 100 * time.Millisecond, Times: 1})
	start = time.Now()
	if _, err := newAPI(fake).AuthTestContext(ctx); err != nil || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("slow auth.test = %v after %s", err, time.Since(start))
	}
}

func TestUnknownMethod(t *testing.T) {
	fake := New()
	defer fake.Close()
	resp, err := http.PostForm(fake.APIURL()+"reactions.add", url.Values{"token": {fake.BotToken()}, "name": {"eyes"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.OK || r.Error != "unknown_method" {
		t.Fatalf("body = %s", body)
	}
	if u := fake.UnknownMethods(); len(u) != 1 || u[0] != "reactions.add" {
		t.Fatalf("unknown = %v", u)
	}
	if log := fake.CallLog("reactions.add"); len(log) != 1 || log[0].Params.Get("name") != "eyes" || log[0].Params.Has("token") {
		t.Fatalf("log = %+v", log)
	}
}
