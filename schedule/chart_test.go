package schedule_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/sqlitetest"
)

// chartPoster is a fakePoster that shares charts too.
type chartPoster struct {
	fakePoster
	charts  map[string][]byte
	threads []string
}

func (p *chartPoster) UploadChart(_ context.Context, channel, threadTS, name, title string, png []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.charts == nil {
		p.charts = map[string][]byte{}
	}
	p.charts[name] = png
	p.threads = append(p.threads, threadTS)
	return nil
}

// TestDigestSharesCharts: a digest whose report has a chart shares it in
// the digest's thread, and the report's link names the chart's file; a
// poster that cannot share charts gets the report alone.
func TestDigestSharesCharts(t *testing.T) {
	png := []byte("\x89PNG chart")
	result := func() research.Result {
		return research.Result{Title: "Prices", Summary: "- X costs $5", Report: "# Prices\n\n## Data\n\n| | Price |\n\n![Chart: Prices (USD)](chart-1.png)\n",
			Charts: []research.Chart{{Name: "chart-1.png", Title: "Prices (USD)", PNG: png}}}
	}
	st := sqlitetest.Schedules(t)
	weekly(t, st, monday9.Add(-3*24*time.Hour))
	poster := &chartPoster{}
	s := newSched(t, st, clock.NewManual(monday9), &schedule.DigestRunner{Researcher: &fakeResearcher{results: []research.Result{result()}}, Poster: poster})
	tick(t, s)
	name := "digest-competitor-news-20260309-0900"
	if !bytes.Equal(poster.charts[name+"-chart-1.png"], png) || len(poster.threads) != 1 || poster.threads[0] != poster.fakePoster.threads[0] {
		t.Fatalf("charts %v in threads %v (report in %v)", len(poster.charts), poster.threads, poster.fakePoster.threads)
	}
	if md := poster.files[name+".md"]; !strings.Contains(md, "![Chart: Prices (USD)]("+name+"-chart-1.png)") {
		t.Errorf("the report does not link its chart:\n%s", md)
	}

	st = sqlitetest.Schedules(t)
	weekly(t, st, monday9.Add(-3*24*time.Hour))
	plain := &fakePoster{}
	s = newSched(t, st, clock.NewManual(monday9), &schedule.DigestRunner{Researcher: &fakeResearcher{results: []research.Result{result()}}, Poster: plain})
	tick(t, s)
	if len(plain.files) != 1 {
		t.Fatalf("files %d", len(plain.files))
	}
}
