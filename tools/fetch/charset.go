package fetch

import (
	"bytes"
	"mime"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

// decodeText converts body to UTF-8. The order of evidence is:
//
//  1. a byte-order mark;
//  2. ISO-2022-JP escape sequences in 7-bit text;
//  3. the bytes themselves when they are valid UTF-8 — a page whose bytes are
//     valid, non-ASCII UTF-8 is UTF-8 whatever its header claims (the header
//     lies far more often than random legacy bytes form valid UTF-8);
//  4. the Content-Type charset, then <meta charset>/http-equiv (HTML) or the
//     XML declaration — each used only if it decodes without errors, and a
//     single-byte Western label loses to a confident Japanese detection;
//  5. detection among Shift_JIS and EUC-JP; otherwise windows-1252.
//
// It returns the text and the name of the encoding used.
func decodeText(body []byte, contentType string, isHTML bool) (string, string) {
	if s, name, ok := decodeUnlabelled(body); ok {
		return s, name
	}
	jp, jpName, jpScore := detectJapanese(body)
	for _, label := range declaredCharsets(body, contentType, isHTML) {
		e, name := charset.Lookup(label)
		if e == nil || name == "utf-8" || strings.HasPrefix(name, "utf-16") {
			continue // invalid UTF-8 was seen above; UTF-16 needs a BOM here
		}
		s, bad := decodeWith(e, body)
		if bad > 0 {
			continue
		}
		if singleByte(name) && jp != nil && jpScore >= 2 {
			break // e.g. "charset=iso-8859-1" on a Shift_JIS page
		}
		return s, name
	}
	if jp != nil {
		s, _ := decodeWith(jp, body)
		return s, jpName
	}
	e, name := charset.Lookup("windows-1252")
	s, _ := decodeWith(e, body)
	return s, name
}

// decodeUnlabelled decodes the bodies whose encoding the bytes settle: a
// BOM, ISO-2022-JP escapes in ASCII, plain ASCII and valid UTF-8.
func decodeUnlabelled(body []byte) (string, string, bool) {
	if e, name, ok := bomEncoding(body); ok {
		s, _ := decodeWith(e, body)
		return s, name, true
	}
	ascii := isASCII(string(body))
	if ascii && looksISO2022JP(body) {
		s, _ := decodeWith(japanese.ISO2022JP, body)
		return s, "iso-2022-jp", true
	}
	if ascii {
		return string(body), "utf-8", true
	}
	if utf8.Valid(trimPartialRune(body)) {
		return strings.ToValidUTF8(string(body), "\uFFFD"), "utf-8", true
	}
	return "", "", false
}

// declaredCharsets are the encodings the document declares, in order: the
// Content-Type's charset, then the HTML meta charset or the XML
// declaration's encoding.
func declaredCharsets(body []byte, contentType string, isHTML bool) []string {
	var labels []string
	if _, params, err := mime.ParseMediaType(contentType); err == nil && params["charset"] != "" {
		labels = append(labels, params["charset"])
	}
	if isHTML {
		if l := metaCharset(body); l != "" {
			labels = append(labels, l)
		}
	} else if l := xmlDeclCharset(body); l != "" {
		labels = append(labels, l)
	}
	return labels
}

func bomEncoding(b []byte) (encoding.Encoding, string, bool) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		return unicode.UTF8BOM, "utf-8", true
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM), "utf-16be", true
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM), "utf-16le", true
	}
	return nil, "", false
}

func looksISO2022JP(b []byte) bool {
	return bytes.Contains(b, []byte("\x1b$B")) || bytes.Contains(b, []byte("\x1b$@")) ||
		bytes.Contains(b, []byte("\x1b(J")) || bytes.Contains(b, []byte("\x1b(I"))
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end (the body
// may have been cut at the size cap).
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// decodeWith decodes b and counts U+FFFD replacement characters produced,
// ignoring one at the very end (a sequence cut by the size cap).
func decodeWith(e encoding.Encoding, b []byte) (string, int) {
	out, err := e.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD"), len(b)
	}
	s := string(out)
	bad := strings.Count(s, "\uFFFD")
	if bad > 0 && strings.HasSuffix(s, "\uFFFD") {
		bad--
	}
	return s, bad
}

func singleByte(name string) bool {
	return strings.HasPrefix(name, "windows-") || strings.HasPrefix(name, "iso-8859-") ||
		strings.HasPrefix(name, "koi8") || name == "macintosh" || name == "ibm866" || name == "x-mac-cyrillic"
}

// detectJapanese scores Shift_JIS and EUC-JP decodings of b. Japanese prose
// is full of hiragana; a decoding that yields hiragana and no invalid
// sequences is convincing, while Latin-1 text decoded as Shift_JIS yields
// stray kanji and half-width kana but (almost) never hiragana. The score is
// the number of hiragana; nil means neither decoding is plausible.
func detectJapanese(b []byte) (encoding.Encoding, string, int) {
	type cand struct {
		e    encoding.Encoding
		name string
	}
	var best encoding.Encoding
	bestName, bestScore := "", 0
	for _, c := range []cand{{japanese.ShiftJIS, "shift_jis"}, {japanese.EUCJP, "euc-jp"}} {
		s, bad := decodeWith(c.e, b)
		if bad > 0 {
			continue
		}
		hira, half := 0, 0
		for _, r := range s {
			switch {
			case r >= 0x3041 && r <= 0x309F:
				hira++
			case r >= 0xFF61 && r <= 0xFF9F:
				half++
			}
		}
		score := hira - half
		if hira > 0 && score > bestScore {
			best, bestName, bestScore = c.e, c.name, score
		}
	}
	return best, bestName, bestScore
}

// metaCharset finds <meta charset> or <meta http-equiv=Content-Type
// content="...; charset=..."> in the first 4 KiB of an HTML document.
func metaCharset(b []byte) string {
	if len(b) > 4096 {
		b = b[:4096]
	}
	z := html.NewTokenizer(bytes.NewReader(b))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) == "body" {
				return ""
			}
			if string(name) != "meta" || !hasAttr {
				continue
			}
			if cs, ok := metaTagCharset(z); ok {
				return cs
			}
		}
	}
}

// metaTagCharset is the charset a meta tag's attributes declare: its
// charset, or the charset of the content of an http-equiv=Content-Type;
// ok is false when it declares none.
func metaTagCharset(z *html.Tokenizer) (cs string, ok bool) {
	var content string
	httpEquiv := false
	for {
		k, v, more := z.TagAttr()
		switch strings.ToLower(string(k)) {
		case "charset":
			cs = string(v)
		case "content":
			content = string(v)
		case "http-equiv":
			httpEquiv = strings.EqualFold(string(v), "content-type")
		}
		if !more {
			break
		}
	}
	if cs != "" {
		return strings.TrimSpace(cs), true
	}
	if !httpEquiv || content == "" {
		return "", false
	}
	if _, params, err := mime.ParseMediaType(content); err == nil && params["charset"] != "" {
		return params["charset"], true
	}
	if m := contentCharsetRE.FindStringSubmatch(content); m != nil {
		return m[1], true
	}
	return "", false
}

var (
	contentCharsetRE = regexp.MustCompile(`(?i)charset\s*=\s*["']?([\w.:-]+)`)
	xmlDeclRE        = regexp.MustCompile(`^<\?xml[^>]*\sencoding\s*=\s*["']([\w.:-]+)["']`)
)

func xmlDeclCharset(b []byte) string {
	if len(b) > 256 {
		b = b[:256]
	}
	if m := xmlDeclRE.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}
