package sqlstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"deepresearch/graph"
	"deepresearch/research"
)

// Reports runs the conformance suite of research.ReportStore. open must
// return an empty store for each subtest, and the graph.Saver on the same
// database (its PruneThreads is the retention that stored reports follow).
func Reports(t *testing.T, open func(t *testing.T) (research.ReportStore, graph.Saver)) {
	ctx := context.Background()
	at := time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)
	save := func(t *testing.T, s research.ReportStore, rs ...research.PastReport) {
		t.Helper()
		for _, r := range rs {
			if err := s.SaveReport(ctx, r); err != nil {
				t.Fatalf("save %s: %v", r.RunID, err)
			}
		}
	}
	ids := func(t *testing.T, s research.ReportStore, q research.ReportQuery) []string {
		t.Helper()
		got, err := s.SearchReports(ctx, q)
		if err != nil {
			t.Fatalf("search %+v: %v", q, err)
		}
		var out []string
		for _, r := range got {
			out = append(out, r.RunID)
		}
		return out
	}
	kite := "Project Kite launches on 14 March 2027 in Osaka."

	t.Run("VisibleOnlyWherePosted", func(t *testing.T) {
		s, _ := open(t)
		save(t, s,
			research.PastReport{RunID: "c1", Team: "T1", Channel: "C1", Thread: "1.1", Requester: "U1", URL: "https://x.slack.com/archives/C1/p11", Title: "Kite", Text: kite, CreatedAt: at},
			research.PastReport{RunID: "c2", Team: "T1", Channel: "C2", Thread: "2.1", Requester: "U1", URL: "https://x.slack.com/archives/C2/p21", Title: "Kite", Text: kite, CreatedAt: at},
			research.PastReport{RunID: "dm1", Team: "T1", Channel: "D1", Thread: "3.1", Private: true, Requester: "U1", URL: "https://x.slack.com/archives/D1/p31", Title: "Kite", Text: kite, CreatedAt: at},
			research.PastReport{RunID: "dm2", Team: "T1", Channel: "D2", Thread: "4.1", Private: true, Requester: "U2", URL: "https://x.slack.com/archives/D2/p41", Title: "Kite", Text: kite, CreatedAt: at},
			research.PastReport{RunID: "ask", Private: true, URL: research.ReportURI("ask"), Title: "Kite", Text: kite, CreatedAt: at},
			research.PastReport{RunID: "t2c1", Team: "T2", Channel: "C1", Thread: "5.1", Requester: "U1", URL: "https://y.slack.com/archives/C1/p51", Title: "Kite", Text: kite, CreatedAt: at},
		)
		for _, tc := range []struct {
			name string
			q    research.ReportQuery
			want []string
		}{
			{"channel C1", research.ReportQuery{Team: "T1", Channel: "C1", Requester: "U1"}, []string{"c1"}},
			{"channel C2", research.ReportQuery{Team: "T1", Channel: "C2", Requester: "U2"}, []string{"c2"}},
			{"another channel", research.ReportQuery{Team: "T1", Channel: "C3", Requester: "U1"}, nil},
			{"no channel", research.ReportQuery{Team: "T1", Requester: "U1"}, nil},
			{"a DM's own requester", research.ReportQuery{Team: "T1", Channel: "D1", Private: true, Requester: "U1"}, []string{"dm1"}},
			{"another requester's DM", research.ReportQuery{Team: "T1", Channel: "D2", Private: true, Requester: "U2"}, []string{"dm2"}},
			{"a private answer in another DM of the same person", research.ReportQuery{Team: "T1", Channel: "D9", Private: true, Requester: "U1"}, []string{"dm1"}},
			{"a channel of the DM's channel id", research.ReportQuery{Team: "T1", Channel: "D1", Requester: "U1"}, nil},
			{"a private answer without requester", research.ReportQuery{Private: true}, nil},
			{"the same channel id in another team", research.ReportQuery{Team: "T2", Channel: "C1"}, []string{"t2c1"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.q.Text = "When does Project Kite launch?"
				if got := ids(t, s, tc.q); !slices.Equal(got, tc.want) {
					t.Errorf("found %v, want %v", got, tc.want)
				}
			})
		}
	})

	t.Run("FullTextRanked", func(t *testing.T) {
		s, _ := open(t)
		save(t, s,
			research.PastReport{RunID: "kite", Team: "T", Channel: "C", Title: "Project Kite", Question: "When does Kite launch?", Text: kite + " Kite's launch was delayed once.", URL: "u1", CreatedAt: at},
			research.PastReport{RunID: "osaka", Team: "T", Channel: "C", Title: "Osaka offices", Text: "Our Osaka office opened in 2025.", URL: "u2", CreatedAt: at},
			research.PastReport{RunID: "other", Team: "T", Channel: "C", Title: "EU AI Act", Text: "The AI Act applies from August 2026.", URL: "u3", CreatedAt: at},
		)
		q := research.ReportQuery{Team: "T", Channel: "C"}
		for _, tc := range []struct {
			text string
			want []string
		}{
			{"what did we find about the kite launch", []string{"kite"}},
			{"KITE Osaka", []string{"kite", "osaka"}}, // both words: the Kite report first
			{"AI act", []string{"other"}},
			{"bicycles", nil},
			{"the of what", nil}, // common words alone match nothing
			{"", nil},
		} {
			q.Text = tc.text
			if got := ids(t, s, q); !slices.Equal(got, tc.want) {
				t.Errorf("%q: found %v, want %v", tc.text, got, tc.want)
			}
		}
	})

	t.Run("Japanese", func(t *testing.T) {
		s, _ := open(t)
		save(t, s,
			research.PastReport{RunID: "dc", Team: "T", Channel: "C", Title: "東京のデータセンター", Text: "東京都の新しいデータセンターは2027年に稼働する。電力は再生可能エネルギーで賄う。", URL: "u1", CreatedAt: at},
			research.PastReport{RunID: "osaka", Team: "T", Channel: "C", Title: "大阪支社", Text: "大阪支社は梅田に移転した。", URL: "u2", CreatedAt: at},
		)
		q := research.ReportQuery{Team: "T", Channel: "C"}
		for _, tc := range []struct {
			text string
			want []string
		}{
			{"データセンターはいつ稼働しますか", []string{"dc"}},
			{"東京", []string{"dc"}},
			{"再生可能エネルギー", []string{"dc"}},
			{"梅田への移転について先月何を調べた？", []string{"osaka"}},
			{"名古屋", nil},
		} {
			q.Text = tc.text
			got := ids(t, s, q)
			if len(got) == 0 || len(tc.want) == 0 {
				if !slices.Equal(got, tc.want) {
					t.Errorf("%q: found %v, want %v", tc.text, got, tc.want)
				}
				continue
			}
			if got[0] != tc.want[0] {
				t.Errorf("%q: found %v, want %v first", tc.text, got, tc.want[0])
			}
		}
	})

	t.Run("SavedAgainReplaces", func(t *testing.T) {
		s, _ := open(t)
		r := research.PastReport{RunID: "r", Team: "T", Channel: "C", Title: "Kite", Text: "Kite\x00 flies in Osaka.", URL: "u1", CreatedAt: at}
		save(t, s, r)
		r.Text, r.URL = "Kite flies in Nagoya.", "u2"
		save(t, s, r)
		q := research.ReportQuery{Team: "T", Channel: "C", Text: "Osaka"}
		if got := ids(t, s, q); len(got) != 0 {
			t.Errorf("the replaced text is still found: %v", got)
		}
		q.Text = "nagoya kite"
		got, err := s.SearchReports(ctx, q)
		if err != nil || len(got) != 1 {
			t.Fatalf("found %v, %v; want the report once", got, err)
		}
		want := r
		if g := got[0]; g.URL != "u2" || g.Text != want.Text || g.Title != "Kite" || !g.CreatedAt.Equal(at) || g.Channel != "C" || g.Team != "T" {
			t.Errorf("read back %+v, want %+v", g, want)
		}
	})

	t.Run("RetentionPrunesOldReports", func(t *testing.T) {
		s, saver := open(t)
		save(t, s,
			research.PastReport{RunID: "old", Team: "T", Channel: "C", Text: kite, URL: "u1", CreatedAt: at},
			research.PastReport{RunID: "new", Team: "T", Channel: "C", Text: kite, URL: "u2", CreatedAt: at.Add(48 * time.Hour)},
		)
		if _, err := saver.PruneThreads(ctx, at.Add(24*time.Hour), true); err != nil {
			t.Fatal(err)
		}
		got := ids(t, s, research.ReportQuery{Team: "T", Channel: "C", Text: "kite osaka"})
		if !slices.Equal(got, []string{"new"}) {
			t.Errorf("after retention found %v, want [new]", got)
		}
		n, err := s.PruneReports(ctx, at.Add(72*time.Hour))
		if err != nil || n != 1 {
			t.Errorf("PruneReports = %d, %v; want 1", n, err)
		}
		if got := ids(t, s, research.ReportQuery{Team: "T", Channel: "C", Text: "kite"}); len(got) != 0 {
			t.Errorf("after PruneReports found %v", got)
		}
	})

	t.Run("LongReport", func(t *testing.T) {
		s, _ := open(t)
		body := strings.Repeat("Background material on many unrelated topics. ", 3000) + kite
		save(t, s, research.PastReport{RunID: "long", Team: "T", Channel: "C", Text: body, URL: "u", CreatedAt: at})
		if got := ids(t, s, research.ReportQuery{Team: "T", Channel: "C", Text: "osaka"}); !slices.Equal(got, []string{"long"}) {
			t.Errorf("found %v", got)
		}
	})
}
