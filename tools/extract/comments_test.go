package extract

import (
	"fmt"
	"strings"
	"testing"
)

// commentsPage is a news page whose readers' comments (named "comment")
// hold more prose than its article. head is added to the page's head;
// article is the article's container.
func commentsPage(head, article string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Headline</title>` + head + `</head><body>` +
		`<nav><a href="/">Home</a> <a href="/news">News</a></nav><div id="pages">` + article +
		`<div class="sect sect-commentlinks"><h3>Comments</h3><ul class="directory">`)
	for i := range 8 {
		fmt.Fprintf(&b, `<li class="guest"><p>%s</p></li>`, prose(fmt.Sprintf("reader%d", i), 2))
	}
	b.WriteString(`</ul></div></div><footer><a href="/privacy">Privacy</a></footer></body></html>`)
	return b.String()
}

// TestReadersComments checks that on a page that declares a post, the
// readers' comments beside an article are left out though they hold most
// of the page's prose (they were kept as a mis-named wrapper of the
// content, and the root went to them), and that a thread keeps its
// replies: a page that declares a discussion, or one whose first post is
// not in its headline's container with prose of its own.
func TestReadersComments(t *testing.T) {
	article := `<div class="article"><h1>Headline</h1>` + paras("story", 4) + `</div>`
	tests := []struct {
		name, head, article string
		want, notWant       []string
	}{
		{
			name:    "comments beside an article",
			head:    postHead,
			article: article,
			want:    []string{"story0 sentence", "story3 sentence"},
			notWant: []string{"reader0", "reader7"},
		},
		{
			name:    "a thread's replies after a short first post",
			head:    postHead,
			article: `<div class="thread"><header><h1>Headline</h1><span>by Shancock</span></header><div class="first-post"><p>` + prose("question", 1) + `</p></div></div>`,
			want:    []string{"question sentence", "reader0", "reader7"},
		},
		{
			name:    "a page that declares a discussion",
			head:    `<script type="application/ld+json">{"@type":"DiscussionForumPosting","headline":"Headline"}</script>`,
			article: article,
			want:    []string{"story0 sentence", "reader0", "reader7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(commentsPage(tt.head, tt.article)), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}

// TestCommentsNamedArticleWrapper checks that the wrapper of a news
// page's article, named for whether comments are enabled and holding the
// headline, is not taken for the readers' comments (the whole story went),
// and that comments beside such an article still go.
func TestCommentsNamedArticleWrapper(t *testing.T) {
	story := `<div class="article-left"><h1>Headline</h1><p class="date">21 May 2025</p>` + paras("story", 4) + `</div>`
	tests := []struct {
		name, body    string
		want, notWant []string
	}{
		{
			name:    "the article's wrapper",
			body:    `<div id="article" class="None comments-enabled">` + story + `</div>`,
			want:    []string{"story0 sentence", "story3 sentence"},
			notWant: []string{"about0"},
		},
		{
			name:    "comments beside the article",
			body:    story + `<div class="comments">` + paras("reader", 8) + `</div>`,
			want:    []string{"story0 sentence", "story3 sentence"},
			notWant: []string{"reader0", "reader7", "about0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<!doctype html><html><head><title>Headline</title>` + postHead + `</head><body>` +
				`<nav><a href="/">Home</a> <a href="/news">News</a></nav>` + tt.body +
				`<div class="about"><p>` + prose("about", 3) + `</p></div><footer><a href="/privacy">Privacy</a></footer></body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/2025/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}

// TestStemFalseFriends checks that words holding a furniture stem and
// naming no furniture ("commentary", Drupal's "node--promoted") do not
// make their element furniture, and that the stems still do elsewhere.
func TestStemFalseFriends(t *testing.T) {
	tests := []struct {
		name string
		want int
	}{
		{"full news subjective commentary article", 1},
		{"node node--type-article node--promoted", 1},
		{"comment-list", -1},
		{"promo-box", -1},
		{"commentary-comments", -1},
	}
	for _, tt := range tests {
		n := firstElementOf(t, `<div class="`+tt.name+`">x</div>`)
		if got, _ := classVerdict(n, false); got != tt.want {
			t.Errorf("classVerdict(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestDateWrapper checks that an element named only as a date that holds
// most of the page's prose is read as the wrapper of what is dated (a
// blog's day of posts, "date-outer", whose post is one run of lines
// broken by <br>), while a date stamp stays out.
func TestDateWrapper(t *testing.T) {
	var lines []string
	for i := range 8 {
		lines = append(lines, prose(fmt.Sprintf("line%d", i), 1))
	}
	page := `<html><head><title>Tach auch</title></head><body><div id="header"><p class="description">A blog about the old town and its bakers.</p></div>` +
		`<div class="blog-posts"><div class="date-outer"><h2 class="date-header">Tuesday, 28 April 2020</h2><div class="post"><h3>Tach auch</h3>` +
		`<div class="post-body">` + strings.Join(lines, "<br>") + `</div><div class="post-footer"><span class="timestamp">posted at 10:12</span></div></div></div></div>` +
		`<div class="sidebar"><p>` + prose("archive", 3) + `</p></div></body></html>`
	a, err := ExtractBytes([]byte(page), "https://blog.example/2020/04/tach.html", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"line0 sentence", "line7 sentence"}, []string{"posted at 10:12", "archive0"})
}

// TestConsentPanelBesideArticle checks that a consent manager's panel
// holding more prose than a short news story beside it is left out, though
// it holds most of the page's prose (it was kept as a mis-named wrapper,
// the page's header holding the headline having been pruned before it),
// and that an element so named that wraps the article is kept.
func TestConsentPanelBesideArticle(t *testing.T) {
	app := `<div id="app"><header class="article-header"><h1>Headline</h1><p>By A. Writer</p></header>` +
		`<main id="main-content">` + paras("story", 4) + `</main><footer><a href="/privacy">Privacy</a></footer></div>`
	panel := `<div id="onetrust-consent-sdk"><div id="onetrust-pc-sdk"><h2>Your Privacy</h2><div id="pc-policy-text">` +
		paras("policy", 6) + `</div></div></div>`
	tests := []struct {
		name, body    string
		want, notWant []string
	}{
		{
			name:    "a consent panel beside the story",
			body:    app + panel,
			want:    []string{"story0 sentence", "story3 sentence"},
			notWant: []string{"policy0", "policy5"},
		},
		{
			name: "a wrapper of the story named for consent",
			body: `<div class="cookie-consent-given">` + app + `</div>`,
			want: []string{"story0 sentence", "story3 sentence"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<!doctype html><html><head><title>Headline</title>` + postHead + `</head><body>` + tt.body + `</body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/2025/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}
