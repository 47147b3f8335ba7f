package main

import (
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// termSafe removes what a terminal would act on rather than print: C0
// control characters except newline and tab (ESC starts OSC 52 clipboard
// writes, cursor moves, title changes; CR overwrites a line), DEL, and C1
// controls (U+0080–U+009F; U+009B is a one-character CSI). Invalid UTF-8
// bytes become U+FFFD, so a raw 0x9B byte cannot act as CSI either. Text
// from web pages and from the model passes through it before reaching a
// terminal or a report file.
func termSafe(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r) || r == utf8.RuneError && n == 1 {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return -1
		}
		return r
	}, s)
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	}
	return false
}

// termWriter passes everything written through termSafe. A UTF-8 sequence
// split across writes is held back until it is complete. It is safe for
// concurrent use (progress lines and log records share stderr).
type termWriter struct {
	mu    sync.Mutex
	w     io.Writer
	carry []byte
}

func newTermWriter(w io.Writer) *termWriter { return &termWriter{w: w} }

func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := p
	if len(t.carry) > 0 {
		data = append(t.carry, p...)
		t.carry = nil
	}
	// hold back an incomplete rune at the end
	for n := 1; n <= utf8.UTFMax-1 && n <= len(data); n++ {
		if b := data[len(data)-n]; utf8.RuneStart(b) {
			if b >= utf8.RuneSelf && !utf8.FullRune(data[len(data)-n:]) {
				t.carry = append([]byte(nil), data[len(data)-n:]...)
				data = data[:len(data)-n]
			}
			break
		}
	}
	if _, err := io.WriteString(t.w, termSafe(string(data))); err != nil {
		return 0, err
	}
	return len(p), nil
}
