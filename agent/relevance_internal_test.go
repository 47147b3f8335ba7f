package agent

import (
	"testing"

	"deepresearch/tools/search"
)

func TestRankResults(t *testing.T) {
	for _, tc := range []struct {
		name, question, subtask, query, lang string
		results                              []search.Result
		first                                string   // URL ranked first
		off                                  []string // URLs judged off-topic
	}{
		{
			name: "off-topic skipped, best match first", question: "What warehouse robots does Norvane sell?", subtask: "Norvane robot models", query: "Norvane warehouse robot", lang: "en",
			results: []search.Result{
				{URL: "https://a.example/bioplastics", Title: "Bioplastics in packaging", Snippet: "Compostable films replace trays."},
				{URL: "https://b.example/news", Title: "Logistics news", Snippet: "A new warehouse opened in Leeds."},
				{URL: "https://c.example/norvane-robots", Title: "Norvane launches a warehouse robot", Snippet: "The robot picks totes."},
			},
			first: "https://c.example/norvane-robots", off: []string{"https://a.example/bioplastics"},
		},
		{
			name: "Japanese", question: "国内の生成AI規制の動向", subtask: "法制度", query: "AI推進法 成立", lang: "ja",
			results: []search.Result{
				{URL: "https://x.example/1", Title: "今日の献立", Snippet: "鶏肉と野菜の煮物を作りました。"},
				{URL: "https://x.example/2", Title: "AI推進法が成立", Snippet: "国会で法律が成立した。"},
			},
			first: "https://x.example/2", off: []string{"https://x.example/1"},
		},
		{
			name: "another script cannot be judged", question: "請求システムの書き換えについて決めたこと", subtask: "請求システム", query: "請求 書き換え", lang: "ja",
			results: []search.Result{
				{URL: "https://x.example/ja", Title: "社内報", Snippet: "請求システムの刷新を発表。"},
				{URL: "https://slack.example/m", Title: "Message in #billing", Snippet: "We decided to ship the Go rewrite of billing."},
			},
			first: "https://x.example/ja",
		},
		{
			name: "nothing to judge by is kept", question: "EU AI Act fines", subtask: "Penalties", query: "AI Act fines", lang: "en",
			results: []search.Result{{URL: "https://files.example/4471"}},
			first:   "https://files.example/4471",
		},
		{
			name: "a word or two is too little to judge by", question: "What does the EU AI Act require?", subtask: "Timeline", query: "EU AI Act timeline", lang: "en",
			results: []search.Result{{URL: "https://files.example/audit.pdf", Title: "PDF /audit.pdf"}},
			first:   "https://files.example/audit.pdf",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ranked, off := rankResults(tc.results, topicTerms(tc.question, tc.subtask, tc.query), tc.lang)
			if ranked[0].URL != tc.first {
				t.Errorf("first %s, want %s", ranked[0].URL, tc.first)
			}
			if len(off) != len(tc.off) {
				t.Errorf("off-topic %v, want %v", off, tc.off)
			}
			for _, u := range tc.off {
				if !off[u] {
					t.Errorf("%s not off-topic", u)
				}
			}
		})
	}
}
