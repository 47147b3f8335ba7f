// Package search defines a small search interface and its providers: Tavily
// and SearXNG for the public web, Azure AI Search for an organisation's own
// index, and Multi, which queries several providers at once and merges their
// results. The embedded index over a folder of documents lives in the
// subpackage docs.
//
// Nothing in this package reads the environment: callers (cmd/) build each
// provider from an Options struct.
package search

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Query is one search request.
type Query struct {
	// Text is the query. It must contain something other than white space.
	Text string
	// MaxResults is how many results the caller wants. Zero means the
	// provider's default (5); providers clamp it to 1..20.
	MaxResults int
	// Language is a BCP 47 tag ("ja", "en-US"); empty means any. Providers
	// that cannot filter by language ignore it.
	Language string
	// Freshness, when positive, asks for documents published within this
	// long. Providers that only know buckets round up to day, week, month
	// or year (see Day, Week, Month, Year).
	Freshness time.Duration
	// Domains, when set, restricts results to these hosts (and their
	// subdomains), e.g. "go.dev".
	Domains []string
}

// Freshness buckets understood by the web providers.
const (
	Day   = 24 * time.Hour
	Week  = 7 * Day
	Month = 31 * Day
	Year  = 366 * Day
)

// Result is one hit.
type Result struct {
	Title   string
	URL     string
	Snippet string
	// Score is the provider's relevance score. Its scale is provider
	// specific (Tavily 0..1, BM25 unbounded); Multi replaces it with the
	// fused reciprocal-rank score.
	Score     float64
	Published time.Time // zero when unknown
	// Source is the name of the provider that returned the result.
	Source string
	// Sources lists every provider that returned this URL; set by Multi
	// when it merges duplicates (Source is then the best-ranked one).
	Sources []string
	// Content is the full text when the provider returns it (Tavily raw
	// content, a document chunk), otherwise empty.
	Content string
}

// Provider is a search backend.
type Provider interface {
	Name() string
	Search(ctx context.Context, q Query) ([]Result, error)
}

// Scope says whether a provider searches the public web or internal
// documents, so that the two kinds of source can be told apart.
type Scope string

const (
	ScopeWeb      Scope = "web"
	ScopeInternal Scope = "internal"
)

// Scoped is implemented by providers that know their scope.
type Scoped interface {
	Scope() Scope
}

// ScopeOf returns p's scope, or ScopeWeb when p does not say.
func ScopeOf(p Provider) Scope {
	if s, ok := p.(Scoped); ok {
		return s.Scope()
	}
	return ScopeWeb
}

// Sentinel errors. Provider errors wrap one of these, so callers can test
// with errors.Is; the wrapping message says what to do.
var (
	// ErrEmptyQuery: Query.Text is empty or only white space.
	ErrEmptyQuery = errors.New("search: query is empty")
	// ErrUnauthorized: the API key is missing or was rejected (401/403).
	ErrUnauthorized = errors.New("search: unauthorized")
	// ErrRateLimited: the provider kept answering 429 after retries, or
	// asked us to wait longer than RetryPolicy.MaxRetryAfter.
	ErrRateLimited = errors.New("search: rate limited")
	// ErrQuotaExceeded: the account's plan or credit limit is used up.
	ErrQuotaExceeded = errors.New("search: quota exceeded")
	// ErrUnavailable: 5xx, timeouts or network errors after retries.
	ErrUnavailable = errors.New("search: provider unavailable")
	// ErrBadRequest: the provider refused the request (other 4xx).
	ErrBadRequest = errors.New("search: bad request")
	// ErrMisconfigured: the provider is reachable but set up wrongly
	// (SearXNG without the JSON format, unknown Azure index, bad URL).
	ErrMisconfigured = errors.New("search: provider misconfigured")
	// ErrAllFailed: every provider of a Multi failed.
	ErrAllFailed = errors.New("search: all providers failed")
)

// DefaultMaxResults is used when Query.MaxResults is zero or negative.
const DefaultMaxResults = 5

// MaxMaxResults is the upper bound of Query.MaxResults, so one query cannot
// flood the agent's context.
const MaxMaxResults = 20

// ClampMaxResults maps n into 1..MaxMaxResults, with DefaultMaxResults for n <= 0.
func ClampMaxResults(n int) int {
	switch {
	case n <= 0:
		return DefaultMaxResults
	case n > MaxMaxResults:
		return MaxMaxResults
	}
	return n
}

// webHit is the part of a hit the web search APIs share.
type webHit struct {
	Title   string  `json:"title"`
	URL     string  `json:"url"`
	Content string  `json:"content"` // a snippet, not the page
	Score   float64 `json:"score"`
}

// result is the hit as a Result from source.
func (h webHit) result(source string) Result {
	return Result{
		Title:   strings.TrimSpace(h.Title),
		URL:     h.URL,
		Snippet: strings.TrimSpace(h.Content),
		Score:   h.Score,
		Source:  source,
	}
}

// collect turns a provider's hits into at most n results, in order,
// leaving out those conv rejects.
func collect[H any](hits []H, n int, conv func(H) (Result, bool)) []Result {
	out := make([]Result, 0, min(n, len(hits)))
	for _, h := range hits {
		if r, ok := conv(h); ok {
			out = append(out, r)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// Validate checks q and returns the trimmed query text.
func (q Query) Validate() (string, error) {
	t := strings.TrimSpace(q.Text)
	if t == "" {
		return "", ErrEmptyQuery
	}
	return t, nil
}

// TimeRange rounds d up to one of "day", "week", "month", "year"; it
// returns "" for d <= 0 and "year" for anything longer than a year.
func TimeRange(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d <= Day:
		return "day"
	case d <= Week:
		return "week"
	case d <= Month:
		return "month"
	}
	return "year"
}

// matchDomains reports whether rawURL's host is one of domains or a
// subdomain of one. An empty list matches everything.
func matchDomains(host string, domains []string) bool {
	if len(domains) == 0 {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range domains {
		d = strings.ToLower(strings.Trim(strings.TrimSpace(d), "."))
		d = strings.TrimPrefix(d, "*.")
		if d == "" {
			continue
		}
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}
