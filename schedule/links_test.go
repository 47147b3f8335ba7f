package schedule_test

import (
	"strings"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/schedule"
)

// TestDigestReportLinksOnlySources: the digest's file links the sources
// read (this run's and the earlier digests'), and no link shows another
// address than it opens: a source titled with another site's URL is shown
// beside its real link, and a link to anything else is inert. Before,
// "### New sources" linked [https://accounts.google.com/signin](https://src.example/p).
func TestDigestReportLinksOnlySources(t *testing.T) {
	sc := schedule.Schedule{ID: "s1", Topic: "Vendor news", Spec: "0 9 * * 1", Channel: "C1"}
	spoof := research.Source{URL: "https://src.example/p", Title: "https://accounts.google.com/signin"}
	old := research.Source{URL: "https://old.example/a", Title: "Earlier page"}
	res := research.Result{Title: "Vendor news", Report: "# Vendor news\n\nSee [the docs](https://evil.example/phish) and [the page](https://src.example/p).\n",
		Cited: []research.Source{spoof}, Links: []string{"https://src.example/p"}}
	w := schedule.WhatsNew{Since: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), NewSources: []research.Source{spoof}, KnownSources: []research.Source{old}}
	got := schedule.ComposeReport(sc, time.Date(2026, 3, 9, 9, 0, 0, 0, time.UTC), w, res)
	for _, bad := range []string{"[https://accounts.google.com/signin]", "https://evil.example", "](https://evil"} {
		if strings.Contains(got, bad) {
			t.Errorf("the digest keeps %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"(<https://src.example/p>)", "[the page](https://src.example/p)", "[Earlier page](https://old.example/a)", "hxxps://evil[.]example/phish"} {
		if !strings.Contains(got, want) {
			t.Errorf("the digest lacks %q:\n%s", want, got)
		}
	}
}
