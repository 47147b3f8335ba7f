// Package peers runs the Go extractors the benchmarks compare package
// extract with, each as the upstream Scrapinghub benchmark runs it.
package peers

import (
	"bytes"
	"net/url"

	readability "codeberg.org/readeck/go-readability"
	"github.com/markusmobius/go-trafilatura"
)

// Trafilatura returns go-trafilatura's extraction: comments excluded,
// optionally with its readability/dom-distiller fallback.
func Trafilatura(fallback bool) func(html []byte, pageURL string) (string, error) {
	return func(html []byte, pageURL string) (string, error) {
		opts := trafilatura.Options{EnableFallback: fallback, ExcludeComments: true}
		if u, err := url.Parse(pageURL); err == nil {
			opts.OriginalURL = u
		}
		res, err := trafilatura.Extract(bytes.NewReader(html), opts)
		if err != nil {
			return "", err
		}
		return res.ContentText, nil
	}
}

// Readeck runs readeck's port of Readability.js: the article's text
// content, soft hyphens kept (the scorers strip them).
func Readeck(html []byte, pageURL string) (string, error) {
	u, _ := url.Parse(pageURL)
	a, err := readability.FromReader(bytes.NewReader(html), u)
	if err != nil {
		return "", err
	}
	return a.TextContent, nil
}
