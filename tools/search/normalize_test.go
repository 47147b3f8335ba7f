package search

import (
	"errors"
	"testing"

	"deepresearch/tools/urlnorm"
)

// The normalisation cases are urlnorm's; this checks only that NormalizeURL
// gives urlnorm's form and wraps its error.
func TestNormalizeURL(t *testing.T) {
	for _, in := range []string{"https://www.example.com/news/?utm_campaign=x&id=7#top", "doc://reports/AI.md#c3"} {
		want, err := urlnorm.Normalize(in)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := NormalizeURL(in); err != nil || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := NormalizeURL("example.com/path"); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("NormalizeURL without scheme = %q, %v; want ErrInvalidURL", got, err)
	}
}
