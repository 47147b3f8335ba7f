package pdf

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// pdfBuilder writes small but valid PDF files for tests: numbered objects,
// a classic xref table with exact offsets, and a trailer.
type pdfBuilder struct {
	header string
	objs   [][]byte // objs[i] is object i+1
}

func newBuilder() *pdfBuilder { return &pdfBuilder{header: "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"} }

// reserve allocates an object number to be filled later with set.
func (b *pdfBuilder) reserve() int {
	b.objs = append(b.objs, nil)
	return len(b.objs)
}

func (b *pdfBuilder) set(id int, body string) { b.objs[id-1] = []byte(body) }

func (b *pdfBuilder) add(body string) int {
	id := b.reserve()
	b.set(id, body)
	return id
}

// stream adds a stream object; with compress it is FlateDecode'd.
func (b *pdfBuilder) stream(dict string, data []byte, compress bool) int {
	if compress {
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(data)
		w.Close()
		data = z.Bytes()
		dict += " /Filter /FlateDecode"
	}
	body := fmt.Sprintf("<< %s /Length %d >>\nstream\n", dict, len(data))
	id := b.reserve()
	b.objs[id-1] = append(append([]byte(body), data...), "\nendstream"...)
	return id
}

// bytes renders the file with the given catalog and (optional) info object.
func (b *pdfBuilder) bytes(root, info int) []byte {
	var out bytes.Buffer
	out.WriteString(b.header)
	offsets := make([]int, len(b.objs))
	for i, o := range b.objs {
		offsets[i] = out.Len()
		fmt.Fprintf(&out, "%d 0 obj\n", i+1)
		out.Write(o)
		out.WriteString("\nendobj\n")
	}
	xref := out.Len()
	fmt.Fprintf(&out, "xref\n0 %d\n0000000000 65535 f \n", len(b.objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&out, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&out, "trailer\n<< /Size %d /Root %d 0 R", len(b.objs)+1, root)
	if info > 0 {
		fmt.Fprintf(&out, " /Info %d 0 R", info)
	}
	fmt.Fprintf(&out, " >>\nstartxref\n%d\n%%%%EOF\n", xref)
	return out.Bytes()
}

// pdfString escapes s as a PDF literal string.
func pdfString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	return "(" + r.Replace(s) + ")"
}

type docSpec struct {
	pages    []string // raw content stream per page
	compress bool
	title    string
	widths   bool // give the font a Widths array (all glyphs 500)
	extra    func(b *pdfBuilder, fontID int) (xobjects string)
	header   string // replaces "%PDF-1.4\n"
}

// makePDF builds a document whose pages share one Helvetica font /F1.
func makePDF(spec docSpec) []byte {
	b := newBuilder()
	if spec.header != "" {
		b.header = spec.header
	}
	fontDict := "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding"
	if spec.widths {
		fontDict += " /FirstChar 32 /LastChar 126 /Widths [" + strings.Repeat("500 ", 95) + "]"
	}
	fontID := b.add(fontDict + " >>")
	xobjects := ""
	if spec.extra != nil {
		xobjects = spec.extra(b, fontID)
	}
	pagesID := b.reserve()
	var kids []string
	for _, content := range spec.pages {
		cid := b.stream("", []byte(content), spec.compress)
		pid := b.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>", pagesID, cid))
		kids = append(kids, fmt.Sprintf("%d 0 R", pid))
	}
	b.set(pagesID, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /Resources << /Font << /F1 %d 0 R >> %s >> >>",
		strings.Join(kids, " "), len(kids), fontID, xobjects))
	root := b.add(fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesID))
	info := 0
	if spec.title != "" {
		info = b.add("<< /Title " + pdfString(spec.title) + " >>")
	}
	return b.bytes(root, info)
}

// lines renders sentences as one text object, one line each, 16pt apart.
func lines(ss ...string) string {
	var c strings.Builder
	c.WriteString("BT /F1 12 Tf 72 720 Td\n")
	for i, s := range ss {
		if i > 0 {
			c.WriteString("0 -16 Td\n")
		}
		c.WriteString(pdfString(s) + " Tj\n")
	}
	c.WriteString("ET\n")
	return c.String()
}
