// Package dbtext makes text storable by every engine the stores run on.
// Postgres refuses U+0000 in text columns and \u0000 in jsonb ("invalid
// byte sequence for encoding UTF8: 0x00", "unsupported Unicode escape
// sequence"), and refuses invalid UTF-8; SQLite keeps them but cuts text at
// a NUL in some functions. Text from users, the model and the web can carry
// all of these, and a row refused once is refused again on every retry, so
// each store passes free text through String (and JSON through JSON) before
// writing, on every engine alike: the same text reads back everywhere.
package dbtext

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// String returns s with NUL characters removed and invalid UTF-8 replaced
// by U+FFFD. Other characters are kept.
func String(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// Strings applies String to each element (in a copy).
func Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}

// JSON returns the JSON text b with the \u0000 escapes inside its strings
// removed, raw NUL bytes removed and invalid UTF-8 replaced, so that jsonb
// accepts it. An escaped backslash followed by "u0000" (the six characters
// \u0000 as text) is kept. b is not modified.
func JSON(b []byte) []byte {
	if utf8.Valid(b) && !bytes.Contains(b, []byte(`\u0000`)) && bytes.IndexByte(b, 0) < 0 {
		return b
	}
	b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == 0:
			continue
		case c == '\\' && i+1 < len(b):
			if b[i+1] == 'u' && i+6 <= len(b) && string(b[i+2:i+6]) == "0000" {
				i += 5
				continue
			}
			out = append(out, c, b[i+1])
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}
