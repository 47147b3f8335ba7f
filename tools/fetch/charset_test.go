package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

const jaText = "日本語のテキストです。ひらがなとカタカナ、漢字を含みます。"

func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

func TestDecodeText(t *testing.T) {
	html := func(meta, body string) string {
		return "<html><head>" + meta + "<title>t</title></head><body><p>" + body + "</p></body></html>"
	}
	latin := "Café naïve façade — “quoted” €5"
	tests := []struct {
		name        string
		body        []byte
		contentType string
		isHTML      bool
		want        string // substring of the decoded text
		wantCharset string
	}{
		{"utf8 declared", []byte(html("", jaText)), "text/html; charset=utf-8", true, jaText, "utf-8"},
		{"utf8 undeclared", []byte(html("", jaText)), "text/html", true, jaText, "utf-8"},
		{"utf8 bom", append([]byte("\xef\xbb\xbf"), html("", jaText)...), "text/html; charset=shift_jis", true, jaText, "utf-8"},
		{"ascii", []byte(html("", "plain")), "text/html; charset=shift_jis", true, "plain", "utf-8"},
		{"sjis header", encode(t, japanese.ShiftJIS, html("", jaText)), "text/html; charset=Shift_JIS", true, jaText, "shift_jis"},
		{"sjis meta charset", encode(t, japanese.ShiftJIS, html(`<meta charset="shift_jis">`, jaText)), "text/html", true, jaText, "shift_jis"},
		{"sjis http-equiv", encode(t, japanese.ShiftJIS, html(`<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">`, jaText)), "text/html", true, jaText, "shift_jis"},
		{"sjis undeclared", encode(t, japanese.ShiftJIS, html("", jaText)), "text/html", true, jaText, "shift_jis"},
		{"eucjp header", encode(t, japanese.EUCJP, html("", jaText)), "text/html; charset=EUC-JP", true, jaText, "euc-jp"},
		{"eucjp meta", encode(t, japanese.EUCJP, html(`<meta charset=euc-jp>`, jaText)), "text/html", true, jaText, "euc-jp"},
		{"eucjp undeclared", encode(t, japanese.EUCJP, html("", jaText)), "text/html", true, jaText, "euc-jp"},
		{"iso2022jp header", encode(t, japanese.ISO2022JP, html("", jaText)), "text/html; charset=ISO-2022-JP", true, jaText, "iso-2022-jp"},
		{"iso2022jp undeclared", encode(t, japanese.ISO2022JP, jaText), "text/plain", false, jaText, "iso-2022-jp"},
		{"windows-1252 header", encode(t, charmap.Windows1252, html("", latin)), "text/html; charset=windows-1252", true, latin, "windows-1252"},
		{"latin1 label", encode(t, charmap.Windows1252, html("", latin)), "text/html; charset=ISO-8859-1", true, latin, "windows-1252"},
		{"windows-1252 undeclared", encode(t, charmap.Windows1252, html("", latin)), "text/html", true, latin, "windows-1252"},
		{"utf16le bom", encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), html("", jaText)), "text/html", true, jaText, "utf-16le"},
		{"xml decl", encode(t, japanese.EUCJP, `<?xml version="1.0" encoding="EUC-JP"?><feed>`+jaText+`</feed>`), "application/xml", false, jaText, "euc-jp"},
		// Lying headers.
		{"lie: latin1 header, utf8 body", []byte(html("", jaText)), "text/html; charset=iso-8859-1", true, jaText, "utf-8"},
		{"lie: utf8 header, sjis body with meta", encode(t, japanese.ShiftJIS, html(`<meta charset="Shift_JIS">`, jaText)), "text/html; charset=UTF-8", true, jaText, "shift_jis"},
		{"lie: utf8 header, sjis body no meta", encode(t, japanese.ShiftJIS, html("", jaText)), "text/html; charset=utf-8", true, jaText, "shift_jis"},
		{"lie: 1252 header, sjis body", encode(t, japanese.ShiftJIS, html("", jaText)), "text/html; charset=windows-1252", true, jaText, "shift_jis"},
		{"lie: eucjp header, sjis body", encode(t, japanese.ShiftJIS, html("", jaText)), "text/html; charset=EUC-JP", true, jaText, "shift_jis"},
		{"lie: sjis header, eucjp body", encode(t, japanese.EUCJP, html("", jaText)), "text/html; charset=Shift_JIS", true, jaText, "euc-jp"},
		{"lie: meta sjis, eucjp body", encode(t, japanese.EUCJP, html(`<meta charset="shift_jis">`, jaText)), "text/html", true, jaText, "euc-jp"},
		{"unknown label", encode(t, japanese.ShiftJIS, html("", jaText)), "text/html; charset=x-bogus", true, jaText, "shift_jis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cs := decodeText(tt.body, tt.contentType, tt.isHTML)
			if !strings.Contains(got, tt.want) {
				t.Errorf("decoded %q, want it to contain %q", got, tt.want)
			}
			if cs != tt.wantCharset {
				t.Errorf("charset = %q, want %q", cs, tt.wantCharset)
			}
		})
	}
}

// TestFetchCharset goes through HTTP: a Shift_JIS page whose header claims
// UTF-8 arrives as correct UTF-8 text.
func TestFetchCharset(t *testing.T) {
	body := encode(t, japanese.ShiftJIS, "<html><head><meta charset=shift_jis></head><body>"+jaText+"</body></html>")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	}))
	defer srv.Close()
	f := newTestFetcher(t, Options{Allow: hostPort(t, srv), IgnoreRobots: true}, nil)
	res, err := f.Fetch(context.Background(), srv.URL+"/ja")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, jaText) || res.Charset != "shift_jis" || res.Kind != KindHTML {
		t.Fatalf("got %q charset=%s kind=%s", res.Text, res.Charset, res.Kind)
	}
}
