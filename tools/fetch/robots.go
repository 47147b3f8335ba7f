package fetch

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
)

// Robots is a parsed robots.txt (RFC 9309). The zero value allows everything.
type Robots struct {
	groups []robotsGroup
}

type robotsGroup struct {
	agents []string // lower-case product tokens; "*" for any
	rules  []robotsRule
}

type robotsRule struct {
	allow   bool
	pattern string // normalised path pattern, may contain * and a final $
}

// maxRobotsBytes is how much of a robots.txt is parsed; RFC 9309 asks
// crawlers to parse at least 500 KiB.
const maxRobotsBytes = 512 << 10

// ParseRobots parses a robots.txt body. Unknown lines are ignored; it never
// fails. Rules before the first User-agent line are ignored; consecutive
// User-agent lines share the rules that follow them.
func ParseRobots(data []byte) *Robots {
	if len(data) > maxRobotsBytes {
		data = data[:maxRobotsBytes]
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	r := &Robots{}
	var cur *robotsGroup
	lastWasAgent := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxRobotsBytes+1)
	sc.Split(scanRobotsLines)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		switch key {
		case "user-agent", "useragent", "user agent":
			if !lastWasAgent || cur == nil {
				r.groups = append(r.groups, robotsGroup{})
				cur = &r.groups[len(r.groups)-1]
			}
			cur.agents = append(cur.agents, agentToken(val))
			lastWasAgent = true
		case "allow", "disallow", "dissallow", "disalow":
			lastWasAgent = false
			if cur == nil || val == "" {
				continue // empty Disallow means "nothing"; empty Allow is a no-op
			}
			cur.rules = append(cur.rules, robotsRule{allow: key == "allow", pattern: normalisePattern(val)})
		default:
			// Sitemap, Crawl-delay, Host, ... do not end a user-agent run
			// per RFC 9309, but they are not rules either.
		}
	}
	return r
}

// scanRobotsLines splits on \n, \r\n or a lone \r.
func scanRobotsLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\r' {
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if !atEOF {
				return 0, nil, nil // need more to know if \n follows
			}
		}
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// agentToken reduces a User-agent value to its lower-case product token:
// "Googlebot/2.1 (+http://...)" -> "googlebot".
func agentToken(v string) string {
	v = strings.ToLower(strings.TrimSpace(v))
	if i := strings.IndexAny(v, "/ \t"); i >= 0 {
		v = v[:i]
	}
	return v
}

// Allowed reports whether agent (a product token such as "deepresearch")
// may fetch the path-and-query p (e.g. "/a/b?c=d"). The groups naming the
// agent apply (merged, if several); otherwise the "*" groups; otherwise
// everything is allowed. Among matching rules the longest pattern wins, and
// Allow wins a tie. /robots.txt itself is always allowed.
func (r *Robots) Allowed(agent, p string) bool {
	if r == nil {
		return true
	}
	if p == "" {
		p = "/"
	}
	if p == "/robots.txt" {
		return true
	}
	p = normalisePath(p)
	agent = agentToken(agent)
	// a group naming the agent without rules does not count: "*" applies
	rules, _ := r.rulesFor(func(a string) bool { return a == agent && a != "*" && a != "" })
	if rules == nil {
		var found bool
		if rules, found = r.rulesFor(func(a string) bool { return a == "*" }); !found {
			return true
		}
	}
	return longestMatchAllows(rules, p)
}

// rulesFor merges the rules of the groups with an agent that matches;
// found reports whether any group has one.
func (r *Robots) rulesFor(match func(agent string) bool) (rules []robotsRule, found bool) {
	for _, g := range r.groups {
		if slices.ContainsFunc(g.agents, match) {
			rules = append(rules, g.rules...)
			found = true
		}
	}
	return rules, found
}

// longestMatchAllows applies the rule with the longest pattern matching p
// (Allow wins a tie); no matching rule allows.
func longestMatchAllows(rules []robotsRule, p string) bool {
	best, allowed := -1, true
	for _, rule := range rules {
		if !matchPattern(rule.pattern, p) {
			continue
		}
		n := len(rule.pattern)
		if n > best || (n == best && rule.allow) {
			best, allowed = n, rule.allow
		}
	}
	return allowed
}

// matchPattern matches a robots path pattern against a path from its start.
// '*' matches any sequence; a final '$' anchors the end. It runs in
// O(len(pattern)*len(path)) worst case without recursion.
func matchPattern(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(path) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pattern) && pattern[pi] == path[si]:
			pi++
			si++
		case pi == len(pattern) && !anchored:
			return true // prefix match
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// normalisePattern puts a rule value in the same form as normalisePath,
// keeping '*' and a trailing '$' as operators.
func normalisePattern(v string) string {
	anchored := strings.HasSuffix(v, "$")
	if anchored {
		v = v[:len(v)-1]
	}
	// A '$' elsewhere is a literal character (matchPattern only treats a
	// final '$' as the anchor).
	for strings.Contains(v, "**") {
		v = strings.ReplaceAll(v, "**", "*")
	}
	v = normalisePath(v)
	if !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "*") {
		v = "/" + v
	}
	if anchored {
		v += "$"
	}
	return v
}

// normalisePath percent-encodes bytes outside printable ASCII, upper-cases
// percent escapes, and decodes escapes of unreserved characters, so that
// "/%7efoo", "/~foo" and "/%7Efoo" compare equal.
func normalisePath(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(hex[v>>4])
				b.WriteByte(hex[v&15])
			}
			i += 2
		case c <= 0x20 || c >= 0x7f:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
