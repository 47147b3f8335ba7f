package bot

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"deepresearch/bot/slackfake"
)

// checkBlocks applies Slack's limits: 50 blocks, 3,000 chars per section
// text, 150 per header, 12,000 per markdown block, and no pings.
func checkBlocks(t *testing.T, what string, blocks []slack.Block) {
	t.Helper()
	if len(blocks) > 50 {
		t.Errorf("%s: %d blocks", what, len(blocks))
	}
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if slackfake.MentionsBroadcast(string(raw)) {
		t.Errorf("%s: blocks ping people", what)
	}
	for _, b := range blocks {
		switch x := b.(type) {
		case *slack.SectionBlock:
			if n := utf8.RuneCountInString(x.Text.Text); n > 3000 {
				t.Errorf("%s: section of %d chars", what, n)
			}
		case *slack.HeaderBlock:
			if n := utf8.RuneCountInString(x.Text.Text); n > 150 {
				t.Errorf("%s: header of %d chars", what, n)
			}
		case *slack.MarkdownBlock:
			if n := utf8.RuneCountInString(x.Text); n > 12000 {
				t.Errorf("%s: markdown block of %d chars", what, n)
			}
		case *slack.ContextBlock:
			for _, e := range x.ContextElements.Elements {
				if tb, ok := e.(*slack.TextBlockObject); ok && utf8.RuneCountInString(tb.Text) > 3000 {
					t.Errorf("%s: context of %d chars", what, utf8.RuneCountInString(tb.Text))
				}
			}
		}
	}
}
