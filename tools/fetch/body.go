package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
)

// Kind classifies a response body.
type Kind string

// Kinds of content the fetcher accepts.
const (
	KindHTML Kind = "html"
	KindText Kind = "text"
	KindJSON Kind = "json"
	KindPDF  Kind = "pdf"
)

// classify maps a media type to a Kind. ok is false for types we refuse.
func classify(mediaType string) (Kind, bool) {
	switch {
	case mediaType == "text/html", mediaType == "application/xhtml+xml":
		return KindHTML, true
	case mediaType == "application/pdf", mediaType == "application/x-pdf":
		return KindPDF, true
	case mediaType == "application/json", strings.HasSuffix(mediaType, "+json"):
		return KindJSON, true
	case mediaType == "text/plain", mediaType == "text/markdown", mediaType == "text/x-markdown",
		mediaType == "text/csv", mediaType == "text/xml", mediaType == "application/xml",
		mediaType == "application/rss+xml", mediaType == "application/atom+xml":
		return KindText, true
	}
	return "", false
}

// mediaTypeOf returns the lower-case media type of a Content-Type header, or
// "" if absent or unparsable.
func mediaTypeOf(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.TrimSpace(mt)
	}
	return strings.ToLower(mt)
}

// sniffKind guesses a kind from the first bytes of a body whose header gave
// no usable type.
func sniffKind(head []byte) (string, Kind, bool) {
	if bytes.HasPrefix(head, []byte("%PDF-")) {
		return "application/pdf", KindPDF, true
	}
	mt := mediaTypeOf(http.DetectContentType(head))
	if k, ok := classify(mt); ok {
		return mt, k, true
	}
	trim := bytes.TrimLeft(head, " \t\r\n\xef\xbb\xbf")
	if len(trim) > 0 && (trim[0] == '{' || trim[0] == '[') {
		return "application/json", KindJSON, true
	}
	return mt, "", false
}

// limitedReader returns ErrTooLarge once more than n bytes are read, without
// buffering anything beyond n+1 bytes.
type limitedReader struct {
	r    io.Reader
	n    int64 // bytes still allowed
	what string
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, fmt.Errorf("%w: %s exceeds the limit", ErrTooLarge, l.what)
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		n += int(l.n) // hand back only the allowed bytes
		return n, fmt.Errorf("%w: %s exceeds the limit", ErrTooLarge, l.what)
	}
	return n, err
}

// decodeContent wraps r to undo the Content-Encoding list (applied in order,
// so undone in reverse). At most two codings are accepted.
func decodeContent(r io.Reader, contentEncoding string) (io.Reader, func(), error) {
	var closers []io.Closer
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i].Close()
		}
	}
	var codings []string
	for _, c := range strings.Split(contentEncoding, ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		if c != "" && c != "identity" {
			codings = append(codings, c)
		}
	}
	if len(codings) > 2 {
		return nil, nil, fmt.Errorf("%w: %d stacked codings", ErrEncoding, len(codings))
	}
	for i := len(codings) - 1; i >= 0; i-- {
		switch codings[i] {
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(r)
			if err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("%w: gzip: %v", ErrEncoding, err)
			}
			closers = append(closers, zr)
			r = zr
		case "deflate":
			// "deflate" is zlib-wrapped per RFC 9110, but some servers send
			// raw DEFLATE; look at the header to tell.
			br := bufio.NewReader(r)
			hdr, _ := br.Peek(2)
			if len(hdr) == 2 && hdr[0]&0x0f == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
				zr, err := zlib.NewReader(br)
				if err != nil {
					closeAll()
					return nil, nil, fmt.Errorf("%w: deflate: %v", ErrEncoding, err)
				}
				closers = append(closers, zr)
				r = zr
			} else {
				fr := flate.NewReader(br)
				closers = append(closers, fr)
				r = fr
			}
		case "br":
			r = brotli.NewReader(r)
		default:
			closeAll()
			return nil, nil, fmt.Errorf("%w: %q", ErrEncoding, codings[i])
		}
	}
	return r, closeAll, nil
}
