package extract

import (
	"fmt"
	"strings"
	"testing"
)

// thread returns a forum thread: an opening post too long to look like a
// card, then n short replies, each signed by a linked user name and a
// linked date like a teaser's title link.
func thread(n int, signature func(i int) string) string {
	var b strings.Builder
	b.WriteString(`<html><body><nav><a href="/">Home</a> <a href="/forums">Forums</a></nav><main><h1>Which telescope to buy first?</h1><div class="posts">`)
	post := func(i int, text string) {
		fmt.Fprintf(&b, `<article class="message"><div class="message-user">%s</div><div class="message-body"><p>%s</p></div></article>`,
			signature(i), text)
	}
	post(0, prose("opening", 8))
	for i := 1; i <= n; i++ {
		post(i, prose(fmt.Sprintf("reply%d", i), 2))
	}
	b.WriteString(`</div></main><footer>© Forum</footer></body></html>`)
	return b.String()
}

func TestThreadPostsAreNotTeasers(t *testing.T) {
	signed := func(i int) string {
		return fmt.Sprintf(`<h4><a href="/members/%d">user%d</a></h4><a href="/posts/%d">May %d</a>`, i, i, i, i+1)
	}
	titled := func(i int) string {
		return fmt.Sprintf(`<h4><a href="/stories/%d">Another long story about the night sky %d</a></h4>`, i, i)
	}
	for _, tc := range []struct {
		name      string
		signature func(int) string
		replies   bool
	}{
		{"signed posts are the thread", signed, true},
		{"titled cards stay teasers", titled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(thread(5, tc.signature)), "https://forum.example/t/1", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkThread(t, a.Text, "opening sentence number 0", 5, tc.replies)
		})
	}
}

// checkThread fails t unless text holds the opening post (its sentence
// opening) and holds replies 1..n exactly when replies is set.
func checkThread(t *testing.T, text, opening string, n int, replies bool) {
	t.Helper()
	if !strings.Contains(text, opening) {
		t.Fatalf("opening post missing:\n%s", text)
	}
	for i := 1; i <= n; i++ {
		if got := strings.Contains(text, fmt.Sprintf("reply%d sentence number 1", i)); got != replies {
			t.Errorf("reply %d kept = %v, want %v:\n%s", i, got, replies, text)
		}
	}
}

// TestPostChromeIsDropped checks that the parts of a thread's posts that
// describe the poster rather than the discussion are not content.
func TestPostChromeIsDropped(t *testing.T) {
	for _, tc := range []struct{ name, chrome string }{
		{"signature", `<div class="post-signature">My rig: a dusty refractor, two eyepieces and a very patient cat on the roof.</div>`},
		{"poster's profile", `<dl class="postprofile"><dt>Joined: 2009, posts: 4312, rank: a very patient cat on the roof of the observatory.</dt></dl>`},
		{"poster's title", `<div class="usertitle">Senior member since 2009, known as a very patient cat on the roof.</div>`},
		{"poster's title in camel case", `<h5 class="userTitle message-userTitle">Senior member since 2009, known as a very patient cat on the roof.</h5>`},
		{"poster's info", `<div class="user-info">Senior member since 2009, known as a very patient cat on the roof.</div>`},
		{"reactions", `<div class="reactionsBar">Liked by a very patient cat on the roof, stargazer42 and 11 others who agree.</div>`},
		{"votes", `<div class="js-voting-container">Upvoted by a very patient cat on the roof and 14 others.</div>`},
		{"badges", `<div class="post-badges">Science advisor, homework helper, a very patient cat on the roof.</div>`},
		{"likes", `<div class="post-likes">Liked by a very patient cat on the roof and 3 more members.</div>`},
		{"feedback", `<div class="page-feedback">Was this helpful? Tell a very patient cat on the roof what we could do better.</div>`},
		{"badge", `<span class="user-badge">Top contributor, a very patient cat on the roof of the club.</span>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := thread(3, func(i int) string { return fmt.Sprintf(`<a href="/members/%d">user%d</a>`, i, i) })
			page = strings.ReplaceAll(page, `</p></div></article>`, `</p></div>`+tc.chrome+`</article>`)
			a, err := ExtractBytes([]byte(page), "https://forum.example/t/1", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "opening sentence number 0") {
				t.Fatalf("opening post missing:\n%s", a.Text)
			}
			if strings.Contains(a.Text, "patient cat") {
				t.Errorf("%s kept:\n%s", tc.name, a.Text)
			}
		})
	}
}

// TestPostHeaderKeepsDate checks that a thread's posts keep their
// headers' dates, written as the anchors of the posts' permalinks.
func TestPostHeaderKeepsDate(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<html><body><nav><a href="/">Home</a></nav><main><h1>Which telescope to buy first?</h1><div class="posts">`)
	for i := 0; i < 4; i++ {
		n := 2
		if i == 0 {
			n = 6
		}
		fmt.Fprintf(&b, `<article class="message"><div class="message-user"><h4><a href="/members/%d">stargazer%d</a></h4></div>`+
			`<header class="message-attribution"><a href="/posts/%d"><time datetime="2024-09-2%d">Sep 2%d, 2024</time></a></header>`+
			`<div class="message-body"><p>%s</p></div></article>`, i, i, i, i, i, prose(fmt.Sprintf("post%d", i), n))
		if i == 1 {
			b.WriteString(`<div class="notice">Sponsored notice between posts, nothing to read here at all.</div>`)
		}
	}
	b.WriteString(`</div></main><footer>© Forum</footer></body></html>`)
	a, err := ExtractBytes([]byte(b.String()), "https://forum.example/t/1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"post0 sentence number 5", "post3 sentence number 1", "Sep 21, 2024", "Sep 23, 2024"} {
		if !strings.Contains(a.Text, want) {
			t.Errorf("missing %q:\n%s", want, a.Text)
		}
	}
}
