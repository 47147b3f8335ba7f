package urlnorm_test

import (
	"errors"
	"testing"

	"deepresearch/tools/urlnorm"
)

func TestNormalize(t *testing.T) {
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
		{"https://example.com/s?q=生成 AI", "https://example.com/s?q=%E7%94%9F%E6%88%90%20AI"},
		{"http://under_score.example.com/", "http://under_score.example.com/"},
		{"https://user:pw@example.com/", "https://user:pw@example.com/"},
		{"http://[fe80::1%25eth0]/", "http://[fe80::1%25eth0]/"},
		{"doc://reports/AI.md#c3", "doc://reports/AI.md#c3"},
		{"DOC://reports/AI.md#c3", "doc://reports/AI.md#c3"},
		{"mailto:Someone@Example.com", "mailto:Someone@Example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := urlnorm.Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again, err := urlnorm.Normalize(got); err != nil || again != got {
				t.Errorf("not idempotent: %q -> %q (%v)", got, again, err)
			}
		})
	}
}

// Search's merge and the fetch cache each had a normaliser, and they
// disagreed on the cases below. One form now serves both, because both ask
// the same question: is this the page we already have? A search result
// merged with another and a page read from the cache must be the same
// document, and the citation check looks a cited URL up in the cache, so a
// URL the agent cites in the form search gave must find the page it
// fetched in another form.
//
//   - Trailing slashes, tracking parameters, parameter order and empty "&"
//     pieces: dropped or sorted (search's rule). Servers answer /a and /a/
//     with the same page or a redirect between them, and tracking
//     parameters do not change the page; keeping them apart cost a second
//     fetch and missed citations.
//   - A host's trailing dot: dropped (search's rule): "example.com." is
//     the same DNS name.
//   - IDNA and full-width hosts, leading zeros of a port, IPv6 short form:
//     canonical (fetch's rule): these are byte-wise different spellings of
//     one host and port, which a browser would send to the same place.
//   - User information and schemes other than http(s): kept (search's
//     rule). The fetcher refuses to fetch them, so they never reach its
//     cache; search keeps them apart.
func TestNormalizeWhereSearchAndFetchDisagreed(t *testing.T) {
	tests := []struct {
		name     string
		in, want string
	}{
		{"trailing slash", "https://example.com/a/", "https://example.com/a"},
		{"trailing slashes", "https://example.com/a/b//", "https://example.com/a/b"},
		{"tracking parameters", "https://example.com/a?id=7&utm_source=news&fbclid=x", "https://example.com/a?id=7"},
		{"only tracking parameters", "https://example.com/a?utm_campaign=x", "https://example.com/a"},
		{"parameter order", "https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2"},
		{"empty pieces", "https://example.com/a?&a=1&&", "https://example.com/a?a=1"},
		{"host trailing dot", "http://example.com./", "http://example.com/"},
		{"IDNA host", "http://bücher.example/", "http://xn--bcher-kva.example/"},
		{"full-width host", "http://ＥＸＡＭＰＬＥ.com/", "http://example.com/"},
		{"full-width dot", "http://example．com/", "http://example.com/"},
		{"port with leading zeros", "http://example.com:0080/", "http://example.com/"},
		{"port with leading zeros, not default", "http://example.com:08080/", "http://example.com:8080/"},
		{"IPv6 long form", "http://[2606:4700:0::1111]:8080/", "http://[2606:4700::1111]:8080/"},
		{"user information", "https://user:pw@example.com/", "https://user:pw@example.com/"},
		{"other scheme", "ftp://Example.com/A/", "ftp://Example.com/A/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := urlnorm.Normalize(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestNormalizeSamePage(t *testing.T) {
	for _, pair := range [][2]string{
		{"https://www.example.com/news/?utm_campaign=x&id=7#top", "HTTPS://WWW.EXAMPLE.COM:443/news?id=7"},
		{"http://Bücher.example:80/a/?b=1&a=2", "http://xn--bcher-kva.example/a?a=2&b=1"},
	} {
		a, errA := urlnorm.Normalize(pair[0])
		b, errB := urlnorm.Normalize(pair[1])
		if errA != nil || errB != nil || a != b {
			t.Errorf("%q -> %q (%v), %q -> %q (%v): want one form", pair[0], a, errA, pair[1], b, errB)
		}
	}
	for _, pair := range [][2]string{
		{"https://example.com/p?q=1", "https://example.com/p?q=2"},
		{"https://example.com/P", "https://example.com/p"},
		{"http://example.com/", "https://example.com/"},
		{"https://example.com:8443/", "https://example.com/"},
		{"doc://a.md#c1", "doc://a.md#c2"},
	} {
		a, _ := urlnorm.Normalize(pair[0])
		b, _ := urlnorm.Normalize(pair[1])
		if a == b {
			t.Errorf("%q and %q both normalise to %q", pair[0], pair[1], a)
		}
	}
}

func TestNormalizeErrors(t *testing.T) {
	for _, in := range []string{"", "   ", "example.com/path", "http://", "https:///path", "http://%zz", "https:opaque", "http://./"} {
		t.Run(in, func(t *testing.T) {
			if got, err := urlnorm.Normalize(in); !errors.Is(err, urlnorm.ErrInvalid) {
				t.Errorf("Normalize(%q) = %q, %v; want ErrInvalid", in, got, err)
			}
		})
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"https://example.com/a?utm_source=x&b=2#f", "HTTP://[::1]:80/", "doc://a/b#c",
		"http://a.com/%2F/", "https://ex.com/?a=%zz&b", "http://a.com:0/", "http://x/./../",
		"http://ＥＸＡＭＰＬＥ.com:0080/", "http://[fe80::1%25eth0]/", "http://bücher.example./",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := urlnorm.Normalize(s)
		if err != nil {
			return
		}
		n2, err := urlnorm.Normalize(n)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, which fails: %v", s, n, err)
		}
		if n2 != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, n2)
		}
	})
}
