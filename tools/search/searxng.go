package search

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// SearXNGOptions configures a SearXNG provider.
type SearXNGOptions struct {
	// BaseURL is the instance, e.g. "http://searxng:8080" (cmd/:
	// SEARXNG_URL). Basic-auth credentials in the URL are sent.
	BaseURL string
	// Categories, comma separated; default "general".
	Categories string
	// Engines, comma separated; empty means the instance's defaults.
	Engines string
	// SafeSearch: 0 off (the zero value), 1 moderate, 2 strict; -1 leaves
	// the instance's default.
	SafeSearch int
	// Header is added to every request (some instances behind a proxy
	// want a token or X-Forwarded-For).
	Header           http.Header
	HTTPClient       *http.Client
	Timeout          time.Duration // per attempt; default 10s
	MaxResponseBytes int64         // default 16 MiB
	Retry            RetryPolicy
	Logger           *slog.Logger
	Name             string // default "searxng"
}

// SearXNG searches through a SearXNG metasearch instance's JSON API.
type SearXNG struct {
	opts SearXNGOptions
	base *url.URL
	http *httpDoer
}

// NewSearXNG returns a SearXNG provider.
func NewSearXNG(opts SearXNGOptions) (*SearXNG, error) {
	raw := strings.TrimSpace(opts.BaseURL)
	if raw == "" {
		return nil, fmt.Errorf("searxng: %w: no instance URL; set SEARXNG_URL", ErrMisconfigured)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("searxng: %w: SEARXNG_URL must be an http(s) URL", ErrMisconfigured)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.Path = strings.TrimSuffix(u.Path, "/search")
	u.RawQuery, u.Fragment = "", ""
	if opts.Categories == "" {
		opts.Categories = "general"
	}
	d := newDoer(cmp.Or(opts.Name, "searxng"), opts.HTTPClient, opts.Timeout, opts.MaxResponseBytes, opts.Retry, opts.Logger)
	return &SearXNG{opts: opts, base: u, http: d}, nil
}

// Name returns the provider name.
func (s *SearXNG) Name() string { return s.http.provider }

// Scope returns ScopeWeb.
func (s *SearXNG) Scope() Scope { return ScopeWeb }

type searxngResponse struct {
	Query               string       `json:"query"`
	Results             []searxngHit `json:"results"`
	UnresponsiveEngines [][]string   `json:"unresponsive_engines"`
}

type searxngHit struct {
	webHit
	Engine        string   `json:"engine"`
	Engines       []string `json:"engines"`
	Category      string   `json:"category"`
	PublishedDate *string  `json:"publishedDate"`
}

// Search runs q on the SearXNG instance. Query.Domains is applied by
// filtering the results (and by a site: operator for a single domain).
func (s *SearXNG) Search(ctx context.Context, q Query) ([]Result, error) {
	text, n, err := s.http.query(q)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.send(ctx, http.MethodGet, s.searchURL(text, q), nil, s.addHeaders)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.status == http.StatusForbidden:
		return nil, fmt.Errorf("%s: %w (HTTP 403): the instance refuses format=json; "+
			"enable it in SearXNG's settings.yml under search: formats: [html, json] and restart", s.http.provider, ErrMisconfigured)
	case resp.status != http.StatusOK:
		return nil, statusError(s.http.provider, resp.status, truncate(string(resp.body), 200),
			"check the credentials in SEARXNG_URL")
	}
	var sr searxngResponse
	if !s.http.decode(resp, &sr) {
		return []Result{}, nil
	}
	if len(sr.UnresponsiveEngines) > 0 {
		s.http.log.Debug("search: some SearXNG engines did not answer", "provider", s.http.provider,
			"engines", fmt.Sprint(sr.UnresponsiveEngines))
	}
	return collect(sr.Results, n, func(r searxngHit) (Result, bool) {
		if r.URL == "" || !inDomains(r.URL, q.Domains) {
			return Result{}, false
		}
		res := r.result(s.http.provider)
		if r.PublishedDate != nil {
			res.Published = parseDate(*r.PublishedDate)
		}
		return res, true
	}), nil
}

// searchURL is the instance's JSON search URL for text (with a site:
// operator for a single domain), the query's language and freshness, and
// the options' categories, engines and safe search.
func (s *SearXNG) searchURL(text string, q Query) string {
	if len(q.Domains) == 1 {
		text += " site:" + strings.TrimSpace(q.Domains[0])
	}
	v := url.Values{}
	v.Set("q", text)
	v.Set("format", "json")
	v.Set("pageno", "1")
	v.Set("categories", s.opts.Categories)
	if s.opts.Engines != "" {
		v.Set("engines", s.opts.Engines)
	}
	if q.Language != "" {
		v.Set("language", q.Language)
	}
	if tr := TimeRange(q.Freshness); tr != "" {
		v.Set("time_range", tr)
	}
	if s.opts.SafeSearch >= 0 && s.opts.SafeSearch <= 2 {
		v.Set("safesearch", fmt.Sprint(s.opts.SafeSearch))
	}
	u := *s.base
	u.Path += "/search"
	u.RawQuery = v.Encode()
	return u.String()
}

// addHeaders adds the options' extra headers.
func (s *SearXNG) addHeaders(_ context.Context, h http.Header) error {
	for k, vs := range s.opts.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return nil
}

// inDomains reports whether raw is on one of domains (any, when none).
func inDomains(raw string, domains []string) bool {
	if len(domains) == 0 {
		return true
	}
	pu, err := url.Parse(raw)
	return err == nil && matchDomains(pu.Hostname(), domains)
}
