package extract

import (
	"testing"
)

// TestLeadBeforeBody checks that the first paragraphs of a news body,
// set before the box holding the rest (a paywall's box, a second block
// of the body's class), are kept with it: the root chosen holds nearly all
// the prose, and before leadBefore the lead was cut off. Teasers (a
// paragraph starting with a link) and elements named otherwise than the
// body (a notice) before it are not taken for its lead.
func TestLeadBeforeBody(t *testing.T) {
	lead := `<p>` + prose("lead0", 1) + `</p><p>` + prose("lead1", 1) + `</p>`
	rest := paras("rest", 24)
	tests := []struct {
		name, article string
		want, notWant []string
	}{
		{
			name:    "the free paragraphs before the paywall's box",
			article: `<article><h1>Headline</h1><div class="published">May 2, 2024</div><div class="read">` + lead + `<div class="paywall">` + rest + `</div></div></article>`,
			want:    []string{"lead0 sentence", "lead1 sentence", "rest0 sentence", "rest23 sentence"},
			notWant: []string{"May 2, 2024", "reader0"},
		},
		{
			name: "the lead in a block of the body's own class",
			article: `<article><h1>Headline</h1><div class="news-text"><p>` + prose("lead0", 1) + `</p></div>` +
				`<div class="news-text">` + rest + `</div></article>`,
			want: []string{"lead0 sentence", "rest0 sentence"},
		},
		{
			name: "a teaser or a notice before the body is not its lead",
			article: `<article><h1>Headline</h1><div class="read"><p class="notice">` + prose("notice", 1) + `</p>` +
				`<p><a href="/other-story">Another story about the harbour and its ferries</a> ` + prose("teaser", 1) + `</p>` +
				`<div class="paywall">` + rest + `</div></div></article>`,
			want:    []string{"rest0 sentence", "rest23 sentence"},
			notWant: []string{"notice sentence", "teaser sentence"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkNewsPost(t, tt.article, tt.want, tt.notWant) })
	}
}
