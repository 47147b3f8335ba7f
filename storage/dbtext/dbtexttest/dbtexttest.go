// Package dbtexttest holds the hostile texts every store's conformance
// suite writes: what users, the model and the web may send.
package dbtexttest

import (
	"math/rand/v2"
	"strings"
)

// Hostile returns texts a store must accept and read back as dbtext makes
// them: NUL characters (Postgres refuses them in text columns), invalid
// UTF-8, the six characters \u0000 (jsonb refuses them), control
// characters, Slack markup, 100 KB — and n seeded random byte strings
// (any byte, NUL included).
func Hostile(n int) []string {
	out := []string{
		"nul\x00inside", "\x00", "bad utf8 \xff\xfe\xfd", `json escape \u0000 as text`, "esc \x1b]52;c;aGk=\x07 del \x7f c1 \u0085",
		"<!channel> [https://good.example](https://evil.example) ＠here", "日本語\x00の質問", strings.Repeat("long text é ", 9000) + "\x00end",
	}
	r := rand.New(rand.NewPCG(7, 2026))
	for range n {
		b := make([]byte, 1+r.IntN(64))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		out = append(out, string(b))
	}
	return out
}
