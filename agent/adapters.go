package agent

import (
	"context"
	"fmt"
	"strings"

	"deepresearch/tools/extract"
	"deepresearch/tools/fetch"
)

// PageFetcher adapts the SSRF-safe fetcher and the content extractor to
// Fetcher: HTML pages are reduced to their main text, other text kinds are
// used as they are.
type PageFetcher struct {
	F       *fetch.Fetcher
	bigSlot chan struct{} // one big page extracted at a time
}

const (
	// bigPage is the HTML size above which extraction takes the big-page slot.
	bigPage = 1 << 20
	// maxExtractHTML is how much of a page the extractor reads: the main
	// content of a real article is well inside the first 4 MiB, and the
	// parse tree costs ~40× the bytes it reads.
	maxExtractHTML = 4 << 20
)

// NewPageFetcher returns a Fetcher over f.
func NewPageFetcher(f *fetch.Fetcher) *PageFetcher {
	return &PageFetcher{F: f, bigSlot: make(chan struct{}, 1)}
}

// Fetch reads url.
func (p *PageFetcher) Fetch(ctx context.Context, url string) (Page, error) {
	res, err := p.F.Fetch(ctx, url)
	if err != nil {
		return Page{}, err
	}
	notePage(ctx, res.Status, len(res.Text)+len(res.Raw))
	pg := Page{URL: res.URL, FinalURL: res.FinalURL, Text: res.Text}
	if res.Kind == fetch.KindHTML {
		// Extraction needs ~40× the HTML in memory (a 10 MB page allocates
		// ~400 MB); big pages are extracted one at a time so a few of them
		// in concurrent runs cannot take the process out.
		if len(res.Text) > bigPage && p.bigSlot != nil {
			select {
			case p.bigSlot <- struct{}{}:
			case <-ctx.Done():
				return Page{}, ctx.Err()
			}
			defer func() { <-p.bigSlot }()
		}
		art, err := extract.ExtractBytes([]byte(res.Text), res.FinalURL, extract.Options{MaxBytes: maxExtractHTML})
		if err != nil {
			return Page{}, fmt.Errorf("agent: extract %s: %w", url, err)
		}
		pg.Title, pg.Text, pg.Canonical = art.Title, art.Text, art.CanonicalURL
	}
	if strings.TrimSpace(pg.Text) == "" {
		return Page{}, fmt.Errorf("agent: %s has no text", url)
	}
	return pg, nil
}
