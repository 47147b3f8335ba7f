package extract

import (
	"strings"
	"testing"
)

// TestHiddenTextThroughStoryRules attacks the rules that keep text a
// furniture name or a column would have dropped (the lead the description
// repeats, the story in an aside, a comments-named wrapper holding the
// headline): text no reader is shown must not come
// through them, however well it fits the rule. Each hidden case has a
// shown twin whose text is kept, so a hidden case passes because of the
// hiding, not because the layout lost the text anyway. (A block hiding
// three quarters of the page's text or more is read as a page its scripts
// reveal, see TestSheetHiddenShareOfAShortPage; the aside here holds
// less.)
func TestHiddenTextThroughStoryRules(t *testing.T) {
	desc := postHead + `<meta name="description" content="` + prose("lead", 2) + ` The lead…">`
	lead := func(attrs, head string) string {
		if !strings.Contains(attrs, "class=") {
			attrs = ` class="story-teaser"` + attrs
		}
		return newsPage(desc+head, `<article><h1>Headline</h1><div`+attrs+`><p>`+prose("lead", 4)+`</p></div>`+
			`<div class="story-body">`+paras("rest", 48)+`</div></article>`)
	}
	aside := func(attrs, head string) string {
		var links strings.Builder
		for i := range 12 {
			links.WriteString(`<li><a href="/topic/` + strings.Repeat("x", i+1) + `">Topic page number ` + strings.Repeat("x", i+1) + ` about fall decorating</a></li>`)
		}
		return `<html><head><title>Headline</title>` + postHead + head + `</head><body><nav><a href="/">Home</a></nav><main class="nfy-content">` +
			`<div class="columns" id="mainCol"><h1>Headline</h1><p>By A. Writer</p><ul class="topics">` + links.String() + `</ul></div>` +
			`<div class="columns" id="rightCol"><aside id="rightColumn"` + attrs + `><ul>` + slides(8) + `</ul></aside></div>` +
			`</main><footer><a href="/privacy">Privacy</a></footer></body></html>`
	}
	comments := func(attrs string) string {
		return `<!doctype html><html><head><title>Headline</title>` + postHead + `</head><body><nav><a href="/">Home</a></nav>` +
			`<div id="article" class="comments-enabled"` + attrs + `><div class="article-left"><h1>Headline</h1>` + paras("story", 4) + `</div></div>` +
			`<div class="about"><p>` + prose("about", 5) + `</p></div><footer><a href="/privacy">Privacy</a></footer></body></html>`
	}
	tests := []struct {
		name, html string
		shown      bool
		text       []string
	}{
		{"description lead, shown", lead("", ""), true, []string{"lead sentence number 0", "lead sentence number 3"}},
		{"description lead, display none", lead(` style="display:none"`, ""), false, []string{"lead sentence"}},
		{"description lead, hidden attribute", lead(` hidden`, ""), false, []string{"lead sentence"}},
		{"description lead, screen-reader-only", lead(` class="story-teaser sr-only"`, ""), false, []string{"lead sentence"}},
		{"description lead, hidden by the style sheet", lead(` id="dl"`, `<style>#dl{display:none}</style>`), false, []string{"lead sentence"}},
		{"slideshow in an aside, shown", aside("", ""), true, []string{"slide0 sentence", "slide7 sentence"}},
		{"slideshow in an aside, display none", aside(` style="display:none"`, ""), false, []string{"slide0 sentence", "slide7 sentence"}},
		{"slideshow in an aside, visibility hidden", aside(` style="visibility:hidden"`, ""), false, []string{"slide0 sentence"}},
		{"comments-named wrapper of the headline, shown", comments(""), true, []string{"story0 sentence", "story3 sentence"}},
		{"comments-named wrapper of the headline, display none", comments(` style="display:none"`), false, []string{"story0 sentence"}},
		{"comments-named wrapper of the headline, hidden attribute", comments(` hidden`), false, []string{"story0 sentence"}},
		{"slideshow in an aside, hidden by the style sheet", aside(``, `<style>#rightColumn{display:none}</style>`), false, []string{"slide0 sentence"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(tt.html), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.shown {
				checkText(t, "text", a.Text, tt.text, nil)
				return
			}
			checkText(t, "text", a.Text, nil, tt.text)
		})
	}
}
