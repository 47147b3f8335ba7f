// Package fetch retrieves web pages for the research agent without letting
// the agent (or a page it reads) reach internal services.
//
// Every connection goes through a dialer that resolves the host itself,
// checks each resolved address against a block list (loopback, RFC 1918,
// link-local, CGNAT, unique-local, multicast, documentation, reserved,
// IPv4-mapped/NAT64/6to4 forms of those, cloud metadata) and dials the
// checked IP, so DNS rebinding cannot win; the same check runs again on
// every redirect hop because each hop dials anew. An AllowList opens
// specific private hosts (internal wikis, tests on 127.0.0.1).
//
// Bodies are capped (on the wire and after gzip/deflate/br decoding),
// classified (HTML, text, JSON, PDF; anything else is refused), and text is
// decoded to UTF-8. robots.txt is honoured by default. A per-run Cache keeps
// the exact text read for each URL.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"deepresearch/redact"
)

// Defaults for Options fields left zero.
const (
	DefaultUserAgent          = "deepresearch/dev (+https://github.com/deepresearch/deepresearch)"
	DefaultRobotsAgent        = "deepresearch"
	DefaultMaxBytes           = 10 << 20
	DefaultTimeout            = 30 * time.Second
	DefaultHeaderTimeout      = 15 * time.Second
	DefaultDialTimeout        = 10 * time.Second
	DefaultMaxRedirects       = 5
	DefaultPerHostConcurrency = 2
)

// Robots cache lifetimes: RFC 9309 caps caching at 24 hours; a failed
// robots.txt fetch is retried after a minute.
const (
	robotsTTL      = 24 * time.Hour
	robotsErrorTTL = time.Minute
)

// Options configures a Fetcher. Zero values select the defaults above.
type Options struct {
	// Allow is the allow-list in DEEPRESEARCH_FETCH_ALLOW format; see
	// ParseAllowList.
	Allow string
	// UserAgent is sent with every request, e.g.
	// "deepresearch/1.2.0 (+https://github.com/org/deepresearch)".
	UserAgent string
	// RobotsAgent is the product token matched against robots.txt
	// User-agent lines.
	RobotsAgent string
	// IgnoreRobots disables robots.txt checks.
	IgnoreRobots bool
	// MaxBytes caps the body, both as received and after decompression.
	MaxBytes int64
	// TruncateOversize returns the first MaxBytes (Result.Truncated set)
	// instead of failing with ErrTooLarge. PDFs are never truncated.
	TruncateOversize bool
	// Timeout bounds a whole Fetch: robots.txt, redirects and body.
	Timeout time.Duration
	// HeaderTimeout bounds the wait for response headers of each request.
	HeaderTimeout time.Duration
	// DialTimeout bounds each TCP connect.
	DialTimeout time.Duration
	// MaxRedirects is the number of redirects followed; 0 means
	// DefaultMaxRedirects and a negative value disables redirects.
	MaxRedirects int
	// PerHostConcurrency bounds simultaneous requests to one host:port.
	PerHostConcurrency int
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Cache, if set, is consulted and filled by Fetch. See WithCache for
	// per-run caches on a shared Fetcher.
	Cache *Cache
	// ExtractPDF, if set, turns PDF bodies into Result.Text (for example
	// an (*pdf.Extractor).ExtractText method value).
	ExtractPDF func(ctx context.Context, data []byte) (string, error)
	// Logger receives debug and warning records; nil discards them.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Result is one fetched page.
type Result struct {
	// URL is the requested URL in normalised form.
	URL string
	// FinalURL is the URL after redirects.
	FinalURL string
	// Redirects lists the URLs that redirected, in order, starting with URL.
	// It is empty when there was no redirect.
	Redirects []string
	// Status is the final HTTP status code.
	Status int
	// ContentType is the media type, lower case, without parameters.
	ContentType string
	// Kind is the class of content.
	Kind Kind
	// Charset names the encoding the text was decoded from ("utf-8",
	// "shift_jis", ...); empty for PDF.
	Charset string
	// Text is the body decoded to UTF-8 (HTML source for KindHTML). For
	// KindPDF it is the extracted text if Options.ExtractPDF is set.
	Text string
	// Raw holds the original bytes for KindPDF; nil otherwise.
	Raw []byte
	// Truncated reports that the body was cut at MaxBytes.
	Truncated bool
	// FetchedAt is when the response arrived.
	FetchedAt time.Time
	// Header is a subset of the final response headers: Content-Type,
	// Content-Language, Last-Modified, ETag, Date, Cache-Control,
	// X-Robots-Tag.
	Header http.Header
}

var keptHeaders = []string{"Content-Type", "Content-Language", "Last-Modified", "Etag", "Date", "Cache-Control", "X-Robots-Tag"}

// Fetcher fetches pages safely. It is safe for concurrent use and meant to
// be long-lived: its connection pool, robots.txt cache and per-host limits
// are shared by all copies made with WithCache.
type Fetcher struct {
	*shared
	cache *Cache
}

type shared struct {
	opts   Options
	allow  *AllowList
	client *http.Client
	tr     *http.Transport
	dialer *safeDialer
	hosts  *hostLimiter
	log    *slog.Logger

	robotsMu sync.Mutex
	robots   map[string]*robotsEntry
}

type robotsEntry struct {
	done    chan struct{}
	rules   *Robots
	err     error
	expires time.Time
}

// New returns a Fetcher. It fails only if opts.Allow does not parse.
func New(opts Options) (*Fetcher, error) {
	allow, err := ParseAllowList(opts.Allow)
	if err != nil {
		return nil, err
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.RobotsAgent == "" {
		opts.RobotsAgent = DefaultRobotsAgent
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	switch {
	case opts.MaxRedirects == 0:
		opts.MaxRedirects = DefaultMaxRedirects
	case opts.MaxRedirects < 0:
		opts.MaxRedirects = 0
	}
	if opts.PerHostConcurrency <= 0 {
		opts.PerHostConcurrency = DefaultPerHostConcurrency
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := newSafeDialer(allow, opts.Resolver, opts.DialTimeout, log)
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial on our behalf, unchecked
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  opts.HeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true, // we decode (and cap) ourselves
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    opts.PerHostConcurrency,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 256 << 10,
	}
	s := &shared{
		opts:  opts,
		allow: allow,
		tr:    tr,
		client: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse // redirects are followed by hand
			},
		},
		dialer: d,
		hosts:  newHostLimiter(opts.PerHostConcurrency),
		log:    log,
		robots: make(map[string]*robotsEntry),
	}
	return &Fetcher{shared: s, cache: opts.Cache}, nil
}

// WithCache returns a Fetcher that shares f's connections, robots.txt cache
// and per-host limits but reads and fills c (nil: no cache). Use one per
// research run.
func (f *Fetcher) WithCache(c *Cache) *Fetcher {
	return &Fetcher{shared: f.shared, cache: c}
}

// Cache returns the cache this Fetcher fills, or nil.
func (f *Fetcher) Cache() *Cache { return f.cache }

// Close releases idle connections.
func (f *Fetcher) Close() error {
	f.tr.CloseIdleConnections()
	return nil
}

// Fetch retrieves rawURL. Errors wrap the package's sentinel errors where
// one applies (ErrBlockedAddress, ErrRobots, ErrTooLarge, ...), and a non-2xx
// final status is a *StatusError.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Result, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if f.cache == nil {
		return f.fetch(ctx, u)
	}
	key, err := cacheKey(u)
	if err != nil {
		return nil, err
	}
	res, hit, err := f.cache.do(ctx, key, func() (*Result, error) { return f.fetch(ctx, u) })
	if hit && err == nil {
		f.log.Debug("fetch: cache hit", "url", redact.URL(u.String()))
	}
	return res, err
}

func (f *Fetcher) fetch(ctx context.Context, u *url.URL) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	start := f.opts.Now()
	resp, final, chain, release, err := f.follow(ctx, u, !f.opts.IgnoreRobots)
	if err != nil {
		return nil, err
	}
	defer release()
	defer resp.Body.Close()
	res, err := f.readResult(ctx, resp, final)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", redact.URL(final.String()), err)
	}
	res.URL = u.String()
	res.Redirects = chain
	f.log.Debug("fetch: done", "url", redact.URL(res.URL), "final", redact.URL(res.FinalURL), "status", res.Status,
		"type", res.ContentType, "charset", res.Charset, "bytes", len(res.Text), "took", f.opts.Now().Sub(start))
	return res, nil
}

// follow requests u and follows redirects by hand, applying the URL, address,
// port and (if checkRobots) robots policies to every hop. On success the
// caller owns resp.Body and must call release after reading it.
func (f *Fetcher) follow(ctx context.Context, u *url.URL, checkRobots bool) (resp *http.Response, final *url.URL, chain []string, release func(), err error) {
	visited := map[string]bool{}
	for {
		key := u.String()
		visited[key] = true
		shown := redact.URL(key) // for errors: they are logged
		hostAllowed, err := hostPolicy(f.allow, u)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("fetch %s: %w", shown, redactErr(err))
		}
		if err := checkPort(f.allow, u, hostAllowed); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("fetch %s: %w", shown, redactErr(err))
		}
		if checkRobots {
			if err := f.robotsAllow(ctx, u); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("fetch %s: %w", shown, redactErr(err))
			}
		}
		rel, err := f.hosts.acquire(ctx, u.Host)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("fetch %s: %w", shown, redactErr(err))
		}
		resp, err := f.get(ctx, u)
		if err != nil {
			rel()
			return nil, nil, nil, nil, fmt.Errorf("fetch %s: %w", shown, redactErr(err))
		}
		if !isRedirect(resp.StatusCode) || resp.Header.Get("Location") == "" {
			return resp, u, chain, rel, nil
		}
		loc := resp.Header.Get("Location")
		// Drained only so the connection can be reused: a read error just
		// means it is not, and the redirect is followed either way.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		rel()
		chain = append(chain, key)
		next, err := u.Parse(loc)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("fetch %s: redirect to %q: %w: %v", shown, redact.URL(loc), ErrInvalidURL, err)
		}
		next, err = parseURL(next.String())
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("fetch %s: redirect to %q: %w", shown, redact.URL(loc), err)
		}
		if visited[next.String()] {
			return nil, nil, nil, nil, fmt.Errorf("fetch %s: %w: back to %s", shown, ErrRedirectLoop, redact.URL(next.String()))
		}
		if len(chain) > f.opts.MaxRedirects {
			return nil, nil, nil, nil, fmt.Errorf("fetch %s: %w (limit %d)", redact.URL(chain[0]), ErrTooManyRedirects, f.opts.MaxRedirects)
		}
		f.log.Debug("fetch: redirect", "from", redact.URL(key), "to", redact.URL(next.String()), "status", resp.StatusCode)
		u = next
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func (f *Fetcher) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,application/pdf;q=0.9,*/*;q=0.1")
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	return f.client.Do(req)
}

// readResult checks status and type, then reads and decodes the body.
func (f *Fetcher) readResult(ctx context.Context, resp *http.Response, u *url.URL) (*Result, error) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{URL: u.String(), Code: resp.StatusCode}
	}
	limit := f.opts.MaxBytes
	if resp.ContentLength > limit && !f.opts.TruncateOversize {
		return nil, fmt.Errorf("%w: Content-Length %d > %d", ErrTooLarge, resp.ContentLength, limit)
	}
	ct := resp.Header.Get("Content-Type")
	mt := mediaTypeOf(ct)
	kind, known := classify(mt)
	if !known && !untyped(mt) {
		return nil, fmt.Errorf("%w: %s", ErrContentType, mt)
	}
	data, truncated, err := f.readBody(resp, limit)
	if err != nil {
		return nil, err
	}
	if !known {
		var ok bool
		mt, kind, ok = sniffKind(data[:min(len(data), 512)])
		if !ok {
			return nil, fmt.Errorf("%w: %s (sniffed)", ErrContentType, mt)
		}
	}
	res := &Result{
		FinalURL:    u.String(),
		Status:      resp.StatusCode,
		ContentType: mt,
		Kind:        kind,
		Truncated:   truncated,
		FetchedAt:   f.opts.Now(),
		Header:      keptHeadersOf(resp.Header),
	}
	if kind == KindPDF {
		return f.pdfResult(ctx, res, data, limit)
	}
	res.Text, res.Charset = decodeText(data, ct, kind == KindHTML)
	return res, nil
}

// untyped reports whether a media type says nothing of the content (none,
// or an octet stream): the content is sniffed.
func untyped(mt string) bool {
	return mt == "" || mt == "application/octet-stream" || mt == "binary/octet-stream"
}

// readBody reads the body, decoded, up to limit bytes before and after
// decoding; past the limit it is an error, or truncated when the options
// say so.
func (f *Fetcher) readBody(resp *http.Response, limit int64) (data []byte, truncated bool, err error) {
	body, closeDec, err := decodeContent(&limitedReader{r: resp.Body, n: limit, what: "response body"}, resp.Header.Get("Content-Encoding"))
	if err != nil {
		return nil, false, err
	}
	defer closeDec()
	data, err = io.ReadAll(&limitedReader{r: body, n: limit, what: "decoded body"})
	if err != nil {
		if !errors.Is(err, ErrTooLarge) || !f.opts.TruncateOversize {
			return nil, false, err
		}
		truncated = true
	}
	return data, truncated, nil
}

// keptHeadersOf copies the keptHeaders of h.
func keptHeadersOf(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range keptHeaders {
		if v := h.Values(k); len(v) > 0 {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// pdfResult keeps a PDF's bytes (never a truncated PDF) and its text when
// the options extract it.
func (f *Fetcher) pdfResult(ctx context.Context, res *Result, data []byte, limit int64) (*Result, error) {
	if res.Truncated {
		return nil, fmt.Errorf("%w: PDF larger than %d bytes", ErrTooLarge, limit)
	}
	res.Raw = data
	if f.opts.ExtractPDF != nil {
		text, err := f.opts.ExtractPDF(ctx, data)
		if err != nil {
			return nil, fmt.Errorf("extract PDF: %w", err)
		}
		res.Text = text
	}
	return res, nil
}

// robotsAllow checks u against its origin's robots.txt, fetching and caching
// it on first use. Policy (RFC 9309 §2.3.1): 2xx → parse; 4xx other than
// 429 → no restrictions; 429, 5xx, or network failure → treat the whole site
// as disallowed for now (retried after robotsErrorTTL). A robots.txt that the
// address policy blocks reports ErrBlockedAddress.
func (f *Fetcher) robotsAllow(ctx context.Context, u *url.URL) error {
	if u.EscapedPath() == "/robots.txt" {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	now := f.opts.Now()
	f.robotsMu.Lock()
	e := f.robots[origin]
	if e != nil {
		select {
		case <-e.done:
			if now.After(e.expires) {
				e = nil
			}
		default:
		}
	}
	if e == nil {
		e = &robotsEntry{done: make(chan struct{})}
		f.robots[origin] = e
		f.robotsMu.Unlock()
		// Detach from the caller so that one caller's cancellation does not
		// poison the shared entry; bound by our own timeout instead.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.opts.Timeout)
		e.rules, e.err = f.loadRobots(rctx, origin)
		cancel()
		ttl := robotsTTL
		if e.err != nil {
			ttl = robotsErrorTTL
		}
		e.expires = f.opts.Now().Add(ttl)
		close(e.done)
	} else {
		f.robotsMu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if e.err != nil {
		if errors.Is(e.err, ErrBlockedAddress) || errors.Is(e.err, ErrPort) {
			return e.err
		}
		return fmt.Errorf("%w: %s/robots.txt unavailable, not crawling for now: %v", ErrRobots, origin, e.err)
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	if !e.rules.Allowed(f.opts.RobotsAgent, p) {
		return fmt.Errorf("%w: %s for %q", ErrRobots, p, f.opts.RobotsAgent)
	}
	return nil
}

func (f *Fetcher) loadRobots(ctx context.Context, origin string) (*Robots, error) {
	u, err := parseURL(origin + "/robots.txt")
	if err != nil {
		return nil, err
	}
	resp, _, _, release, err := f.follow(ctx, u, false)
	if err != nil {
		return nil, err
	}
	defer release()
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("robots.txt status %d", resp.StatusCode)
	case resp.StatusCode >= 400:
		f.log.Debug("fetch: no robots.txt", "origin", origin, "status", resp.StatusCode)
		return &Robots{}, nil
	default: // 1xx, 3xx without Location
		return nil, fmt.Errorf("robots.txt status %d", resp.StatusCode)
	}
	body, closeDec, err := decodeContent(&limitedReader{r: resp.Body, n: f.opts.MaxBytes, what: "robots.txt"}, resp.Header.Get("Content-Encoding"))
	if err != nil {
		return nil, err
	}
	defer closeDec()
	data, err := io.ReadAll(io.LimitReader(body, maxRobotsBytes))
	if err != nil && !errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("read robots.txt: %w", err)
	}
	return ParseRobots(data), nil
}

// redactErr masks the secrets of the URL inside a transport error
// (*url.Error quotes the request URL whole).
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact.URL(ue.URL)
	}
	return err
}
