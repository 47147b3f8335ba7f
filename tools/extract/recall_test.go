package extract

import (
	"fmt"
	"strings"
	"testing"
)

// TestListPost checks a post written as a list: its title in one item, its
// summary in the next. The root went down into the long item and the
// title was lost; a long item among links (a list of stories) is still
// read alone.
func TestListPost(t *testing.T) {
	tests := []struct {
		name, article string
		want, notWant []string
	}{
		{
			name: "the post's items are read together",
			article: `<article><h1>Headline</h1><div class="entry-content"><p>&nbsp;</p><ul>` +
				`<li>The Garden by a film maker (1990)</li><li>` + prose("summary", 14) + `</li></ul><p>&nbsp;</p></div></article>`,
			want: []string{"The Garden by a film maker (1990)", "summary sentence number 13"},
		},
		{
			name: "a long item among links is read alone",
			article: `<article><h1>Headline</h1><div class="entry-content"><ul>` +
				`<li><a href="/a">Another story</a></li><li><a href="/b">A second story</a></li><li><a href="/c">A third story</a></li>` +
				`<li>` + prose("summary", 14) + `</li></ul></div></article>`,
			want:    []string{"summary sentence number 13"},
			notWant: []string{"Another story", "third story"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkNewsPost(t, tt.article, tt.want, tt.notWant) })
	}
}

// TestOneParagraphStory checks a story of one long paragraph under its own
// heading: the root went down into the paragraph, which holds nearly all
// the value, and the heading was lost. The container is the root.
func TestOneParagraphStory(t *testing.T) {
	article := `<article><h1>Headline</h1><div class="story"><h3>First trial of the harbour ferry robot</h3><p>` +
		prose("story", 14) + `</p></div></article>`
	checkNewsPost(t, article, []string{"First trial of the harbour ferry robot", "story sentence number 13"}, []string{"reader0", "Rail story"})
}

// TestDatelineOpensParagraph checks a news story's dateline written as a
// span named "dateline" at the start of its first paragraph: it was
// dropped as a date stamp and the sentence lost its first words. A date
// stamp alone in its paragraph, or in a box of its own, stays out.
func TestDatelineOpensParagraph(t *testing.T) {
	article := `<article><h1>Headline</h1><div class="dateline">Updated March 3, 2024</div>` +
		`<p><span class="dateline">Last week stamp</span></p><div class="story">` +
		`<p><span class="dateline">KOBE – </span>` + prose("lead", 2) + `</p>` + paras("body", 6) + `</div></article>`
	checkNewsPost(t, article, []string{"KOBE – The lead sentence number 0", "body5 sentence"}, []string{"Updated March", "Last week stamp", "reader0"})
}

// TestShortPostUnderItsTitle checks a post of two short paragraphs under
// its title, which links to the page itself, beside a sidebar holding far
// more prose: the page was read again without trusting class names, and
// the sidebar taken for the content. A page whose class names hide its
// story is still read again (see TestHeuristics, "every section named like
// furniture").
func TestShortPostUnderItsTitle(t *testing.T) {
	page := `<html><head><title>seelen &raquo; Number two</title></head><body><div id="header"><h1><a href="https://example.com/">seelen</a></h1></div>` +
		`<div id="content"><div class="post" id="post-613"><h2 class="posttitle"><a href="https://example.com/number-two/" rel="bookmark">Number two</a></h2>` +
		`<div class="postentry"><p>It was some time ago that the first one arrived, and now the second one has made it too.</p>` +
		`<p>This is how it looked when the first one met the newcomer, sniffing with closed eyes.</p></div></div>` +
		strings.Repeat(`<p class="small"><a href="/feed/">Comment feed of this post</a> · <a href="/trackback/">TrackBack address</a></p>`, 5) +
		`</div><div id="sidebar"><ul><li><h2>Latest warnings</h2>` + paras("warning", 6) + `</li></ul></div><footer>` + paras("legal", 8) + `</footer></body></html>`
	a, err := ExtractBytes([]byte(page), "https://example.com/number-two/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"some time ago", "sniffing with closed eyes"}, []string{"warning0"})
}

// TestClassNamesRemoveAShortPost checks a short post whose containers are
// all named like furniture ("share-update-card"): nothing was left, and
// the page, holding under four times MinContent of prose, was not read
// again. It is read again when the first reading finds nothing, and that
// reading is taken when it holds MinContent or more; a page whose only
// text is a short notice stays empty.
func TestClassNamesRemoveAShortPost(t *testing.T) {
	post := `<html><head><title>A post</title></head><body><main><section class="share-update-section"><div class="share-update-card">` +
		`<p class="share-update-card__text">` + prose("post", 3) + `</p></div></section></main></body></html>`
	a, err := ExtractBytes([]byte(post), "https://example.com/feed/update/1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"post sentence number 2"}, nil)
	notice := `<html><head><title>Sale</title></head><body><div class="share-modal"><p>You are now leaving our site, for the store of parts.</p></div></body></html>`
	if a, err = ExtractBytes([]byte(notice), "https://example.com/sale/", Options{}); err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, nil, []string{"leaving"})
}

// TestStoryInAnAside checks a news story whose theme wraps it in an aside
// holding an article element, or a story the aside holds nearly all of
// the page's prose and most of its text of (a slideshow in the right
// column): the aside was dropped as furniture with the whole story. An
// aside beside the story (related stories) stays out, and so do one
// holding most of the prose without an article, and one holding nearly
// all the prose beside a table that holds more text.
func TestStoryInAnAside(t *testing.T) {
	page := func(main string) string {
		return `<html><head><title>Headline</title>` + postHead + `</head><body><nav><a href="/">Home</a></nav><main class="nfy-content">` +
			main + `</main><footer><a href="/privacy">Privacy</a></footer></body></html>`
	}
	tests := []struct {
		name, html    string
		want, notWant []string
	}{
		{
			name: "the story in an aside",
			html: page(`<aside class="nfy-pa nfy-pa-direct-content"><section class="nfy-ar-detail"><article><h1>Headline</h1>` +
				paras("story", 6) + `</article></section></aside>`),
			want: []string{"story0 sentence", "story5 sentence"},
		},
		{
			name: "an aside of related stories beside the story",
			html: page(`<article><h1>Headline</h1>` + paras("story", 6) + `</article><aside><article><h2>Related</h2>` +
				paras("related", 2) + `</article></aside>`),
			want:    []string{"story5 sentence"},
			notWant: []string{"related0"},
		},
		{
			name:    "an aside holding most of the prose without an article",
			html:    page(`<div class="story">` + paras("story", 3) + `</div><aside class="rail">` + paras("rail", 6) + `</aside>`),
			want:    []string{"story2 sentence"},
			notWant: []string{"rail0"},
		},
		{
			name: "a slideshow that is the whole story in the right column's aside",
			html: page(`<div class="columns" id="mainCol"><div class="crumbs"><a href="/home">Home</a> <a href="/fall">Fall</a></div><h1>Headline</h1>` +
				`<p>By A. Writer</p></div><div class="columns" id="rightCol"><aside id="rightColumn"><nav><a href="#">Prev</a> <a href="#">Next</a></nav><ul>` +
				slides(8) + `</ul></aside></div>`),
			want: []string{"slide0 sentence", "slide7 sentence", "Slide title 7"},
		},
		{
			name: "an aside holding most of the prose beside a table holding more text",
			html: page(`<div class="story"><h1>Headline</h1>` + paras("story", 1) + `<table>` + tableRows(40) + `</table></div>` +
				`<aside class="rail">` + paras("rail", 6) + `</aside>`),
			want:    []string{"story0 sentence", "Harbour 39"},
			notWant: []string{"rail0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(tt.html), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}

// slides returns n slides of a slideshow: a title and a paragraph each.
func slides(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `<li class="slide" id="slide%d"><h2>Slide title %d</h2><p>%s</p></li>`, i, i, prose(fmt.Sprintf("slide%d", i), 2))
	}
	return b.String()
}

// tableRows returns n rows of a timetable: short cells, none of them
// prose.
func tableRows(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `<tr><td>Harbour %d</td><td>Ferry line %d</td><td>departs 10:%02d</td><td>arrives 11:%02d</td></tr>`, i, i, i, i)
	}
	return b.String()
}

// storyBoxes returns n boxes of other sections' stories as a news theme
// writes them below its story: a section's name, a tile whose title and
// summary are not links (the tile's link is an empty overlay) and links
// to other stories. heading wraps each tile's title in an h3 when set.
func storyBoxes(n int, heading bool) string {
	var b strings.Builder
	b.WriteString(`<div class="story-boxes">`)
	for i := range n {
		title := fmt.Sprintf(`<span class="hed">Tile story title number %d</span>`, i)
		if heading {
			title = fmt.Sprintf(`<h3 class="hed">Tile story title number %d</h3>`, i)
		}
		fmt.Fprintf(&b, `<div class="story-box"><div class="box-name">Section %d</div><div class="tile"><a href="/t%d" class="primary"></a>`+
			`<span class="rubrik">Politics</span>%s<span class="dek">%s</span></div>`, i, i, title, prose(fmt.Sprintf("tile%d", i), 2))
		for j := range 4 {
			fmt.Fprintf(&b, `<div class="section-list"><a href="/o%d-%d">Another story of section %d, number %d</a></div>`, i, j, i, j)
		}
		b.WriteString(`</div>`)
	}
	b.WriteString(`</div>`)
	return b.String()
}

// TestStoryUnderAPrunedHeadline checks a short story whose article holds
// its headline in a header pruned as furniture, followed in the article by
// boxes of other stories holding four times its prose: the article no
// longer held an h1 when the root was judged, the page was read as a page
// of items and the boxes flooded the story (slate.com, F1 0.25). An
// article whose headline was pruned and whose root holds links only (a
// post that is a list of links) is still read whole, and one whose boxes
// have headings is still a page of items.
func TestStoryUnderAPrunedHeadline(t *testing.T) {
	header := `<header class="article-header"><h1>Headline</h1><div class="byline">By A. Writer</div></header>`
	tests := []struct {
		name, article string
		want, notWant []string
	}{
		{
			name:    "a short story above boxes of other stories",
			article: `<article class="main">` + header + `<section class="content"><div class="body">` + paras("story", 2) + `</div></section>` + storyBoxes(8, false) + `</article>`,
			want:    []string{"story0 sentence number 1", "story1 sentence number 1"},
			notWant: []string{"tile0 sentence", "tile7 sentence", "Another story of section"},
		},
		{
			name:    "boxes with headings are a page of items",
			article: `<article class="main">` + header + `<section class="content"><div class="body">` + paras("story", 2) + `</div></section>` + storyBoxes(8, true) + `</article>`,
			want:    []string{"story0 sentence number 1", "tile7 sentence"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkNewsPost(t, tt.article, tt.want, tt.notWant) })
	}
	// A post that is a list of links, with a line after it that is not
	// prose: the root is that line, and the post is read whole.
	page := `<!doctype html><html><head><title>Headline</title>` + postHead + `</head><body><div class="page">` +
		`<article class="post">` + header + `<div class="entry-content"><ul>` +
		`<li><a href="/a">Study doubts state support for the press</a> via Horizont</li>` +
		`<li><a href="/b">Blame instead of protection for victims online</a> via Netzpolitik</li>` +
		`<li><a href="/c">EU weighs a ban on face recognition</a> via Netzpolitik</li></ul>` +
		`<p class="note">Posted from <a href="https://bookmarks.example">Marks</a>. The rest of my links are <a href="https://bookmarks.example/me">here</a>.</p></div></article>` +
		`</div><footer><a href="/privacy">Privacy</a></footer></body></html>`
	a, err := ExtractBytes([]byte(page), "https://example.com/2024/links.html", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "links post", a.Text, []string{"Study doubts state support", "EU weighs a ban", "Posted from"}, nil)
}

// TestStoryBesideARailOfTeasers checks a story in the left column of a
// page that does not declare a post, beside a rail of teasers: a linked
// title and a summary ending in a "Full Article" link each. The summaries
// are worth a little each, and the root stayed the two columns, for the
// story held under descendPosPercent of their positive value: the rail
// doubled the text (reuters.com, precision 0.50). Runs with links that
// are not prose no longer count in the positive value; a fact box of
// short lines without links beside the story still keeps the root above
// both.
func TestStoryBesideARailOfTeasers(t *testing.T) {
	page := func(rail string) string {
		return `<html><head><title>Headline</title></head><body><nav><a href="/">Home</a> <a href="/markets">Markets</a></nav>` +
			`<div class="content"><div class="columns"><div class="column1"><h1>Headline</h1><span id="articleText">` +
			paras("story", 6) + `</span></div><div class="column2">` + rail + `</div></div></div>` +
			`<footer><a href="/privacy">Privacy</a></footer></body></html>`
	}
	var teasers, facts strings.Builder
	teasers.WriteString(`<div class="module"><h3>Showcase</h3>`)
	facts.WriteString(`<div class="facts"><h3>Key facts</h3>`)
	for i := range 12 {
		fmt.Fprintf(&teasers, `<div class="feature"><h2><a href="/s%d">Teaser title %d</a></h2>`+
			`<p>Search teams battle rough weather in a hunt for wreck %d <a href="/s%d">Full Article</a></p></div>`, i, i, i, i)
	}
	for i := range 21 {
		fmt.Fprintf(&facts, `<div class="fact">Ferry line %d opened in 19%02d</div>`, i, i+10)
	}
	facts.WriteString(`<ul class="sources">`)
	for i := range 10 {
		fmt.Fprintf(&facts, `<li><a href="/src%d">Source number %d</a></li>`, i, i)
	}
	teasers.WriteString(`</div>`)
	facts.WriteString(`</ul></div>`)
	tests := []struct {
		name, html    string
		want, notWant []string
	}{
		{
			name:    "a rail of teasers",
			html:    page(teasers.String()),
			want:    []string{"story0 sentence", "story5 sentence"},
			notWant: []string{"Search teams", "Teaser title"},
		},
		{
			name: "a fact box without links",
			html: page(facts.String()),
			want: []string{"story5 sentence", "Ferry line 20 opened"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(tt.html), "https://example.com/markets/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}
