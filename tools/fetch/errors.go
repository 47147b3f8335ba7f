package fetch

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package that has one of these
// causes wraps it, so callers can test with errors.Is and map it to a message
// for the user or the model.
var (
	// ErrInvalidURL: the URL cannot be parsed or has a form this package
	// refuses (empty host, non-canonical numeric IPv4, IPv6 zone, ...).
	ErrInvalidURL = errors.New("fetch: invalid URL")
	// ErrScheme: the URL scheme is not http or https.
	ErrScheme = errors.New("fetch: scheme not allowed (only http and https)")
	// ErrUserinfo: the URL carries user:password@.
	ErrUserinfo = errors.New("fetch: URLs with credentials are not allowed")
	// ErrPort: the port is one that browsers refuse (SMTP, IRC, ...).
	ErrPort = errors.New("fetch: port not allowed")
	// ErrBlockedAddress: the host is, or resolves to, an address this
	// fetcher may not reach (loopback, private, link-local, metadata, ...)
	// and the allow-list does not permit it.
	ErrBlockedAddress = errors.New("fetch: address not allowed")
	// ErrTooLarge: the body (on the wire or decoded) exceeds the size cap.
	ErrTooLarge = errors.New("fetch: response too large")
	// ErrRobots: robots.txt disallows the URL for our user agent.
	ErrRobots = errors.New("fetch: disallowed by robots.txt")
	// ErrContentType: the response is not HTML, text, JSON or PDF.
	ErrContentType = errors.New("fetch: unsupported content type")
	// ErrEncoding: the response uses a Content-Encoding we cannot decode.
	ErrEncoding = errors.New("fetch: unsupported content encoding")
	// ErrTooManyRedirects: more redirects than Options.MaxRedirects.
	ErrTooManyRedirects = errors.New("fetch: too many redirects")
	// ErrRedirectLoop: a redirect points back to a URL already visited.
	ErrRedirectLoop = errors.New("fetch: redirect loop")
	// ErrStatus: the final response is not 2xx. The error is a *StatusError.
	ErrStatus = errors.New("fetch: HTTP error status")
)

// StatusError reports a non-2xx final response.
type StatusError struct {
	URL  string
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("fetch: %s: HTTP status %d", e.URL, e.Code)
}

// Is makes errors.Is(err, ErrStatus) true.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }
