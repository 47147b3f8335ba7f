package research_test

import (
	"slices"
	"strings"
	"testing"

	"deepresearch/research"
)

func TestReportTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"The EU AI-Act, 2027!", []string{"the", "eu", "ai", "act", "2027"}},
		{"東京都", []string{"東京", "京都"}},
		{"東", []string{"東"}},
		{"データセンターは2027年に稼働", []string{"デー", "ータ", "タセ", "セン", "ンタ", "ター", "ーは", "2027", "年に", "に稼", "稼働"}},
		{"Kiteの発売", []string{"kite", "の発", "発売"}},
		{"서울 시청", []string{"서울", "시청"}},
		{"Ünïcode ÉTÉ", []string{"ünïcode", "été"}},
		{"  \n\t", nil},
	} {
		if got := research.ReportTerms(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("ReportTerms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := research.QueryTerms("What did we find about the Kite launch? Kite!", 10); !slices.Equal(got, []string{"kite", "launch"}) {
		t.Errorf("QueryTerms = %q", got)
	}
	long := research.IndexTerms(research.PastReport{Text: strings.Repeat("東京 ", 150_000)})
	if n := strings.Count(long, "東京"); n == 0 || n > 100_000 {
		t.Errorf("a long report indexes %d terms", n)
	}
}
