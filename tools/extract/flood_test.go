package extract

import (
	"fmt"
	"strings"
	"testing"
)

// teaserStack returns n teaser cards of other stories, each a linked
// headline and a summary of two sentences, in an unnamed container.
func teaserStack(n int) string {
	var b strings.Builder
	b.WriteString(`<div class="stack">`)
	for i := range n {
		fmt.Fprintf(&b, `<div class="c-entry"><h3><a href="/t%d">Teaser headline number %d about the county</a></h3><p>%s</p></div>`,
			i, i, prose(fmt.Sprintf("tsr%d", i), 2))
	}
	b.WriteString(`</div>`)
	return b.String()
}

// TestFloodedNews checks short news stories on pages with more text
// around them than in them: before, the page was read as a page of items
// and the story was a fifth of what was extracted.
func TestFloodedNews(t *testing.T) {
	tests := []struct {
		name, body    string
		want, notWant []string
	}{
		{
			name: "a short story with subheadings, then teasers of other stories in its article",
			body: `<main><article><h1>Headline</h1><div class="article-body">` + paras("story", 2) + `<h2>What comes next</h2>` + paras("next", 1) +
				`</div>` + teaserStack(12) + `</article></main>`,
			want:    []string{"story0 sentence", "story1 sentence", "What comes next", "next0 sentence"},
			notWant: []string{"tsr0", "tsr11", "Teaser headline"},
		},
		{
			name: "a page of items under one article's headline is still a page of items",
			body: `<main><article><h1>Stories of the week</h1><p>` + prose("intro", 1) + `</p>` +
				`<section><h2><a href="/a">The harbour council votes on the tide barrier</a></h2><p>` + prose("ka", 3) + `</p></section>` +
				`<section><h2><a href="/b">Ferry timetable changes for the winter months</a></h2><p>` + prose("kb", 3) + `</p></section>` +
				`<section><h2><a href="/c">The lighthouse restoration reaches its final stage</a></h2><p>` + prose("kc", 3) + `</p></section>` +
				`<section><h2><a href="/d">A new footpath opens along the cliffs this spring</a></h2><p>` + prose("kd", 3) + `</p></section>` +
				`</article></main>`,
			want: []string{"ka sentence number 0", "kd sentence number 2", "lighthouse restoration"},
		},
		{
			name: "the same without an article element, the teasers beside the story",
			body: `<main><div class="story"><h1>Headline</h1><div class="story-body">` + paras("story", 2) + `<h2>What comes next</h2>` + paras("next", 1) +
				`</div></div><div class="more-from">` + teaserStack(12) + `</div></main>`,
			want:    []string{"story0 sentence", "story1 sentence", "What comes next", "next0 sentence"},
			notWant: []string{"tsr0", "tsr11", "Teaser headline"},
		},
		{
			name: "the next story loaded below the one asked for",
			body: `<main><article><h1>Headline</h1><div class="article-body">` + paras("story", 3) + `</div></article>` +
				`<article><h2>The next story</h2><div class="article-body">` + paras("other", 6) + `</div></article></main>`,
			want:    []string{"story0 sentence", "story2 sentence"},
			notWant: []string{"other0", "other5", "The next story"},
		},
		{
			name: "articles none of which holds the headline are all kept",
			body: `<main><h1>Headline</h1><article><h2>First part</h2>` + paras("story", 3) + `</article>` +
				`<article><h2>Second part</h2>` + paras("other", 3) + `</article></main>`,
			want: []string{"story0 sentence", "other2 sentence"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<!doctype html><html><head><title>Headline</title>` + postHead + `</head><body><nav><a href="/">Home</a></nav>` +
				tt.body + `<footer><a href="/privacy">Privacy</a></footer></body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}

// TestStoryWithoutArticleNeedsAPost checks that a page that does not
// declare a post, holding a story-like root and many teasers, is still
// read as a page of items.
func TestStoryWithoutArticleNeedsAPost(t *testing.T) {
	page := `<!doctype html><html><head><title>Headline</title></head><body><nav><a href="/">Home</a></nav>` +
		`<main><div class="story"><h1>Headline</h1><div class="story-body">` + paras("story", 3) + `</div></div>` + teaserStack(12) +
		`</main></body></html>`
	a, err := ExtractBytes([]byte(page), "https://example.com/news/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"story0 sentence", "tsr0", "tsr11"}, nil)
}

// TestStoryHoldingTheHeadline checks a short story on a page that declares
// a post, whose container holds the page's one h1 (in a header the
// pruning removes), followed by teasers of other stories holding most of
// the page's text: the container is the story, not one item of a page of
// items.
func TestStoryHoldingTheHeadline(t *testing.T) {
	story := `<div class="item-page"><div class="item-page__page-header"><h1>Headline</h1></div>` + paras("story", 4) + `</div>`
	tests := []struct {
		name, head, body string
		want, notWant    []string
	}{
		{
			name: "a post: the story alone", head: postHead, body: story + teaserStack(12),
			want: []string{"story0 sentence", "story3 sentence"}, notWant: []string{"tsr0", "tsr11", "Teaser headline"},
		},
		{
			name: "not a post: the page of items", body: story + teaserStack(12),
			want: []string{"story0 sentence", "tsr0", "tsr11"},
		},
		{
			name: "a post whose container holds a blurb, not a story: the page of items", head: postHead,
			body: `<div class="item-page"><div class="item-page__page-header"><h1>Headline</h1></div>` + paras("story", 2) + `</div>` + teaserStack(12),
			want: []string{"story0 sentence", "tsr0", "tsr11"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<!doctype html><html><head><title>Headline</title>` + tt.head + `</head><body><nav><a href="/">Home</a></nav><main>` +
				tt.body + `</main><footer><a href="/privacy">Privacy</a></footer></body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}

// ownBox returns a box of the site's own stories as news sites set it at
// the end of an article's body: a label line, then two linked headlines.
func ownBox(label, host string) string {
	return `<div class="box"><div>` + label + `</div><ul>` +
		`<li><a href="https://` + host + `/news/2024/harbour.html">The harbour council votes on the tide barrier</a></li>` +
		`<li><a href="/news/2024/ferry.html">Ferry timetable changes for the winter months</a></li></ul></div>`
}

// TestLabelledOwnLinks checks that a box of the site's own stories at the
// end of a news story is left out, and that the site's links are kept
// where the broad corpus keeps them: on a page that is not a post, under
// a heading of the post's own, in the middle of the text, after prose,
// and when labelled links run through the page.
func TestLabelledOwnLinks(t *testing.T) {
	story := `<h1>Headline</h1>` + paras("story", 4)
	tests := []struct {
		name, head, body string
		kept             bool
	}{
		{"a box at the end of a story", postHead, story + ownBox("Read also:", "example.com") + `<p>Share</p>`, false},
		{"the same twice", postHead, story + ownBox("Read also:", "example.com") + ownBox("Most read", "www.example.com"), false},
		{"not a post", "", story + ownBox("Read also:", "example.com"), true},
		{"another site's links", postHead, story + strings.ReplaceAll(ownBox("Read also:", "other.org"), `"/news`, `"https://other.org/news`), true},
		{"under a heading", postHead, story + strings.ReplaceAll(ownBox("More from the blog", "example.com"), "<div>More from the blog</div>", "<h2>More from the blog</h2>"), true},
		{"in the middle of the text", postHead, story + ownBox("Read also:", "example.com") + paras("more", 3), true},
		{"links running through the page", postHead, story + ownBox("Read also:", "example.com") + ownBox("See also", "example.com") + ownBox("Next", "example.com"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<!doctype html><html><head><title>Headline</title>` + tt.head + `</head><body><nav><a href="/">Home</a></nav><main><article>` +
				tt.body + `</article></main></body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "story3 sentence") {
				t.Fatalf("the story is missing:\n%s", a.Text)
			}
			if got := strings.Contains(a.Text, "tide barrier"); got != tt.kept {
				t.Errorf("the site's links kept = %v, want %v:\n%s", got, tt.kept, a.Text)
			}
		})
	}
}

// TestTaxonomyLines checks that a post's lines of tags and categories are
// left out, with their label, and that a single link to a category page
// (a call to action), and tags on a page that is not a post, stay.
func TestTaxonomyLines(t *testing.T) {
	tags := `<p><a href="/tags/harbour">harbour tides</a>, <a href="/tags/ferry">ferry lines</a>, <a href="/tags/council">council</a></p>`
	tests := []struct {
		name, head, tail, text string
		kept                   bool
	}{
		{"tags after a label", postHead, `<h6>Keywords:</h6>` + tags, "ferry lines", false},
		{"the label is dropped with them", postHead, `<h6>Keywords:</h6>` + tags, "Keywords:", false},
		{"one category after a label", postHead, `<p>Categories: <a href="/category/practices">practices of the harbour</a></p>`, "practices of the harbour", false},
		{"one link to a category page", postHead, `<p><a href="/category/builders">Compare more builders and ferry lines</a></p>`, "Compare more builders", true},
		{"not a post", "", tags, "ferry lines", true},
		{"links to stories", postHead, `<p><a href="/news/harbour">The harbour tides rise again</a>, <a href="/news/ferry">ferry lines change</a></p>`, "ferry lines change", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<!doctype html><html><head><title>Headline</title>` + tt.head + `</head><body><main><article><h1>Headline</h1>` +
				paras("story", 4) + tt.tail + `</article></main></body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "story3 sentence") {
				t.Fatalf("the story is missing:\n%s", a.Text)
			}
			if got := strings.Contains(a.Text, tt.text); got != tt.kept {
				t.Errorf("%q kept = %v, want %v:\n%s", tt.text, got, tt.kept, a.Text)
			}
		})
	}
}
