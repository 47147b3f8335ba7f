package extract

import (
	"fmt"
	"strings"
	"testing"
)

// prose returns n distinct sentences of ordinary prose, tagged with tag so
// that tests can look for them.
func prose(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "The %s sentence number %d explains, at some length, what happened in the town hall yesterday evening. ", tag, i)
	}
	return strings.TrimSpace(b.String())
}

// listing returns n teaser items: a linked title, a date and a one-line
// summary each.
func listing(n int) string {
	var b strings.Builder
	b.WriteString(`<div class="river"><ul>`)
	for i := range n {
		fmt.Fprintf(&b, `<li class="card"><h3><a href="/story-%d">Title of science story number %d</a></h3><time>May 2</time>`+
			`<p>The pi sentence number %d says what the story is about.</p></li>`, i, i, i)
	}
	b.WriteString(`</ul></div>`)
	return b.String()
}

// cards returns n clickable story cards, each a linked title and its own
// summary.
func cards(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `<div role="button" tabindex="0"><h3><a href="/s%d">A long title of a story about the stars and the sea</a></h3><p>%s</p></div>`,
			i, prose(fmt.Sprintf("psi%d", i), 1))
	}
	return b.String()
}

// TestHeuristics checks the generic signals one synthetic page at a time:
// each page holds an article and one kind of furniture (or of content that
// looks like furniture).
func TestHeuristics(t *testing.T) {
	article := "<article><h1>Headline</h1><p>" + prose("alpha", 3) + "</p><p>" + prose("beta", 3) +
		"</p><p>" + prose("gamma", 2) + "</p></article>"
	var teasers strings.Builder
	teasers.WriteString(`<div class="below"><h5>More from us</h5><ul class="items">`)
	for i := range 8 {
		fmt.Fprintf(&teasers, `<li class="item"><a href="/story-%d"><img src="/i.jpg"></a><h5><a href="/story-%d">Another story title number %d</a></h5>`+
			`<div class="when">Nov 20, 2019</div><div class="summary">%s</div></li>`, i, i, i, prose(fmt.Sprintf("teaser%d", i), 2))
	}
	teasers.WriteString(`</ul></div>`)

	tests := []struct {
		name          string
		body          string
		want, notWant []string
		// count is how many times a phrase must be in the text.
		count map[string]int
	}{
		{
			name:    "teaser list outweighing the article",
			body:    `<main>` + article + `</main>` + teasers.String(),
			want:    []string{"alpha sentence number 0", "gamma sentence number 1"},
			notWant: []string{"teaser0", "teaser7", "Another story title"},
		},
		{
			name: "related links closing the article's container are dropped",
			body: `<article><div class="entry"><p>` + prose("alpha", 3) + `</p><p>` + prose("beta", 3) + `</p>` +
				`<p><a href="/r1">Who will make the town hall list in 2020?</a></p>` +
				`<p><a href="/r2">The band takes over the fan vote this week</a></p>` +
				`<h4>Most read</h4>` +
				`<p><a href="/r3">Fans really want the band in the hall of fame</a></p></div></article>`,
			want:    []string{"alpha sentence number 0", "beta sentence number 2"},
			notWant: []string{"town hall list", "fan vote", "hall of fame"},
		},
		{
			name: "named links inside the article, followed by its prose, stay",
			body: `<article><div class="entry"><p>` + prose("alpha", 3) + `</p>` +
				`<p><a href="/r1">Who will make the town hall list in 2020?</a></p>` +
				`<p><a href="/r2">The band takes over the fan vote this week</a></p>` +
				`<p><a href="/r3">Fans really want the band in the hall of fame</a></p>` +
				`<p>` + prose("beta", 3) + `</p></div></article>`,
			want: []string{"alpha sentence number 0", "town hall list", "fan vote", "hall of fame", "beta sentence number 2"},
		},
		{
			name: "the caption of an embedded image is furniture, an embedded post is not",
			body: `<article><p>` + prose("alpha", 3) + `</p><div class="InlineImage-imageEmbed">` +
				`<div class="InlineImage-imageEmbedCaption">The minister, center, passes an aircraft at the air show in Dubai.</div></div>` +
				`<blockquote class="twitter-tweet-embed-social"><p>` + prose("tweet", 1) + `</p></blockquote>` +
				`<p>` + prose("beta", 3) + `</p></article>`,
			want:    []string{"alpha sentence number 0", "tweet sentence number 0", "beta sentence number 2"},
			notWant: []string{"passes an aircraft"},
		},
		{
			// The consent gate of an embed stands in for it until the
			// reader agrees: its notice is not the embedded post.
			name: "the consent gate of an embed is furniture, an embedded post is not",
			body: `<article><p>` + prose("alpha", 3) + `</p><div class="embed-wrapper embed-wrapper--blocked js-embed-consent" data-vendors="twitter">` +
				`<div class="embed-wrapper__inner"><div class="embed-wrapper__text"><h3>Recommended editorial content</h3>` +
				`<p>At this point you will find external content that complements the article. You can show all external content with one click or hide it again.</p></div></div></div>` +
				`<div class="embed embed--twitter"><blockquote><p>` + prose("tweet", 1) + `</p></blockquote></div>` +
				`<p>` + prose("beta", 3) + `</p></article>`,
			want:    []string{"alpha sentence number 0", "tweet sentence number 0", "beta sentence number 2"},
			notWant: []string{"external content", "Recommended editorial"},
		},
		{
			name: "a list of stories holding the page itself is the site's box, not the article's",
			body: `<article><p>` + prose("alpha", 3) + `</p><ul>` +
				`<li><a href="https://example.com/news/page.html?src=box">Video shows the dramatic rescue of the girl</a></li>` +
				`<li><a href="https://example.com/news/other.html">Man arrested after a traffic stop downtown</a></li>` +
				`<li><a href="https://example.com/news/third.html">Jail guards charged with falsifying records</a></li>` +
				`</ul><p>` + prose("beta", 3) + `</p></article>`,
			want:    []string{"alpha sentence number 0", "beta sentence number 2"},
			notWant: []string{"dramatic rescue", "traffic stop", "falsifying records"},
		},
		{
			name: "a list of links the article points to stays",
			body: `<article><p>` + prose("alpha", 3) + `</p><ul>` +
				`<li><a href="https://example.com/news/first.html">Video shows the dramatic rescue of the girl</a></li>` +
				`<li><a href="https://example.com/news/other.html">Man arrested after a traffic stop downtown</a></li>` +
				`<li><a href="https://example.com/news/third.html">Jail guards charged with falsifying records</a></li>` +
				`</ul><p>` + prose("beta", 3) + `</p></article>`,
			want: []string{"alpha sentence number 0", "dramatic rescue", "traffic stop", "falsifying records", "beta sentence number 2"},
		},
		{
			name: "a short post under the headline, followed by other posts, is the page",
			body: func() string {
				bar := `<div class="bar">Whatsapp <a href="/fb">Facebook</a> Pint <a href="/dl">Download</a></div>`
				var b strings.Builder
				b.WriteString(`<div id="primary"><article class="post"><h1>Headline</h1>` + bar + `<p>` + prose("alpha", 2) + `</p></article><section>`)
				for i := range 8 {
					fmt.Fprintf(&b, `<article class="post">%s<p>%s</p></article>`, bar, prose(fmt.Sprintf("other%d", i), 2))
				}
				b.WriteString(`</section></div>`)
				return b.String()
			}(),
			want:    []string{"alpha sentence number 1"},
			notWant: []string{"other0", "other7"},
		},
		{
			name: "paragraphs with links each in a wrapper are not teasers",
			body: `<div class="post">` + strings.Repeat(`<div class="para"><p>`+prose("delta", 2)+
				` See <a href="/x">the report</a> for details.</p></div>`, 5) + `</div>`,
			want: []string{"delta sentence number 1", "the report"},
		},
		{
			name: "hover card inside a paragraph",
			body: `<article><p>` + prose("epsilon", 2) + ` A statement by Rep. <span class="person"><a href="/people/jane">Jane Doe</a>` +
				`<span class="card"><img src="/jane.jpg"><a href="/people/jane">Jane Doe</a><a href="/a1">First unrelated headline about budgets</a> ` +
				`<a href="/a2">Second unrelated headline about transport</a> <a href="/a3">Third unrelated headline about schools</a>` +
				`<a href="/people/jane">MORE</a></span></span> (D-Ohio) followed on Monday.</p><p>` + prose("zeta", 3) + `</p></article>`,
			want:    []string{"A statement by Rep. Jane Doe (D-Ohio) followed on Monday.", "zeta sentence number 2"},
			notWant: []string{"unrelated headline", "MORE"},
		},
		{
			name: "site notice in the footer of a short page",
			body: `<div class="story"><h1>Headline</h1><p>` + prose("eta", 1) + `</p><p>` + prose("theta", 1) + `</p></div>` +
				`<div class="site-footer-wrap"><p>The customer service center can be contacted with any questions or requests by telephone, ` +
				`by fax or by e-mail. The center is staffed and provides answers on Sundays through Thursdays between seven and two, ` +
				`and on Fridays it only handles distribution requests between seven and one. International customers may call the ` +
				`toll free number, which is open from seven in the morning until six in the evening on weekdays.</p></div>`,
			want:    []string{"eta sentence number 0", "theta sentence number 0"},
			notWant: []string{"customer service"},
		},
		{
			name: "list items that are a linked headline and a summary",
			body: `<article><p>` + prose("iota", 3) + `</p><ol>` + strings.Repeat(`<li><strong><a href="/s">A rather long linked headline `+
				`that tells the whole story of the item in one line</a>.</strong> The company said so in a blog post on Monday morning, adding that the plan would take years./li>`, 4) +
				`</ol><p>` + prose("kappa", 2) + `</p></article>`,
			want: []string{"iota sentence number 2", "in a blog post on Monday morning", "kappa sentence number 1"},
		},
		{
			name: "embedded tweet in a media wrapper",
			body: `<article><p>` + prose("lambda", 3) + `</p><div class="video-container"><blockquote class="twitter-tweet">` +
				`<p>Interesting to see this capture running at an unstable rate tonight.</p><p>— Someone (@someone) ` +
				`<a href="https://twitter.com/x/status/1">November 18, 2019</a></p></blockquote></div><p>` + prose("mu", 3) + `</p></article>`,
			want: []string{"lambda sentence number 2", "unstable rate tonight", "mu sentence number 0"},
		},
		{
			name: "thread for crawlers in noscript of a scripted page",
			body: `<div id="app">Loading…</div><noscript><header><a href="/">Forum home</a></header><div id="main-outlet">` +
				`<h1>Question title</h1><div class="topic-body crawler-post"><span class="creator">someone</span>` +
				`<div class="post"><p>` + prose("nu", 3) + `</p></div></div><div class="topic-body crawler-post">` +
				`<span class="creator">another</span><div class="post"><p>` + prose("xi", 3) + `</p></div></div></div></noscript>`,
			want: []string{"nu sentence number 2", "xi sentence number 0"},
		},
		{
			name: "noscript copy of content the page already shows",
			body: `<article><p>` + prose("omicron", 4) + `</p></article><noscript><p>` + prose("omicron", 1) +
				`</p><p>Please enable JavaScript to view the comments powered by a service.</p></noscript>`,
			want:    []string{"omicron sentence number 3"},
			notWant: []string{"enable JavaScript"},
		},
		{
			name: "listing page: the items are the content",
			body: `<nav><a href="/">Home</a> <a href="/news">News</a></nav><h1>Science</h1><p>The latest from our science desk.</p>` +
				listing(6) + `<footer><a href="/about">About us</a></footer>`,
			want:    []string{"Title of science story number 0", "pi sentence number 0", "Title of science story number 5"},
			notWant: []string{"About us"},
		},
		{
			name: "classes that hide only in some state or on small screens",
			body: `<div class="product"><h1>Mug</h1><span class="visually-hidden">Regular price</span>` +
				`<div class="product__description rte quick-add-hidden"><p>` + prose("rho", 2) + `</p></div>` +
				`<div class="hidden md:block"><p>` + prose("sigma", 2) + `</p></div><div class="hidden"><p>` + prose("tau", 1) + `</p></div></div>`,
			want:    []string{"rho sentence number 1", "sigma sentence number 1"},
			notWant: []string{"tau sentence", "Regular price"},
		},
		{
			name: "forum thread: replies are the content",
			body: `<div class="thread"><div class="post first"><p>` + prose("upsilon", 3) + `</p></div>` +
				`<div class="replies"><div class="reply"><p>` + prose("phi", 3) + `</p></div><div class="reply"><p>` + prose("chi", 3) + `</p></div></div></div>`,
			want: []string{"upsilon sentence number 2", "phi sentence number 1", "chi sentence number 2"},
		},
		{
			name: "clickable cards and a class that hides a button of the list",
			body: `<h1>Science</h1><div class="grid-items hide-read-more-button">` + cards(5) +
				`</div><div role="button">Load more</div>`,
			want:    []string{"A long title of a story about the stars", "psi0 sentence number 0", "psi4 sentence number 0"},
			notWant: []string{"Load more"},
		},
		{
			name: "collapsed sections and tabs hold content; a hidden menu does not",
			body: `<article><h1>Widget</h1><p>` + prose("omega", 2) + `</p><div role="tablist"><div role="tabpanel"><p>` + prose("alef", 2) +
				`</p></div></div><div class="accordion"><button>Details</button><div hidden><p>` + prose("bet", 2) + `</p></div></div>` +
				`<ul hidden><li><a href="/a">Account settings</a></li><li><a href="/b">Sign out of this site</a></li></ul></article>`,
			want:    []string{"omega sentence number 1", "alef sentence number 1", "bet sentence number 1"},
			notWant: []string{"Account settings", "Sign out"},
		},
		{
			name: "page builder wraps each section in a widget",
			body: `<div class="page">` + strings.Repeat(`<div class="elementor-widget-wrap"><div class="elementor-widget-container"><h2>Section</h2><p>`+
				prose("gimel", 2)+`</p></div></div>`, 4) + `</div>`,
			want: []string{"gimel sentence number 1"},
		},
		{
			name: "every section named like furniture",
			body: `<nav><a href="/">Home</a></nav><div class="page">` + strings.Repeat(`<section class="promo-para"><h2>Part</h2><p>`+
				prose("dalet", 7)+`</p></section>`, 4) + `</div><footer>Contact us</footer>`,
			want:    []string{"dalet sentence number 2"},
			notWant: []string{"Contact us"},
		},
		{
			name: "section ids made from their headings",
			body: `<div class="body" role="main"><section id="data-structures"><h1>5. Data Structures</h1><p>` + prose("he", 2) + `</p>` +
				`<section id="more-on-lists"><h2>5.1. More on Lists</h2><p>` + prose("vav", 3) + `</p></section>` +
				`<section id="comments-and-tags"><header><h2>5.2. Comments and tags</h2></header><p>` + prose("zayin", 3) + `</p></section>` +
				`<h2 id="related-work">6. Related work</h2><p>` + prose("het", 2) + `</p></section></div>` +
				`<div id="more-stories"><h2>Elsewhere</h2><p>Other stories, picked for you today.</p></div>`,
			want:    []string{"vav sentence number 2", "zayin sentence number 2", "6. Related work"},
			notWant: []string{"picked for you"},
		},
		{
			name: "whole page hidden until its scripts run",
			body: `<div style="visibility: hidden"><nav><a href="/">Home</a></nav><article><h1>Headline</h1><p>` + prose("tet", 3) +
				`</p><p>` + prose("yod", 2) + `</p><div style="display:none"><p>Choose your region and language.</p></div></article></div>`,
			want:    []string{"tet sentence number 2", "yod sentence number 1"},
			notWant: []string{"Choose your region"},
		},
		{
			name:    "hidden prose that is not most of the page",
			body:    `<article><h1>Headline</h1><p>` + prose("kaf", 3) + `</p><div aria-hidden="true"><p>` + prose("lamed", 2) + `</p></div></article>`,
			want:    []string{"kaf sentence number 2"},
			notWant: []string{"lamed"},
		},
		{
			name: "names that say more content than furniture across the corpus",
			body: `<div id="skip-target" class="page"><article><h1>Headline</h1><p>` + prose("mem", 3) + `</p>` +
				`<section class="community-stories"><h2>From members</h2><p>` + prose("nun", 2) + `</p></section>` +
				`<div class="supplemental-info"><p>` + prose("samekh", 2) + `</p></div>` +
				`<div class="social-follow"><a href="/x">Follow us on X</a> <a href="/f">and elsewhere</a></div></article></div>`,
			want:    []string{"mem sentence number 2", "nun sentence number 1", "samekh sentence number 1"},
			notWant: []string{"Follow us on X"},
		},
		{
			name: "the same section written twice (for small and large screens) is read once",
			body: `<article><h1>Headline</h1><p>` + prose("ayin", 2) + `</p><div class="mobile-only"><p>` + prose("pe", 2) + `</p></div>` +
				`<div class="desktop-only"><p>` + prose("pe", 2) + `</p></div></article>`,
			want:  []string{"ayin sentence number 1"},
			count: map[string]int{"pe sentence number 1": 1},
		},
		{
			name: "a paragraph quoted again among new ones in the next section is kept",
			body: `<article><h1>Headline</h1><div><p>` + prose("resh", 2) + `</p><p>` + prose("shin", 1) + `</p></div>` +
				`<h2>Then</h2><div><p>` + prose("tav", 2) + `</p><p>` + prose("shin", 1) + `</p></div></article>`,
			want:  []string{"resh sentence number 1", "tav sentence number 1"},
			count: map[string]int{"shin sentence number 0": 2},
		},
		{
			name: "a box repeating the article's lead beside new text is read once",
			body: `<article><h1>Headline</h1><div class="lead"><p>` + prose("kaf", 2) + `</p></div><div class="body"><p>` + prose("lamed", 3) + `</p></div>` +
				`<div class="pull"><p>` + prose("kaf", 2) + `</p></div></article>`,
			want:  []string{"lamed sentence number 2"},
			count: map[string]int{"kaf sentence number 1": 1},
		},
		{
			name:  "a refrain in the same container is kept",
			body:  `<article><h1>Headline</h1><p>` + prose("tsadi", 2) + `</p><p>` + prose("qof", 1) + `</p><p>` + prose("tsadi", 2) + `</p></article>`,
			want:  []string{"qof sentence number 0"},
			count: map[string]int{"tsadi sentence number 1": 2},
		},
		{
			name: "carousel slides and tabs hidden until shown (by style, aria-hidden or class) hold prose; a large hidden layer of teasers does not",
			body: `<article><h1>Headline</h1><p>` + prose("tet", 3) + `</p>` +
				`<div class="slides"><div class="slide" aria-hidden="true"><p>` + prose("yod", 1) + `</p><p>` + prose("lamed", 1) + `</p></div>` +
				`<div class="slide" aria-hidden="true"><span>Next</span></div></div>` +
				`<div class="tab" style="display: none"><p>` + prose("mem2", 1) + `</p><p>` + prose("nun2", 1) + `</p></div>` +
				`<div class="panel hidden"><p>` + prose("samekh2", 1) + `</p><p>` + prose("ayin2", 1) + `</p></div></article>` +
				`<div id="layer" aria-hidden="true">` + strings.Repeat(`<p>`+prose("qoph", 3)+`</p>`, 3) + `</div>`,
			want:    []string{"tet sentence number 2", "yod sentence number 0", "lamed sentence number 0", "mem2 sentence number 0", "samekh2 sentence number 0"},
			notWant: []string{"qoph sentence", "Next"},
		},
		{
			name: "a section named header or more that holds prose is content; the site header is not",
			body: `<div class="site-header"><a href="/">Home</a> <a href="/about">About us</a> <a href="/shop">Shop</a></div>` +
				`<article><h1>Headline</h1><p>` + prose("alef3", 4) + `</p><p>` + prose("vav3", 4) + `</p>` +
				`<div class="service-header"><p>` + prose("bet3", 1) + `</p><p>` + prose("gimel3", 1) + `</p></div>` +
				`<div class="read-more"><p>` + prose("dalet3", 1) + `</p><p>` + prose("he3", 1) + `</p></div></article>`,
			want:    []string{"alef3 sentence number 2", "bet3 sentence number 0", "gimel3 sentence number 0", "he3 sentence number 0"},
			notWant: []string{"About us"},
		},
		{
			name: "headings that are links are kept",
			body: `<article><h1>Headline</h1><h2><a href="#installing-the-tool">Installing the tool</a></h2><p>` + prose("zayin3", 3) + `</p>` +
				`<h3><a href="/guide/configuration">Configuration of the service</a></h3><p>` + prose("het3", 3) + `</p></article>`,
			want: []string{"Installing the tool", "Configuration of the service", "het3 sentence number 2"},
		},
		{
			name: "named links in the article are kept; short link entries are not",
			body: `<article><h1>Headline</h1><p>` + prose("tet3", 3) + `</p><p>Sources for this story:</p><ul>` +
				`<li><a href="/r1">Harbour council minutes of the March meeting</a></li>` +
				`<li><a href="/r2">Engineering report on the tide barrier</a></li></ul>` +
				`<p>` + prose("yod3", 3) + `</p><ul><li><a href="/a">Share</a></li><li><a href="/b">Next page</a></li></ul></article>`,
			want:    []string{"Harbour council minutes of the March meeting", "Engineering report on the tide barrier"},
			notWant: []string{"Next page"},
		},
		{
			name: "forum posts whose ids are records named comment",
			body: `<div id="comments"><h1>Headline</h1>` +
				`<article id="elComment_4398546"><div id="comment-4398546_wrap"><p>` + prose("he", 2) + `</p></div></article>` +
				`<article id="elComment_4398547"><div id="comment-4398547_wrap"><p>` + prose("vav", 2) + `</p></div></article>` +
				`<article id="elComment_4398548"><div id="comment-4398548_wrap"><p>` + prose("zayin", 2) + `</p></div></article></div>` +
				`<div id="modal_2110a1e7-afbc-4454-a3d3-b691678ba1b8" class="reveal"><p>You are leaving our website for a site we do not run.</p></div>`,
			want:    []string{"he sentence number 1", "vav sentence number 1", "zayin sentence number 1"},
			notWant: []string{"leaving our website"},
		},
		{
			name: "a page without content in its HTML whose JSON-LD states a body",
			body: `<div id="app"><h1>Headline</h1><span>$25</span><a href="/cart">Add to cart</a></div>` +
				`<script type="application/ld+json">{"@type":"Product","name":"Headline","description":` +
				`"<p>` + prose("resh", 2) + `</p><ul><li>` + prose("shin", 1) + `</li></ul>"}</script>`,
			want:    []string{"resh sentence number 1", "shin sentence number 0"},
			notWant: []string{"Add to cart"},
		},
		{
			name: "a JSON-LD description beside content in the HTML is left alone",
			body: `<article><h1>Headline</h1><p>` + prose("tav", 3) + `</p></article>` +
				`<script type="application/ld+json">{"@type":"Article","description":"` + prose("kaf", 4) + `"}</script>`,
			want:    []string{"tav sentence number 2"},
			notWant: []string{"kaf sentence"},
		},
		{
			name: "a page of sections: the sections beside the longest one are kept",
			body: `<nav><a href="/">Home</a> <a href="/services">Services</a> <a href="/about">About us</a></nav><main>` +
				`<section><h2>Moving across the state</h2><p>` + prose("lamed", 2) + `</p><a href="/book">Book your move</a></section>` +
				`<section><h2>Full service</h2><p>` + prose("mem", 2) + `</p><a href="/book">Book your move</a></section>` +
				`<section><h2>Storage</h2><p>` + prose("nun", 2) + `</p><a href="/book">Book your move</a></section>` +
				`<section><h2>Questions</h2><p>` + prose("samekh", 2) + `</p><p>` + prose("pe", 2) + `</p></section></main>` +
				`<footer><a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer>`,
			want:    []string{"lamed sentence number 1", "nun sentence number 1", "samekh sentence number 1", "pe sentence number 1"},
			notWant: []string{"About us", "Privacy"},
		},
		{
			name: "a thread whose posts are named comment",
			body: `<h1>Headline</h1><div class="notice"><p>` + prose("qof", 1) + `</p></div><div class="thread">` +
				`<article class="threadComment"><b>anna</b><div class="commentBody"><p>` + prose("tsadi", 2) + `</p></div></article>` +
				`<article class="threadComment"><b>ben</b><div class="commentBody"><p>` + prose("sin", 2) + `</p></div></article>` +
				`<article class="threadComment"><b>cleo</b><div class="commentBody"><p>` + prose("thet", 2) + `</p></div></article>` +
				`</div><div class="share-links"><a href="/tw">Share this thread on social media</a></div>`,
			want:    []string{"tsadi sentence number 1", "sin sentence number 1", "thet sentence number 1"},
			notWant: []string{"Share this thread"},
		},
		{
			name: "a blog's comments in a list stay out",
			body: `<article><h1>Headline</h1><div class="entry-content"><p>` + prose("alef", 2) + `</p><p>` + prose("bet", 1) + `</p></div></article>` +
				`<ol class="commentlist">` +
				`<li class="comment"><p>` + prose("gimel", 2) + `</p></li>` +
				`<li class="comment"><p>` + prose("dalet", 2) + `</p></li>` +
				`<li class="comment"><p>` + prose("zayin", 2) + `</p></li></ol>`,
			want:    []string{"alef sentence number 1", "bet sentence number 0"},
			notWant: []string{"gimel", "dalet", "zayin"},
		},
		{
			name: "a class that denies furniture (no-sidebar) does not name it",
			body: `<h1>Headline</h1><div class="layout no-sidebars"><p>` + prose("kuf", 3) + `</p></div>` +
				`<div class="sidebar"><p>Subscribe to our weekly newsletter for more stories like this.</p></div>`,
			want:    []string{"kuf sentence number 2"},
			notWant: []string{"weekly newsletter"},
		},
		{
			name: "the header of an item in a list holds its title",
			body: `<header class="site"><a href="/">Home</a> <a href="/topics">Topics</a></header><h1>Headline</h1>` +
				`<article><header><h2><a href="/a">Harbour council approves the new tide barrier</a></h2></header><p>` + prose("ro", 1) + `</p></article>` +
				`<article><header><h2><a href="/b">Ferry timetable changes for the winter months</a></h2></header><p>` + prose("fi", 1) + `</p></article>` +
				`<article><header><h2><a href="/c">Lighthouse restoration reaches its final stage</a></h2></header><p>` + prose("mu", 1) + `</p></article>`,
			want:    []string{"Harbour council approves", "Ferry timetable changes", "Lighthouse restoration", "mu sentence number 0"},
			notWant: []string{"Topics"},
		},
		{
			name: "accordion answers hidden from screen readers until opened are kept",
			body: `<h1>Headline</h1><p>` + prose("nu", 2) + `</p><h2>Questions</h2>` +
				`<button id="q1" aria-expanded="false">How long does a move take?</button>` +
				`<div role="region" aria-labelledby="q1" aria-hidden="true"><p>` + prose("xi", 1) + `</p></div>` +
				`<button id="q2" aria-expanded="false">Do you pack fragile things?</button>` +
				`<div aria-labelledby="q2" style="display:none"><p>` + prose("omicron", 1) + `</p></div>` +
				`<button aria-controls="a3" aria-expanded="false">Can you store furniture?</button>` +
				`<div id="a3" style="display:none"><p>` + prose("phi", 1) + `</p></div>` +
				`<div aria-hidden="true"><p>` + prose("upsilon", 1) + `</p></div>`,
			want: []string{"xi sentence number 0", "omicron sentence number 0", "phi sentence number 0",
				"How long does a move take?", "Can you store furniture?"},
			notWant: []string{"upsilon"},
		},
		{
			name: "a highlighter's classes inside code are not furniture",
			body: `<article><h1>Headline</h1><p>` + prose("chi", 2) + `</p>` +
				`<pre><code class="hljs"><span class="hljs-comment"># make the repository</span>` + "\n" + `git init` + "\n" +
				`<span class="token comment">// stage every file</span>` + "\n" + `git add -A</code></pre><p>` + prose("psi", 2) + `</p></article>`,
			want: []string{"# make the repository", "// stage every file", "git add -A", "psi sentence number 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := "<!doctype html><html><head><title>Headline</title></head><body>" + tt.body + "</body></html>"
			a, err := ExtractBytes([]byte(page), "https://example.com/news/page.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
			for w, want := range tt.count {
				if n := strings.Count(a.Text, w); n != want {
					t.Errorf("text has %q %d times, want %d:\n%s", w, n, want, a.Text)
				}
			}
		})
	}
}
