package slackfake

import (
	"encoding/json"
	"regexp"
	"strings"
)

// What Slack makes clickable in what a bot sends (shared/slack-facts.md,
// "Blocks and text"):
//   - mrkdwn (a text object, a message's text): <url> and <url|text>
//     links, whose text may differ from their target; unless the text
//     object is verbatim, Slack also links bare URLs by itself (the text
//     object's "verbatim": false, the default, "auto-converts URLs into
//     links");
//   - standard markdown (a markdown block, a stream's markdown_text chunk):
//     [text](url), ![alt](url) (shown as a link), <url> autolinks and bare
//     http(s)/www. addresses;
//   - rich_text link elements, link buttons, and a stream's task card
//     sources ({"type":"url","url","text"}).
// &lt; and &gt; are text, so "&lt;https://x|y&gt;" is no link (but the
// bare URL inside it is, where Slack links bare URLs).

// Link is something Slack would show as clickable.
type Link struct {
	Where string // "message", "edit", "file", "stream", "ephemeral"
	TS    string
	URL   string // where it goes
	Text  string // what it shows
}

var (
	mrkdwnLinkRE = regexp.MustCompile(`<([^<>|!@#][^<>|]*)(?:\|([^<>]*))?>`)
	mdLinkFakeRE = regexp.MustCompile(`\[([^\[\]]*)\]\(\s*<?([^\s()<>]+)`)
	autolinkRE   = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>`)
	bareURLRE    = regexp.MustCompile(`(?i)(?:https?|ftp)://[^\s<>|]+|\bwww\.[^\s<>|]+`)
)

// bareLinks are the bare addresses of text, without the punctuation that
// ends a sentence.
func bareLinks(text string) []Link {
	var out []Link
	for _, m := range bareURLRE.FindAllString(text, -1) {
		m = strings.TrimRight(m, ".,;:!?)]*_~'\"`&")
		if strings.HasSuffix(m, "&gt") || strings.HasSuffix(m, "&lt") {
			m = m[:len(m)-3]
		}
		if i := strings.Index(m, "&gt;"); i >= 0 {
			m = m[:i]
		}
		if m != "" {
			out = append(out, Link{URL: m, Text: m})
		}
	}
	return out
}

// MrkdwnLinks returns the links Slack shows for mrkdwn text: its <url>
// and <url|text> links and, unless verbatim, its bare addresses.
func MrkdwnLinks(text string, verbatim bool) []Link {
	var out []Link
	for _, m := range mrkdwnLinkRE.FindAllStringSubmatch(text, -1) {
		l := Link{URL: m[1], Text: m[2]}
		if l.Text == "" {
			l.Text = l.URL
		}
		out = append(out, l)
	}
	if !verbatim {
		out = append(out, bareLinks(mrkdwnLinkRE.ReplaceAllString(text, " "))...)
	}
	return out
}

// MarkdownLinks returns the links Slack shows for standard markdown text:
// inline links and images, autolinks and bare addresses.
func MarkdownLinks(text string) []Link {
	var out []Link
	for _, m := range mdLinkFakeRE.FindAllStringSubmatch(text, -1) {
		out = append(out, Link{URL: m[2], Text: m[1]})
	}
	rest := mdLinkFakeRE.ReplaceAllString(text, " ")
	for _, m := range autolinkRE.FindAllStringSubmatch(rest, -1) {
		out = append(out, Link{URL: m[1], Text: m[1]})
	}
	return append(out, bareLinks(autolinkRE.ReplaceAllString(rest, " "))...)
}

// BlockLinks returns the links in blocks, chunks or any JSON a bot sent.
func BlockLinks(raw json.RawMessage) []Link {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []Link
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			text, _ := x["text"].(string)
			url, _ := x["url"].(string)
			switch x["type"] {
			case "mrkdwn":
				verbatim, _ := x["verbatim"].(bool)
				out = append(out, MrkdwnLinks(text, verbatim)...)
			case "markdown", "markdown_text":
				out = append(out, MarkdownLinks(text)...)
			case "link", "url", "button":
				if url != "" {
					out = append(out, Link{URL: url, Text: text})
				}
			}
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// LiveLinks returns every link in what the bot sent: messages (their text
// and blocks, and every earlier version), ephemerals, file shares and
// streams (chunks and final blocks). Views are left out.
func (s *Server) LiveLinks() []Link {
	var out []Link
	add := func(where, ts string, ls []Link) {
		for _, l := range ls {
			l.Where, l.TS = where, ts
			out = append(out, l)
		}
	}
	for _, m := range s.AllMessages() {
		if !m.IsBot() {
			continue
		}
		add("message", m.TS, MrkdwnLinks(m.Text, false))
		add("message", m.TS, BlockLinks(m.Blocks))
		for _, e := range m.Edits {
			add("edit", m.TS, MrkdwnLinks(e.Text, false))
			add("edit", m.TS, BlockLinks(e.Blocks))
		}
	}
	for _, e := range s.Ephemerals() {
		add("ephemeral", e.TS, MrkdwnLinks(e.Text, false))
		add("ephemeral", e.TS, BlockLinks(e.Blocks))
	}
	for _, f := range s.Files() {
		add("file", f.MessageTS, MrkdwnLinks(f.InitialComment, false))
		add("file", f.MessageTS, BlockLinks(f.Blocks))
	}
	for _, st := range s.Streams() {
		for _, c := range st.Chunks {
			add("stream", st.TS, BlockLinks(c))
		}
		add("stream", st.TS, BlockLinks(st.FinalBlocks))
	}
	return out
}
