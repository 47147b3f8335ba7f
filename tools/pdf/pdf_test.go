package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// assertInOrder checks that text contains each want, in this order.
func assertInOrder(t *testing.T, text string, want ...string) {
	t.Helper()
	pos := 0
	for _, w := range want {
		i := strings.Index(text[pos:], w)
		if i < 0 {
			t.Fatalf("text lacks %q after offset %d:\n%s", w, pos, text)
		}
		pos += i + len(w)
	}
}

var (
	page1 = []string{"Deep research agents read many sources.", "They cite what they read (carefully).", "Back\\slash and parentheses survive."}
	page2 = []string{"The second page continues the argument.", "Reviewers score the draft before it ships."}
)

func TestExtractTwoPages(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("flate=%v", compress), func(t *testing.T) {
			data := makePDF(docSpec{pages: []string{lines(page1...), lines(page2...)}, compress: compress, title: "Test Report"})
			if compress && bytes.Contains(data, []byte("Deep research")) {
				t.Fatal("content stream not compressed")
			}
			doc, err := New(Options{}).Extract(context.Background(), data)
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Pages) != 2 || doc.NumPages != 2 || doc.Truncated || doc.Title != "Test Report" {
				t.Fatalf("doc = %+v", doc)
			}
			assertInOrder(t, doc.Pages[0], page1...)
			assertInOrder(t, doc.Pages[1], page2...)
			assertInOrder(t, doc.Text(), append(append([]string{}, page1...), page2...)...)
			if got := strings.Split(doc.Pages[0], "\n"); len(got) != 3 {
				t.Fatalf("page 1 lines = %q", got)
			}
		})
	}
}

func TestSpacingFromPositions(t *testing.T) {
	content := "BT /F1 10 Tf 72 700 Td [(Kern)20(ing) -300 (stays) -280 (one)] TJ ET\n" +
		// Two strings on one line, the second placed 20pt after the first ends.
		"BT /F1 10 Tf 72 680 Td (abc) Tj 35 0 Td (def) Tj ET\n" +
		// Adjacent strings with no gap join without a space.
		"BT /F1 10 Tf 72 660 Td (hyper) Tj (text) Tj ET\n" +
		// T* and ' use the leading.
		"BT /F1 10 Tf 14 TL 72 640 Td (first) Tj T* (second) Tj (third) ' ET\n" +
		// WinAnsi accented byte.
		"BT /F1 10 Tf 72 580 Td (caf\\351 na\\357ve) Tj ET\n"
	data := makePDF(docSpec{pages: []string{content}, widths: true})
	text, err := New(Options{}).ExtractText(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	want := "Kerning stays one\nabc def\nhypertext\nfirst\nsecond\nthird\ncafé naïve"
	if text != want {
		t.Fatalf("got\n%q\nwant\n%q", text, want)
	}
}

func TestFormXObject(t *testing.T) {
	data := makePDF(docSpec{
		pages: []string{lines("Before the form.") + "q 1 0 0 1 0 -100 cm /Fm1 Do Q\n"},
		extra: func(b *pdfBuilder, fontID int) string {
			content := []byte("BT /F1 12 Tf 72 600 Td (Text inside a form XObject.) Tj ET")
			id := b.stream(fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >>", fontID), content, true)
			return fmt.Sprintf("/XObject << /Fm1 %d 0 R >>", id)
		},
	})
	text, err := New(Options{}).ExtractText(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	assertInOrder(t, text, "Before the form.", "Text inside a form XObject.")
}

func TestHeaderAndTrailerQuirks(t *testing.T) {
	base := makePDF(docSpec{pages: []string{lines("Quirky but readable.")}})
	v20 := append([]byte("%PDF-2.0\n"), base[len("%PDF-1.4\n"):]...)
	comment := append([]byte("%PDF-1.4%"), base[len("%PDF-1.4%"):]...)
	padded := append(append([]byte{}, base...), bytes.Repeat([]byte{0}, 3000)...)
	for name, data := range map[string][]byte{"pdf-2.0": v20, "header-comment": comment, "padded": padded} {
		text, err := New(Options{}).ExtractText(context.Background(), data)
		if err != nil || !strings.Contains(text, "Quirky but readable.") {
			t.Errorf("%s: %q, %v", name, text, err)
		}
	}
}

func TestErrors(t *testing.T) {
	good := makePDF(docSpec{pages: []string{lines("Hello.")}})
	empty := makePDF(docSpec{pages: []string{""}})
	images := makePDF(docSpec{pages: []string{"q 100 0 0 100 0 0 cm 0 0 1 1 re f Q"}})
	tests := []struct {
		name string
		data []byte
		opts Options
		want error
	}{
		{"html", []byte("<!DOCTYPE html><html></html>"), Options{}, ErrNotPDF},
		{"empty", nil, Options{}, ErrNotPDF},
		{"too large", good, Options{MaxBytes: 100}, ErrTooLarge},
		{"truncated download", good[:len(good)/2], Options{}, ErrMalformed},
		{"garbage xref", append(append([]byte{}, good[:len(good)-40]...), []byte("startxref\n999999\n%%EOF\n")...), Options{}, ErrMalformed},
		{"no contents", empty, Options{}, ErrNoText},
		{"graphics only", images, Options{}, ErrNoText},
	}
	for _, tt := range tests {
		_, err := New(tt.opts).Extract(context.Background(), tt.data)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestLimits(t *testing.T) {
	var pages []string
	for i := 1; i <= 5; i++ {
		pages = append(pages, lines(fmt.Sprintf("Page number %d.", i)))
	}
	data := makePDF(docSpec{pages: pages})
	doc, err := New(Options{MaxPages: 2}).Extract(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) != 2 || doc.NumPages != 5 || !doc.Truncated {
		t.Fatalf("MaxPages: %d pages of %d, truncated=%v", len(doc.Pages), doc.NumPages, doc.Truncated)
	}
	doc, err = New(Options{MaxTextBytes: 20}).Extract(context.Background(), data)
	if err != nil || !doc.Truncated || len(doc.Text()) > 40 {
		t.Fatalf("MaxTextBytes: %v %+v", err, doc)
	}
	// A page of a million operators stops at MaxOps.
	heavy := "BT /F1 12 Tf 72 720 Td (start) Tj ET\n" + strings.Repeat("q Q ", 1_000_000)
	data = makePDF(docSpec{pages: []string{heavy, lines("never reached")}, compress: true})
	doc, err = New(Options{MaxOps: 10_000}).Extract(context.Background(), data)
	if err != nil || !doc.Truncated || !strings.Contains(doc.Text(), "start") || strings.Contains(doc.Text(), "never") {
		t.Fatalf("MaxOps: %v %+v", err, doc)
	}
	// The same page with a short timeout returns promptly.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = New(Options{}).Extract(ctx, data)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

// TestPageTreeCycle: a Pages node that lists itself as a kid must not hang.
func TestPageTreeCycle(t *testing.T) {
	b := newBuilder()
	font := b.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	pagesID := b.reserve()
	content := b.stream("", []byte(lines("Cyclic tree page.")), false)
	page := b.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R >>", pagesID, content))
	b.set(pagesID, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R %d 0 R %d 0 R] /Count 3 /Resources << /Font << /F1 %d 0 R >> >> >>", page, pagesID, pagesID, font))
	root := b.add(fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesID))
	data := b.bytes(root, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	doc, err := New(Options{MaxPages: 50}).Extract(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Truncated || !strings.Contains(doc.Pages[0], "Cyclic tree page.") {
		t.Fatalf("doc = %+v", doc)
	}
}

func FuzzPDF(f *testing.F) {
	f.Add(makePDF(docSpec{pages: []string{lines("Hello, fuzz.")}}))
	f.Add(makePDF(docSpec{pages: []string{lines("a", "b"), lines("c")}, compress: true, widths: true}))
	f.Add([]byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"))
	f.Add([]byte("%PDF-1.4\nxref\n0 1\n0000000000 65535 f \ntrailer<</Size 1>>\nstartxref\n9\n%%EOF\n"))
	e := New(Options{Timeout: 2 * time.Second, MaxOps: 100_000, MaxPages: 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := e.Extract(context.Background(), data)
		if err == nil && doc == nil {
			t.Fatal("nil document without error")
		}
	})
}

// TestCorruptedPDFs damages a valid file byte by byte (and cuts it short)
// and checks that every variant returns — text or an error — without
// panicking or hanging.
func TestCorruptedPDFs(t *testing.T) {
	good := makePDF(docSpec{pages: []string{lines(page1...), lines(page2...)}, compress: true, widths: true, title: "T"})
	e := New(Options{Timeout: 2 * time.Second, MaxOps: 100_000})
	ctx := context.Background()
	junk := []byte{0, 0xff, '(', ')', '<', '>', '[', ']', '/', '%', '9', ' ', 'R'}
	n := 0
	for i := 0; i < len(good); i += 3 {
		data := append([]byte{}, good...)
		data[i] = junk[i%len(junk)]
		if _, err := e.Extract(ctx, data); errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("byte %d: timed out", i)
		}
		n++
	}
	for cut := len(good) - 1; cut > len(good)-400; cut -= 5 {
		e.Extract(ctx, good[:cut])
		n++
	}
	t.Logf("%d corrupted variants", n)
}

// TestType0ToUnicode: a CID font (Identity-H) with a ToUnicode CMap, as
// Japanese PDFs use: two-byte codes map to 日本語 text.
func TestType0ToUnicode(t *testing.T) {
	b := newBuilder()
	cmap := "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n" +
		"/CMapName /Test-UCS def\n1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n" +
		"3 beginbfchar\n<0001> <65E5>\n<0002> <672C>\n<0003> <8A9E>\nendbfchar\n" +
		"1 beginbfrange\n<0010> <0012> <3042>\nendbfrange\n" +
		"endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
	tu := b.stream("", []byte(cmap), true)
	desc := b.add("<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Test /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 >>")
	font := b.add(fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /Test /Encoding /Identity-H /DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>", desc, tu))
	content := b.stream("", []byte("BT /F1 12 Tf 72 720 Td <000100020003> Tj 0 -16 Td <001000110012> Tj ET"), true)
	pagesID := b.reserve()
	page := b.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R >>", pagesID, content))
	b.set(pagesID, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 /Resources << /Font << /F1 %d 0 R >> >> >>", page, font))
	root := b.add(fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesID))
	text, err := New(Options{}).ExtractText(context.Background(), b.bytes(root, 0))
	if err != nil {
		t.Fatal(err)
	}
	if text != "日本語\nあぃい" {
		t.Fatalf("text = %q", text)
	}
}

// Convert is the docs.Options.Converters form: the information title and
// the text.
func TestConvert(t *testing.T) {
	data := makePDF(docSpec{pages: []string{lines(page1...), lines(page2...)}, title: "Test Report"})
	title, text, err := New(Options{}).Convert(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if title != "Test Report" {
		t.Errorf("title = %q", title)
	}
	assertInOrder(t, text, append(append([]string{}, page1...), page2...)...)
	if _, _, err := New(Options{}).Convert(context.Background(), []byte("<html>")); !errors.Is(err, ErrNotPDF) {
		t.Errorf("err = %v, want ErrNotPDF", err)
	}
}
