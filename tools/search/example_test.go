package search_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"deepresearch/tools/search"
	"deepresearch/tools/search/docs"
)

// Example shows how cmd/ can wire the providers from the environment:
// TAVILY_API_KEY, TAVILY_BASE_URL, SEARXNG_URL, DEEPRESEARCH_DOCS_DIR and
// AZURE_SEARCH_ENDPOINT, AZURE_SEARCH_KEY, AZURE_SEARCH_INDEX.
func Example() {
	ctx := context.Background()
	log := slog.Default()
	var members []search.Member

	if key := os.Getenv("TAVILY_API_KEY"); key != "" {
		tv, err := search.NewTavily(search.TavilyOptions{APIKey: key, BaseURL: os.Getenv("TAVILY_BASE_URL"), Logger: log})
		if err != nil {
			log.Error(err.Error())
			return
		}
		members = append(members, search.Member{Provider: tv, Rate: 5, Burst: 5})
	}
	if u := os.Getenv("SEARXNG_URL"); u != "" {
		sx, err := search.NewSearXNG(search.SearXNGOptions{BaseURL: u, Logger: log})
		if err != nil {
			log.Error(err.Error())
			return
		}
		members = append(members, search.Member{Provider: sx, Rate: 1, Burst: 2})
	}
	// Internal documents: Azure AI Search when configured, otherwise the
	// embedded index over a folder.
	if ep := os.Getenv("AZURE_SEARCH_ENDPOINT"); ep != "" {
		az, err := search.NewAzureSearch(search.AzureSearchOptions{
			Endpoint: ep, APIKey: os.Getenv("AZURE_SEARCH_KEY"), Index: os.Getenv("AZURE_SEARCH_INDEX"), Logger: log,
		})
		if err != nil {
			log.Error(err.Error())
			return
		}
		members = append(members, search.Member{Provider: az, Weight: 1.5})
	} else if dir := os.Getenv("DEEPRESEARCH_DOCS_DIR"); dir != "" {
		ix, err := docs.New(ctx, docs.Options{Root: dir, Logger: log /* Converters: {".pdf": pdf.Convert, ".html": extract.Convert} */})
		if err != nil {
			log.Error(err.Error())
			return
		}
		go ix.Watch(ctx, time.Minute)
		members = append(members, search.Member{Provider: ix, Weight: 1.5})
	}

	all, err := search.NewMulti(search.MultiOptions{Members: members, Logger: log})
	if err != nil {
		fmt.Println(err) // names the variables to set
		return
	}
	resp, err := all.SearchAll(ctx, search.Query{Text: "2026年の国内生成AI規制の動向", MaxResults: 8, Freshness: search.Year})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range resp.Results {
		fmt.Println(r.Title, r.URL, r.Sources)
	}
	if err := resp.Err(); err != nil {
		fmt.Println("some providers failed:", err)
	}
}
