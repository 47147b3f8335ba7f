package search

import (
	"bytes"
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
	name string
	url  string
	http *httpDoer
	log  *slog.Logger
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
	name := opts.Name
	if name == "" {
		name = "tavily"
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Tavily{
		opts: opts,
		name: name,
		url:  base + "/search",
		http: newDoer(name, opts.HTTPClient, opts.Timeout, opts.MaxResponseBytes, opts.Retry, log),
		log:  log,
	}, nil
}

// Name returns the provider name.
func (t *Tavily) Name() string { return t.name }

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
	Query   string `json:"query"`
	Results []struct {
		Title         string  `json:"title"`
		URL           string  `json:"url"`
		Content       string  `json:"content"`
		Score         float64 `json:"score"`
		RawContent    *string `json:"raw_content"`
		PublishedDate string  `json:"published_date"`
	} `json:"results"`
	ResponseTime json.Number `json:"response_time"`
	RequestID    string      `json:"request_id"`
}

// Search runs q on Tavily.
func (t *Tavily) Search(ctx context.Context, q Query) ([]Result, error) {
	text, err := q.Validate()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	n := ClampMaxResults(q.MaxResults)
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
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", t.name, err)
	}
	resp, err := t.http.do(ctx, func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json")
		r.Header.Set("Authorization", "Bearer "+t.opts.APIKey)
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusOK {
		return nil, t.statusError(resp)
	}
	var tr tavilyResponse
	if err := json.Unmarshal(resp.body, &tr); err != nil {
		t.log.Error("search: malformed response; returning no results", "provider", t.name,
			"error", err, "bytes", len(resp.body), "body_start", truncate(string(resp.body), 120))
		return []Result{}, nil
	}
	out := make([]Result, 0, len(tr.Results))
	for _, r := range tr.Results {
		if r.URL == "" {
			t.log.Warn("search: result without URL skipped", "provider", t.name, "title", r.Title)
			continue
		}
		res := Result{
			Title:     strings.TrimSpace(r.Title),
			URL:       r.URL,
			Snippet:   strings.TrimSpace(r.Content),
			Score:     r.Score,
			Published: parseDate(r.PublishedDate),
			Source:    t.name,
		}
		if r.RawContent != nil {
			res.Content = *r.RawContent
		}
		out = append(out, res)
		if len(out) == n {
			break
		}
	}
	return out, nil
}

func (t *Tavily) statusError(resp *httpResponse) error {
	detail := tavilyDetail(resp.body)
	switch resp.status {
	case 432, 433:
		// 432: plan limit, 433: pay-as-you-go limit.
		return fmt.Errorf("%s: %w (HTTP %d: %s): raise the limit in the Tavily dashboard",
			t.name, ErrQuotaExceeded, resp.status, truncate(detail, 300))
	}
	return statusError(t.name, resp.status, detail,
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
