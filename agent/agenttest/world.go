// Package agenttest scripts whole researches for tests: a small web (World)
// behind a fake search provider and fetcher, and a Brain that answers the
// agent's model calls on an llmtest server, each step plausibly, from what
// its prompt contains. Knobs on both vary what tests need to vary.
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"deepresearch/agent"
	"deepresearch/tools/search"
)

// Page is one page of the fake web.
type Page struct{ URL, Title, Text string }

// EnglishPages are six pages about the EU AI Act.
func EnglishPages() []Page {
	return []Page{
		{"https://news.example/ai-act-timeline", "AI Act timeline", "The EU AI Act entered into force on 1 August 2024. Prohibited practices apply from 2 February 2025. Obligations for general-purpose AI models apply from 2 August 2025."},
		{"https://law.example/penalties", "AI Act penalties", "Fines for prohibited AI practices can reach 35 million euros or 7% of worldwide annual turnover. Lower tiers apply to other infringements."},
		{"https://blog.example/sme", "AI Act and SMEs", "Small and medium-sized enterprises benefit from regulatory sandboxes. The Commission publishes guidance for smaller companies."},
		{"https://gov.example/gpai", "GPAI code of practice", "Providers of general-purpose AI models must publish a summary of training content. A code of practice was published in July 2025."},
		{"https://think.example/analysis", "Analysis of enforcement", "National market surveillance authorities enforce most provisions. The AI Office supervises general-purpose AI models."},
		{"https://stats.example/adoption", "AI adoption statistics", "In 2024, 13.5% of EU enterprises used artificial intelligence technologies. Adoption was highest among large enterprises."},
	}
}

// JapanesePages are five pages about Japan's AI law and guidelines.
func JapanesePages() []Page {
	return []Page{
		{"https://jp.example/ai-law", "AI推進法の成立", "2025年5月、AI推進法が国会で成立した。本法には罰則規定は設けられていない。政府はAI基本計画を策定する。"},
		{"https://jp.example/guideline", "AI事業者ガイドライン", "総務省と経済産業省はAI事業者ガイドラインを公表した。ガイドラインは法的拘束力を持たない。"},
		{"https://jp.example/copyright", "生成AIと著作権", "文化庁は生成AIと著作権に関する考え方を整理した。学習段階と生成・利用段階を分けて検討している。"},
		{"https://jp.example/strategy", "AI戦略本部", "AI推進法に基づき、内閣にAI戦略本部が設置される。本部長は内閣総理大臣が務める。"},
		{"https://jp.example/survey", "企業の生成AI利用調査", "国内企業の約4割が生成AIを業務で利用していると回答した。利用は大企業で進んでいる。"},
	}
}

// OverlappingPages are pages of other sites that restate facts of
// EnglishPages and JapanesePages — some alike (corroboration), some with
// other numbers (disagreement): a web for cross-checking a team's findings.
func OverlappingPages() []Page {
	return []Page{
		{"https://eu.example/ai-act-dates", "Dates of the AI Act", "The EU AI Act entered into force on 1 August 2024. Its obligations are phased in over three years."},
		{"https://fines.example/overview", "AI Act fines overview", "Fines for prohibited AI practices can reach 30 million euros or 6% of worldwide annual turnover. National authorities set them."},
		{"https://survey.example/ai-use", "AI use in EU firms", "In 2024, 13.5% of EU enterprises used artificial intelligence technologies. Use grew fastest in services."},
		{"https://office.example/gpai", "GPAI obligations", "Providers of general-purpose AI models must publish a summary of training content. The AI Office checks it."},
		{"https://jp2.example/law", "AI推進法の概要", "2025年5月、AI推進法が国会で成立した。基本計画の策定が始まる。"},
		{"https://jp2.example/survey", "生成AI利用の実態", "国内企業の約3割が生成AIを業務で利用していると回答した。中小企業の利用は少ない。"},
	}
}

// FirstSentence is text up to its first full stop (。 or ". ").
func FirstSentence(text string) string {
	for i, r := range text {
		if r == '。' {
			return text[:i+len("。")]
		}
		if r == '.' && i+1 < len(text) && text[i+1] == ' ' {
			return text[:i+1]
		}
	}
	return text
}

// World is a small web: an agent.Searcher and agent.Fetcher over Pages, and
// HTTP handlers serving the same pages to the real search and fetch tools.
// Set the knobs before the first search; it is safe for concurrent use.
type World struct {
	Pages []Page
	// Barrier, when > 0, holds each search until that many are in flight
	// (proof that searches run in parallel, without timing).
	Barrier int
	// OnSearch, when set, runs before each search with its number (from 1);
	// an error fails that search. It may block on ctx.
	OnSearch func(ctx context.Context, n int) error
	// Empty, when set, says which queries find nothing.
	Empty func(query string) bool
	// Find, when set, picks the pages a query finds, in order, in place of
	// the pages in its language; they need not be among Pages (a test may
	// serve them itself). MaxResults still cuts them.
	Find func(query string) []Page
	// Redirects maps a URL to the URL of the page it redirects to (a
	// search may find the first: Find returns it as a Page of its own).
	Redirects map[string]string
	// Canonicals maps a page's URL to the URL it declares as canonical.
	Canonicals map[string]string

	mu       sync.Mutex
	queries  []string
	waiting  int
	release  chan struct{}
	searches atomic.Int64
	fetches  atomic.Int64
}

// NewWorld is a world of pages; none gives the English and the Japanese
// pages.
func NewWorld(pages ...Page) *World {
	if len(pages) == 0 {
		pages = append(EnglishPages(), JapanesePages()...)
	}
	return &World{Pages: pages}
}

var (
	_ agent.Searcher = (*World)(nil)
	_ agent.Fetcher  = (*World)(nil)
)

// Search answers with the pages in the query's language (every page when
// none is), in an order that depends on the query, or with those Find
// picks; MaxResults at most.
func (w *World) Search(ctx context.Context, q search.Query) ([]search.Result, error) {
	n := int(w.searches.Add(1))
	if w.OnSearch != nil {
		if err := w.OnSearch(ctx, n); err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	w.queries = append(w.queries, q.Text)
	if w.Barrier > 0 {
		if w.release == nil {
			w.release = make(chan struct{})
		}
		w.waiting++
		rel := w.release
		if w.waiting == w.Barrier {
			close(rel)
			w.Barrier = 0
		}
		w.mu.Unlock()
		select {
		case <-rel:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		w.mu.Unlock()
	}
	if w.Empty != nil && w.Empty(q.Text) {
		return nil, nil
	}
	var pages []Page
	if w.Find != nil {
		pages = w.Find(q.Text)
	} else {
		in := w.inLanguage(agent.DetectLanguage(q.Text) == "en")
		for i := range in {
			// rotate so different queries lead with different pages
			pages = append(pages, in[(i+len(q.Text))%len(in)])
		}
	}
	var out []search.Result
	for _, p := range pages {
		out = append(out, search.Result{Title: p.Title, URL: p.URL, Snippet: FirstSentence(p.Text), Source: "fake"})
	}
	if q.MaxResults > 0 && len(out) > q.MaxResults {
		out = out[:q.MaxResults]
	}
	return out, nil
}

func (w *World) inLanguage(en bool) []Page {
	var ps []Page
	for _, p := range w.Pages {
		if (agent.DetectLanguage(p.Title+" "+p.Text) == "en") == en {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return w.Pages
	}
	return ps
}

// Fetch reads a page as a reader would: its text between a menu and a
// footer. An unknown URL fails.
func (w *World) Fetch(_ context.Context, u string) (agent.Page, error) {
	w.fetches.Add(1)
	if to, ok := w.Redirects[u]; ok {
		for _, p := range w.Pages {
			if p.URL == to {
				return agent.Page{URL: u, FinalURL: to, Canonical: w.Canonicals[to], Title: p.Title, Text: "Menu Home About\n\n" + p.Text + "\n\nFooter"}, nil
			}
		}
	}
	for _, p := range w.Pages {
		if p.URL == u {
			return agent.Page{URL: u, FinalURL: u, Canonical: w.Canonicals[u], Title: p.Title, Text: "Menu Home About\n\n" + p.Text + "\n\nFooter"}, nil
		}
	}
	return agent.Page{}, fmt.Errorf("agenttest: 404 %s", u)
}

// Queries are the queries searched so far, in order.
func (w *World) Queries() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.queries...)
}

// Searches counts the searches so far.
func (w *World) Searches() int { return int(w.searches.Load()) }

// Fetches counts the pages read so far.
func (w *World) Fetches() int { return int(w.fetches.Load()) }

// path is where a page is served by WebHandler.
func path(u string) string {
	if pu, err := url.Parse(u); err == nil && pu.Path != "" {
		return pu.Path
	}
	return "/"
}

// WebHandler serves each page as an HTML document at its URL's path (the
// host is ignored), with navigation and a footer around the text.
func (w *World) WebHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		for _, p := range w.Pages {
			if path(p.URL) != r.URL.Path {
				continue
			}
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			t, x := html.EscapeString(p.Title), html.EscapeString(p.Text)
			fmt.Fprintf(rw, "<html><head><title>%s</title></head><body><nav>Home | About</nav><article><h1>%s</h1><p>%s</p></article><footer>(c) site</footer></body></html>", t, t, x)
			return
		}
		http.NotFound(rw, r)
	})
}

// SearXNGHandler answers searches as a SearXNG instance does (JSON), with
// the results of Search; their URLs point at base (where WebHandler is
// served) plus the page's path.
func (w *World) SearXNGHandler(base string) http.Handler {
	base = strings.TrimSuffix(base, "/")
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		rs, err := w.Search(r.Context(), search.Query{Text: q})
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		res := make([]map[string]any, 0, len(rs))
		for _, x := range rs {
			res = append(res, map[string]any{"url": base + path(x.URL), "title": x.Title, "content": x.Snippet, "engine": "fake"})
		}
		rw.Header().Set("Content-Type", "application/json")
		// A failed write means the client has gone; there is no one left to tell.
		_ = json.NewEncoder(rw).Encode(map[string]any{"query": q, "results": res})
	})
}
