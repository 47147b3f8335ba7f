// Package dataviz turns the numbers of a run's evidence into a table and a
// chart that hold no number without a verified citation.
//
// The model proposes a table as structured JSON (Proposal: cells with a
// row, a column, a value, a unit and the evidence number they come from).
// Verify keeps a cell only when its number is written in the quote of the
// evidence it cites (a program check, not the model's word) and the unit
// the quote writes next to it is the unit the cell claims; a cell in
// another currency or unit than its column's is converted at a rate that
// is itself a verified number of the evidence — the arithmetic done by the
// coding sandbox, the conversion shown in the cell — or left out.
// Growth between the first and the last period column is computed the same
// way. Render draws the verified table as a PNG bar chart (gonum/plot) with
// its title, unit and a source line; Markdown writes it as a table whose
// cells cite their evidence.
package dataviz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"deepresearch/tools/sandbox"
)

// Proposal is the table a model proposes from the evidence.
type Proposal struct {
	Title string `json:"title"`
	// Unit is what the table's values are in ("USD", "%", "users"); cells
	// in another currency are converted to it.
	Unit    string         `json:"unit"`
	Columns []string       `json:"columns"`
	Cells   []ProposedCell `json:"cells"`
	// Rates are the conversion rates the evidence states ("1 EUR = 1.08 USD").
	Rates []Rate `json:"rates"`
}

// ProposedCell is one value of the proposal.
type ProposedCell struct {
	Row      string  `json:"row"`
	Column   string  `json:"column"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Evidence int     `json:"evidence"` // the run's evidence number: 3 for [E3]
}

// Rate is a conversion rate the evidence states: 1 From = Rate To.
type Rate struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Rate     float64 `json:"rate"`
	Evidence int     `json:"evidence"`
}

// Evidence is what a cell may cite: the verbatim quote of a page read.
type Evidence struct {
	Quote, Title, URL string
}

// Lookup finds evidence by its number.
type Lookup func(n int) (Evidence, bool)

// Calculator runs a short program for the arithmetic (a *sandbox.Runner).
type Calculator interface {
	Run(ctx context.Context, code string) (sandbox.Result, error)
}

// Cell is a verified value of the table.
type Cell struct {
	Row, Column string
	Value       float64
	Unit        string
	// Evidence are the evidence numbers the value rests on (a converted
	// value cites its amount and its rate; a growth rate its two values).
	Evidence []int
	// Shown is how the value is written in the table ("19.99",
	// "13.04 (12.00 EUR × 1.0867)").
	Shown string
	// Computed: a derived column (growth) the sandbox computed from the
	// table's verified values; charts draw only the values themselves.
	Computed bool
}

// Table is the verified table.
type Table struct {
	Title   string
	Unit    string
	Rows    []string
	Columns []string
	Cells   []Cell
	// Dropped says which proposed values were left out and why.
	Dropped []string
}

// Get returns the cell at row and column.
func (t *Table) Get(row, col string) (Cell, bool) {
	for _, c := range t.Cells {
		if c.Row == row && c.Column == col {
			return c, true
		}
	}
	return Cell{}, false
}

// Evidence lists every evidence number the table cites, in order.
func (t *Table) Evidence() []int {
	var out []int
	for _, c := range t.Cells {
		for _, n := range c.Evidence {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ErrEmpty is returned by Verify when no proposed value could be verified.
var ErrEmpty = errors.New("dataviz: no verified value to tabulate")

// maxCells bounds a proposal (a table in a report, not a data dump).
const maxCells = 60

// Verify keeps the proposed cells whose number is in the quote of the
// evidence they cite, in the unit the quote gives; converts the cells in
// another currency than the table's at a verified rate, and computes growth
// between period columns, with calc (nil: no arithmetic; such cells are
// left out). A table needs two values to compare: fewer is ErrEmpty.
func Verify(ctx context.Context, p Proposal, ev Lookup, calc Calculator) (*Table, error) {
	v := &verifier{t: &Table{Title: clean(p.Title, 120), Unit: NormUnit(p.Unit)}, ev: ev, calc: calc,
		rates: verifiedRates(p.Rates, ev), seen: map[[2]string]bool{}}
	t := v.t
	cells := p.Cells
	if len(cells) > maxCells {
		v.drop("%d values past the first %d", len(cells)-maxCells, maxCells)
		cells = cells[:maxCells]
	}
	for _, pc := range cells {
		v.cell(pc)
	}
	if len(v.convert) > 0 {
		v.convertAll(ctx)
	}
	if len(t.Cells) < 2 {
		return t, ErrEmpty
	}
	t.order(p)
	if err := t.growth(ctx, calc); err != nil {
		v.drop("growth not computed (%v)", err)
	}
	return t, nil
}

// verifier is one Verify: the table being built and the cells left to
// convert.
type verifier struct {
	t       *Table
	ev      Lookup
	calc    Calculator
	rates   []Rate
	seen    map[[2]string]bool // cells filled (or waiting for conversion)
	convert []pendingCell
}

// pendingCell is a verified cell in another unit, to convert at rate
// (divide when invert).
type pendingCell struct {
	c      ProposedCell
	unit   string
	rate   Rate
	invert bool
}

// drop records why a proposed value was left out.
func (v *verifier) drop(format string, args ...any) {
	v.t.Dropped = append(v.t.Dropped, fmt.Sprintf(format, args...))
}

// cell verifies one proposed cell: it is added when its value is in the
// quote it cites in the table's unit, queued for conversion in another
// unit with a verified rate, and dropped otherwise.
func (v *verifier) cell(pc ProposedCell) {
	t := v.t
	pc.Row, pc.Column = clean(pc.Row, 60), clean(pc.Column, 40)
	if pc.Row == "" || pc.Column == "" || math.IsNaN(pc.Value) || math.IsInf(pc.Value, 0) {
		v.drop("a value without a row or a column")
		return
	}
	at := fmt.Sprintf("%s / %s", pc.Row, pc.Column)
	key := [2]string{pc.Row, pc.Column}
	if v.seen[key] {
		v.drop("%s: a second value for the same cell", at)
		return
	}
	unit, ok := v.quotedUnit(pc, at)
	if !ok {
		return
	}
	if t.Unit == "" {
		t.Unit = unit
	}
	if unit == t.Unit {
		v.seen[key] = true
		t.add(Cell{Row: pc.Row, Column: pc.Column, Value: pc.Value, Unit: unit, Evidence: []int{pc.Evidence}, Shown: num(pc.Value)})
		return
	}
	r, invert, ok := rateFor(v.rates, unit, t.Unit)
	if !ok || v.calc == nil {
		why := "no verified rate in the evidence"
		if ok {
			why = "no sandbox for the arithmetic"
		}
		v.drop("%s: %s %s not converted to %s (%s)", at, num(pc.Value), unit, t.Unit, why)
		return
	}
	v.seen[key] = true
	v.convert = append(v.convert, pendingCell{c: pc, unit: unit, rate: r, invert: invert})
}

// quotedUnit checks that the cell's value is in the quote of the evidence
// it cites, in a unit that agrees, and returns the cell's unit: its own,
// else its quote's, else the table's.
func (v *verifier) quotedUnit(pc ProposedCell, at string) (string, bool) {
	e, ok := v.ev(pc.Evidence)
	if !ok {
		v.drop("%s: %s cites evidence E%d, which the run does not have", at, num(pc.Value), pc.Evidence)
		return "", false
	}
	q, ok := findIn(e.Quote, pc.Value)
	if !ok {
		v.drop("%s: %s is not in the quote of E%d", at, num(pc.Value), pc.Evidence)
		return "", false
	}
	unit := NormUnit(pc.Unit)
	if q.Unit != "" && unit != "" && q.Unit != unit {
		v.drop("%s: E%d writes %s in %s, not %s", at, pc.Evidence, q.Text, q.Unit, unit)
		return "", false
	}
	if unit == "" {
		unit = q.Unit
	}
	if unit == "" {
		unit = v.t.Unit // neither the cell nor its quote names one: the table's
	}
	return unit, true
}

// convertAll converts the queued cells to the table's unit, the
// arithmetic the sandbox's: one program for every conversion.
func (v *verifier) convertAll(ctx context.Context) {
	var exprs []string
	for _, cv := range v.convert {
		if cv.invert {
			exprs = append(exprs, fmt.Sprintf("%s / %s", jsNum(cv.c.Value), jsNum(cv.rate.Rate)))
		} else {
			exprs = append(exprs, fmt.Sprintf("%s * %s", jsNum(cv.c.Value), jsNum(cv.rate.Rate)))
		}
	}
	out, err := compute(ctx, v.calc, exprs)
	for i, cv := range v.convert {
		at := fmt.Sprintf("%s / %s", cv.c.Row, cv.c.Column)
		if err != nil {
			v.drop("%s: not converted (%v)", at, err)
			continue
		}
		op := "×"
		if cv.invert {
			op = "÷"
		}
		val := round(out[i], 2)
		v.t.add(Cell{Row: cv.c.Row, Column: cv.c.Column, Value: val, Unit: v.t.Unit,
			Evidence: uniq(cv.c.Evidence, cv.rate.Evidence),
			Shown:    fmt.Sprintf("%s (%s %s %s %s)", num(val), num(cv.c.Value), cv.unit, op, num(cv.rate.Rate))})
	}
}

func (t *Table) add(c Cell) {
	t.Cells = append(t.Cells, c)
}

// order puts rows and columns in the proposal's order (columns as the
// proposal lists them, then as the cells name them; rows as the cells do).
func (t *Table) order(p Proposal) {
	t.Rows, t.Columns = nil, nil
	for _, c := range p.Columns {
		c = clean(c, 40)
		if !slices.Contains(t.Columns, c) && slices.ContainsFunc(t.Cells, func(x Cell) bool { return x.Column == c }) {
			t.Columns = append(t.Columns, c)
		}
	}
	for _, pc := range p.Cells {
		r := clean(pc.Row, 60)
		if !slices.Contains(t.Rows, r) && slices.ContainsFunc(t.Cells, func(x Cell) bool { return x.Row == r }) {
			t.Rows = append(t.Rows, r)
		}
	}
	for _, c := range t.Cells {
		if !slices.Contains(t.Columns, c.Column) {
			t.Columns = append(t.Columns, c.Column)
		}
		if !slices.Contains(t.Rows, c.Row) {
			t.Rows = append(t.Rows, c.Row)
		}
	}
}

// periods reports whether the columns are years (a time series).
func (t *Table) periods() bool {
	if len(t.Columns) < 2 {
		return false
	}
	for _, c := range t.Columns {
		y, err := strconv.Atoi(c)
		if err != nil || y < 1800 || y > 2200 {
			return false
		}
	}
	return true
}

// growth adds a computed column with each row's change from the first to
// the last period, in percent, when the columns are years.
func (t *Table) growth(ctx context.Context, calc Calculator) error {
	if !t.periods() || calc == nil || t.Unit == "%" {
		return nil
	}
	first, last := t.Columns[0], t.Columns[len(t.Columns)-1]
	type pair struct {
		row  string
		a, b Cell
	}
	var ps []pair
	var exprs []string
	for _, r := range t.Rows {
		a, ok1 := t.Get(r, first)
		b, ok2 := t.Get(r, last)
		if !ok1 || !ok2 || a.Value == 0 {
			continue
		}
		ps = append(ps, pair{r, a, b})
		exprs = append(exprs, fmt.Sprintf("(%s - %s) / %s * 100", jsNum(b.Value), jsNum(a.Value), jsNum(a.Value)))
	}
	if len(ps) == 0 {
		return nil
	}
	out, err := compute(ctx, calc, exprs)
	if err != nil {
		return err
	}
	col := fmt.Sprintf("Change %s–%s", first, last)
	for i, p := range ps {
		v := round(out[i], 1)
		t.add(Cell{Row: p.row, Column: col, Value: v, Unit: "%", Computed: true, Evidence: uniq(append(slices.Clone(p.a.Evidence), p.b.Evidence...)...),
			Shown: fmt.Sprintf("%+.1f%%", v)})
	}
	t.Columns = append(t.Columns, col)
	return nil
}

// compute runs the expressions in the sandbox and reads their values.
func compute(ctx context.Context, calc Calculator, exprs []string) ([]float64, error) {
	code := "console.log(JSON.stringify([" + strings.Join(exprs, ", ") + "]));"
	res, err := calc.Run(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("dataviz: sandbox: %w", err)
	}
	var out []float64
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.Output)), &out); err != nil || len(out) != len(exprs) {
		return nil, fmt.Errorf("dataviz: sandbox printed %q", clean(res.Output, 80))
	}
	for _, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("dataviz: sandbox computed a non-number")
		}
	}
	return out, nil
}

// verifiedRates keeps the rates whose number is in their evidence's quote.
func verifiedRates(rs []Rate, ev Lookup) []Rate {
	var out []Rate
	for _, r := range rs {
		r.From, r.To = NormUnit(r.From), NormUnit(r.To)
		if r.From == "" || r.To == "" || r.From == r.To || !(r.Rate > 0) {
			continue
		}
		e, ok := ev(r.Evidence)
		if !ok {
			continue
		}
		if _, ok := findIn(e.Quote, r.Rate); ok {
			out = append(out, r)
		}
	}
	return out
}

// rateFor finds a rate from one unit to another: 1 from = r to, or the
// inverse (invert: divide by it).
func rateFor(rs []Rate, from, to string) (Rate, bool, bool) {
	for _, r := range rs {
		if r.From == from && r.To == to {
			return r, false, true
		}
	}
	for _, r := range rs {
		if r.From == to && r.To == from {
			return r, true, true
		}
	}
	return Rate{}, false, false
}

func uniq(ns ...int) []int {
	var out []int
	for _, n := range ns {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// num writes a value as a table shows it: no exponent, no trailing zeros
// beyond what it has.
func num(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// jsNum writes a value for a program: always a plain literal.
func jsNum(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// clean puts model text on one line, without markdown table or link
// syntax or control characters, at most n runes.
func clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r < ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
			return ' '
		case strings.ContainsRune("|[]<>`*_\\@", r):
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n])
	}
	return s
}
