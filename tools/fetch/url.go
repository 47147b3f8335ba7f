package fetch

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"deepresearch/tools/urlnorm"
)

// badPorts are the ports browsers refuse to fetch (WHATWG Fetch "bad port"
// list): protocols such as SMTP, IRC or X11 that an HTTP request could be
// smuggled into. Every other port 1-65535 is allowed. A host or IP allow-list
// entry lifts this restriction for that host.
var badPorts = map[int]bool{
	0: true, 1: true, 7: true, 9: true, 11: true, 13: true, 15: true, 17: true, 19: true,
	20: true, 21: true, 22: true, 23: true, 25: true, 37: true, 42: true, 43: true,
	53: true, 69: true, 77: true, 79: true, 87: true, 95: true, 101: true, 102: true,
	103: true, 104: true, 109: true, 110: true, 111: true, 113: true, 115: true,
	117: true, 119: true, 123: true, 135: true, 137: true, 139: true, 143: true,
	161: true, 179: true, 389: true, 427: true, 465: true, 512: true, 513: true,
	514: true, 515: true, 526: true, 530: true, 531: true, 532: true, 540: true,
	548: true, 554: true, 556: true, 563: true, 587: true, 601: true, 636: true,
	989: true, 990: true, 993: true, 995: true, 1719: true, 1720: true, 1723: true,
	2049: true, 3659: true, 4045: true, 4190: true, 5060: true, 5061: true,
	6000: true, 6566: true, 6665: true, 6666: true, 6667: true, 6668: true,
	6669: true, 6679: true, 6697: true, 10080: true,
}

// ValidateURL checks the syntax of a URL to be fetched and returns it in
// canonical form (lower-case ASCII host, IDNA-mapped, no fragment). It does
// not resolve names or apply the address policy; the Fetcher does that at
// dial time. Refused:
//
//   - schemes other than http and https (ErrScheme);
//   - user:password@ (ErrUserinfo);
//   - opaque or host-less URLs, IPv6 zones, invalid host names, and numeric
//     hosts that are not dotted-quad IPv4 — decimal (2130706433), octal
//     (0177.0.0.1), hex (0x7f.1) or short (127.1) — because resolvers and
//     browsers disagree on them (ErrInvalidURL);
//   - ports on the WHATWG "bad port" list, e.g. 25 (ErrPort).
func ValidateURL(raw string) (*url.URL, error) {
	u, err := parseURL(raw)
	if err != nil {
		return nil, err
	}
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		if badPorts[n] {
			return nil, fmt.Errorf("%w: %d", ErrPort, n)
		}
	}
	return u, nil
}

// parseURL is ValidateURL without the port policy.
func parseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if err := checkRaw(raw); err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	if err := checkParts(u); err != nil {
		return nil, err
	}
	port, err := canonicalPort(u)
	if err != nil {
		return nil, err
	}
	host, err := canonicalHost(u.Hostname(), strings.HasPrefix(u.Host, "["))
	if err != nil {
		return nil, err
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		u.Host = "[" + host + "]"
		if port != "" {
			u.Host += ":" + port
		}
	} else {
		u.Host = joinPort(host, port)
	}
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
		u.RawPath = ""
	}
	return u, nil
}

// checkRaw rejects an empty URL and one with control characters, spaces
// or backslashes (which parsers read differently).
func checkRaw(raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: empty", ErrInvalidURL)
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f || r == ' ' || r == '\\' {
			return fmt.Errorf("%w: control, space or backslash in URL", ErrInvalidURL)
		}
	}
	return nil
}

// checkParts accepts an http or https URL with a host and no opaque part
// or userinfo.
func checkParts(u *url.URL) error {
	switch u.Scheme {
	case "http", "https":
	case "":
		return fmt.Errorf("%w: missing scheme", ErrScheme)
	default:
		return fmt.Errorf("%w: %q", ErrScheme, u.Scheme)
	}
	if u.Opaque != "" {
		return fmt.Errorf("%w: opaque URL", ErrInvalidURL)
	}
	if u.User != nil {
		return ErrUserinfo
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: empty host", ErrInvalidURL)
	}
	return nil
}

// canonicalPort is the URL's port without leading zeros ("" for none); an
// error for an empty or out-of-range port.
func canonicalPort(u *url.URL) (string, error) {
	if strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("%w: empty port", ErrInvalidURL)
	}
	port := u.Port()
	if port == "" {
		return "", nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%w: port %q", ErrInvalidURL, port)
	}
	return strconv.Itoa(n), nil
}

// canonicalHost lower-cases and IDNA-maps host, and rejects ambiguous
// numeric forms. bracketed says the URL had [v6] syntax.
func canonicalHost(host string, bracketed bool) (string, error) {
	if bracketed {
		return ipv6Literal(host)
	}
	// IDNA mapping folds full-width digits and dots, so it must run before
	// the numeric checks: "１２７．０．０．１" is 127.0.0.1.
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		// idna rejects some names that are common in practice (underscores,
		// labels over the STD3 rules); accept plain ASCII names that pass
		// our own checks below.
		if !isASCII(host) {
			return "", fmt.Errorf("%w: host %q: %v", ErrInvalidURL, host, err)
		}
		ascii = host
	}
	ascii = strings.ToLower(ascii)
	if ip, err := netip.ParseAddr(ascii); err == nil {
		if !ip.Is4() {
			return "", fmt.Errorf("%w: IPv6 address must be in brackets", ErrInvalidURL)
		}
		return ip.String(), nil
	}
	if err := checkHostName(strings.TrimSuffix(ascii, "."), host); err != nil {
		return "", err
	}
	return ascii, nil
}

// ipv6Literal is the canonical form of a bracketed IPv6 address (without
// a zone).
func ipv6Literal(host string) (string, error) {
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is6() {
		return "", fmt.Errorf("%w: bad IPv6 literal %q", ErrInvalidURL, host)
	}
	if ip.Zone() != "" {
		return "", fmt.Errorf("%w: IPv6 zone not allowed", ErrInvalidURL)
	}
	return ip.String(), nil
}

// checkHostName accepts a DNS name (lower-cased, without its final dot) of
// labels of letters, digits, hyphens and underscores whose last label is
// not numeric; host is the name as written, for errors.
func checkHostName(name, host string) error {
	if name == "" || len(name) > 253 {
		return fmt.Errorf("%w: host %q", ErrInvalidURL, host)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("%w: host %q", ErrInvalidURL, host)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return fmt.Errorf("%w: character %q in host", ErrInvalidURL, c)
			}
		}
	}
	// WHATWG URL: a host whose last label is numeric is parsed as IPv4 by
	// browsers (and by inet_aton), in decimal, octal or hex. Only canonical
	// dotted quads, handled above, are accepted.
	if last := labels[len(labels)-1]; isNumericLabel(last) {
		return fmt.Errorf("%w: non-canonical numeric host %q", ErrInvalidURL, host)
	}
	return nil
}

func isNumericLabel(l string) bool {
	if strings.HasPrefix(l, "0x") || strings.HasPrefix(l, "0X") {
		for _, c := range l[2:] {
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
		return true
	}
	for _, c := range l {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// NormalizeURL returns the cache key for a URL that ValidateURL's syntax
// checks accept (other URLs are an error, as for Fetch): urlnorm.Normalize,
// the form search merges results by too. Case, default port, fragment,
// tracking parameters, parameter order and trailing slashes do not tell
// pages apart.
func NormalizeURL(raw string) (string, error) {
	u, err := parseURL(raw)
	if err != nil {
		return "", err
	}
	return cacheKey(u)
}

// cacheKey is the key of a URL that parseURL returned.
func cacheKey(u *url.URL) (string, error) {
	k, err := urlnorm.Normalize(u.String())
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	return k, nil
}

// hostPolicy applies the name-based part of the address policy: localhost
// names and cloud-metadata names are refused before any DNS lookup unless
// allow-listed. It returns whether an allow-list host entry matched.
func hostPolicy(al *AllowList, u *url.URL) (hostAllowed bool, err error) {
	host, port := u.Hostname(), portOf(u)
	if ip, perr := netip.ParseAddr(host); perr == nil {
		return false, al.permitted(ip, port, false)
	}
	if al.allowsHost(host, port) {
		return true, nil
	}
	name := strings.TrimSuffix(host, ".")
	// RFC 6761 loopback names are refused by name (a resolver might not
	// map them to loopback), unless the allow-list opens loopback for this
	// port, in which case the dial-time check decides.
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		if !al.allowsIP(netip.MustParseAddr("127.0.0.1"), port) && !al.allowsIP(netip.IPv6Loopback(), port) {
			return false, fmt.Errorf("%w: %s is a loopback name", ErrBlockedAddress, host)
		}
	}
	if metadataHosts[name] {
		return false, fmt.Errorf("%w: %s is a cloud metadata name", ErrBlockedAddress, host)
	}
	return false, nil
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// checkPort applies the bad-port policy unless the host is allow-listed.
func checkPort(al *AllowList, u *url.URL, hostAllowed bool) error {
	p := u.Port()
	if p == "" || hostAllowed {
		return nil
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && al.allowsIP(ip, p) {
		return nil
	}
	n, _ := strconv.Atoi(p)
	if badPorts[n] {
		return fmt.Errorf("%w: %d", ErrPort, n)
	}
	return nil
}
