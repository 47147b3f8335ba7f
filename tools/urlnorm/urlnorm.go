// Package urlnorm gives a URL the one canonical form that says whether two
// URLs name the same page: search merges results by it and the fetch cache
// keys pages by it. It does not decide whether a URL may be fetched; the
// fetch package checks that.
package urlnorm

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// ErrInvalid is returned by Normalize for input it cannot normalise.
var ErrInvalid = errors.New("invalid URL")

// trackingParams are query keys that Normalize drops (compared in lower
// case). Every key starting with "utm_" is dropped as well.
var trackingParams = map[string]bool{
	"fbclid": true, "gclid": true, "dclid": true, "gbraid": true, "wbraid": true,
	"msclkid": true, "yclid": true, "twclid": true, "ttclid": true, "li_fat_id": true,
	"mc_cid": true, "mc_eid": true, "igshid": true, "_ga": true, "_gl": true,
	"_hsenc": true, "_hsmi": true, "mkt_tok": true, "oly_anon_id": true, "oly_enc_id": true,
	"vero_id": true, "spm": true,
}

// Normalize returns the canonical form of rawURL. For http and https URLs
// it
//   - lower-cases the scheme, maps the host to lower-case ASCII (IDNA, so
//     full-width letters and digits fold too), drops trailing dots of the
//     host and writes IPv6 addresses in their short form,
//   - drops the default port (80 for http, 443 for https) and leading zeros
//     of any other port, and the fragment,
//   - drops tracking parameters (utm_*, fbclid, gclid, msclkid, …) and
//     empty "&" pieces, then sorts the parameters by key (values of one key
//     keep their order; their encoding is kept as given, except that
//     spaces and non-ASCII are percent-encoded),
//   - removes trailing slashes from the path, except that an empty path
//     becomes "/".
//
// User information is kept, so URLs of different users stay apart. Other
// schemes (doc, file, azure-search, mailto, …) only get their scheme
// lower-cased: their fragment often names a passage and is kept. Input
// without a scheme, or an http(s) URL without a host, is an error wrapping
// ErrInvalid. Normalize is idempotent.
func Normalize(rawURL string) (string, error) {
	s := strings.TrimSpace(rawURL)
	if s == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalid)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if u.Scheme == "" {
		return "", fmt.Errorf("%w: %q has no scheme", ErrInvalid, truncate(s, 100))
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		// Keep everything after the scheme as written.
		return scheme + s[len(u.Scheme):], nil
	}
	if u.Opaque != "" {
		return "", fmt.Errorf("%w: %q has no host", ErrInvalid, truncate(s, 100))
	}
	host, ok := canonicalHost(u.Hostname(), strings.HasPrefix(u.Host, "["))
	if !ok {
		return "", fmt.Errorf("%w: %q has no valid host", ErrInvalid, truncate(s, 100))
	}
	if port := explicitPort(scheme, u.Port()); port != "" {
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

// explicitPort is a URL's port without leading zeros, "" when it is the
// scheme's default.
func explicitPort(scheme, port string) string {
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return ""
	}
	return port
}

// canonicalHost returns host in lower-case ASCII without trailing dots, an
// IPv6 address (bracketed says the URL had [v6] syntax) in brackets and
// short form; false when no host is left.
func canonicalHost(host string, bracketed bool) (string, bool) {
	if bracketed {
		if ip, err := netip.ParseAddr(host); err == nil {
			// A zone's "%" is written escaped, as in the input.
			return "[" + strings.ReplaceAll(ip.String(), "%", "%25") + "]", true
		}
		if host == "" {
			return "", false
		}
		return "[" + strings.ToLower(host) + "]", true
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		// Names that IDNA's rules refuse (underscores, a lone "-") are
		// common enough in practice; keep them, lower-cased.
		ascii = host
	}
	ascii = strings.TrimRight(strings.ToLower(ascii), ".")
	if ascii == "" || strings.ContainsAny(ascii, "[]/@?#: ") {
		return "", false
	}
	return ascii, true
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
		piece = escapeRaw(piece)
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

// escapeRaw percent-encodes the spaces and non-ASCII bytes that a query
// may hold as typed, so "q=生成 AI" and "q=%E7%94%9F%E6%88%90%20AI" are one
// query; everything else keeps its encoding.
func escapeRaw(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != ' ' && c < 0x80 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// truncate shortens s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
