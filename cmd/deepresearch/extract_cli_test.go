package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExtractStripsTerminalEscapes: `extract` prints a page's text to the
// terminal; an OSC 52 sequence (writes the clipboard) or a C1 CSI in the
// page never reaches it, in text or JSON output.
func TestExtractStripsTerminalEscapes(t *testing.T) {
	page := "<html><head><title>T\x1b]52;c;ZXZpbA==\x07itle</title></head><body><article><h1>Heading</h1>" +
		"<p>" + strings.Repeat("Plain words of the article body. ", 8) + "Evil \x1b[31mred\x1b[0m and \u009b2J here.</p></article></body></html>"
	for _, args := range [][]string{{"extract", "-"}, {"extract", "--json", "-"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, getenv(nil), strings.NewReader(page), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
		}
		out := stdout.String()
		if strings.ContainsAny(out, "\x1b\x07\u009b") {
			t.Errorf("%v: control characters reached the terminal: %q", args, out)
		}
		if !strings.Contains(out, "Plain words") {
			t.Errorf("%v: text lost: %q", args, out)
		}
	}
}
