package extract

import (
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
