package extract

import (
	"strings"
	"testing"
)

// TestDocumentationBoxesAreContent checks that a documentation page's
// table of contents (named "toc") and its note box (named "alert") are
// kept with the page's text.
func TestDocumentationBoxesAreContent(t *testing.T) {
	for _, tc := range []struct {
		name, page string
		want       []string
	}{
		{"table of contents", `<html><body><nav><a href="/">Docs home</a></nav><main><h1>Indexes</h1>` +
			`<div class="toc"><p>Table of Contents</p><ul><li><a href="#intro">11.1. Introduction to indexes</a></li>` +
			`<li><a href="#types">11.2. Index types and their uses</a></li><li><a href="#multi">11.3. Multicolumn indexes</a></li></ul></div>` +
			`<p>` + prose("kaph", 6) + `</p><p>` + prose("lamed", 4) + `</p></main><footer>© Docs</footer></body></html>`,
			[]string{"kaph sentence number 5", "Table of Contents", "11.2. Index types and their uses"}},
		{"admonition", `<html><body><nav><a href="/">Docs home</a></nav><main><h1>Installing</h1><p>` + prose("mem", 5) + `</p>` +
			`<div class="alert alert-warning" role="note"><p>Back up the data directory before you upgrade: the new version rewrites it in place.</p></div>` +
			`<p>` + prose("nun", 4) + `</p></main><footer>© Docs</footer></body></html>`,
			[]string{"mem sentence number 4", "Back up the data directory", "nun sentence number 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(tc.page), "https://docs.example/page", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tc.want, nil)
		})
	}
}

// TestDocumentationClosingLines checks that the licence and last-updated
// lines closing a documentation page are not content.
func TestDocumentationClosingLines(t *testing.T) {
	for _, closing := range []string{
		"Except as otherwise noted, the content of this page is licensed under the Creative Commons Attribution 4.0 License.",
		"Unless stated otherwise, the documentation on this site reflects version 3.41.",
		"Last updated 2025-12-18 UTC.",
		"Page last updated on 2025-11-26.",
		"Was this page helpful?",
	} {
		page := `<html><body><main><h1>Installing</h1><p>` + prose("samekh", 6) + `</p><p>` + closing + `</p></main></body></html>`
		a, err := ExtractBytes([]byte(page), "https://docs.example/install", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Text, "samekh sentence number 5") {
			t.Fatalf("text missing:\n%s", a.Text)
		}
		if strings.Contains(a.Text, closing) {
			t.Errorf("closing line kept: %q", closing)
		}
	}
}
