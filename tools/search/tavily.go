package search

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// DefaultTavilyBaseURL is Tavily's public API.
const DefaultTavilyBaseURL = "https://api.tavily.com"

// TavilyOptions configures a Tavily provider.
type TavilyOptions struct {
	// APIKey is required (cmd/ reads it from TAVILY_API_KEY). It is sent
	// as "Authorization: Bearer <key>" and never logged.
	APIKey string
	// BaseURL defaults to DefaultTavilyBaseURL (cmd/: TAVILY_BASE_URL).
	BaseURL string
	// SearchDepth is "basic" (default), "advanced", "fast" or "ultra-fast".
	SearchDepth string
	// Topic is "general" (default), "news" or "finance".
	Topic string
	// IncludeRawContent asks Tavily for each page's full text (as
	// markdown), returned in Result.Content. It makes answers larger.
	IncludeRawContent bool
	// Country boosts results from one country ("japan"); general topic only.
	Country string
	// HTTPClient defaults to a new http.Client.
	HTTPClient *http.Client
	// Timeout bounds each attempt; default 10s.
	Timeout time.Duration
	// MaxResponseBytes bounds the answer read; default 16 MiB.
	MaxResponseBytes int64
	Retry            RetryPolicy
	Logger           *slog.Logger
	// Name overrides the provider name ("tavily").
	Name string
}

// Tavily searches the web with the Tavily Search API (POST /search).
type Tavily struct {
	opts TavilyOptions
	url  string
	http *httpDoer
}

// NewTavily returns a Tavily provider. It fails with an error wrapping
// ErrUnauthorized when no API key is given.
func NewTavily(opts TavilyOptions) (*Tavily, error) {
	if strings.TrimSpace(opts.APIKey) == "" {
		return nil, fmt.Errorf("tavily: %w: no API key; set TAVILY_API_KEY (get one at https://app.tavily.com)", ErrUnauthorized)
	}
	base := strings.TrimRight(strings.TrimSpace(opts.BaseURL), "/")
	if base == "" {
		base = DefaultTavilyBaseURL
	}
	if err := checkBaseURL(base); err != nil {
		return nil, fmt.Errorf("tavily: %w: TAVILY_BASE_URL: %w", ErrMisconfigured, err)
	}
	if opts.SearchDepth == "" {
		opts.SearchDepth = "basic"
	}
	if opts.Topic == "" {
		opts.Topic = "general"
	}
	d := newDoer(cmp.Or(opts.Name, "tavily"), opts.HTTPClient, opts.Timeout, opts.MaxResponseBytes, opts.Retry, opts.Logger)
	return &Tavily{opts: opts, url: base + "/search", http: d}, nil
}

// Name returns the provider name.
func (t *Tavily) Name() string { return t.http.provider }

// Scope returns ScopeWeb.
func (t *Tavily) Scope() Scope { return ScopeWeb }

type tavilyRequest struct {
	Query             string   `json:"query"`
	Topic             string   `json:"topic,omitempty"`
	SearchDepth       string   `json:"search_depth,omitempty"`
	MaxResults        int      `json:"max_results"`
	TimeRange         string   `json:"time_range,omitempty"`
	Days              int      `json:"days,omitempty"`
	IncludeAnswer     bool     `json:"include_answer"`
	IncludeRawContent any      `json:"include_raw_content"`
	IncludeImages     bool     `json:"include_images"`
	IncludeDomains    []string `json:"include_domains,omitempty"`
	Country           string   `json:"country,omitempty"`
}

type tavilyResponse struct {
	Query        string      `json:"query"`
	Results      []tavilyHit `json:"results"`
	ResponseTime json.Number `json:"response_time"`
	RequestID    string      `json:"request_id"`
}

type tavilyHit struct {
	webHit
	RawContent    *string `json:"raw_content"`
	PublishedDate string  `json:"published_date"`
}

// Search runs q on Tavily.
func (t *Tavily) Search(ctx context.Context, q Query) ([]Result, error) {
	text, n, err := t.http.query(q)
	if err != nil {
		return nil, err
	}
	req := tavilyRequest{
		Query:             text,
		Topic:             t.opts.Topic,
		SearchDepth:       t.opts.SearchDepth,
		MaxResults:        n,
		IncludeAnswer:     false,
		IncludeRawContent: false,
		IncludeDomains:    q.Domains,
	}
	if t.opts.IncludeRawContent {
		req.IncludeRawContent = "markdown"
	}
	if t.opts.Topic == "general" {
		req.Country = t.opts.Country
	}
	if q.Freshness > 0 {
		if t.opts.Topic == "news" {
			req.Days = max(1, int((q.Freshness+Day-1)/Day))
		} else {
			req.TimeRange = TimeRange(q.Freshness)
		}
	}
	resp, err := t.http.postJSON(ctx, t.url, req, func(_ context.Context, h http.Header) error {
		h.Set("Authorization", "Bearer "+t.opts.APIKey)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusOK {
		return nil, t.statusError(resp)
	}
	var tr tavilyResponse
	if !t.http.decode(resp, &tr) {
		return []Result{}, nil
	}
	return collect(tr.Results, n, func(r tavilyHit) (Result, bool) {
		if r.URL == "" {
			t.http.log.Warn("search: result without URL skipped", "provider", t.http.provider, "title", r.Title)
			return Result{}, false
		}
		res := r.result(t.http.provider)
		res.Published = parseDate(r.PublishedDate)
		if r.RawContent != nil {
			res.Content = *r.RawContent
		}
		return res, true
	}), nil
}

func (t *Tavily) statusError(resp *httpResponse) error {
	detail := tavilyDetail(resp.body)
	switch resp.status {
	case 432, 433:
		// 432: plan limit, 433: pay-as-you-go limit.
		return fmt.Errorf("%s: %w (HTTP %d: %s): raise the limit in the Tavily dashboard",
			t.http.provider, ErrQuotaExceeded, resp.status, truncate(detail, 300))
	}
	return statusError(t.http.provider, resp.status, detail,
		"set TAVILY_API_KEY to a valid Tavily API key (tvly-…)")
}

// tavilyDetail pulls the message out of {"detail":{"error":"…"}} or
// {"detail":"…"}; otherwise it returns the start of the body.
func tavilyDetail(body []byte) string {
	var e struct {
		Detail json.RawMessage `json:"detail"`
		Error  string          `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		var inner struct {
			Error string `json:"error"`
		}
		var s string
		switch {
		case json.Unmarshal(e.Detail, &inner) == nil && inner.Error != "":
			return inner.Error
		case json.Unmarshal(e.Detail, &s) == nil && s != "":
			return s
		case e.Error != "":
			return e.Error
		case len(e.Detail) > 0:
			return string(e.Detail)
		}
	}
	return truncate(string(body), 200)
}

// parseDate reads the date formats search APIs use; zero when unknown.
func parseDate(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05",
		"2006-01-02 15:04:05",
		"2006-01-02",
		time.RFC1123Z,
		time.RFC1123,
		"Mon, 2 Jan 2006 15:04:05 MST",
		"Mon, 2 Jan 2006 15:04:05 -0700",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

func checkBaseURL(s string) error {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}
