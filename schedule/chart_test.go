package schedule_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/research"
)

// TestDigestSharesCharts: a digest whose report has a chart has the
// poster share it in the digest's thread, after the report, which keeps
// its link to the chart (the poster names the chart's file: bot's
// TestDigestChartPostedThroughFake).
func TestDigestSharesCharts(t *testing.T) {
	chart := research.Chart{Name: "chart-1.png", Title: "Prices (USD)", PNG: []byte("\x89PNG chart")}
	poster := &fakePoster{}
	w := newWorld(t, clock.NewManual(monday9), &fakeResearcher{results: []research.Result{{Title: "Prices", WriterSummary: "- X costs $5",
		Report: "# Prices\n\n## Data\n\n| | Price |\n\n![Chart: Prices (USD)](chart-1.png)\n", Charts: []research.Chart{chart}}}}, poster)
	weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	w.tick(t, w.proc(t, "p1"))
	name := "digest-competitor-news-20260309-0900.md"
	if got := poster.charts[name]; len(got) != 1 || got[0].Name != chart.Name || string(got[0].PNG) != string(chart.PNG) {
		t.Fatalf("charts shared for %s: %+v", name, got)
	}
	if !slices.Equal(poster.chartIn, poster.threads) {
		t.Errorf("charts shared in threads %v, the report in %v", poster.chartIn, poster.threads)
	}
	if md := poster.files[name]; !strings.Contains(md, "![Chart: Prices (USD)](chart-1.png)") {
		t.Errorf("the report does not link its chart:\n%s", md)
	}
}
