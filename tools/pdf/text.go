package pdf

import (
	"context"
	"errors"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	lpdf "github.com/ledongthuc/pdf"
)

// matrix is a PDF transformation matrix [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func (m matrix) apply(x, y float64) (float64, float64) {
	return x*m[0] + y*m[2] + m[4], x*m[1] + y*m[3] + m[5]
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

// font is what the walker needs from a font: decoding and glyph widths.
type font struct {
	enc     lpdf.TextEncoding
	twoByte bool
	first   int
	widths  []float64       // simple fonts, from FirstChar
	cid     map[int]float64 // CID fonts (W array)
	dw      float64         // default width, glyph space (1/1000 em)
}

func (f *font) width(code int) float64 {
	if f.twoByte {
		if w, ok := f.cid[code]; ok {
			return w
		}
		return f.dw
	}
	if i := code - f.first; i >= 0 && i < len(f.widths) && f.widths[i] > 0 {
		return f.widths[i]
	}
	return f.dw
}

// abort is panicked from inside the interpreter callback to stop early.
type abort struct{ err error }

var errLimit = errors.New("limit reached")

// walker turns content streams into text, shared across a document's pages
// for the operator and text budgets.
type walker struct {
	ctx     context.Context
	maxOps  int
	maxText int
	ops     int
	text    int
}

// page returns the text of one page; stop reports that a budget ran out.
func (w *walker) page(p pageRef) (text string, stop bool, err error) {
	out := &pageText{}
	defer func() {
		if r := recover(); r != nil {
			text = out.String()
			if a, ok := r.(abort); ok {
				if errors.Is(a.err, errLimit) {
					stop, err = true, nil
				} else {
					err = a.err
				}
				return
			}
			// A malformed stream on one page should not lose the others:
			// keep what was read and carry on.
			err = nil
		}
	}()
	contents := p.v.Key("Contents")
	if contents.Kind() != lpdf.Stream && contents.Kind() != lpdf.Array {
		return "", false, nil
	}
	w.run(contents, p.resources, identity, out, 0)
	return out.String(), false, nil
}

type gstate struct {
	ctm matrix
}

// run interprets one content stream (a page or a form XObject).
func (w *walker) run(strm, resources lpdf.Value, ctm matrix, out *pageText, depth int) {
	fonts := map[string]*font{}
	var (
		stack           []gstate
		tm, tlm         = identity, identity
		cur             *font
		fs, tc, twd, tl float64
		th              = 1.0
		rise            float64
	)
	show := func(raw string) {
		if cur == nil {
			cur = &font{enc: nopEnc{}, dw: 500}
		}
		trm := matrix{fs * th, 0, 0, fs, 0, rise}.mul(tm).mul(ctm)
		x0, y0 := trm.apply(0, 0)
		size := math.Hypot(trm[2], trm[3])
		// Advance the text matrix glyph by glyph.
		adv := 0.0
		step := 1
		if cur.twoByte {
			step = 2
		}
		for i := 0; i+step <= len(raw); i += step {
			code := int(raw[i])
			if step == 2 {
				code = code<<8 | int(raw[i+1])
			}
			a := cur.width(code)/1000*fs + tc
			if step == 1 && code == 32 {
				a += twd
			}
			adv += a * th
		}
		tm = translate(adv, 0).mul(tm)
		end := matrix{fs * th, 0, 0, fs, 0, rise}.mul(tm).mul(ctm)
		x1, y1 := end.apply(0, 0)
		s := cleanText(cur.enc.Decode(raw))
		w.text += len(s)
		if w.text > w.maxText {
			panic(abort{errLimit})
		}
		out.add(s, x0, y0, x1, y1, size)
	}
	nextLine := func(tx, ty float64) {
		tlm = translate(tx, ty).mul(tlm)
		tm = tlm
	}
	lpdf.Interpret(strm, func(stk *lpdf.Stack, op string) {
		w.ops++
		if w.ops > w.maxOps {
			panic(abort{errLimit})
		}
		if w.ops&1023 == 0 {
			if err := w.ctx.Err(); err != nil {
				panic(abort{err})
			}
		}
		n := stk.Len()
		args := make([]lpdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		num := func(i int) float64 {
			if i < len(args) {
				return args[i].Float64()
			}
			return 0
		}
		switch op {
		case "q":
			if len(stack) < 256 {
				stack = append(stack, gstate{ctm})
			}
		case "Q":
			if len(stack) > 0 {
				ctm = stack[len(stack)-1].ctm
				stack = stack[:len(stack)-1]
			}
		case "cm":
			if n == 6 {
				ctm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}.mul(ctm)
			}
		case "BT":
			tm, tlm = identity, identity
		case "ET":
		case "Tf":
			if n == 2 {
				name := args[0].Name()
				f, ok := fonts[name]
				if !ok {
					f = loadFont(resources.Key("Font").Key(name))
					fonts[name] = f
				}
				cur, fs = f, num(1)
			}
		case "Tc":
			tc = num(0)
		case "Tw":
			twd = num(0)
		case "Tz":
			th = num(0) / 100
		case "TL":
			tl = num(0)
		case "Ts":
			rise = num(0)
		case "Td":
			nextLine(num(0), num(1))
		case "TD":
			tl = -num(1)
			nextLine(num(0), num(1))
		case "Tm":
			if n == 6 {
				tlm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}
				tm = tlm
			}
		case "T*":
			nextLine(0, -tl)
		case "Tj":
			if n >= 1 {
				show(args[n-1].RawString())
			}
		case "'":
			nextLine(0, -tl)
			if n >= 1 {
				show(args[n-1].RawString())
			}
		case "\"":
			if n == 3 {
				twd, tc = num(0), num(1)
			}
			nextLine(0, -tl)
			if n >= 1 {
				show(args[n-1].RawString())
			}
		case "TJ":
			if n < 1 {
				return
			}
			arr := args[n-1]
			for i := 0; i < arr.Len() && i < 1<<16; i++ {
				x := arr.Index(i)
				switch x.Kind() {
				case lpdf.String:
					show(x.RawString())
				case lpdf.Integer, lpdf.Real:
					tm = translate(-x.Float64()/1000*fs*th, 0).mul(tm)
				}
			}
		case "Do":
			if n < 1 || depth >= 8 {
				return
			}
			xo := resources.Key("XObject").Key(args[0].Name())
			if xo.Kind() != lpdf.Stream || xo.Key("Subtype").Name() != "Form" {
				return
			}
			fm := identity
			if m := xo.Key("Matrix"); m.Len() == 6 {
				fm = matrix{m.Index(0).Float64(), m.Index(1).Float64(), m.Index(2).Float64(),
					m.Index(3).Float64(), m.Index(4).Float64(), m.Index(5).Float64()}
			}
			res := xo.Key("Resources")
			if res.Kind() != lpdf.Dict {
				res = resources
			}
			w.run(xo, res, fm.mul(ctm), out, depth+1)
		}
	})
}

// loadFont reads encoding and widths from a font dictionary.
func loadFont(v lpdf.Value) *font {
	f := &font{dw: 500}
	if v.Kind() != lpdf.Dict {
		f.enc = nopEnc{}
		return f
	}
	lf := lpdf.Font{V: v}
	f.enc = lf.Encoder()
	if v.Key("Subtype").Name() == "Type0" {
		f.twoByte = true
		f.dw = 1000
		desc := v.Key("DescendantFonts").Index(0)
		if dw := desc.Key("DW"); dw.Kind() == lpdf.Integer || dw.Kind() == lpdf.Real {
			f.dw = dw.Float64()
		}
		f.cid = parseW(desc.Key("W"))
		return f
	}
	f.first = int(v.Key("FirstChar").Int64())
	ws := v.Key("Widths")
	for i := 0; i < ws.Len() && i < 256; i++ {
		f.widths = append(f.widths, ws.Index(i).Float64())
	}
	if len(f.widths) == 0 {
		f.dw = standardWidth(v.Key("BaseFont").Name())
	}
	return f
}

// parseW reads a CID font W array: [c [w1 w2 ...]] or [cfirst clast w].
func parseW(w lpdf.Value) map[int]float64 {
	m := map[int]float64{}
	const maxEntries = 1 << 16
	for i := 0; i < w.Len() && len(m) < maxEntries; {
		c := int(w.Index(i).Int64())
		next := w.Index(i + 1)
		if next.Kind() == lpdf.Array {
			for j := 0; j < next.Len() && len(m) < maxEntries; j++ {
				m[c+j] = next.Index(j).Float64()
			}
			i += 2
			continue
		}
		last := int(next.Int64())
		width := w.Index(i + 2).Float64()
		for c2 := c; c2 <= last && c2-c < maxEntries && len(m) < maxEntries; c2++ {
			m[c2] = width
		}
		i += 3
	}
	return m
}

// standardWidth is an average glyph width for the standard 14 fonts, which
// may appear without a Widths array.
func standardWidth(base string) float64 {
	switch {
	case strings.HasPrefix(base, "Courier"):
		return 600
	case strings.HasPrefix(base, "Times"):
		return 450
	default:
		return 500
	}
}

type nopEnc struct{}

func (nopEnc) Decode(raw string) string { return raw }

// cleanText makes decoded text valid UTF-8, drops control characters, and
// expands Latin ligatures so quotes can be matched.
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n':
			return ' '
		case r == 0xFFFD || unicode.IsControl(r):
			return -1
		}
		return r
	}, ligatures.Replace(s))
}

var ligatures = strings.NewReplacer("\uFB00", "ff", "\uFB01", "fi", "\uFB02", "fl", "\uFB03", "ffi", "\uFB04", "ffl", "\uFB05", "st", "\uFB06", "st")

// pageText assembles shown strings into lines, inserting a space when the
// next string starts noticeably to the right of where the last one ended,
// and a line break when it starts on another baseline.
type pageText struct {
	b      strings.Builder
	have   bool
	lx, ly float64 // end of the last string, user space
	lsize  float64
}

func (p *pageText) add(s string, x0, y0, x1, y1, size float64) {
	if s == "" {
		return
	}
	if size <= 0 || math.IsNaN(size) || math.IsInf(size, 0) {
		size = 1
	}
	if p.have {
		ref := math.Max(size, p.lsize)
		dy := y0 - p.ly
		dx := x0 - p.lx
		switch {
		case math.Abs(dy) > 0.5*ref:
			p.newline()
		case dx > 0.15*ref || dx < -0.5*ref:
			p.space()
		}
	}
	p.b.WriteString(s)
	p.have, p.lx, p.ly, p.lsize = true, x1, y1, size
}

func (p *pageText) last() byte {
	s := p.b.String()
	if s == "" {
		return '\n'
	}
	return s[len(s)-1]
}

func (p *pageText) newline() {
	if c := p.last(); c == ' ' {
		s := strings.TrimRight(p.b.String(), " ")
		p.b.Reset()
		p.b.WriteString(s)
	}
	if p.last() != '\n' {
		p.b.WriteByte('\n')
	}
}

func (p *pageText) space() {
	if c := p.last(); c != ' ' && c != '\n' {
		p.b.WriteByte(' ')
	}
}

func (p *pageText) String() string {
	lines := strings.Split(p.b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
