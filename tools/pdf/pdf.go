// Package pdf extracts plain text from PDF documents fetched during research
// (papers, reports). Parsing of the file structure (xref tables and streams,
// object streams, filters, font encodings, ToUnicode CMaps, empty-password
// encryption) is done by github.com/ledongthuc/pdf; this package walks the
// page tree and content streams itself so that it can bound the work, insert
// spaces and line breaks from glyph positions, and descend into form
// XObjects.
//
// Input is untrusted: the size is capped before parsing, pages, operators
// and output text are capped while walking, the context (plus
// Options.Timeout) is checked between operators, and any panic from the
// parser is recovered and returned as ErrMalformed.
package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	lpdf "github.com/ledongthuc/pdf"
)

// Sentinel errors; returned errors wrap them.
var (
	ErrNotPDF    = errors.New("pdf: not a PDF file")
	ErrTooLarge  = errors.New("pdf: file too large")
	ErrEncrypted = errors.New("pdf: encrypted with a password")
	ErrMalformed = errors.New("pdf: malformed file")
	// ErrNoText: the document parsed but has no text layer (a scan).
	ErrNoText = errors.New("pdf: no extractable text")
)

// Defaults for zero Options fields.
const (
	DefaultMaxBytes      = 50 << 20
	DefaultMaxPages      = 500
	DefaultMaxTextBytes  = 8 << 20
	DefaultMaxOps        = 20_000_000
	DefaultTimeout       = 30 * time.Second
	DefaultMaxConcurrent = 2
)

// Options bounds the work done on one document.
type Options struct {
	MaxBytes     int64         // input size cap
	MaxPages     int           // pages read; the rest are skipped (Truncated)
	MaxTextBytes int           // output cap (Truncated)
	MaxOps       int           // content-stream operators per document (Truncated)
	Timeout      time.Duration // per document
	// MaxConcurrent bounds documents parsed at once by this Extractor.
	// Parsing runs in its own goroutine so a timeout returns promptly; a
	// parse stuck inside the library keeps its slot until it ends, so
	// hostile files cannot pile up unbounded goroutines.
	MaxConcurrent int
	Logger        *slog.Logger
}

// Document is the text of a PDF.
type Document struct {
	// Pages holds the text of each page read, in page order.
	Pages []string
	// NumPages is the page count found in the page tree (up to the
	// node-visit bound).
	NumPages int
	// Title is the document information Title, if any.
	Title string
	// Truncated reports that a page, operator or text limit stopped the
	// extraction early.
	Truncated bool
}

// Text returns the pages joined by blank lines.
func (d *Document) Text() string {
	return strings.Join(d.Pages, "\n\n")
}

// Extractor extracts text. It is safe for concurrent use.
type Extractor struct {
	opts Options
	sem  chan struct{}
	log  *slog.Logger
}

// New returns an Extractor with opts (zero fields take the defaults).
func New(opts Options) *Extractor {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxPages <= 0 {
		opts.MaxPages = DefaultMaxPages
	}
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	if opts.MaxOps <= 0 {
		opts.MaxOps = DefaultMaxOps
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Extractor{opts: opts, sem: make(chan struct{}, opts.MaxConcurrent), log: log}
}

// ExtractText returns the document's text; it has the signature of
// fetch.Options.ExtractPDF.
func (e *Extractor) ExtractText(ctx context.Context, data []byte) (string, error) {
	d, err := e.Extract(ctx, data)
	if err != nil {
		return "", err
	}
	return d.Text(), nil
}

// Convert returns the document's title (from its information dictionary,
// empty if none) and text; it has the signature of a converter in
// docs.Options.Converters.
func (e *Extractor) Convert(ctx context.Context, data []byte) (title, text string, err error) {
	d, err := e.Extract(ctx, data)
	if err != nil {
		return "", "", err
	}
	return d.Title, d.Text(), nil
}

// Extract parses data and returns its text page by page.
func (e *Extractor) Extract(ctx context.Context, data []byte) (*Document, error) {
	if int64(len(data)) > e.opts.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes > %d", ErrTooLarge, len(data), e.opts.MaxBytes)
	}
	data, err := prepare(data)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("pdf: waiting for a parser slot: %w", ctx.Err())
	}
	type result struct {
		doc *Document
		err error
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		defer func() { <-e.sem }()
		defer func() {
			if r := recover(); r != nil {
				ch <- result{err: fmt.Errorf("%w: %v", ErrMalformed, r)}
			}
		}()
		d, err := e.extract(ctx, data)
		ch <- result{d, err}
	}()
	select {
	case r := <-ch:
		if r.err == nil {
			e.log.Debug("pdf: extracted", "pages", len(r.doc.Pages), "of", r.doc.NumPages,
				"truncated", r.doc.Truncated, "took", time.Since(start))
		}
		return r.doc, r.err
	case <-ctx.Done():
		e.log.Warn("pdf: extraction timed out", "bytes", len(data), "err", ctx.Err())
		return nil, fmt.Errorf("pdf: extraction: %w", ctx.Err())
	}
}

// prepare checks the header and works around two strictnesses of the
// parser: it only accepts "%PDF-1.[0-7]" followed by a newline (PDF 2.0 and
// "%PDF-1.4%..." headers are common), and it wants "%%EOF" in the last 100
// bytes (files are often padded with NULs or junk after it).
func prepare(data []byte) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte("%PDF-")) || len(data) < 16 {
		return nil, ErrNotPDF
	}
	tail := data
	if len(tail) > 4096 {
		tail = tail[len(tail)-4096:]
	}
	i := bytes.LastIndex(tail, []byte("%%EOF"))
	if i < 0 {
		return nil, fmt.Errorf("%w: no %%%%EOF marker (truncated download?)", ErrMalformed)
	}
	data = data[:len(data)-len(tail)+i+5]
	if bytes.HasPrefix(data, []byte("%PDF-1.")) && data[7] >= '0' && data[7] <= '7' && (data[8] == '\n' || data[8] == '\r') {
		return data, nil
	}
	// Present a header the parser accepts; offsets are unchanged.
	patched := make([]byte, len(data))
	copy(patched, data)
	copy(patched, "%PDF-1.7\n")
	return patched, nil
}

func (e *Extractor) extract(ctx context.Context, data []byte) (*Document, error) {
	r, err := lpdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if errors.Is(err, lpdf.ErrInvalidPassword) {
			return nil, fmt.Errorf("%w: %v", ErrEncrypted, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	doc := &Document{}
	if info := r.Trailer().Key("Info"); info.Kind() == lpdf.Dict {
		doc.Title = cleanText(info.Key("Title").Text())
	}
	pages, total, truncated := collectPages(r.Trailer().Key("Root").Key("Pages"), e.opts.MaxPages)
	doc.NumPages, doc.Truncated = total, truncated
	w := &walker{ctx: ctx, maxOps: e.opts.MaxOps, maxText: e.opts.MaxTextBytes}
	for _, p := range pages {
		text, stop, err := w.page(p)
		if err != nil {
			return nil, err
		}
		doc.Pages = append(doc.Pages, text)
		if stop {
			doc.Truncated = true
			break
		}
	}
	if strings.TrimSpace(doc.Text()) == "" {
		return doc, ErrNoText
	}
	return doc, nil
}

// pageRef is a page with the resources it inherits.
type pageRef struct {
	v         lpdf.Value
	resources lpdf.Value
}

// collectPages walks the page tree depth-first with bounds on depth and on
// nodes visited, so reference cycles and absurd trees end quickly. It
// returns up to max pages, the number seen, and whether it stopped early.
func collectPages(root lpdf.Value, limit int) ([]pageRef, int, bool) {
	const maxDepth = 64
	budget := limit*4 + 1024
	var out []pageRef
	seen, truncated := 0, false
	var walk func(n, res lpdf.Value, depth int)
	walk = func(n, res lpdf.Value, depth int) {
		if budget <= 0 || depth > maxDepth {
			truncated = true
			return
		}
		budget--
		if r := n.Key("Resources"); r.Kind() == lpdf.Dict {
			res = r
		}
		kids := n.Key("Kids")
		if n.Key("Type").Name() == "Pages" || (kids.Kind() == lpdf.Array && n.Key("Type").Name() != "Page") {
			for i := 0; i < kids.Len(); i++ {
				walk(kids.Index(i), res, depth+1)
			}
			return
		}
		if n.Kind() != lpdf.Dict {
			return
		}
		seen++
		if len(out) < limit {
			out = append(out, pageRef{v: n, resources: res})
		} else {
			truncated = true
		}
	}
	walk(root, lpdf.Value{}, 0)
	return out, seen, truncated
}
