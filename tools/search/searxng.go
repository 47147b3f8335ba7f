package search

import (
	"context"
	"encoding/json"
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
	name string
	base *url.URL
	http *httpDoer
	log  *slog.Logger
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
	name := opts.Name
	if name == "" {
		name = "searxng"
	}
	if opts.Categories == "" {
		opts.Categories = "general"
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &SearXNG{
		opts: opts, name: name, base: u, log: log,
		http: newDoer(name, opts.HTTPClient, opts.Timeout, opts.MaxResponseBytes, opts.Retry, log),
	}, nil
}

// Name returns the provider name.
func (s *SearXNG) Name() string { return s.name }

// Scope returns ScopeWeb.
func (s *SearXNG) Scope() Scope { return ScopeWeb }

type searxngResponse struct {
	Query   string `json:"query"`
	Results []struct {
		URL           string   `json:"url"`
		Title         string   `json:"title"`
		Content       string   `json:"content"`
		Engine        string   `json:"engine"`
		Engines       []string `json:"engines"`
		Score         float64  `json:"score"`
		Category      string   `json:"category"`
		PublishedDate *string  `json:"publishedDate"`
	} `json:"results"`
	UnresponsiveEngines [][]string `json:"unresponsive_engines"`
}

// Search runs q on the SearXNG instance. Query.Domains is applied by
// filtering the results (and by a site: operator for a single domain).
func (s *SearXNG) Search(ctx context.Context, q Query) ([]Result, error) {
	text, err := q.Validate()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	n := ClampMaxResults(q.MaxResults)
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
	target := u.String()

	resp, err := s.http.do(ctx, func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, err
		}
		for k, vs := range s.opts.Header {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
		r.Header.Set("Accept", "application/json")
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case resp.status == http.StatusForbidden:
		return nil, fmt.Errorf("%s: %w (HTTP 403): the instance refuses format=json; "+
			"enable it in SearXNG's settings.yml under search: formats: [html, json] and restart", s.name, ErrMisconfigured)
	case resp.status != http.StatusOK:
		return nil, statusError(s.name, resp.status, truncate(string(resp.body), 200),
			"check the credentials in SEARXNG_URL")
	}
	var sr searxngResponse
	if err := json.Unmarshal(resp.body, &sr); err != nil {
		s.log.Error("search: malformed response; returning no results", "provider", s.name,
			"error", err, "bytes", len(resp.body), "body_start", truncate(string(resp.body), 120))
		return []Result{}, nil
	}
	if len(sr.UnresponsiveEngines) > 0 {
		s.log.Debug("search: some SearXNG engines did not answer", "provider", s.name,
			"engines", fmt.Sprint(sr.UnresponsiveEngines))
	}
	out := make([]Result, 0, min(n, len(sr.Results)))
	for _, r := range sr.Results {
		if r.URL == "" {
			continue
		}
		if len(q.Domains) > 0 {
			pu, err := url.Parse(r.URL)
			if err != nil || !matchDomains(pu.Hostname(), q.Domains) {
				continue
			}
		}
		res := Result{
			Title:   strings.TrimSpace(r.Title),
			URL:     r.URL,
			Snippet: strings.TrimSpace(r.Content),
			Score:   r.Score,
			Source:  s.name,
		}
		if r.PublishedDate != nil {
			res.Published = parseDate(*r.PublishedDate)
		}
		out = append(out, res)
		if len(out) == n {
			break
		}
	}
	return out, nil
}
