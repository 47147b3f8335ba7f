package extract

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// paras returns n paragraphs of prose tagged tag0, tag1, …
func paras(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<p>%s</p>", prose(fmt.Sprintf("%s%d", tag, i), 2))
	}
	return b.String()
}

// newsPage wraps an article in a news site's page: a menu, a rail of
// teasers and a thread of readers' comments holding as much prose as the
// article. head is added to the page's head.
func newsPage(head, article string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Headline</title>` + head + `</head><body>` +
		`<header class="site-header"><nav><a href="/">Home</a> <a href="/news">News</a></nav></header>` +
		`<div class="page"><div class="main-col">` + article + `</div><div class="rail">`)
	for i := range 5 {
		fmt.Fprintf(&b, `<div class="card"><a href="/s%d">Rail story title number %d about the harbour</a><p>A short teaser for rail story %d.</p></div>`, i, i, i)
	}
	b.WriteString(`</div></div><section class="comments-area"><h3>Comments</h3>`)
	for i := range 6 {
		fmt.Fprintf(&b, `<div class="comment"><p>%s</p></div>`, prose(fmt.Sprintf("reader%d", i), 2))
	}
	b.WriteString(`</section><footer><a href="/privacy">Privacy</a></footer></body></html>`)
	return b.String()
}

// postHead declares the page an article (og:type, no JSON-LD).
const postHead = `<meta property="og:type" content="article">`

// checkNewsPost extracts article set in a news site's page (see newsPage)
// that declares it a post, and checks that the text holds want and none of
// notWant.
func checkNewsPost(t *testing.T, article string, want, notWant []string) {
	t.Helper()
	a, err := ExtractBytes([]byte(newsPage(postHead, article)), "https://example.com/news/2024/story.html", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, want, notWant)
}

// TestCutShortBodies checks news bodies that pages split or show in part:
// the rest of the body in a container named by a weak furniture word, or
// hidden until a "read more" control opens it. Before these rules only the
// lead was extracted (a quarter of the body).
func TestCutShortBodies(t *testing.T) {
	lead := `<div class="article-lead">` + paras("lead", 2) + `</div>`
	tests := []struct {
		name, head, article string
		want, notWant       []string
	}{
		{
			name:    "the rest of the body in a container named more",
			head:    postHead,
			article: `<article><h1>Headline</h1>` + lead + `<div class="story-more">` + paras("rest", 6) + `</div></article>`,
			want:    []string{"lead1 sentence", "rest0 sentence", "rest5 sentence"},
			notWant: []string{"reader0", "Rail story"},
		},
		{
			name: "the rest of the body named as a teaser, then the author's box",
			head: postHead,
			article: `<article><h1>Headline</h1>` + lead + `<div class="content-teaser">` + paras("rest", 6) + `</div>` +
				`<div class="author-info"><p>` + prose("writer", 1) + `</p><p>` + prose("writer-more", 1) + `</p><p>` + prose("writer-end", 1) + `</p></div></article>`,
			want:    []string{"lead0 sentence", "rest5 sentence"},
			notWant: []string{"writer", "reader0"},
		},
		{
			name: "a notice after the article holding less than it stays out",
			head: postHead,
			article: `<article><h1>Headline</h1>` + lead + `<div class="article-body">` + paras("rest", 6) + `</div>` +
				`<div class="notice">` + paras("legal", 3) + `</div></article>`,
			want:    []string{"lead0 sentence", "rest5 sentence"},
			notWant: []string{"legal0"},
		},
		{
			name:    "not on a page that does not declare a post",
			article: `<article><h1>Headline</h1>` + lead + `<div class="notice">` + paras("rest", 6) + `</div></article>`,
			want:    []string{"lead1 sentence"},
			notWant: []string{"rest0 sentence"},
		},
		{
			name: "the rest hidden until the continue-reading button opens it",
			article: `<article><h1>Headline</h1><div class="article-body">` + paras("lead", 2) +
				`<div class="article-rest" style="display:none">` + paras("rest", 6) + `</div>` +
				`<button class="expand">Continue reading</button></div></article>`,
			want:    []string{"lead1 sentence", "rest0 sentence", "rest5 sentence"},
			notWant: []string{"reader0"},
		},
		{
			name: "the rest hidden by the hidden attribute, the read-more link in a wrapper after it",
			article: `<article><h1>Headline</h1><div class="article-body">` + paras("lead", 2) +
				`<div class="more-text" hidden>` + paras("rest", 6) + `</div>` +
				`<div class="read-more-wrap"><a href="#" class="js-read-more">Read the full story</a></div></div></article>`,
			want: []string{"lead1 sentence", "rest0 sentence", "rest5 sentence"},
		},
		{
			name: "the rest hidden by the page's style sheet, then a show-more control",
			head: `<style>.truncated-rest{display:none}</style>`,
			article: `<article><h1>Headline</h1><div class="article-body">` + paras("lead", 2) +
				`<div class="truncated-rest">` + paras("rest", 6) + `</div>` +
				`<span role="button" tabindex="0">Show more</span></div></article>`,
			want: []string{"lead1 sentence", "rest0 sentence", "rest5 sentence"},
		},
		{
			name: "hidden text before a link to another page, or before another control, stays hidden",
			article: `<article><h1>Headline</h1><div class="article-body">` + paras("lead", 4) +
				`<div style="display:none">` + paras("secret", 6) + `</div><a href="/full-story">Read more</a>` +
				`<div hidden>` + paras("covert", 6) + `</div><button>Subscribe</button>` +
				`<div style="display:none">` + paras("unseen", 6) + `</div></div></article>`,
			want:    []string{"lead3 sentence"},
			notWant: []string{"secret", "covert", "unseen"},
		},
		{
			name: "the rest behind a hiding class stays out unless a read-more control opens it",
			head: postHead,
			article: `<article><h1>Headline</h1>` + lead + `<div class="d-none">` + paras("unseen", 6) + `</div>` +
				`<div class="article-body">` + paras("rest", 1) + `<div class="hidden">` + paras("opened", 6) + `</div><button>Read more</button></div></article>`,
			want:    []string{"lead1 sentence", "rest0 sentence", "opened0 sentence", "opened5 sentence"},
			notWant: []string{"unseen"},
		},
		{
			name: "a hidden box of links before a read-more button stays out",
			article: `<article><h1>Headline</h1><div class="article-body">` + paras("lead", 4) +
				`<div style="display:none"><ul><li><a href="/a">Another story about the harbour and its tides</a></li>` +
				`<li><a href="/b">A second story about the harbour and its ferries</a></li>` +
				`<li><a href="/c">A third story about the harbour and the lighthouse</a></li></ul></div>` +
				`<button>Read more</button></div></article>`,
			want:    []string{"lead3 sentence"},
			notWant: []string{"Another story", "second story"},
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

func TestReadMoreControl(t *testing.T) {
	tests := []struct {
		html string
		want bool
	}{
		{`<button>Continue reading</button>`, true},
		{`<button>+ Read more</button>`, true},
		{`<a href="#rest">Read the full article</a>`, true},
		{`<a href="javascript:void(0)">Show full story</a>`, true},
		{`<div role="button">Weiterlesen</div>`, true},
		{`<span aria-expanded="false">Expand</span>`, true},
		{`<a href="/story">Read more</a>`, false},
		{`<button>Subscribe to read more</button>`, false},
		{`<button style="display:none">Read more</button>`, false},
		{`<div>Read more</div>`, false},
		{`<button>Read more about our cookie policy and the ways we use your data on this site</button>`, false},
	}
	for _, tt := range tests {
		n := firstElementOf(t, tt.html)
		if got := readMoreControl(n); got != tt.want {
			t.Errorf("readMoreControl(%s) = %v, want %v", tt.html, got, tt.want)
		}
	}
}

// firstElementOf parses s as a page and returns the first element of its
// body.
func firstElementOf(t *testing.T, s string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader("<html><body>" + s + "</body></html>"))
	if err != nil {
		t.Fatal(err)
	}
	body := findBody(doc)
	for c := body.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			return c
		}
	}
	t.Fatalf("no element in %s", s)
	return nil
}
