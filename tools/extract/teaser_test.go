package extract

import (
	"fmt"
	"strings"
	"testing"
)

// teaserBox returns a box of n teasers of other stories, named as the
// site names them, tagged tag0, tag1, … in their texts.
func teaserBox(tag string, n int) string {
	var b strings.Builder
	b.WriteString(`<div class="contentbox list">`)
	for i := range n {
		fmt.Fprintf(&b, `<div class="teaser"><div class="teaserpadding"><div class="topline">Topic %d</div>`+
			`<div class="headlinewrapper"><a href="/other-%s-%d">Title of another story about the harbour, number %d</a></div>`+
			`<div class="teasertext">The %s%d teaser says, in one sentence, what the other story tells about the harbour and its people.</div></div></div>`,
			i, tag, i, i, tag, i)
	}
	b.WriteString(`</div>`)
	return b.String()
}

// TestStoryTeasers checks that on a page that declares a post, teasers
// of other stories between the paragraphs of the story (the article
// element holding the headline) are left out, though the page holds
// enough teasers of their kind for them to pass as its items (see
// pageItem), and that the teasers of a section page, whose headline is not
// in an article holding them, are still its content.
func TestStoryTeasers(t *testing.T) {
	tests := []struct {
		name, head, body string
		want, notWant    []string
	}{
		{
			name: "teasers inside the story",
			head: postHead,
			body: `<article class="articlepage"><h1>Headline</h1>` + paras("storyA", 2) + teaserBox("inner", 1) +
				paras("storyB", 2) + teaserBox("more", 2) + `<p>Agency (Writer Name)</p></article>` +
				`<section class="teasergroup"><h2>More from the region</h2>` + teaserBox("rail", 8) + `</section>`,
			want:    []string{"storyA0 sentence", "storyB1 sentence"},
			notWant: []string{"inner0", "more1", "rail0"},
		},
		{
			name: "a section page of teasers",
			head: postHead,
			body: `<header class="section-head"><h1>Harbour news</h1></header><main>` + teaserBox("item", 8) + `</main>`,
			want: []string{"item0 teaser", "item7 teaser"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<!doctype html><html><head><title>Headline</title>` + tt.head + `</head><body>` +
				`<nav><a href="/">Home</a> <a href="/news">News</a></nav>` + tt.body +
				`<footer><a href="/privacy">Privacy</a></footer></body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/2025/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}
