package docs

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// URLScheme is the scheme of result URLs.
const URLScheme = "doc"

// ErrNotDocURL is returned by ParseURL for anything but a doc:// URL.
var ErrNotDocURL = errors.New("docs: not a doc:// URL")

// FormatURL returns doc://<rel>#<ord> (ord 0 leaves out the fragment).
func FormatURL(rel string, ord int) string {
	var b strings.Builder
	b.WriteString(URLScheme + "://")
	for _, r := range rel {
		switch {
		case r == '%' || r == '#' || r == '?' || r == ' ' || r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "%%%02X", r)
		default:
			b.WriteRune(r)
		}
	}
	if ord > 0 {
		b.WriteString("#" + strconv.Itoa(ord))
	}
	return b.String()
}

// ParseURL splits a doc:// URL into the relative path and the passage
// number (0 when there is no fragment).
func ParseURL(u string) (rel string, ord int, err error) {
	rest, ok := strings.CutPrefix(u, URLScheme+"://")
	if !ok {
		return "", 0, fmt.Errorf("%w: %q", ErrNotDocURL, u)
	}
	p, frag, hasFrag := strings.Cut(rest, "#")
	if hasFrag {
		ord, err = strconv.Atoi(frag)
		if err != nil || ord < 0 {
			return "", 0, fmt.Errorf("%w: bad passage %q", ErrNotDocURL, frag)
		}
	}
	rel, err = url.PathUnescape(p)
	if err != nil || rel == "" {
		return "", 0, fmt.Errorf("%w: bad path %q", ErrNotDocURL, p)
	}
	return rel, ord, nil
}
