package slackfake

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// Limits makes the fake enforce Slack's Web API rate limits as the real
// API does: a call over the limit is answered HTTP 429 with a Retry-After
// header (whole seconds) and {"ok":false,"error":"ratelimited"}, is not
// acted on, and is recorded in the call log with Status 429 and Limited
// set. Zero fields take Slack's published figures.
type Limits struct {
	// UpdatesPerMinute and UpdateBurst bound chat.update per workspace
	// (Tier 3, "50+ per minute"): a token bucket of UpdateBurst tokens
	// refilled at UpdatesPerMinute. Defaults 50 and 20; a negative
	// UpdatesPerMinute leaves chat.update unlimited.
	UpdatesPerMinute int
	UpdateBurst      int
	// PostInterval and PostBurst bound chat.postMessage per channel
	// ("1 message per second per channel", short bursts allowed): a
	// bucket of PostBurst refilled one per PostInterval. Defaults 1s and
	// 5; a negative PostInterval leaves chat.postMessage unlimited.
	PostInterval time.Duration
	PostBurst    int
	// StartStreamsPerMinute bounds chat.startStream and chat.stopStream per
	// workspace, each on its own (Tier 2, "20+ per minute"), and
	// AppendsPerMinute chat.appendStream (Tier 4, "100+ per minute"), each
	// a bucket as large as a minute's calls. They do not share
	// chat.update's budget. Defaults 20 and 100; negative: unlimited.
	StartStreamsPerMinute int
	AppendsPerMinute      int
	// SearchesPerMinute bounds assistant.search.context per workspace
	// ("10+ per minute" for most teams). Default 10; negative: unlimited.
	SearchesPerMinute int
}

func (l Limits) withDefaults() Limits {
	if l.UpdatesPerMinute == 0 {
		l.UpdatesPerMinute = 50
	}
	if l.UpdateBurst <= 0 {
		l.UpdateBurst = 20
	}
	if l.PostInterval == 0 {
		l.PostInterval = time.Second
	}
	if l.PostBurst <= 0 {
		l.PostBurst = 5
	}
	if l.StartStreamsPerMinute == 0 {
		l.StartStreamsPerMinute = 20
	}
	if l.AppendsPerMinute == 0 {
		l.AppendsPerMinute = 100
	}
	if l.SearchesPerMinute == 0 {
		l.SearchesPerMinute = 10
	}
	return l
}

// WithTierLimits makes the server enforce l (see Limits). Off by default.
func WithTierLimits(l Limits) Option {
	return func(c *config) { c.limits = &l }
}

// SetTierLimits turns rate limit enforcement on with l, with full buckets;
// nil turns it off.
func (s *Server) SetTierLimits(l *Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = newTierLimits(l)
}

// RateLimited counts the calls of method ("" for all) answered 429, by the
// tier limits or by injected faults.
func (s *Server) RateLimited(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if (method == "" || c.Method == method) && c.Status == http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

// tierLimits is the enforcement state: one chat.update bucket for the
// workspace and one chat.postMessage bucket per channel.
type tierLimits struct {
	cfg         Limits
	update      *bucket            // nil: unlimited
	posts       map[string]*bucket // by channel; nil map: unlimited
	startStream *bucket            // nil: unlimited
	stopStream  *bucket            // nil: unlimited
	append      *bucket            // nil: unlimited
	search      *bucket            // nil: unlimited
}

func newTierLimits(l *Limits) *tierLimits {
	if l == nil {
		return nil
	}
	cfg := l.withDefaults()
	t := &tierLimits{cfg: cfg}
	now := time.Now()
	if cfg.UpdatesPerMinute > 0 {
		t.update = &bucket{rate: float64(cfg.UpdatesPerMinute) / 60, burst: float64(cfg.UpdateBurst), tokens: float64(cfg.UpdateBurst), last: now}
	}
	if cfg.PostInterval > 0 {
		t.posts = map[string]*bucket{}
	}
	perMinute := func(n int) *bucket {
		if n <= 0 {
			return nil
		}
		return &bucket{rate: float64(n) / 60, burst: float64(n), tokens: float64(n), last: now}
	}
	t.startStream = perMinute(cfg.StartStreamsPerMinute)
	t.stopStream = perMinute(cfg.StartStreamsPerMinute)
	t.append = perMinute(cfg.AppendsPerMinute)
	t.search = perMinute(cfg.SearchesPerMinute)
	return t
}

// bucket is a token bucket; tokens per second.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// take takes a token, or says how long until one is available.
func (b *bucket) take(now time.Time) (ok bool, retryAfter time.Duration) {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration(math.Ceil((1 - b.tokens) / b.rate * float64(time.Second)))
}

// tierLimitLocked takes a token for the request, or returns how long the
// caller must wait. s.mu must be held.
func (s *Server) tierLimitLocked(req *apiRequest, now time.Time) (limited bool, retryAfter time.Duration) {
	t := s.limits
	if t == nil {
		return false, 0
	}
	var b *bucket
	switch req.method {
	case "chat.update":
		b = t.update
	case "chat.startStream":
		b = t.startStream
	case "chat.stopStream":
		b = t.stopStream
	case "assistant.search.context":
		b = t.search
	case "chat.appendStream":
		b = t.append
	case "chat.postMessage":
		if t.posts == nil {
			return false, 0
		}
		ch := req.get("channel")
		if ch == "" {
			return false, 0 // the handler answers channel_not_found
		}
		ch = s.resolveChannelLocked(ch)
		b = t.posts[ch]
		if b == nil {
			rate := float64(time.Second) / float64(t.cfg.PostInterval)
			b = &bucket{rate: rate, burst: float64(t.cfg.PostBurst), tokens: float64(t.cfg.PostBurst), last: now}
			t.posts[ch] = b
		}
	}
	if b == nil {
		return false, 0
	}
	ok, wait := b.take(now)
	return !ok, wait
}

// writeRateLimited answers 429 like Slack: Retry-After in whole seconds,
// at least one.
func writeRateLimited(w http.ResponseWriter, retryAfter time.Duration) {
	secs := max(int64((retryAfter+time.Second-1)/time.Second), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
}
