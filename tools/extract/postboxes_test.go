package extract

import (
	"fmt"
	"strings"
	"testing"
)

// TestPostBoxes checks that the boxes findPostBoxes finds in a post are
// left out (a newsletter's sign-up box whatever its class names, the
// writer's box under the article), that a link to an author inside a
// sentence keeps its paragraph, and that a page not declaring a post
// keeps both boxes.
func TestPostBoxes(t *testing.T) {
	cite := `<p>In her review, <a href="/author/asmith">Ann Smith</a> said the dress was soft and well made, and that she would wear it again to the office, to dinners and to weddings all through the summer.</p>`
	boxes := []struct {
		name, box, mark string
	}{
		{"sign-up box", `<div class="px-5 py-8"><p>Get more travel content. Subscribe to our free daily newsletter that features the best destinations and guides to the cities you love.</p>` +
			`<form><input type="email" placeholder="Your email address"><button>Subscribe</button></form></div>`,
			"Subscribe to our free daily newsletter"},
		{"author box", `<div class="athr-box"><img src="me.jpg"><h4><a href="/author/jroe">Jane Roe</a></h4>` +
			`<p>Jane Roe is a reporter who covers housing and transport, and has written for the paper since 2015. Before that she reported from Lisbon and Porto.</p></div>`,
			"covers housing and transport"},
	}
	pages := []struct {
		name, head string
		kept       bool
	}{
		{"an article", `<meta property="og:type" content="article">`, false},
		{"a site's page", `<meta property="og:type" content="website">`, true},
	}
	for _, b := range boxes {
		for _, pg := range pages {
			t.Run(b.name+" on "+pg.name, func(t *testing.T) {
				page := `<html><head><title>Housing</title>` + pg.head + `</head><body><div class="main"><h1>Housing</h1><p>` + prose("alpha", 4) + `</p>` +
					cite + `<p>` + prose("beta", 4) + `</p>` + b.box + `</div></body></html>`
				a, err := ExtractBytes([]byte(page), "https://paper.example/post", Options{})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(a.Text, "beta sentence number 3") {
					t.Fatalf("the article is missing:\n%s", a.Text)
				}
				if !strings.Contains(a.Text, "said the dress was soft") {
					t.Errorf("the paragraph citing an author is missing:\n%s", a.Text)
				}
				if got := strings.Contains(a.Text, b.mark); got != pg.kept {
					t.Errorf("%s kept = %v, want %v:\n%s", b.name, got, pg.kept, a.Text)
				}
			})
		}
	}
}

// TestShortPostNotABox checks that a short post is not taken for the
// sign-up box or the author's box it holds: its byline links to the
// author's page and its comment form asks for an email address, and the
// post is smaller than a box may be. A box stops before it would hold
// both the post's headline (an h1, or a heading of the page's title) and
// its body (prose in a container named as content). The writer's box
// beside the body of a longer post is still left out.
func TestShortPostNotABox(t *testing.T) {
	sidebar := `<aside class="widgets">`
	for i := range 8 {
		sidebar += `<div class="widget"><p>` + prose(fmt.Sprintf("widget%d", i), 2) + `</p></div>`
	}
	sidebar += `</aside>`
	post := func(headline, body, bio string) string {
		return `<html><head><title>Pumps at the station</title><meta property="og:type" content="article"></head><body>` +
			`<div class="site"><div class="wrap"><article class="entry">` +
			`<header>` + headline + `<div class="meta"><span class="by">by <a href="/author/basman/">Basman</a></span> <time>May 2</time></div></header>` +
			`<div class="entry-body">` + body + `</div>` + bio + `</article>` +
			`<div class="respond"><p>Leave a reply. Your email address will not be published.</p><form><input type="text" name="author"><input type="text" id="email" name="email"><textarea></textarea></form></div>` +
			`</div>` + sidebar + `</div></body></html>`
	}
	short := `<p>I would gladly pay a little more at the pumps if the service around them were friendly, quick and honest, as it used to be.</p>`
	tests := []struct {
		name, page string
		want       []string
	}{
		{"headline in an h1", post(`<h1>Pumps at the station</h1>`, short, ""), []string{"service around them"}},
		{"headline in an h2 of the title", post(`<h2>Pumps at the station</h2>`, short, ""), []string{"service around them"}},
		{"a longer post keeps out its writer's box", post(`<h1>Pumps at the station</h1>`,
			`<p>`+prose("body", 6)+`</p>`, `<div class="about"><a href="/author/basman/">Basman</a><p>Basman writes about cars and roads, and has driven every highway of the north twice, in a small car that he still keeps in his garage by the sea.</p></div>`),
			[]string{"body sentence number 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(tt.page), "https://blog.example/pumps", Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(a.Text, w) {
					t.Errorf("missing %q:\n%s", w, a.Text)
				}
			}
			if strings.Contains(a.Text, "widget3") || strings.Contains(a.Text, "driven every highway") {
				t.Errorf("furniture kept:\n%s", a.Text)
			}
		})
	}
}
