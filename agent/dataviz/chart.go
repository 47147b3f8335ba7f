package dataviz

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"net/url"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Chart size and resolution: legible in a Slack thread and in a report.
const (
	chartWidth  = 7 * vg.Inch
	chartHeight = 4 * vg.Inch
	chartDPI    = 120
)

// palette colours the columns (a colour-blind-safe set).
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xb2, 0xff}, color.RGBA{0xe6, 0x9f, 0x00, 0xff}, color.RGBA{0x00, 0x9e, 0x73, 0xff},
	color.RGBA{0xcc, 0x79, 0xa7, 0xff}, color.RGBA{0x56, 0xb4, 0xe9, 0xff}, color.RGBA{0xd5, 0x5e, 0x00, 0xff},
}

// ErrNothingToDraw: the table has no row with a value in every column a
// chart would draw.
var ErrNothingToDraw = errors.New("dataviz: no complete row to draw")

// Render draws the table's verified values as a grouped bar chart (rows on
// the x axis, one bar per column) with its title, the unit on the y axis
// and a source line naming the evidence it rests on; ev gives the
// evidence's address. Computed columns are not drawn, and a row missing a
// value is left out rather than drawn as zero. The PNG is returned.
func Render(t *Table, ev Lookup) ([]byte, error) {
	cols := drawnColumns(t)
	rows := completeRows(t, cols)
	if len(rows) == 0 || len(cols) == 0 {
		return nil, ErrNothingToDraw
	}

	p := plot.New()
	p.Title.Text = t.Title
	if p.Title.Text == "" {
		p.Title.Text = strings.Join(cols, ", ")
	}
	p.Y.Label.Text = t.Unit
	p.Y.Min = 0
	p.NominalX(rows...)
	barW := vg.Points(min(60, 300/float64(len(rows)*len(cols))))
	for i, c := range cols {
		b, err := columnBars(t, rows, c, barW)
		if err != nil {
			return nil, err
		}
		b.Color = palette[i%len(palette)]
		b.Offset = barW * vg.Length(float64(i)-float64(len(cols)-1)/2)
		p.Add(b)
		if len(cols) > 1 {
			p.Legend.Add(c, b)
			continue
		}
		// one column: the values themselves above their bars
		l, err := valueLabels(t, rows, c)
		if err != nil {
			return nil, err
		}
		p.Add(l)
	}
	if len(cols) == 1 && cols[0] != "" {
		p.X.Label.Text = cols[0]
	}
	p.Legend.Top = true
	p.X.Min, p.X.Max = -0.6, float64(len(rows))-0.4 // room for the outer bars
	if _, ymax := yRange(t, cols); ymax > 0 {
		p.Y.Max = ymax * 1.12 // room for the labels
	}
	return drawPNG(p, SourceLine(t, ev, 140))
}

// drawnColumns are the table's columns of sourced values (not computed).
func drawnColumns(t *Table) []string {
	var cols []string
	for _, c := range t.Columns {
		if cell, ok := firstIn(t, c); ok && !cell.Computed {
			cols = append(cols, c)
		}
	}
	return cols
}

// completeRows are the rows with a value in every one of cols.
func completeRows(t *Table, cols []string) []string {
	var rows []string
	for _, r := range t.Rows {
		complete := true
		for _, c := range cols {
			if _, ok := t.Get(r, c); !ok {
				complete = false
			}
		}
		if complete {
			rows = append(rows, r)
		}
	}
	return rows
}

// columnBars are column c's bars, one per row, barW wide.
func columnBars(t *Table, rows []string, c string, barW vg.Length) (*plotter.BarChart, error) {
	vals := make(plotter.Values, len(rows))
	for j, r := range rows {
		cell, _ := t.Get(r, c)
		vals[j] = cell.Value
	}
	b, err := plotter.NewBarChart(vals, barW)
	if err != nil {
		return nil, fmt.Errorf("dataviz: %w", err)
	}
	b.LineStyle.Width = 0
	return b, nil
}

// valueLabels write column c's values above their bars.
func valueLabels(t *Table, rows []string, c string) (*plotter.Labels, error) {
	xys := make(plotter.XYs, len(rows))
	labels := make([]string, len(rows))
	for j, r := range rows {
		cell, _ := t.Get(r, c)
		xys[j] = plotter.XY{X: float64(j), Y: cell.Value}
		labels[j] = num(cell.Value)
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, fmt.Errorf("dataviz: %w", err)
	}
	for k := range l.TextStyle {
		l.TextStyle[k].XAlign = draw.XCenter
		l.TextStyle[k].YAlign = draw.YBottom
	}
	return l, nil
}

// drawPNG draws the plot on a white canvas above the source line and
// encodes it as PNG.
func drawPNG(p *plot.Plot, source string) ([]byte, error) {
	img := vgimg.NewWith(vgimg.UseWH(chartWidth, chartHeight), vgimg.UseDPI(chartDPI))
	dc := draw.New(img)
	dc.FillPolygon(color.White, []vg.Point{{X: 0, Y: 0}, {X: chartWidth, Y: 0}, {X: chartWidth, Y: chartHeight}, {X: 0, Y: chartHeight}})
	foot := vg.Points(22)
	p.Draw(draw.Crop(dc, 0, 0, foot, 0))
	sty := draw.TextStyle{Color: color.Gray{Y: 0x44}, Font: font.From(plot.DefaultFont, vg.Points(8)), Handler: plot.DefaultTextHandler}
	dc.FillText(sty, vg.Point{X: vg.Points(6), Y: vg.Points(7)}, source)
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("dataviz: png: %w", err)
	}
	return buf.Bytes(), nil
}

func firstIn(t *Table, col string) (Cell, bool) {
	for _, c := range t.Cells {
		if c.Column == col {
			return c, true
		}
	}
	return Cell{}, false
}

func yRange(t *Table, cols []string) (lo, hi float64) {
	for _, c := range t.Cells {
		for _, col := range cols {
			if c.Column == col {
				lo, hi = min(lo, c.Value), max(hi, c.Value)
			}
		}
	}
	return lo, hi
}

// SourceLine names the evidence the table rests on: "Source: [E1]
// shop.example/a; [E2] …", at most n runes.
func SourceLine(t *Table, ev Lookup, n int) string {
	var parts []string
	for _, k := range t.Evidence() {
		e, ok := ev(k)
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("E%d %s", k, shortURL(e.URL)))
	}
	return clean("Source: "+strings.Join(parts, "; "), n)
}

// shortURL is a page's host and path, for a line of small print.
func shortURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return strings.TrimSuffix(u.Host+u.Path, "/")
}
