package extract

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiscussionRepliesNamedComment checks that replies named "comment"
// are kept on a page that declares itself a discussion and dropped from
// one that does not (a blog's comments under its article).
func TestDiscussionRepliesNamedComment(t *testing.T) {
	page := func(ld string) string {
		var b strings.Builder
		b.WriteString(`<html><head>` + ld + `</head><body><nav><a href="/">Home</a></nav><main><h1>Choosing a first telescope</h1>`)
		b.WriteString(`<div class="thread"><div class="post-body"><p>` + prose("opening", 6) + `</p></div>`)
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(&b, `<div class="comment-body"><p>%s</p></div>`, prose(fmt.Sprintf("reply%d", i), 2))
		}
		b.WriteString(`</div></main><footer>© Forum</footer></body></html>`)
		return b.String()
	}
	for _, tc := range []struct {
		name, ld string
		replies  bool
	}{
		{"discussion", `<script type="application/ld+json">{"@context":"https://schema.org","@type":"DiscussionForumPosting","headline":"Choosing a first telescope"}</script>`, true},
		{"blog post", `<script type="application/ld+json">{"@context":"https://schema.org","@type":"BlogPosting","headline":"Choosing a first telescope"}</script>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(page(tc.ld)), "https://example.org/t/1", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkThread(t, a.Text, "opening sentence number 5", 3, tc.replies)
		})
	}
}

func TestDiscussionPageMicrodata(t *testing.T) {
	for _, tc := range []struct {
		html string
		want bool
	}{
		{`<body><div itemscope itemtype="https://schema.org/DiscussionForumPosting"><p>Hi</p></div></body>`, true},
		{`<body><div itemscope itemtype="https://schema.org/Article"><p>Hi</p></div></body>`, false},
		{`<body><p>Hi</p></body>`, false},
	} {
		doc, err := parse([]byte(tc.html))
		if err != nil {
			t.Fatal(err)
		}
		if got := readMeta(doc, nil).declared.discussion; got != tc.want {
			t.Errorf("%s: declared discussion = %v, want %v", tc.html, got, tc.want)
		}
	}
}
