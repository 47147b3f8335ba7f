package slackfake

import (
	"encoding/json"
	"testing"

	"github.com/slack-go/slack"
)

// TestBlockLinks: the fake sees what Slack makes clickable — mrkdwn links
// and, unless a text object is verbatim, bare addresses; markdown links,
// images, autolinks and bare addresses; rich_text links, link buttons and
// task card sources — and no link in escaped or broken syntax.
func TestBlockLinks(t *testing.T) {
	mrkdwn := func(s string, verbatim bool) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, s, false, verbatim), nil, nil)
	}
	btn := slack.NewButtonBlockElement("a", "v", slack.NewTextBlockObject(slack.PlainTextType, "Open", false, false))
	btn.URL = "https://button.example/"
	tests := []struct {
		name   string
		blocks []slack.Block
		want   []string // URL=text
	}{
		{"mrkdwn link", []slack.Block{mrkdwn("<https://evil.example/x|https://good.example> and <https://a.example>", true)},
			[]string{"https://evil.example/x=https://good.example", "https://a.example=https://a.example"}},
		{"bare address in mrkdwn", []slack.Block{mrkdwn("see https://evil.example/x. and www.evil.example", false)},
			[]string{"https://evil.example/x=https://evil.example/x", "www.evil.example=www.evil.example"}},
		{"verbatim mrkdwn links no bare address", []slack.Block{mrkdwn("see https://evil.example/x", true)}, nil},
		{"escaped mrkdwn is no link", []slack.Block{mrkdwn("&lt;hxxps://evil[.]example|x&gt; &lt;!channel&gt;", false)}, nil},
		{"mentions are no links", []slack.Block{mrkdwn("<!channel> <@U1> <#C1>", true)}, nil},
		{"markdown", []slack.Block{slack.NewMarkdownBlock("", "[a](https://evil.example/a) ![i](https://evil.example/i.png) <https://evil.example/auto> https://evil.example/bare [b]\u2060(https://x)")},
			[]string{"https://evil.example/a=a", "https://evil.example/i.png=i", "https://evil.example/auto=https://evil.example/auto", "https://evil.example/bare=https://evil.example/bare", "https://x=https://x"}},
		{"button", []slack.Block{slack.NewActionBlock("b", btn)}, []string{"https://button.example/="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.blocks)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range BlockLinks(raw) {
				got = append(got, l.URL+"="+l.Text)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("links = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("link %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
	cards, _ := json.Marshal([]slack.StreamChunk{func() slack.StreamChunk {
		c := slack.NewTaskUpdateChunk("t", "T")
		c.Sources = []slack.TaskCardSource{slack.NewTaskCardSource("https://evil.example/p", "https://accounts.google.com")}
		return c
	}()})
	if ls := BlockLinks(cards); len(ls) != 1 || ls[0].URL != "https://evil.example/p" || ls[0].Text != "https://accounts.google.com" {
		t.Errorf("task card links = %+v", ls)
	}
}
