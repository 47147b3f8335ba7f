package search

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// ErrInvalidURL is returned by NormalizeURL for input it cannot normalise.
var ErrInvalidURL = errors.New("search: invalid URL")

// trackingParams are query keys dropped by NormalizeURL (compared in lower
// case). Every key starting with "utm_" is dropped as well.
var trackingParams = map[string]bool{
	"fbclid": true, "gclid": true, "dclid": true, "gbraid": true, "wbraid": true,
	"msclkid": true, "yclid": true, "twclid": true, "ttclid": true, "li_fat_id": true,
	"mc_cid": true, "mc_eid": true, "igshid": true, "_ga": true, "_gl": true,
	"_hsenc": true, "_hsmi": true, "mkt_tok": true, "oly_anon_id": true, "oly_enc_id": true,
	"vero_id": true, "spm": true,
}

// NormalizeURL returns a canonical form of rawURL for deduplication. For
// http and https URLs it
//   - lower-cases the scheme and host and drops a trailing dot of the host,
//   - drops the default port (80 for http, 443 for https) and the fragment,
//   - drops tracking parameters (utm_*, fbclid, gclid, msclkid, …) and
//     empty "&" pieces, then sorts the parameters by key (values of one key
//     keep their order; their encoding is kept as given),
//   - removes trailing slashes from the path, except that an empty path
//     becomes "/".
//
// Other schemes (doc, file, azure-search, mailto, …) only get their
// scheme lower-cased: their fragment often names a passage and is kept.
// Input without a scheme, or an http(s) URL without a host, is an error
// wrapping ErrInvalidURL. NormalizeURL is idempotent.
func NormalizeURL(rawURL string) (string, error) {
	s := strings.TrimSpace(rawURL)
	if s == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalidURL)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	if u.Scheme == "" {
		return "", fmt.Errorf("%w: %q has no scheme", ErrInvalidURL, truncate(s, 100))
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		// Keep everything after the scheme as written.
		return scheme + s[len(u.Scheme):], nil
	}
	if u.Opaque != "" {
		return "", fmt.Errorf("%w: %q has no host", ErrInvalidURL, truncate(s, 100))
	}
	host := strings.TrimRight(strings.ToLower(u.Hostname()), ".")
	if host == "" || strings.ContainsAny(host, "[]/@?# ") {
		return "", fmt.Errorf("%w: %q has no valid host", ErrInvalidURL, truncate(s, 100))
	}
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + host + "]"
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}

	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(u.User.String())
		b.WriteByte('@')
	}
	b.WriteString(host)

	p := strings.TrimRight(u.EscapedPath(), "/")
	if p == "" {
		p = "/"
	}
	b.WriteString(p)

	if q := normalizeQuery(u.RawQuery); q != "" {
		b.WriteByte('?')
		b.WriteString(q)
	}
	return b.String(), nil
}

func normalizeQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type param struct{ key, raw string }
	var params []param
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue
		}
		k, _, _ := strings.Cut(piece, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		lk := strings.ToLower(key)
		if strings.HasPrefix(lk, "utm_") || trackingParams[lk] {
			continue
		}
		params = append(params, param{key: key, raw: piece})
	}
	slices.SortStableFunc(params, func(a, b param) int { return strings.Compare(a.key, b.key) })
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = p.raw
	}
	return strings.Join(parts, "&")
}
