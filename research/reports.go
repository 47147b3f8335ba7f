package research

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"deepresearch/agent"
	"deepresearch/tools/search"
)

// PastReport is a finished report kept as a source for later questions
// ("what did we find last month about X"). Where it was posted decides who
// may later read it (see ReportQuery).
type PastReport struct {
	RunID string
	// Team, Channel and Thread are where it was posted: the workspace, the
	// channel and the face's id of the thread ("" for a report that was
	// never posted to a chat: `ask`, an MCP client).
	Team, Channel, Thread string
	// Private: nobody but Requester saw it (a DM with the bot, the
	// assistant pane, the command line, an MCP client).
	Private   bool
	Requester string
	// URL is what a later report cites: the chat's permalink of the thread
	// it was posted in, or deepresearch://report/RUN_ID.
	URL                   string
	Title, Question, Text string
	CreatedAt             time.Time
}

// ReportQuery searches the past reports a later report may use: the one
// seen by Audience. The rule, kept by every ReportStore:
//   - a report seen in a channel (Private false) finds only the reports
//     posted in that same channel of the same team, and no private one;
//   - a private answer (Private true) finds only the private answers of the
//     same requester (of the same team), and nothing with an empty
//     Requester.
//
// Nothing is visible everywhere: the bot cannot tell here whether a
// channel is public, so every channel is treated as restricted to itself.
type ReportQuery struct {
	Text      string
	Team      string
	Channel   string
	Private   bool
	Requester string
	Limit     int // default 5
}

// ReportStore keeps finished reports and searches them (full text, Japanese
// included: see ReportTerms).
type ReportStore interface {
	// SaveReport stores a report; saving a run's report again replaces it.
	SaveReport(ctx context.Context, r PastReport) error
	// SearchReports returns the best matches that q's audience may see,
	// best first.
	SearchReports(ctx context.Context, q ReportQuery) ([]PastReport, error)
	// PruneReports deletes the reports created before the given time (the
	// retention setting), returning how many.
	PruneReports(ctx context.Context, before time.Time) (int, error)
}

// ReportURI is the stable address of a report that was not posted in a
// chat.
func ReportURI(runID string) string { return "deepresearch://report/" + runID }

// ReportTerms is the text the engines index for s, and the terms a query
// is matched by: words of letters and digits in lower case, and every run
// of Chinese or Japanese characters (which are written without spaces) cut
// into overlapping pairs ("東京都" → "東京 京都"; a lone character stays
// itself). Both engines then split on spaces alike: SQLite's FTS5 with its
// unicode61 tokenizer, Postgres with the 'simple' text search
// configuration; no extension is needed and the same query finds the same
// reports on both.
func ReportTerms(s string) []string {
	var out []string
	var word, cjk []rune
	flushWord := func() {
		if len(word) > 0 {
			out = append(out, string(word))
			word = word[:0]
		}
	}
	flushCJK := func() {
		switch {
		case len(cjk) == 1:
			out = append(out, string(cjk))
		case len(cjk) > 1:
			for i := 0; i+1 < len(cjk); i++ {
				out = append(out, string(cjk[i:i+2]))
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range s {
		switch {
		case isCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushCJK()
			word = append(word, unicode.ToLower(r))
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
	return out
}

// isCJK reports whether r is written without spaces between words: Han,
// Hiragana, Katakana (with its prolonged sound mark) or Hangul.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 'ー'
}

// IndexTerms is the text both engines index for a report: the terms of
// its title, question and text, separated by spaces. A very long report is
// indexed by its first maxIndexedRunes characters (Postgres refuses a text
// search vector over 1 MB).
func IndexTerms(r PastReport) string {
	s := r.Title + "\n" + r.Question + "\n" + r.Text
	if n := 0; len(s) > maxIndexedRunes {
		for i := range s {
			if n == maxIndexedRunes {
				s = s[:i]
				break
			}
			n++
		}
	}
	return strings.Join(ReportTerms(s), " ")
}

// maxIndexedRunes bounds the text a report is found by.
const maxIndexedRunes = 200_000

// QueryTerms are the distinct terms of a query, at most limit, without
// the commonest English words (which would match every report).
func QueryTerms(q string, limit int) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ReportTerms(q) {
		if seen[t] || stopWords[t] || len(out) >= limit {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("a an and are as at be by did do does for from how in is it of on or our the this to was we were what when where which who why with about find found last month") {
		m[w] = true
	}
	return m
}()

// ReportSource offers the stored reports to the agent as a research source
// (agent.PastReports): the audience's reports that match a query, read as
// pages whose text is the report and cited by where they were posted.
type ReportSource struct{ Store ReportStore }

// SearchReports implements agent.PastReports.
func (s ReportSource) SearchReports(ctx context.Context, aud agent.Audience, q search.Query) ([]search.Result, error) {
	found, err := s.Store.SearchReports(ctx, ReportQuery{
		Text: q.Text, Team: aud.Team, Channel: aud.Channel, Private: aud.Private, Requester: aud.Requester, Limit: q.MaxResults,
	})
	if err != nil {
		return nil, fmt.Errorf("research: past reports: %w", err)
	}
	out := make([]search.Result, 0, len(found))
	for _, r := range found {
		title := r.Title
		if title == "" {
			title = r.Question
		}
		if !r.CreatedAt.IsZero() {
			title = fmt.Sprintf("Our report of %s: %s", r.CreatedAt.UTC().Format("2006-01-02"), title)
		}
		out = append(out, search.Result{
			Title: title, URL: r.URL, Snippet: firstLines(r.Text, 3), Content: r.Text, Published: r.CreatedAt,
		})
	}
	return out, nil
}
