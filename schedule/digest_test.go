package schedule_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/sqlitetest"
)

func TestCompareWhatsNew(t *testing.T) {
	prevDue := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	prev := &schedule.Firing{Due: prevDue, Digest: &schedule.Digest{
		Findings: []string{
			"Competitor X raised prices by 10% in March",
			"Competitor Y opened an office in Osaka",
			"経済産業省は生成AIの利用に関するガイドラインを公表した",
		},
		Sources: []research.Source{{URL: "https://news.example.com/x-prices?utm_source=feed", Title: "X prices"}, {URL: "https://y.example/osaka/"}},
	}}
	w := schedule.Compare(prev, []string{
		"In March, Competitor X raised its prices by 10%",     // rephrased: known
		"Competitor X raised prices by 15% in April",          // new numbers: new
		"経済産業省が生成AIの利用に関するガイドラインを公表した。",                       // rephrased Japanese: known
		"Competitor Z was acquired by a private equity firm",  // new
		"competitor z was acquired by a private equity firm.", // duplicate within the run
	}, []research.Source{
		{URL: "HTTPS://News.Example.com/x-prices#top", Title: "X prices"}, // same after normalisation
		{URL: "https://y.example/osaka"},
		{URL: "https://z.example/deal", Title: "Z deal"},
	})
	if !w.Since.Equal(prevDue) || w.First() {
		t.Fatalf("Since = %v", w.Since)
	}
	if got := strings.Join(w.NewFindings, " | "); got != "Competitor X raised prices by 15% in April | Competitor Z was acquired by a private equity firm" {
		t.Errorf("new findings: %s", got)
	}
	if len(w.KnownFindings) != 2 {
		t.Errorf("known findings: %q", w.KnownFindings)
	}
	if len(w.NewSources) != 1 || w.NewSources[0].URL != "https://z.example/deal" || len(w.KnownSources) != 2 {
		t.Errorf("sources: new %v known %v", w.NewSources, w.KnownSources)
	}
	first := schedule.Compare(nil, []string{"a thing"}, []research.Source{{URL: "https://a.example"}})
	if !first.First() || len(first.NewFindings) != 1 || len(first.NewSources) != 1 {
		t.Errorf("first digest: %+v", first)
	}
}

func TestExtractFindings(t *testing.T) {
	got := schedule.ExtractFindings("- **A** rose[^1]\n- B fell, see [page](https://b.example)\nText", "")
	if strings.Join(got, "|") != "A rose|B fell, see page" {
		t.Errorf("summary bullets: %q", got)
	}
	report := "# Title\n\nIntro.\n\n## 主な発見\n\n1. 規制が強化された\n2. 罰則が導入された\n\n## 詳細\n- not this\n"
	got = schedule.ExtractFindings("no bullets here.", report)
	if strings.Join(got, "|") != "規制が強化された|罰則が導入された" {
		t.Errorf("report section: %q", got)
	}
	got = schedule.ExtractFindings("First point. Second point! 三つ目。", "")
	if len(got) != 3 {
		t.Errorf("sentences: %q", got)
	}
}

type fakeResearcher struct {
	results []research.Result
	reqs    []research.DigestRequest
}

func (f *fakeResearcher) Research(_ context.Context, req research.DigestRequest) (research.Result, error) {
	f.reqs = append(f.reqs, req)
	if len(f.results) == 0 {
		return research.Result{}, errors.New("no more results")
	}
	r := f.results[0]
	f.results = f.results[1:]
	return r, nil
}

type fakePoster struct {
	mu       sync.Mutex
	messages []schedule.DigestMessage
	files    map[string]string // name → content
	threads  []string
}

func (p *fakePoster) PostDigest(_ context.Context, channel string, m schedule.DigestMessage) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.messages = append(p.messages, m)
	return "1700000000.00000" + string(rune('0'+len(p.messages))), nil
}

func (p *fakePoster) UploadReport(_ context.Context, channel, threadTS, name, title, md string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files = map[string]string{}
	}
	p.files[name] = md
	p.threads = append(p.threads, threadTS)
	return nil
}

// TestDigestAgainstPreviousDigest: two weekly firings through the scheduler;
// the second digest leads with what is new and only references the rest.
func TestDigestAgainstPreviousDigest(t *testing.T) {
	st := sqlitetest.Schedules(t)
	weekly(t, st, monday9.Add(-3*24*time.Hour))
	res := &fakeResearcher{results: []research.Result{
		{Title: "Competitor news", Summary: "- Competitor X raised prices by 10% in March\n- Competitor Y opened an office in Osaka",
			Report: "# Competitor news\n\n## Details\nX and Y.", Cited: []research.Source{{URL: "https://x.example/prices", Title: "X prices"}, {URL: "https://y.example/osaka", Title: "Y Osaka"}}},
		{Title: "Competitor news", Summary: "- In March, Competitor X raised its prices by 10%\n- Competitor Z was acquired by Fund F",
			Report: "# Competitor news\n\n## Details\nX and Z.", Cited: []research.Source{{URL: "https://x.example/prices/?utm_campaign=a", Title: "X prices"}, {URL: "https://z.example/deal", Title: "Z deal"}}},
	}}
	poster := &fakePoster{}
	clk := clock.NewManual(monday9)
	s := newSched(t, st, clk, &schedule.DigestRunner{Researcher: res, Poster: poster})
	tick(t, s)
	clk.Set(monday9.Add(7 * 24 * time.Hour))
	tick(t, s)
	if len(poster.messages) != 2 || len(poster.files) != 2 {
		t.Fatalf("messages %d files %d", len(poster.messages), len(poster.files))
	}
	if res.reqs[0].ThreadID == res.reqs[1].ThreadID || res.reqs[0].Question != "competitor news" {
		t.Fatalf("requests: %+v", res.reqs)
	}
	m := poster.messages[1]
	if len(m.WhatsNew.NewFindings) != 1 || m.WhatsNew.NewFindings[0] != "Competitor Z was acquired by Fund F" ||
		len(m.WhatsNew.NewSources) != 1 || m.WhatsNew.NewSources[0].URL != "https://z.example/deal" {
		t.Fatalf("what's new: %+v", m.WhatsNew)
	}
	if !strings.Contains(m.Text, "New since 2026-03-09 09:00 JST: 1 findings, 1 sources (1 already reported)") {
		t.Errorf("summary text: %s", m.Text)
	}
	name := "digest-competitor-news-20260316-0900.md"
	md := poster.files[name]
	for _, want := range []string{
		"# Competitor news — digest of 2026-03-16 09:00 JST",
		"## New since 2026-03-09 09:00 JST",
		"### New findings\n\n- Competitor Z was acquired by Fund F\n",
		"### New sources\n\n- [Z deal](https://z.example/deal)\n",
		"## Already reported",
		"- In March, Competitor X raised its prices by 10%",
		"Sources seen before (1): [X prices]",
		"## Full report\n\n### Competitor news",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report %s lacks %q:\n%s", name, want, md)
		}
	}
	if strings.Index(md, "New findings") > strings.Index(md, "Already reported") {
		t.Error("known findings come before new ones")
	}
	if poster.threads[1] != "1700000000.000002" {
		t.Errorf("report not in the message's thread: %v", poster.threads)
	}
	// The stored digest carries the older findings forward.
	f := firing(t, st, "w", monday9.Add(7*24*time.Hour))
	if f.Digest == nil || len(f.Digest.Findings) != 3 || f.Digest.NewFindings != 1 || f.Digest.MessageTS == "" {
		t.Fatalf("stored digest: %+v", f.Digest)
	}
}
