package dbtext

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\x00b", "ab"},
		{"\x00\x00", ""},
		{"bad \xff\xfe utf8", "bad \uFFFD utf8"},
		{"日本語\x00テキスト", "日本語テキスト"},
		{"keeps \x1b and \t\n", "keeps \x1b and \t\n"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":"x\u0000y"}`, `{"a":"xy"}`},
		{`{"a":"x\\u0000y"}`, `{"a":"x\\u0000y"}`},
		{`{"a":"x\\\u0000y"}`, `{"a":"x\\y"}`},
		{`["\u0000","ok","\u00001"]`, `["","ok","1"]`},
		{"{\"a\":\"raw\x00nul\"}", `{"a":"rawnul"}`},
		{`{"a":"\u0001"}`, `{"a":"\u0001"}`},
	}
	for _, tt := range tests {
		got := JSON([]byte(tt.in))
		if string(got) != tt.want {
			t.Errorf("JSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if !json.Valid(got) && json.Valid([]byte(tt.in)) {
			t.Errorf("JSON(%s) = %s is not JSON", tt.in, got)
		}
	}
}

func FuzzJSON(f *testing.F) {
	f.Add(`{"a":"x\u0000y","b":["\\u0000",1]}`)
	f.Add("\x00\xff")
	f.Fuzz(func(t *testing.T, s string) {
		v, _ := json.Marshal(map[string]string{"s": s, "k\x00": s})
		got := JSON(v)
		if !json.Valid(got) {
			t.Fatalf("JSON(%s) = %s: not JSON", v, got)
		}
		var m map[string]string
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatal(err)
		}
		var plain string // s as encoding/json keeps it (invalid bytes replaced one by one)
		raw, _ := json.Marshal(s)
		_ = json.Unmarshal(raw, &plain)
		if want := String(plain); m["s"] != want {
			t.Fatalf("value %q, want %q", m["s"], want)
		}
		if !utf8.ValidString(String(s)) {
			t.Fatal("String left invalid UTF-8")
		}
	})
}
