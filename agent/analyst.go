package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"deepresearch/agent/citation"
	"deepresearch/agent/dataviz"
	"deepresearch/agent/llm"
	"deepresearch/prompts"
)

// Chart is a chart the data analyst drew from the report's table of
// verified numbers. The report links it by Name; a caller that shows the
// report shows or stores the chart under that name (or rewrites the link).
type Chart struct {
	Name  string `json:"name"` // "chart-1.png"
	Title string `json:"title"`
	PNG   []byte `json:"png"`
}

// nAnalyst names the data analyst's model calls.
const nAnalyst = "analyst"

// maxAnalystEvidence caps the evidence shown to the analyst.
const maxAnalystEvidence = 30

// numericEvidence is the run's evidence whose quotes write a number that
// can be compared: a currency amount, a percentage, or a number that is not
// a bare year.
func numericEvidence(ix evidenceIndex) []prompts.Evidence {
	var out []prompts.Evidence
	for n := 1; n <= len(ix.list) && len(out) < maxAnalystEvidence; n++ {
		if dataviz.Comparable(ix.list[n-1].Quote) {
			out = append(out, ix.prompt(n))
		}
	}
	return out
}

// tableSection is the report's data section: the verified table and the
// chart drawn from it.
type tableSection struct {
	table *dataviz.Table
	chart *Chart
}

// analyze is the data-analysis step of finalize: when at least two pieces
// of evidence write numbers, the model proposes a table of them; the
// program keeps only the values whose number is in the quote they cite
// (dataviz.Verify, arithmetic in the coding sandbox) and draws them. Any
// failure leaves the report without a table: it is never a reason to fail
// the turn.
func (a *writing) analyze(ctx context.Context, c *caller, s State, ix evidenceIndex) *tableSection {
	ev := numericEvidence(ix)
	if len(ev) < 2 {
		return nil
	}
	p, err := prompts.Render(prompts.Analyst, prompts.AnalystData{Question: s.Question, Language: s.Language, Evidence: ev})
	if err != nil {
		a.log.Warn("agent: analyst prompt", "err", err)
		return nil
	}
	var prop dataviz.Proposal
	if err := structured(ctx, c, llm.RoleWriter, p, false, &prop); err != nil {
		a.log.Info("agent: no data table: the analyst did not answer", "err", err)
		return nil
	}
	if len(prop.Cells) == 0 {
		return nil
	}
	look := func(n int) (dataviz.Evidence, bool) {
		if n < 1 || n > len(ix.list) {
			return dataviz.Evidence{}, false
		}
		f := ix.list[n-1]
		return dataviz.Evidence{Quote: f.Quote, Title: f.Title, URL: f.URL}, true
	}
	var calc dataviz.Calculator
	if a.coder != nil {
		calc = a.coder
	}
	t, err := dataviz.Verify(ctx, prop, look, calc)
	for _, d := range t.Dropped {
		a.log.Info("agent: a proposed table value was left out", "why", d)
	}
	if err != nil {
		a.log.Info("agent: no data table", "err", err, "proposed", len(prop.Cells), "dropped", len(t.Dropped))
		return nil
	}
	sec := &tableSection{table: t}
	start := time.Now()
	png, err := dataviz.Render(t, look)
	switch {
	case err == nil:
		sec.chart = &Chart{Name: "chart-1.png", Title: t.Title, PNG: png}
		a.log.Info("agent: chart drawn", "bytes", len(png), "took", time.Since(start))
	case errors.Is(err, dataviz.ErrNothingToDraw):
	default:
		a.log.Warn("agent: chart", "err", err)
	}
	return sec
}

// withTable puts the data section into a checked report, before its
// References, its values cited by footnote: the footnote already citing
// the same evidence, or a new one (the evidence's quote was verified when
// it was collected) added to the References and to the report's check.
func withTable(report string, cit citation.Report, sec *tableSection, ix evidenceIndex, lang string) (string, citation.Report) {
	numOf := map[int]int{} // evidence → footnote number
	last := 0
	for _, f := range cit.Footnotes {
		last = max(last, f.Number)
	}
	var defs []string
	cite := func(n int) string {
		if k, ok := numOf[n]; ok {
			return "[^" + strconv.Itoa(k) + "]"
		}
		e := ix.list[n-1]
		k := 0
		for _, f := range cit.Footnotes {
			if f.Status == citation.Verified && f.Number > 0 && normURL(f.URL) == normURL(e.URL) && f.Quote == e.Quote {
				k = f.Number
				break
			}
		}
		if k == 0 {
			last++
			k = last
			defs = append(defs, fmt.Sprintf("[^%d]: \"%s\" — %s, %s", k, strings.Join(strings.Fields(e.Quote), " "), sourceTitle(e.Title), e.URL))
			cit.Footnotes = append(cit.Footnotes, citation.Footnote{Label: "E" + strconv.Itoa(n), Number: k, URL: e.URL, Title: e.Title, Quote: e.Quote, Status: citation.Verified})
			cit.Cited++
			cit.Verified++
		}
		numOf[n] = k
		return "[^" + strconv.Itoa(k) + "]"
	}
	var b strings.Builder
	b.WriteString(label(lang, "## Data", "## データ") + "\n\n")
	b.WriteString(dataviz.Markdown(sec.table, cite))
	b.WriteString("\n")
	if sec.chart != nil {
		b.WriteString(chartRef(*sec.chart, lang) + "\n\n")
	}
	b.WriteString(label(lang,
		"_Each value is written in the quote it cites; converted values show the cited rate, and the arithmetic was done by a program._\n",
		"_各値は引用した出典の文中にある数値です。換算値には出典の換算レートを示し、計算はプログラムで行っています。_\n"))
	sectionText := b.String()
	refs := "\n## References"
	i := strings.LastIndex(report, refs+"\n")
	if i < 0 {
		report = strings.TrimRight(report, "\n") + "\n\n" + sectionText
		if len(defs) > 0 {
			report += "\n## References\n\n" + strings.Join(defs, "\n") + "\n"
		}
		return report, cit
	}
	out := strings.TrimRight(report[:i], "\n") + "\n\n" + sectionText + report[i:]
	if len(defs) > 0 {
		out = strings.TrimRight(out, "\n") + "\n" + strings.Join(defs, "\n") + "\n"
	}
	return out, cit
}

// chartRef is the report's link to a chart: a markdown image by the
// chart's name, which a caller showing the report resolves.
func chartRef(c Chart, lang string) string {
	return fmt.Sprintf("![%s%s](%s)", label(lang, "Chart: ", "グラフ："), c.Title, c.Name)
}

// keepChartRefs puts back the report's links to its own charts, which
// links.Markdown left inert (a relative name is no source read): only the
// exact lines the program wrote, for the charts the turn drew.
func keepChartRefs(report string, charts []Chart, lang string, inert func(string) string) string {
	for _, c := range charts {
		ref := chartRef(c, lang)
		if d := inert(ref); d != ref {
			report = strings.ReplaceAll(report, d, ref)
		}
	}
	return report
}
