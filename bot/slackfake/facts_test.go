package slackfake

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// These tests pin the behaviours of real Slack listed in
// shared/slack-facts.md ("Blocks and text"): each case is a payload real
// Slack refuses (or treats specially), and the fake must do the same, or
// the bot's own tests would pass against a Slack that does not exist.

func mdBlock(text string) slack.Block { return slack.NewMarkdownBlock("", text) }

func sectionBlock(text string) slack.Block {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
}

func button(actionID, value, text string) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(actionID, value, slack.NewTextBlockObject(slack.PlainTextType, text, false, false))
}

func TestMessageBlockLimits(t *testing.T) {
	_, api, ctx := newFake(t)

	many := func(n int) []slack.Block {
		var bs []slack.Block
		for range n {
			bs = append(bs, sectionBlock("x"))
		}
		return bs
	}
	tests := []struct {
		name   string
		blocks []slack.Block
		want   string // "" for accepted
	}{
		{"50 blocks", many(50), ""},
		{"51 blocks", many(51), "invalid_blocks"},
		{"section 3000", []slack.Block{sectionBlock(strings.Repeat("a", 3000))}, ""},
		{"section 3001", []slack.Block{sectionBlock(strings.Repeat("a", 3001))}, "invalid_blocks"},
		{"header 151", []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("h", 151), false, false))}, "invalid_blocks"},
		{"markdown 12000", []slack.Block{mdBlock(strings.Repeat("m", 12000))}, ""},
		{"markdown 12001", []slack.Block{mdBlock(strings.Repeat("m", 12001))}, "invalid_blocks"},
		{"button text 75", []slack.Block{slack.NewActionBlock("a", button("b", "v", strings.Repeat("t", 75)))}, ""},
		{"button text 76", []slack.Block{slack.NewActionBlock("a", button("b", "v", strings.Repeat("t", 76)))}, "invalid_blocks"},
		{"button value 2001", []slack.Block{slack.NewActionBlock("a", button("b", strings.Repeat("v", 2001), "ok"))}, "invalid_blocks"},
		{"duplicate action_id", []slack.Block{slack.NewActionBlock("a", button("same", "1", "one"), button("same", "2", "two"))}, "invalid_blocks"},
		{"duplicate action_id across blocks", []slack.Block{slack.NewActionBlock("a", button("same", "1", "one")), slack.NewActionBlock("b", button("same", "2", "two"))}, "invalid_blocks"},
		{"block_id 256", []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "x", false, false), nil, nil, slack.SectionBlockOptionBlockID(strings.Repeat("i", 256)))}, "invalid_blocks"},
		// Every block within its own limit, the message over ~13,200
		// characters: msg_blocks_too_long (bolt-js#2509).
		{"blocks add up past 13200", []slack.Block{mdBlock(strings.Repeat("m", 11000)), sectionBlock(strings.Repeat("s", 2900))}, "msg_blocks_too_long"},
		{"blocks add up to 13000", []slack.Block{mdBlock(strings.Repeat("m", 10100)), sectionBlock(strings.Repeat("s", 2900))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("fallback", false), slack.MsgOptionBlocks(tt.blocks...))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("chat.postMessage: got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestViewAllowsHundredBlocks(t *testing.T) {
	fake := New()
	defer fake.Close()
	ctx := testCtx(t)
	var bs []slack.Block
	for range 100 {
		bs = append(bs, sectionBlock("x"))
	}
	view := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: bs}}
	if _, err := newAPI(fake).PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: view}); err != nil {
		t.Fatalf("100 blocks in a view: %v", err)
	}
	view.Blocks.BlockSet = append(bs, sectionBlock("one too many"))
	if _, err := newAPI(fake).PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: view}); err == nil || err.Error() != "invalid_blocks" {
		t.Fatalf("101 blocks in a view: %v", err)
	}
}

// TestFileShareRefusesMarkdownBlocks: files.completeUploadExternal answers
// internal_error to a markdown block, every time, and the file stays
// unshared (python-slack-sdk#1756, node-slack-sdk#2564).
func TestFileShareRefusesMarkdownBlocks(t *testing.T) {
	fake, api, ctx := newFake(t)

	up, err := api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "r.md", FileSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: up.UploadURL, Content: "hello", Filename: "r.md"}); err != nil {
		t.Fatal(err)
	}
	complete := func(blocks ...slack.Block) error {
		_, err := api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{
			Files: []slack.FileSummary{{ID: up.FileID, Title: "r"}}, Channel: "C1", Blocks: slack.Blocks{BlockSet: blocks},
		})
		return err
	}
	for range 2 { // retrying changes nothing
		if err := complete(sectionBlock("*summary*"), mdBlock("**summary**")); err == nil || err.Error() != "internal_error" {
			t.Fatalf("markdown block in a file share: %v", err)
		}
	}
	if got := len(fake.Orphans()); got != 1 {
		t.Fatalf("orphans after refused shares = %d, want 1", got)
	}
	// The same file completes with blocks Slack accepts there.
	if err := complete(sectionBlock("*summary*"), slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "ctx", false, false))); err != nil {
		t.Fatalf("section + context share: %v", err)
	}
	if got := len(fake.Orphans()); got != 0 {
		t.Fatalf("orphans after the share = %d", got)
	}
	// chat.postMessage takes the same markdown block.
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false), slack.MsgOptionBlocks(mdBlock("**summary**"))); err != nil {
		t.Fatalf("markdown block in chat.postMessage: %v", err)
	}
}

func TestFileShareInitialCommentHidesBlocks(t *testing.T) {
	fake, api, ctx := newFake(t)
	f, err := api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: "r.md", FileSize: 2, Content: "hi", Channel: "C1", InitialComment: "comment",
		Blocks: slack.Blocks{BlockSet: []slack.Block{sectionBlock("blocks")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages("C1")
	if len(msgs) != 1 || msgs[0].Text != "comment" || len(msgs[0].Blocks) != 0 {
		t.Fatalf("share message = %+v (file %s)", msgs, f.ID)
	}
}

func TestFilesDeleteAndRetiredUpload(t *testing.T) {
	fake, api, ctx := newFake(t)
	up, err := api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "r.md", FileSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.Orphans()) != 1 {
		t.Fatalf("orphans = %d", len(fake.Orphans()))
	}
	if err := api.DeleteFileContext(ctx, up.FileID); err != nil {
		t.Fatal(err)
	}
	if len(fake.Orphans()) != 0 || len(fake.Files()) != 0 {
		t.Fatalf("after delete: orphans %d files %d", len(fake.Orphans()), len(fake.Files()))
	}
	// Slack's files.delete: file_deleted for a file deleted before,
	// file_not_found for an id it never issued.
	if err := api.DeleteFileContext(ctx, up.FileID); err == nil || err.Error() != "file_deleted" {
		t.Fatalf("second delete = %v", err)
	}
	if err := api.DeleteFileContext(ctx, "F404"); err == nil || err.Error() != "file_not_found" {
		t.Fatalf("delete of an unknown file = %v", err)
	}
	// A deleted file's upload URL and completion are gone.
	if err := api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: up.UploadURL, Content: "hello", Filename: "r.md"}); err == nil {
		t.Fatal("upload to a deleted file's URL succeeded")
	}
	if _, err := api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: up.FileID}}, Channel: "C1"}); err == nil || err.Error() != "file_not_found" {
		t.Fatalf("completing a deleted file = %v", err)
	}
	// files.upload was retired on 2025-11-12.
	var res struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	postForm(t, fake, "files.upload", "content=x&channels=C1", &res)
	if res.OK || res.Error != "method_deprecated" {
		t.Fatalf("files.upload = %+v", res)
	}
}

// postForm calls a Web API method with a form body and the bot token.
func postForm(t *testing.T, fake *Server, method, form string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, fake.APIURL()+method, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+fake.BotToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// TestFeedbackButtons: a feedback_buttons element goes in a context_actions
// block, with a positive and a negative button that each have text and a
// value; elsewhere, or incomplete, Slack refuses the message.
func TestFeedbackButtons(t *testing.T) {
	_, api, ctx := newFake(t)
	txt := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
	}
	good := slack.NewFeedbackButtonsBlockElement("dr_feedback", slack.NewFeedbackButton(txt("Good"), "positive"), slack.NewFeedbackButton(txt("Bad"), "negative"))
	noValue := slack.NewFeedbackButtonsBlockElement("dr_feedback", slack.NewFeedbackButton(txt("Good"), ""), slack.NewFeedbackButton(txt("Bad"), "negative"))
	contextActions := func(els ...slack.BlockElement) slack.Block {
		return &slack.ContextActionsBlock{Type: slack.MBTContextActions, Elements: &slack.BlockElements{ElementSet: els}}
	}
	for _, tt := range []struct {
		name  string
		block slack.Block
		want  string
	}{
		{"in context_actions", contextActions(good), ""},
		{"a button without value", contextActions(noValue), "invalid_blocks"},
		{"empty context_actions", contextActions(), "invalid_blocks"},
		{"in an actions block", slack.NewActionBlock("a", good), "invalid_blocks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false), slack.MsgOptionBlocks(tt.block))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestViewInputLengths: a plain-text input's max_length is 1–3000 and its
// min_length 0–3000 (Slack's element reference); a view whose input is
// pre-filled with more than its max_length is refused with
// invalid_arguments (slack-facts.md: not documented, the strict choice).
func TestViewInputLengths(t *testing.T) {
	fake := New()
	defer fake.Close()
	ctx := testCtx(t)
	api := newAPI(fake)
	tests := []struct {
		name     string
		initial  string
		min, max int
		want     string
	}{
		{"initial at max_length", strings.Repeat("é", 2000), 0, 2000, ""},
		{"initial one rune over", strings.Repeat("é", 2001), 0, 2000, "invalid_arguments"},
		{"initial far over", strings.Repeat("x", 6000), 0, 2000, "invalid_arguments"},
		{"no max_length", strings.Repeat("x", 6000), 0, 0, ""},
		{"max_length over 3000", "", 0, 3001, "invalid_arguments"},
		{"min_length over max_length", "", 10, 5, "invalid_arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slack.NewPlainTextInputBlockElement(nil, "value")
			in.InitialValue, in.MinLength, in.MaxLength = tt.initial, tt.min, tt.max
			modal := slack.ModalViewRequest{Type: slack.VTModal, Title: slack.NewTextBlockObject(slack.PlainTextType, "Form", false, false),
				Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewInputBlock("b", slack.NewTextBlockObject(slack.PlainTextType, "Topic", false, false), nil, in)}}}
			_, err := api.OpenViewContext(ctx, fake.NewTriggerID(), modal)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("views.open = %q, want %q", got, tt.want)
			}
		})
	}
}
