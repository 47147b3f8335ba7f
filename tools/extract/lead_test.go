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

// TestLeadRepeatsDescription checks a story's lead paragraph in a
// container named as a teaser, above the container of the rest of the
// body, whose text the page's description repeats (cut short): the lead
// was dropped as furniture, and it is not of the body's tag and class. A
// standfirst of one sentence that repeats the description, and a teaser
// that does not, stay out.
func TestLeadRepeatsDescription(t *testing.T) {
	desc := func(s string) string { return postHead + `<meta name="description" content="` + s + `">` }
	article := func(teaser string) string {
		return `<article><h1>Headline</h1><div class="story-teaser"><p>` + teaser + `</p></div>` +
			`<div class="story-body">` + paras("rest", 48) + `</div></article>`
	}
	tests := []struct {
		name, head, article string
		want, notWant       []string
	}{
		{
			name:    "the lead repeated by the description",
			head:    desc(prose("lead", 2) + " The lead…"),
			article: article(prose("lead", 4)),
			want:    []string{"lead sentence number 0", "lead sentence number 3", "rest47 sentence"},
		},
		{
			name:    "a standfirst repeated by the description",
			head:    desc(prose("dek", 1)),
			article: article(prose("dek", 1)),
			want:    []string{"rest0 sentence", "rest47 sentence"},
			notWant: []string{"dek sentence"},
		},
		{
			name:    "a teaser the description does not repeat",
			head:    desc(prose("lead", 2)),
			article: article(prose("other", 4)),
			want:    []string{"rest0 sentence"},
			notWant: []string{"other sentence"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(newsPage(tt.head, tt.article)), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}
