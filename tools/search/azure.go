package search

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// DefaultAzureAPIVersion is the GA REST API version used by AzureSearch.
const DefaultAzureAPIVersion = "2024-07-01"

// AzureSearchOptions configures an Azure AI Search provider, the default
// search over internal documents; cmd/ can read
// AZURE_SEARCH_ENDPOINT, AZURE_SEARCH_KEY, AZURE_SEARCH_INDEX and the
// optional AZURE_SEARCH_API_VERSION, AZURE_SEARCH_SEMANTIC_CONFIG and
// AZURE_SEARCH_FIELDS (title,url,content[,date]).
type AzureSearchOptions struct {
	// Endpoint is the service URL, "https://<service>.search.windows.net".
	Endpoint string
	// Index is the index name.
	Index string
	// APIKey is a query (or admin) key, sent as the api-key header. Leave
	// it empty and set Token to use Microsoft Entra ID instead.
	APIKey string
	// Token, when set, returns an Entra ID bearer token per request.
	Token func(ctx context.Context) (string, error)
	// APIVersion defaults to DefaultAzureAPIVersion.
	APIVersion string

	// Field names in the index. Defaults: "title", "url", "content".
	// DateField (optional, Edm.DateTimeOffset) fills Result.Published and
	// is used for Query.Freshness. KeyField (optional) builds a
	// "azure-search://<index>/<key>" URL for documents without a URL.
	TitleField, URLField, ContentField, DateField, KeyField string

	// QueryType is "simple" (default), "full" (Lucene) or "semantic".
	QueryType string
	// SemanticConfiguration names the semantic configuration when
	// QueryType is "semantic".
	SemanticConfiguration string
	// SearchMode is "any" (default) or "all".
	SearchMode string
	// Filter is an OData filter always applied, e.g. "team eq 'sales'".
	Filter string

	HTTPClient       *http.Client
	Timeout          time.Duration // per attempt; default 10s
	MaxResponseBytes int64         // default 16 MiB
	Retry            RetryPolicy
	Logger           *slog.Logger
	Name             string // default "azure-search"
}

// AzureSearch queries an Azure AI Search index through its REST API
// (POST /indexes/{index}/docs/search).
type AzureSearch struct {
	opts AzureSearchOptions
	url  string
	http *httpDoer
}

var azureFieldName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*$`)

// NewAzureSearch returns an Azure AI Search provider.
func NewAzureSearch(opts AzureSearchOptions) (*AzureSearch, error) {
	ep := strings.TrimRight(strings.TrimSpace(opts.Endpoint), "/")
	if ep == "" {
		return nil, fmt.Errorf("azure-search: %w: no endpoint; set AZURE_SEARCH_ENDPOINT (https://<service>.search.windows.net)", ErrMisconfigured)
	}
	if err := checkBaseURL(ep); err != nil {
		return nil, fmt.Errorf("azure-search: %w: AZURE_SEARCH_ENDPOINT: %w", ErrMisconfigured, err)
	}
	if strings.TrimSpace(opts.Index) == "" {
		return nil, fmt.Errorf("azure-search: %w: no index; set AZURE_SEARCH_INDEX", ErrMisconfigured)
	}
	if opts.APIKey == "" && opts.Token == nil {
		return nil, fmt.Errorf("azure-search: %w: no key; set AZURE_SEARCH_KEY to a query key", ErrUnauthorized)
	}
	if opts.APIVersion == "" {
		opts.APIVersion = DefaultAzureAPIVersion
	}
	if opts.TitleField == "" {
		opts.TitleField = "title"
	}
	if opts.URLField == "" {
		opts.URLField = "url"
	}
	if opts.ContentField == "" {
		opts.ContentField = "content"
	}
	for _, f := range []string{opts.TitleField, opts.URLField, opts.ContentField, opts.DateField, opts.KeyField} {
		if f != "" && !azureFieldName.MatchString(f) {
			return nil, fmt.Errorf("azure-search: %w: invalid field name %q", ErrMisconfigured, f)
		}
	}
	if opts.QueryType == "" {
		opts.QueryType = "simple"
	}
	u := ep + "/indexes/" + url.PathEscape(opts.Index) + "/docs/search?api-version=" + url.QueryEscape(opts.APIVersion)
	d := newDoer(cmp.Or(opts.Name, "azure-search"), opts.HTTPClient, opts.Timeout, opts.MaxResponseBytes, opts.Retry, opts.Logger)
	return &AzureSearch{opts: opts, url: u, http: d}, nil
}

// Name returns the provider name.
func (a *AzureSearch) Name() string { return a.http.provider }

// Scope returns ScopeInternal.
func (a *AzureSearch) Scope() Scope { return ScopeInternal }

type azureRequest struct {
	Search                string `json:"search"`
	Top                   int    `json:"top"`
	QueryType             string `json:"queryType,omitempty"`
	SearchMode            string `json:"searchMode,omitempty"`
	Select                string `json:"select,omitempty"`
	Filter                string `json:"filter,omitempty"`
	Highlight             string `json:"highlight,omitempty"`
	HighlightPreTag       string `json:"highlightPreTag,omitempty"`
	HighlightPostTag      string `json:"highlightPostTag,omitempty"`
	Count                 bool   `json:"count"`
	SemanticConfiguration string `json:"semanticConfiguration,omitempty"`
	Captions              string `json:"captions,omitempty"`
}

// Search runs q against the index. Query.Language and Query.Domains are
// not used (an index has no notion of them unless Filter says so).
func (a *AzureSearch) Search(ctx context.Context, q Query) ([]Result, error) {
	text, n, err := a.http.query(q)
	if err != nil {
		return nil, err
	}
	resp, err := a.http.postJSON(ctx, a.url, a.request(text, n, q.Freshness), a.authorize)
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusOK {
		detail := azureDetail(resp.body)
		if resp.status == http.StatusNotFound {
			return nil, fmt.Errorf("%s: %w (HTTP 404: %s): check AZURE_SEARCH_INDEX (%q) and AZURE_SEARCH_ENDPOINT",
				a.http.provider, ErrMisconfigured, truncate(detail, 200), a.opts.Index)
		}
		return nil, statusError(a.http.provider, resp.status, detail,
			"set AZURE_SEARCH_KEY to a valid query key for this service")
	}
	var ar struct {
		Value []map[string]json.RawMessage `json:"value"`
	}
	if !a.http.decode(resp, &ar) {
		return []Result{}, nil
	}
	return collect(ar.Value, n, a.result), nil
}

// request is the search request for text: n results with the fields the
// options name, highlights, semantic captions for a semantic query, and a
// date filter for a freshness.
func (a *AzureSearch) request(text string, n int, freshness time.Duration) azureRequest {
	fields := []string{a.opts.TitleField, a.opts.URLField, a.opts.ContentField}
	for _, f := range []string{a.opts.DateField, a.opts.KeyField} {
		if f != "" {
			fields = append(fields, f)
		}
	}
	req := azureRequest{
		Search:           text,
		Top:              n,
		QueryType:        a.opts.QueryType,
		SearchMode:       a.opts.SearchMode,
		Select:           strings.Join(fields, ","),
		Filter:           a.opts.Filter,
		Highlight:        a.opts.ContentField,
		HighlightPreTag:  "<em>",
		HighlightPostTag: "</em>",
	}
	if a.opts.QueryType == "semantic" {
		req.SemanticConfiguration = a.opts.SemanticConfiguration
		req.Captions = "extractive"
	}
	if freshness > 0 && a.opts.DateField != "" {
		since := a.http.retry.Now().Add(-freshness).UTC().Format(time.RFC3339)
		f := a.opts.DateField + " ge " + since
		if req.Filter != "" {
			f = "(" + req.Filter + ") and " + f
		}
		req.Filter = f
	}
	return req
}

// authorize sets the API key, or an Entra ID bearer token when the
// options get one.
func (a *AzureSearch) authorize(ctx context.Context, h http.Header) error {
	if a.opts.Token == nil {
		h.Set("api-key", a.opts.APIKey)
		return nil
	}
	tok, err := a.opts.Token(ctx)
	if err != nil {
		return fmt.Errorf("getting Entra ID token: %w", err)
	}
	h.Set("Authorization", "Bearer "+tok)
	return nil
}

// result reads one document of the index; false for one without a URL
// (or a key to make one from).
func (a *AzureSearch) result(doc map[string]json.RawMessage) (Result, bool) {
	res := Result{
		Title:   jsonText(doc[a.opts.TitleField]),
		URL:     jsonText(doc[a.opts.URLField]),
		Content: jsonText(doc[a.opts.ContentField]),
		Source:  a.http.provider,
		Score:   azureScore(doc),
	}
	if a.opts.DateField != "" {
		res.Published = parseDate(jsonText(doc[a.opts.DateField]))
	}
	if res.URL == "" && a.opts.KeyField != "" {
		if key := jsonText(doc[a.opts.KeyField]); key != "" {
			res.URL = "azure-search://" + url.PathEscape(a.opts.Index) + "/" + url.PathEscape(key)
		}
	}
	if res.URL == "" {
		a.http.log.Warn("search: document without URL skipped; set the URL or key field", "provider", a.http.provider)
		return Result{}, false
	}
	res.Snippet = azureSnippet(doc, a.opts.ContentField)
	if res.Snippet == "" {
		res.Snippet = truncate(res.Content, 300)
	}
	if res.Title == "" {
		res.Title = res.URL
	}
	return res, true
}

// azureScore is the semantic reranker's score when positive, else the
// search score (0 when neither reads).
func azureScore(doc map[string]json.RawMessage) float64 {
	var score float64
	_ = json.Unmarshal(doc["@search.score"], &score) // a missing or odd score ranks as 0
	if raw, ok := doc["@search.rerankerScore"]; ok {
		var rr float64
		if json.Unmarshal(raw, &rr) == nil && rr > 0 {
			score = rr
		}
	}
	return score
}

// azureSnippet prefers a semantic caption, then hit highlights.
func azureSnippet(doc map[string]json.RawMessage, contentField string) string {
	var caps []struct {
		Text       string `json:"text"`
		Highlights string `json:"highlights"`
	}
	if json.Unmarshal(doc["@search.captions"], &caps) == nil && len(caps) > 0 && caps[0].Text != "" {
		return caps[0].Text
	}
	var hl map[string][]string
	if json.Unmarshal(doc["@search.highlights"], &hl) == nil {
		if frags := hl[contentField]; len(frags) > 0 {
			s := strings.Join(frags, " … ")
			s = strings.NewReplacer("<em>", "", "</em>", "").Replace(s)
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// jsonText renders a field value as text: strings as they are, arrays of
// strings joined by new lines, numbers and booleans in JSON form.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		return strings.TrimSpace(strings.Join(ss, "\n"))
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		switch v.(type) {
		case float64, bool:
			return string(raw)
		}
	}
	return ""
}

func azureDetail(body []byte) string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		if e.Error.Code != "" {
			return e.Error.Code + ": " + e.Error.Message
		}
		return e.Error.Message
	}
	return truncate(string(body), 200)
}
