package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// minimalPDF writes a valid one-page PDF 1.4 file: Helvetica text, one
// line per entry, a document title, and a classic xref table with exact
// offsets.
func minimalPDF(title string, lines ...string) []byte {
	esc := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	var content strings.Builder
	content.WriteString("BT /F1 12 Tf 72 720 Td\n")
	for i, l := range lines {
		if i > 0 {
			content.WriteString("0 -16 Td\n")
		}
		fmt.Fprintf(&content, "(%s) Tj\n", esc.Replace(l))
	}
	content.WriteString("ET\n")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.String()),
		"<< /Title (" + esc.Replace(title) + ") >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// PDFs are read: one found on the web (served as application/pdf) and one
// in DEEPRESEARCH_DOCS_DIR. The report cites each by a quote that the
// citation check verified against the text extracted from the PDF.
func TestAskCitesPDFs(t *testing.T) {
	const webQuote = "The AI Act compliance audit found 12 high-risk systems."
	const docQuote = "Our AI Act memo sets the internal fines review for March 2026."
	vars, _ := newAskWorld(t, worldOpts{pdfs: map[string][]byte{
		"/audit.pdf": minimalPDF("AI Act audit", webQuote+" Each system needs a conformity assessment.", "The audit covered the timeline and the penalties."),
	}})
	docs := t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "memo.pdf"), minimalPDF("AI Act memo", docQuote+" Legal owns the review.", "AI Act timeline and AI Act fines are tracked by legal."), 0o644); err != nil {
		t.Fatal(err)
	}
	vars["DEEPRESEARCH_DOCS_DIR"] = docs
	out := filepath.Join(t.TempDir(), "report.md")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"ask", "-o", out, "What does the EU AI Act require?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, c := range []struct{ quote, source string }{{webQuote, "/audit.pdf"}, {docQuote, "memo.pdf"}} {
		re := regexp.MustCompile(`(?m)^\[\^\d+\]: .*` + regexp.QuoteMeta(c.quote) + `.*` + regexp.QuoteMeta(c.source))
		if !re.MatchString(report) {
			t.Errorf("no footnote quoting %q from %s:\n%s", c.quote, c.source, report)
		}
	}
	m := regexp.MustCompile(`citations (\d+) cited / (\d+) verified / 0 dropped`).FindStringSubmatch(stderr.String())
	if m == nil || m[1] != m[2] || len(m[1]) == 1 && m[1] < "2" {
		t.Errorf("citations not all verified:\n%s", stderr.String())
	}
}
