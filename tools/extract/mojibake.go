package extract

import (
	"bytes"
	"unicode/utf8"
)

// cp1252High maps the characters that windows-1252 puts at bytes 0x80–0x9F
// back to those bytes.
var cp1252High = map[rune]byte{
	'€': 0x80, '‚': 0x82, 'ƒ': 0x83, '„': 0x84, '…': 0x85, '†': 0x86, '‡': 0x87, 'ˆ': 0x88,
	'‰': 0x89, 'Š': 0x8A, '‹': 0x8B, 'Œ': 0x8C, 'Ž': 0x8E, '‘': 0x91, '’': 0x92, '“': 0x93,
	'”': 0x94, '•': 0x95, '–': 0x96, '—': 0x97, '˜': 0x98, '™': 0x99, 'š': 0x9A, '›': 0x9B,
	'œ': 0x9C, 'ž': 0x9E, 'Ÿ': 0x9F,
}

// continuationByte returns the byte that r stands for when UTF-8 text was
// decoded as Latin-1 or windows-1252, if that byte is a UTF-8
// continuation byte (0x80–0xBF).
func continuationByte(r rune) (byte, bool) {
	if r >= 0x80 && r <= 0xBF {
		return byte(r), true
	}
	b, ok := cp1252High[r]
	return b, ok
}

// fixMojibake repairs UTF-8 text that was decoded as Latin-1 or
// windows-1252 and encoded again ("dogâ€™s" for "dog’s", "Ã©" for "é"):
// a character that stands for a UTF-8 lead byte followed by the
// characters that stand for its continuation bytes is replaced by the
// character those bytes encode. data must be valid UTF-8; text without
// such sequences is returned unchanged.
func fixMojibake(data []byte) []byte {
	// Every such sequence starts with U+00C2–U+00F4, encoded as 0xC3
	// 0x82–0xB4 or 0xC2 (never, since U+00C2 is 0xC3 0x82): look for
	// 0xC3 first, cheaply.
	if bytes.IndexByte(data, 0xC3) < 0 {
		return data
	}
	var out []byte
	last := 0
	var seq [4]byte
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r < 0xC2 || r > 0xF4 {
			i += n
			continue
		}
		want := 2
		switch {
		case r >= 0xF0:
			want = 4
		case r >= 0xE0:
			want = 3
		}
		seq[0] = byte(r)
		j, k := i+n, 1
		for ; k < want && j < len(data); k++ {
			c, m := utf8.DecodeRune(data[j:])
			b, ok := continuationByte(c)
			if !ok {
				break
			}
			seq[k] = b
			j += m
		}
		if k == want {
			if fixed, size := utf8.DecodeRune(seq[:want]); fixed != utf8.RuneError && size == want {
				out = append(out, data[last:i]...)
				out = utf8.AppendRune(out, fixed)
				last = j
				i = j
				continue
			}
		}
		i += n
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
