package dataviz

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"strings"
	"testing"

	"deepresearch/tools/sandbox"
)

var evidence = map[int]Evidence{
	1: {Quote: "The Acme X1 costs $1,299 at launch.", URL: "https://acme.example/x1", Title: "Acme X1"},
	2: {Quote: "Bolt B2 retails for €999 in Germany.", URL: "https://bolt.example/b2", Title: "Bolt B2"},
	3: {Quote: "The reference rate was 1 EUR = 1.08 USD on 1 March.", URL: "https://ecb.example/rates", Title: "Rates"},
	4: {Quote: "The Zed Z3 is priced at 849 dollars.", URL: "https://zed.example/z3", Title: "Zed"},
	5: {Quote: "Revenue was 2.4 billion in 2022 and 3.1 billion in 2024.", URL: "https://acme.example/ir", Title: "IR"},
}

func lookup(n int) (Evidence, bool) { e, ok := evidence[n]; return e, ok }

func runner(t testing.TB) Calculator {
	r, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// countingCalc records the programs it runs (and runs them in the sandbox).
type countingCalc struct {
	next  Calculator
	codes []string
}

func (c *countingCalc) Run(ctx context.Context, code string) (sandbox.Result, error) {
	c.codes = append(c.codes, code)
	return c.next.Run(ctx, code)
}

func TestNumbersIn(t *testing.T) {
	tests := []struct {
		quote string
		value float64
		unit  string
		found bool
	}{
		{"costs $1,299 at launch", 1299, "USD", true},
		{"costs $1,299 at launch", 1.299, "", false},
		{"retails for €999", 999, "EUR", true},
		{"priced at 849 dollars", 849, "USD", true},
		{"a 12.5% share", 12.5, "%", true},
		{"2.4 billion in 2022", 2.4e9, "", true},
		{"2.4 billion in 2022", 2.4, "", true},
		{"model A4 sells", 4, "", false},
		{"¥15,000 in Tokyo", 15000, "JPY", true},
		{"15,000円", 15000, "JPY", true},
		{"costs 19.99 EUR", 19.99, "EUR", true},
		{"costs 19.99 EUR", 19.9, "", false},
	}
	for _, tt := range tests {
		q, ok := findIn(tt.quote, tt.value)
		if ok != tt.found || ok && q.Unit != tt.unit {
			t.Errorf("findIn(%q, %v) = %+v, %v; want unit %q, %v", tt.quote, tt.value, q, ok, tt.unit, tt.found)
		}
	}
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	prices := Proposal{Title: "Launch prices", Unit: "USD", Columns: []string{"Price"},
		Cells: []ProposedCell{
			{Row: "Acme X1", Column: "Price", Value: 1299, Unit: "USD", Evidence: 1},
			{Row: "Bolt B2", Column: "Price", Value: 999, Unit: "EUR", Evidence: 2},
			{Row: "Zed Z3", Column: "Price", Value: 849, Unit: "USD", Evidence: 4},
		},
		Rates: []Rate{{From: "EUR", To: "USD", Rate: 1.08, Evidence: 3}},
	}
	t.Run("every kept number is in its quote; the euro price is converted in the sandbox", func(t *testing.T) {
		calc := &countingCalc{next: runner(t)}
		tb, err := Verify(ctx, prices, lookup, calc)
		if err != nil {
			t.Fatal(err)
		}
		if len(tb.Cells) != 3 || len(tb.Dropped) != 0 {
			t.Fatalf("cells %+v dropped %v", tb.Cells, tb.Dropped)
		}
		c, _ := tb.Get("Bolt B2", "Price")
		if c.Value != 1078.92 || c.Shown != "1078.92 (999 EUR × 1.08)" || len(c.Evidence) != 2 {
			t.Errorf("converted cell %+v", c)
		}
		if len(calc.codes) != 1 || !strings.Contains(calc.codes[0], "999 * 1.08") {
			t.Errorf("sandbox programs %q", calc.codes)
		}
	})
	t.Run("fabricated numbers, wrong units and unknown evidence are dropped", func(t *testing.T) {
		p := prices
		p.Cells = append([]ProposedCell{
			{Row: "Acme X2", Column: "Price", Value: 1499, Unit: "USD", Evidence: 1}, // not in E1
			{Row: "Bolt B3", Column: "Price", Value: 999, Unit: "USD", Evidence: 2},  // E2 says euros
			{Row: "Qux", Column: "Price", Value: 10, Unit: "USD", Evidence: 42},      // no E42
		}, p.Cells...)
		tb, err := Verify(ctx, p, lookup, runner(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []string{"Acme X2", "Bolt B3", "Qux"} {
			if _, ok := tb.Get(r, "Price"); ok {
				t.Errorf("%s kept", r)
			}
		}
		if len(tb.Dropped) != 3 || !strings.Contains(strings.Join(tb.Dropped, "\n"), "1499 is not in the quote of E1") {
			t.Errorf("dropped %q", tb.Dropped)
		}
	})
	t.Run("without a sandbox or a verified rate a euro price is left out", func(t *testing.T) {
		tb, err := Verify(ctx, prices, lookup, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := tb.Get("Bolt B2", "Price"); ok || !strings.Contains(strings.Join(tb.Dropped, "\n"), "no sandbox") {
			t.Errorf("cells %+v dropped %q", tb.Cells, tb.Dropped)
		}
		p := prices
		p.Rates = []Rate{{From: "EUR", To: "USD", Rate: 1.1, Evidence: 3}} // not the quoted rate
		tb, _ = Verify(ctx, p, lookup, runner(t))
		if _, ok := tb.Get("Bolt B2", "Price"); ok || !strings.Contains(strings.Join(tb.Dropped, "\n"), "no verified rate") {
			t.Errorf("cells %+v dropped %q", tb.Cells, tb.Dropped)
		}
	})
	t.Run("growth between the first and last year is computed in the sandbox", func(t *testing.T) {
		p := Proposal{Title: "Revenue", Unit: "USD", Columns: []string{"2022", "2024"}, Cells: []ProposedCell{
			{Row: "Acme", Column: "2022", Value: 2.4e9, Evidence: 5}, {Row: "Acme", Column: "2024", Value: 3.1e9, Evidence: 5}}}
		calc := &countingCalc{next: runner(t)}
		tb, err := Verify(ctx, p, lookup, calc)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := tb.Get("Acme", "Change 2022–2024")
		if !ok || c.Value != 29.2 || !c.Computed || c.Shown != "+29.2%" || len(calc.codes) != 1 {
			t.Errorf("growth %+v %v, programs %q", c, ok, calc.codes)
		}
	})
	t.Run("one value is nothing to compare", func(t *testing.T) {
		p := Proposal{Cells: []ProposedCell{{Row: "Acme X1", Column: "Price", Value: 1299, Evidence: 1}, {Row: "B", Column: "Price", Value: 7, Evidence: 1}}}
		if _, err := Verify(ctx, p, lookup, nil); !errors.Is(err, ErrEmpty) {
			t.Errorf("err %v", err)
		}
	})
}

func TestMarkdownCitesEveryValue(t *testing.T) {
	tb, err := Verify(context.Background(), Proposal{Title: "Prices | [x](http://evil)", Unit: "USD", Cells: []ProposedCell{
		{Row: "Acme X1", Column: "Price", Value: 1299, Evidence: 1}, {Row: "Zed Z3", Column: "Price", Value: 849, Evidence: 4}}}, lookup, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(tb, func(n int) string { return "[E" + string(rune('0'+n)) + "]" })
	want := "**Prices x(http://evil) (USD)**\n\n| | Price |\n|---|---:|\n| Acme X1 | 1299 [E1] |\n| Zed Z3 | 849 [E4] |\n"
	if md != want {
		t.Errorf("markdown\n%s\nwant\n%s", md, want)
	}
}

func TestRender(t *testing.T) {
	tb, err := Verify(context.Background(), Proposal{Title: "Launch prices", Unit: "USD", Cells: []ProposedCell{
		{Row: "Acme X1", Column: "Price", Value: 1299, Evidence: 1}, {Row: "Zed Z3", Column: "Price", Value: 849, Evidence: 4}}}, lookup, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(tb, lookup)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if sz := img.Bounds().Size(); sz.X != 840 || sz.Y != 480 {
		t.Errorf("size %v", sz)
	}
	if got := SourceLine(tb, lookup, 200); got != "Source: E1 acme.example/x1; E4 zed.example/z3" {
		t.Errorf("source line %q", got)
	}
	if _, err := Render(&Table{}, lookup); !errors.Is(err, ErrNothingToDraw) {
		t.Errorf("empty table: %v", err)
	}
}

func BenchmarkRender(b *testing.B) {
	tb, err := Verify(context.Background(), Proposal{Title: "Launch prices", Unit: "USD", Cells: []ProposedCell{
		{Row: "Acme X1", Column: "Price", Value: 1299, Evidence: 1}, {Row: "Zed Z3", Column: "Price", Value: 849, Evidence: 4}}}, lookup, nil)
	if err != nil {
		b.Fatal(err)
	}
	var n int
	for b.Loop() {
		png, err := Render(tb, lookup)
		if err != nil {
			b.Fatal(err)
		}
		n = len(png)
	}
	b.ReportMetric(float64(n), "png-bytes")
}

// TestModelTextIsInert: what the model names (rows, columns, units) cannot
// break the table, mention anyone or link anywhere.
func TestModelTextIsInert(t *testing.T) {
	p := Proposal{Title: "<!channel> prices", Unit: "US$", Cells: []ProposedCell{
		{Row: "Acme | [x](https://evil.example)", Column: "Price\n| 1 |", Value: 1299, Unit: "USD", Evidence: 1},
		{Row: "Zed Z3 @here", Column: "Price\n| 1 |", Value: 849, Evidence: 4}}}
	tb, err := Verify(context.Background(), p, lookup, nil)
	if err != nil {
		t.Fatalf("%v %q", err, tb.Dropped)
	}
	md := Markdown(tb, func(int) string { return "[E1]" })
	for _, bad := range []string{"<", "@", "](", "\n| 1"} {
		if strings.Contains(md, bad) {
			t.Errorf("markdown holds %q:\n%s", bad, md)
		}
	}
	if n := strings.Count(strings.Split(md, "\n")[2], "|"); n != 3 {
		t.Errorf("header row has %d bars:\n%s", n, md)
	}
	// a unit is model text too
	tb, err = Verify(context.Background(), Proposal{Title: "Revenue", Unit: "bn <@U1>|x", Cells: []ProposedCell{
		{Row: "Acme", Column: "2022", Value: 2.4, Evidence: 5}, {Row: "Acme", Column: "2024", Value: 3.1, Evidence: 5}}}, lookup, nil)
	if err != nil {
		t.Fatal(err)
	}
	if md := Markdown(tb, func(int) string { return "[E5]" }); strings.ContainsAny(md, "<@") || strings.Count(strings.Split(md, "\n")[0], "|") != 0 {
		t.Errorf("markdown:\n%s", md)
	}
}
