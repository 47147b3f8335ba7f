package extract

import "testing"

// TestStoryBesideProseBox checks a story whose container holds the page's
// headline beside a box of prose that is not part of it (a cookie notice,
// an "about us" blurb): before, the box held too much for the story to
// hold 95 % of the page's value, the root stayed at the page's wrapper
// and the box was extracted with the story.
func TestStoryBesideProseBox(t *testing.T) {
	notice := `<div id="ca_info"><p>What is stored on your computer?</p><p>` + prose("box", 2) + `</p></div>`
	tests := []struct {
		name, head, body string
		want, notWant    []string
	}{
		{
			name:    "a post whose story holds the headline, a notice box beside it",
			head:    postHead,
			body:    `<div class="wrap"><h1>Headline</h1>` + paras("story", 6) + `</div>` + notice,
			want:    []string{"story0 sentence", "story5 sentence number 1"},
			notWant: []string{"box sentence", "What is stored"},
		},
		{
			name: "a larger box: the story holds two thirds of the page",
			head: postHead,
			body: `<div class="wrap"><h1>Headline</h1>` + paras("story", 5) + `</div>` +
				`<div class="note"><p>About this site</p><p>` + prose("box", 2) + `</p><p>` + prose("cbox", 2) + `</p></div>`,
			want:    []string{"story0 sentence", "story4 sentence number 1"},
			notWant: []string{"box sentence", "About this site"},
		},
		{
			name: "a story holding the headline but too little of the page keeps the box",
			head: postHead,
			body: `<div class="wrap"><h1>Headline</h1>` + paras("story", 2) + `</div>` +
				`<div class="side"><p>` + prose("box", 4) + `</p><p>` + prose("cbox", 3) + `</p></div>`,
			want: []string{"story0 sentence", "box sentence", "cbox sentence"},
		},
		{
			name: "two headlines: no child is the story",
			head: postHead,
			body: `<div class="wrap"><h1>Headline</h1>` + paras("story", 5) + `</div>` +
				`<div class="other"><h1>Another part</h1><p>` + prose("box", 2) + `</p><p>` + prose("cbox", 1) + `</p></div>`,
			want: []string{"story0 sentence", "box sentence"},
		},
		{
			name: "a page that does not declare a post keeps its boxes",
			body: `<div class="wrap"><h1>Headline</h1>` + paras("story", 5) + `</div>` + notice,
			want: []string{"story0 sentence", "box sentence"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<!doctype html><html><head><title>Headline</title>` + tt.head + `</head><body>` +
				tt.body + `</body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/2024/story.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}
