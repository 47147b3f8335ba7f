package search

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAzureSearch(t *testing.T) {
	fixture := readTestdata(t, "azure_search.json")
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/indexes/internal-docs/docs/search" {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		if v := r.URL.Query().Get("api-version"); v != "2024-07-01" {
			t.Errorf("api-version = %q", v)
		}
		if k := r.Header.Get("api-key"); k != "azure-secret" {
			t.Errorf("api-key = %q", k)
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json; odata.metadata=minimal")
		w.Write(fixture)
	}))
	defer srv.Close()
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	az, err := NewAzureSearch(AzureSearchOptions{
		Endpoint: srv.URL + "/", Index: "internal-docs", APIKey: "azure-secret",
		DateField: "lastModified", KeyField: "id", Filter: "team eq 'legal'",
		Retry: RetryPolicy{Now: func() time.Time { return now }},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := az.Search(context.Background(), Query{Text: "生成AI ガイドライン", MaxResults: 7, Freshness: 30 * Day})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"search": "生成AI ガイドライン", "top": 7.0, "queryType": "simple",
		"select":    "title,url,content,lastModified,id",
		"filter":    "(team eq 'legal') and lastModified ge 2025-05-02T00:00:00Z",
		"highlight": "content",
	}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("body[%q] = %#v, want %#v", k, body[k], v)
		}
	}
	if len(res) != 2 {
		t.Fatalf("got %d results", len(res))
	}
	r0 := res[0]
	if r0.Title != "生成AI利用ガイドライン" || r0.URL != "https://contoso.sharepoint.com/sites/legal/ai-guideline.docx" ||
		r0.Score != 7.318 || r0.Source != "azure-search" || strings.Contains(r0.Snippet, "<em>") ||
		!strings.Contains(r0.Snippet, "生成AI利用") || !r0.Published.Equal(time.Date(2025, 4, 1, 9, 30, 0, 0, time.UTC)) ||
		!strings.Contains(r0.Content, "承認済みツール") {
		t.Errorf("result 0 = %+v", r0)
	}
	r1 := res[1]
	if r1.URL != "azure-search://internal-docs/doc-2" || r1.Content != "Section 1: data classification.\nSection 2: AI tools." ||
		r1.Snippet == "" {
		t.Errorf("result 1 = %+v", r1)
	}
	if ScopeOf(az) != ScopeInternal {
		t.Error("Azure scope should be internal")
	}
}

func TestAzureSemantic(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer entra-token" || r.Header.Get("api-key") != "" {
			t.Errorf("auth headers: %v", r.Header)
		}
		json.NewDecoder(r.Body).Decode(&body)
		io.WriteString(w, `{"value":[
		  {"@search.score":1.1,"@search.rerankerScore":2.9,"@search.captions":[{"text":"Caption text.","highlights":"<em>Caption</em> text."}],
		   "doc_title":"T","doc_url":"https://x.example/a","body":"B"}]}`)
	}))
	defer srv.Close()
	az, err := NewAzureSearch(AzureSearchOptions{
		Endpoint: srv.URL, Index: "ix", Token: func(context.Context) (string, error) { return "entra-token", nil },
		TitleField: "doc_title", URLField: "doc_url", ContentField: "body",
		QueryType: "semantic", SemanticConfiguration: "default",
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := az.Search(context.Background(), Query{Text: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if body["semanticConfiguration"] != "default" || body["captions"] != "extractive" || body["queryType"] != "semantic" {
		t.Errorf("body = %v", body)
	}
	if len(res) != 1 || res[0].Score != 2.9 || res[0].Snippet != "Caption text." || res[0].Title != "T" || res[0].Content != "B" {
		t.Errorf("res = %+v", res)
	}
}

func TestNewAzureSearchErrors(t *testing.T) {
	for _, o := range []AzureSearchOptions{
		{Index: "i", APIKey: "k"},
		{Endpoint: "https://x.search.windows.net", APIKey: "k"},
		{Endpoint: "https://x.search.windows.net", Index: "i", APIKey: "k", TitleField: "bad field"},
	} {
		if _, err := NewAzureSearch(o); !errors.Is(err, ErrMisconfigured) {
			t.Errorf("NewAzureSearch(%+v) = %v", o, err)
		}
	}
	if _, err := NewAzureSearch(AzureSearchOptions{Endpoint: "https://x.search.windows.net", Index: "i"}); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("no key: %v", err)
	}
}
