package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u@db.internal:5432/app", "postgres://u@db.internal:5432/app"},
		{"postgres://u:hunter2@db.internal/app", "postgres://u:***@db.internal/app"},
		{"postgres://u@host/db?password=hunter2", "postgres://u@host/db?password=***"},
		{"postgres://u@host/db?sslmode=verify-full&sslpassword=pk-pass&application_name=dr", "postgres://u@host/db?application_name=dr&sslmode=verify-full&sslpassword=***"},
		{"postgresql://u:p%40ss@host/db?PASSWORD=x", "postgresql://u:***@host/db?PASSWORD=***"},
		{"https://search.example/api?api_key=k1&q=go", "https://search.example/api?api_key=***&q=go"},
		{"https://x.example/?access_token=t&client_secret=s&X-Amz-Signature=sig&sig=abc&apikey=z", "https://x.example/?X-Amz-Signature=***&access_token=***&apikey=***&client_secret=***&sig=***"},
		{"https://x.example/a?keyword=go&monkey=1", "https://x.example/a?keyword=go&monkey=1"},
		{"https://x.example/a#frag", "https://x.example/a#frag"},
		{"/var/lib/deepresearch/deepresearch.db", "/var/lib/deepresearch/deepresearch.db"},
		{"", ""},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestURLUnparsable(t *testing.T) {
	// A URL net/url refuses is not printed at all: it may hold anything.
	in := "postgres://u:pa ss@host:port/db?password=s3cret"
	got := URL(in)
	if strings.Contains(got, "s3cret") || strings.Contains(got, "pa ss") {
		t.Errorf("URL(%q) = %q leaks a secret", in, got)
	}
}

func TestSecrets(t *testing.T) {
	got := Secrets("postgres://u:pw1@host/db?sslpassword=pw2&password=pw3&sslmode=require")
	want := map[string]bool{"pw1": true, "pw2": true, "pw3": true}
	if len(got) != len(want) {
		t.Fatalf("Secrets = %q", got)
	}
	for _, s := range got {
		if !want[s] {
			t.Errorf("unexpected secret %q", s)
		}
	}
	line := Text(`cannot parse "postgres://u:pw1@host/db?password=pw3": bad`, got...)
	if strings.Contains(line, "pw1") || strings.Contains(line, "pw3") {
		t.Errorf("Text left a secret: %q", line)
	}
}

// FuzzURL: a secret put in the userinfo or under a secret-named query key
// never survives URL, whatever else the URL holds.
func FuzzURL(f *testing.F) {
	f.Add("db.internal:5432", "app", "password", "hunter2", "sslmode=require")
	f.Add("h", "", "X-Amz-Signature", "abc", "")
	f.Add("h", "p/a th", "client_secret", "s p%ce", "a=b&c")
	f.Fuzz(func(t *testing.T, host, path, key, secret, rest string) {
		if !secretKey(key) || len(secret) < 3 || strings.Contains(host+path+rest+key, "Zq9") {
			t.Skip()
		}
		secret = "Zq9" + secret // distinct from the URL's other parts
		u := url.URL{Scheme: "postgres", Host: url.PathEscape(host), Path: "/" + path, User: url.UserPassword("u", secret)}
		q, _ := url.ParseQuery(rest)
		if q == nil {
			q = url.Values{}
		}
		q.Set(key, secret)
		u.RawQuery = q.Encode()
		raw := u.String()
		got := URL(raw)
		for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret)} {
			if strings.Contains(got, form) {
				t.Fatalf("URL(%q) = %q keeps the secret", raw, got)
			}
		}
	})
}
