package fetch

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	tests := []struct {
		in      string
		want    string // canonical form, if accepted
		wantErr error
	}{
		{"https://Example.COM/a?b=c#frag", "https://example.com/a?b=c", nil},
		{"http://example.com", "http://example.com/", nil},
		{"http://example.com:80/x", "http://example.com/x", nil},
		{"https://example.com:443/x", "https://example.com/x", nil},
		{"https://example.com:8443/x", "https://example.com:8443/x", nil},
		{"http://example.com:0080/", "http://example.com/", nil},
		{"  http://example.com/  ", "http://example.com/", nil},
		{"http://bücher.example/", "http://xn--bcher-kva.example/", nil},
		{"http://ＥＸＡＭＰＬＥ.com/", "http://example.com/", nil},
		{"http://under_score.example.com/", "http://under_score.example.com/", nil},
		{"http://[2606:4700::1111]/", "http://[2606:4700::1111]/", nil},
		{"http://[2606:4700:0::1111]:8080/", "http://[2606:4700::1111]:8080/", nil},
		{"http://1.2.3.4/", "http://1.2.3.4/", nil},
		{"http://example.com./", "http://example.com./", nil},
		{"http://a.b-c.d/%7Euser/", "http://a.b-c.d/%7Euser/", nil},
		{"http://example.com/日本語", "http://example.com/%E6%97%A5%E6%9C%AC%E8%AA%9E", nil},
		{"", "", ErrInvalidURL},
		{"example.com", "", ErrScheme},
		{"//example.com/", "", ErrScheme},
		{"http:example.com", "", ErrInvalidURL},
		{"http://", "", ErrInvalidURL},
		{"http://:80/", "", ErrInvalidURL},
		{"http://example.com:/", "", ErrInvalidURL},
		{"http://example.com:99999/", "", ErrInvalidURL},
		{"http://example.com:0/", "", ErrInvalidURL},
		{"http://exa mple.com/", "", ErrInvalidURL},
		{"http://example.com/a b", "", ErrInvalidURL},
		{"http://example.com\\@evil.com/", "", ErrInvalidURL},
		{"http://ex\x00ample.com/", "", ErrInvalidURL},
		{"http://ex<ample.com/", "", ErrInvalidURL},
		{"http://-/", "http://-/", nil},
		{"http://a..b/", "", ErrInvalidURL},
		{"http://" + strings.Repeat("a", 64) + ".com/", "", ErrInvalidURL},
		{"http://2130706433/", "", ErrInvalidURL},
		{"http://0177.0.0.1/", "", ErrInvalidURL},
		{"http://0x7f.1/", "", ErrInvalidURL},
		{"http://0X7F.0.0.1/", "", ErrInvalidURL},
		{"http://127.0.1/", "", ErrInvalidURL},
		{"http://1.2.3.4.5/", "", ErrInvalidURL},
		{"http://foo.123/", "", ErrInvalidURL},
		{"http://foo.0x1f/", "", ErrInvalidURL},
		{"http://[::1%25lo]/", "", ErrInvalidURL},
		{"http://[1.2.3.4]/", "", ErrInvalidURL},
		{"http://::1/", "", ErrInvalidURL},
		{"http://user@example.com/", "", ErrUserinfo},
		{"https://user:pw@example.com/", "", ErrUserinfo},
		{"file:///etc/passwd", "", ErrScheme},
		{"FILE:///etc/passwd", "", ErrScheme},
		{"gopher://example.com/", "", ErrScheme},
		{"ftp://example.com/", "", ErrScheme},
		{"data:text/plain,hi", "", ErrScheme},
		{"javascript:alert(1)", "", ErrScheme},
		{"ws://example.com/", "", ErrScheme},
		{"http://example.com:25/", "", ErrPort},
		{"https://example.com:22/", "", ErrPort},
	}
	for _, tt := range tests {
		u, err := ValidateURL(tt.in)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ValidateURL(%q) = %v, %v; want %v", tt.in, u, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ValidateURL(%q): %v", tt.in, err)
			continue
		}
		if u.String() != tt.want {
			t.Errorf("ValidateURL(%q) = %q, want %q", tt.in, u.String(), tt.want)
		}
	}
}

func TestNormalizeURL(t *testing.T) {
	a, _ := NormalizeURL("HTTPS://Example.com:443/p?q=1#x")
	b, _ := NormalizeURL("https://example.com/p?q=1")
	if a != b {
		t.Fatalf("%q != %q", a, b)
	}
	c, _ := NormalizeURL("https://example.com/p?q=2")
	if a == c {
		t.Fatal("different queries normalise equal")
	}
}

func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "https://[::1]:443/", "http://0x7f.1/", "http://2130706433/",
		"file:///etc/passwd", "http://user:pw@host/", "http://１２７.０.０.１/", "http://a..b/",
		"http://[fe80::1%25eth0]/", "http://xn--bcher-kva.example/", "javascript:x", "http://h:99999/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ValidateURL(s)
		if err != nil {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("accepted scheme %q from %q", u.Scheme, s)
		}
		if u.Hostname() == "" || u.User != nil || u.Opaque != "" {
			t.Fatalf("accepted %q -> %#v", s, u)
		}
		// The canonical form must be stable.
		v, err := ValidateURL(u.String())
		if err != nil {
			t.Fatalf("canonical %q of %q rejected: %v", u.String(), s, err)
		}
		if v.String() != u.String() {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, u, v)
		}
	})
}
