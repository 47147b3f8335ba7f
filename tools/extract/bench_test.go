package extract

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkExtract extracts the testdata pages, one page per iteration.
func BenchmarkExtract(b *testing.B) {
	pages := testPages(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := ExtractBytes(pages[i%len(pages)].data, "https://example.com/a", Options{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkExtractLarge extracts a 10 MB page (a long article amid
// thousands of teaser cards); B/op shows what one such page costs.
func BenchmarkExtractLarge(b *testing.B) {
	var page bytes.Buffer
	page.WriteString("<html><head><title>Large</title></head><body><nav><a href=/>Home</a></nav><article>")
	for i := 0; page.Len() < 5<<20; i++ {
		fmt.Fprintf(&page, "<p>Paragraph %d of the article says, at some length, what happened and why it matters to the reader.</p>", i)
	}
	page.WriteString("</article><div class=more><ul>")
	for i := 0; page.Len() < 10<<20; i++ {
		fmt.Fprintf(&page, `<li class="card"><a href="/s/%d">Story title number %d</a><p>%s</p></li>`, i, i, strings.Repeat("Teaser words. ", 4))
	}
	page.WriteString("</ul></div></body></html>")
	data := page.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ExtractBytes(data, "https://example.com/a", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
