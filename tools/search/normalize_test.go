package search

import (
	"errors"
	"testing"
)

func TestNormalizeURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"HTTP://Example.COM", "http://example.com/"},
		{"https://example.com:443/a/", "https://example.com/a"},
		{"http://example.com:80/", "http://example.com/"},
		{"http://example.com:8080/x", "http://example.com:8080/x"},
		{"https://example.com:80/x", "https://example.com:80/x"},
		{"https://example.com/a#section", "https://example.com/a"},
		{"https://example.com/a?utm_source=x&b=2&a=1&fbclid=zz&gclid=1", "https://example.com/a?a=1&b=2"},
		{"https://example.com/a?UTM_Medium=x", "https://example.com/a"},
		{"https://example.com/a?b=2&a=3&b=1", "https://example.com/a?a=3&b=2&b=1"},
		{"https://example.com/a?&&x=1&", "https://example.com/a?x=1"},
		{"https://example.com/a?utm_source=only", "https://example.com/a"},
		{"https://example.com/a//", "https://example.com/a"},
		{"https://Example.com./Path/Case", "https://example.com/Path/Case"},
		{"https://[2001:DB8::1]:443/", "https://[2001:db8::1]/"},
		{"https://[2001:db8::1]:8443/", "https://[2001:db8::1]:8443/"},
		{"https://example.com/%E7%94%9F%E6%88%90", "https://example.com/%E7%94%9F%E6%88%90"},
		{"https://example.com/生成AI", "https://example.com/%E7%94%9F%E6%88%90AI"},
		{"  https://example.com/x  ", "https://example.com/x"},
		{"https://user:pw@example.com/", "https://user:pw@example.com/"},
		{"doc://reports/AI.md#c3", "doc://reports/AI.md#c3"},
		{"DOC://reports/AI.md#c3", "doc://reports/AI.md#c3"},
		{"mailto:Someone@Example.com", "mailto:Someone@Example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := NormalizeURL(tt.in)
			if err != nil {
				t.Fatalf("NormalizeURL(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("NormalizeURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
			again, err := NormalizeURL(got)
			if err != nil || again != got {
				t.Errorf("not idempotent: %q -> %q (%v)", got, again, err)
			}
		})
	}
}

func TestNormalizeURLErrors(t *testing.T) {
	for _, in := range []string{"", "   ", "example.com/path", "http://", "https:///path", "http://%zz", "https:opaque"} {
		t.Run(in, func(t *testing.T) {
			if got, err := NormalizeURL(in); !errors.Is(err, ErrInvalidURL) {
				t.Errorf("NormalizeURL(%q) = %q, %v; want ErrInvalidURL", in, got, err)
			}
		})
	}
}

func TestNormalizeURLSameDoc(t *testing.T) {
	a, _ := NormalizeURL("https://www.example.com/news/?utm_campaign=x&id=7#top")
	b, _ := NormalizeURL("HTTPS://WWW.EXAMPLE.COM:443/news?id=7")
	if a != b {
		t.Errorf("%q != %q", a, b)
	}
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/a?utm_source=x&b=2#f", "HTTP://[::1]:80/", "doc://a/b#c",
		"http://a.com/%2F/", "https://ex.com/?a=%zz&b", "http://a.com:0/", "http://x/./../",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := NormalizeURL(s)
		if err != nil {
			return
		}
		n2, err := NormalizeURL(n)
		if err != nil {
			t.Fatalf("NormalizeURL(%q) = %q, which fails: %v", s, n, err)
		}
		if n2 != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, n2)
		}
	})
}
