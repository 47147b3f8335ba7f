// Package redact hides secrets in what is logged or printed: the password
// of a URL's userinfo and query parameters named like secrets
// (password, sslpassword, token, secret, key, signature, …). Every place
// that logs a URL (serve's storage line, migrate, the fetcher) goes through
// URL.
package redact

import (
	"net/url"
	"sort"
	"strings"
)

// Mask replaces a secret.
const Mask = "***"

// URL returns u with its secrets replaced by Mask. Text that is not a URL
// with a scheme (a file path) is returned as it is; a URL that cannot be
// parsed is reduced to its scheme, since it may hold anything.
func URL(u string) string {
	if !strings.Contains(u, "://") {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		scheme, _, _ := strings.Cut(u, "://")
		return scheme + "://" + Mask
	}
	if p.User != nil {
		if _, has := p.User.Password(); has {
			p.User = url.UserPassword(p.User.Username(), Mask)
		}
	}
	if p.RawQuery != "" {
		q := p.Query()
		changed := false
		for k, vs := range q {
			if secretKey(k) {
				for i := range vs {
					vs[i] = Mask
				}
				changed = true
			}
		}
		if changed {
			p.RawQuery = q.Encode()
		}
	}
	return strings.ReplaceAll(p.String(), url.QueryEscape(Mask), Mask)
}

// Secrets returns the secret values in u (the userinfo password and
// secret-named query values), for scrubbing them from text that quotes the
// URL in another form (a driver's error message).
func Secrets(u string) []string {
	p, err := url.Parse(u)
	if err != nil {
		return nil
	}
	var out []string
	if p.User != nil {
		if pw, has := p.User.Password(); has && pw != "" {
			out = append(out, pw, url.PathEscape(pw), url.QueryEscape(pw))
		}
	}
	for k, vs := range p.Query() {
		if secretKey(k) {
			for _, v := range vs {
				if v != "" {
					out = append(out, v, url.QueryEscape(v))
				}
			}
		}
	}
	sort.Strings(out)
	out = compact(out)
	// longest first, so that a secret containing another is replaced whole
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Text replaces every occurrence of the secrets in s by Mask.
func Text(s string, secrets ...string) string {
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	return s
}

// secretWords make a query parameter a secret when they are one of the
// words of its name (split at _ - .); secretParts when they occur
// anywhere in it (lower-cased).
var secretWords = []string{"password", "passwd", "pwd", "pass", "secret", "token", "key", "apikey", "signature", "sig", "credential", "credentials", "auth", "authorization", "session", "sessionid", "jwt", "bearer", "sslpassword", "sslkey"}

var secretParts = []string{"password", "passwd", "secret", "token", "apikey", "api_key", "signature", "credential"}

func secretKey(k string) bool {
	k = strings.ToLower(k)
	words := strings.FieldsFunc(k, func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	for _, w := range words {
		for _, s := range secretWords {
			if w == s {
				return true
			}
		}
	}
	for _, s := range secretParts {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
