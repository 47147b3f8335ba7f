package search

import (
	"fmt"

	"deepresearch/tools/urlnorm"
)

// ErrInvalidURL is returned by NormalizeURL for input it cannot normalise.
var ErrInvalidURL = urlnorm.ErrInvalid

// NormalizeURL returns the canonical form of rawURL that results are merged
// by: urlnorm.Normalize, the form the fetch cache keys pages by too (case,
// default port, fragment, tracking parameters, parameter order and trailing
// slashes do not tell pages apart). Errors wrap ErrInvalidURL.
func NormalizeURL(rawURL string) (string, error) {
	n, err := urlnorm.Normalize(rawURL)
	if err != nil {
		return "", fmt.Errorf("search: %w", err)
	}
	return n, nil
}
