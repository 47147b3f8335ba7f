package bot

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Hazards lists what in a rendered Slack payload (message text, or the JSON
// of blocks, a view or a whole request) could notify people, spoof a link
// or carry a control character: a live mention (<!channel>, <!here>,
// <!everyone>, <!subteam^…>, <@U…>, a plain @channel/@here/@everyone/@all
// in any width or split by zero-width characters, rich_text broadcast, user
// or usergroup elements), a link whose visible text is not its target
// (mrkdwn <url|text>, markdown [text](url)), a control character other than
// newline and tab, or invalid UTF-8. It returns nil for a safe payload.
// The renderers' property tests (the bot's and the digests') check every
// payload with it.
func Hazards(payload string) []string {
	var out []string
	t := strings.TrimSpace(payload)
	var v any
	if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &v) == nil {
		walkHazards(v, &out)
		return out
	}
	textHazards(payload, &out)
	return out
}

func walkHazards(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		switch x["type"] {
		case "broadcast", "usergroup", "user":
			*out = append(*out, fmt.Sprintf("rich_text %v element", x["type"]))
		}
		for _, e := range x {
			walkHazards(e, out)
		}
	case []any:
		for _, e := range x {
			walkHazards(e, out)
		}
	case string:
		textHazards(x, out)
	}
}

var (
	hzMentionRE      = regexp.MustCompile(`<(?:!|@[UWB])`)
	hzMrkdwnLinkRE   = regexp.MustCompile(`<([^<>|]*)\|([^<>]*)>`)
	hzMarkdownLinkRE = regexp.MustCompile(`\[([^\[\]]*)\]\(\s*<?([^()\s>]*)`)
)

func textHazards(s string, out *[]string) {
	if !utf8.ValidString(s) {
		*out = append(*out, "invalid UTF-8")
	}
	for _, r := range s {
		if dropRune(r) {
			*out = append(*out, fmt.Sprintf("control character %U", r))
			break
		}
	}
	if m := hzMentionRE.FindString(s); m != "" {
		*out = append(*out, "live mention "+quoteAround(s, strings.Index(s, m)))
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == '@' || r == '＠') && BroadcastAt(s[i+n:]) {
			*out = append(*out, "broadcast word "+quoteAround(s, i))
			break
		}
		i += n
	}
	for _, m := range hzMrkdwnLinkRE.FindAllStringSubmatch(s, -1) {
		if strings.TrimSpace(m[1]) != strings.TrimSpace(m[2]) {
			*out = append(*out, fmt.Sprintf("mrkdwn link %q shows %q", m[1], m[2]))
		}
	}
	for _, m := range hzMarkdownLinkRE.FindAllStringSubmatch(s, -1) {
		if strings.TrimSpace(m[1]) != m[2] {
			*out = append(*out, fmt.Sprintf("markdown link to %q shows %q", m[2], m[1]))
		}
	}
}

func quoteAround(s string, i int) string {
	lo, hi := max(0, i-20), min(len(s), i+40)
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	return fmt.Sprintf("%q", s[lo:hi])
}
