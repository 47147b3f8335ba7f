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
	in := &interp{w: w, resources: resources, out: out, depth: depth, fonts: map[string]*font{},
		ctm: ctm, tm: identity, tlm: identity, th: 1}
	lpdf.Interpret(strm, func(stk *lpdf.Stack, op string) {
		w.tick()
		args := make(operands, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch {
		case in.graphics(op, args):
		case in.textState(op, args):
		default:
			in.showText(op, args)
		}
	})
}

// tick counts one operator against the budget and checks the context
// every 1024; either stops the walk.
func (w *walker) tick() {
	w.ops++
	if w.ops > w.maxOps {
		panic(abort{errLimit})
	}
	if w.ops&1023 == 0 {
		if err := w.ctx.Err(); err != nil {
			panic(abort{err})
		}
	}
}

// operands are an operator's operands in order.
type operands []lpdf.Value

// num is operand i as a number (0 when missing).
func (a operands) num(i int) float64 {
	if i < len(a) {
		return a[i].Float64()
	}
	return 0
}

// matrix is the six operands as a matrix.
func (a operands) matrix() matrix {
	return matrix{a.num(0), a.num(1), a.num(2), a.num(3), a.num(4), a.num(5)}
}

// interp is the state of one content stream's interpretation: the
// graphics state stack and the text state.
type interp struct {
	w         *walker
	resources lpdf.Value
	out       *pageText
	depth     int
	fonts     map[string]*font

	stack   []gstate
	ctm     matrix
	tm, tlm matrix
	cur     *font
	fs      float64 // font size
	tc, twd float64 // character and word spacing
	tl      float64 // leading
	th      float64 // horizontal scaling
	rise    float64
}

// graphics runs the graphics-state and XObject operators; it reports
// whether op was one.
func (in *interp) graphics(op string, args operands) bool {
	switch op {
	case "q":
		if len(in.stack) < 256 {
			in.stack = append(in.stack, gstate{in.ctm})
		}
	case "Q":
		if len(in.stack) > 0 {
			in.ctm = in.stack[len(in.stack)-1].ctm
			in.stack = in.stack[:len(in.stack)-1]
		}
	case "cm":
		if len(args) == 6 {
			in.ctm = args.matrix().mul(in.ctm)
		}
	case "Do":
		if len(args) >= 1 {
			in.form(args[0].Name())
		}
	default:
		return false
	}
	return true
}

// form runs the form XObject named name, eight deep at most.
func (in *interp) form(name string) {
	if in.depth >= 8 {
		return
	}
	xo := in.resources.Key("XObject").Key(name)
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
		res = in.resources
	}
	in.w.run(xo, res, fm.mul(in.ctm), in.out, in.depth+1)
}

// textState runs the text-object, text-state and text-positioning
// operators; it reports whether op was one.
func (in *interp) textState(op string, args operands) bool {
	switch op {
	case "BT":
		in.tm, in.tlm = identity, identity
	case "ET":
	case "Tf":
		if len(args) == 2 {
			in.cur, in.fs = in.font(args[0].Name()), args.num(1)
		}
	case "Tc":
		in.tc = args.num(0)
	case "Tw":
		in.twd = args.num(0)
	case "Tz":
		in.th = args.num(0) / 100
	case "TL":
		in.tl = args.num(0)
	case "Ts":
		in.rise = args.num(0)
	case "Td":
		in.nextLine(args.num(0), args.num(1))
	case "TD":
		in.tl = -args.num(1)
		in.nextLine(args.num(0), args.num(1))
	case "Tm":
		if len(args) == 6 {
			in.tlm = args.matrix()
			in.tm = in.tlm
		}
	case "T*":
		in.nextLine(0, -in.tl)
	default:
		return false
	}
	return true
}

// font is the page's font named name, loaded once.
func (in *interp) font(name string) *font {
	f, ok := in.fonts[name]
	if !ok {
		f = loadFont(in.resources.Key("Font").Key(name))
		in.fonts[name] = f
	}
	return f
}

// showText runs the text-showing operators.
func (in *interp) showText(op string, args operands) {
	n := len(args)
	switch op {
	case "'":
		in.nextLine(0, -in.tl)
	case "\"":
		if n == 3 {
			in.twd, in.tc = args.num(0), args.num(1)
		}
		in.nextLine(0, -in.tl)
	case "TJ":
		if n >= 1 {
			in.showArray(args[n-1])
		}
		return
	case "Tj":
	default:
		return
	}
	if n >= 1 {
		in.show(args[n-1].RawString())
	}
}

// showArray shows the strings of a TJ array, moving by its numbers.
func (in *interp) showArray(arr lpdf.Value) {
	for i := 0; i < arr.Len() && i < 1<<16; i++ {
		x := arr.Index(i)
		switch x.Kind() {
		case lpdf.String:
			in.show(x.RawString())
		case lpdf.Integer, lpdf.Real:
			in.tm = translate(-x.Float64()/1000*in.fs*in.th, 0).mul(in.tm)
		}
	}
}

// nextLine moves to the start of the next line, offset by (tx, ty).
func (in *interp) nextLine(tx, ty float64) {
	in.tlm = translate(tx, ty).mul(in.tlm)
	in.tm = in.tlm
}

// show adds the glyphs of raw at the current position and advances the
// text matrix past them.
func (in *interp) show(raw string) {
	if in.cur == nil {
		in.cur = &font{enc: nopEnc{}, dw: 500}
	}
	trm := matrix{in.fs * in.th, 0, 0, in.fs, 0, in.rise}.mul(in.tm).mul(in.ctm)
	x0, y0 := trm.apply(0, 0)
	size := math.Hypot(trm[2], trm[3])
	in.tm = translate(in.advance(raw), 0).mul(in.tm)
	end := matrix{in.fs * in.th, 0, 0, in.fs, 0, in.rise}.mul(in.tm).mul(in.ctm)
	x1, y1 := end.apply(0, 0)
	s := cleanText(in.cur.enc.Decode(raw))
	in.w.text += len(s)
	if in.w.text > in.w.maxText {
		panic(abort{errLimit})
	}
	in.out.add(s, x0, y0, x1, y1, size)
}

// advance is the width of raw's glyphs in text space, spacing included.
func (in *interp) advance(raw string) float64 {
	adv := 0.0
	step := 1
	if in.cur.twoByte {
		step = 2
	}
	for i := 0; i+step <= len(raw); i += step {
		code := int(raw[i])
		if step == 2 {
			code = code<<8 | int(raw[i+1])
		}
		a := in.cur.width(code)/1000*in.fs + in.tc
		if step == 1 && code == 32 {
			a += in.twd
		}
		adv += a * in.th
	}
	return adv
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
