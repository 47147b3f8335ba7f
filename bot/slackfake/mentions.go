package slackfake

import (
	"encoding/json"
	"regexp"
	"strings"
)

// mentionRE matches Slack's escaped mention syntax that notifies people:
// <!channel>, <!here>, <!everyone> (with an optional |label), <!subteam^S…>
// and user mentions <@U…> / <@W…>.
var mentionRE = regexp.MustCompile(`<(?:!(?:channel|here|everyone)|!subteam\^[A-Za-z0-9]+|@[UW][A-Za-z0-9]+)(?:\|[^>]*)?>`)

// jsonEscapes undoes the escapes encoding/json applies to <, > and &, so that
// mentions inside marshalled blocks are seen.
var jsonEscapes = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&", `\u003C`, "<", `\u003E`, ">")

// MentionsBroadcast reports whether text (message text, or blocks/attachments
// JSON) contains a mention that notifies people: <!channel>, <!here>,
// <!everyone>, <!subteam^…> or <@U…>. In JSON it also finds rich_text
// "broadcast", "usergroup" and "user" elements.
func MentionsBroadcast(text string) bool {
	if mentionRE.MatchString(text) || mentionRE.MatchString(jsonEscapes.Replace(text)) {
		return true
	}
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "[") && !strings.HasPrefix(t, "{") {
		return false
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return false
	}
	return jsonMentions(v)
}

func jsonMentions(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		switch x["type"] {
		case "broadcast", "usergroup":
			return true
		case "user":
			if _, ok := x["user_id"]; ok {
				return true
			}
		}
		for _, e := range x {
			if jsonMentions(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if jsonMentions(e) {
				return true
			}
		}
	case string:
		return mentionRE.MatchString(x)
	}
	return false
}

// Ping is a piece of bot output that would notify people.
type Ping struct {
	Where   string // "message", "edit", "ephemeral", "file", "response_url"
	Channel string
	TS      string
	Content string
}

// Pings scans everything the bot sent (messages and their earlier versions,
// ephemerals, file comments, response_url posts; views notify nobody) for mentions that
// notify people; e2e tests assert it is empty. With link_names=1 a plain
// "@channel"/"@here"/"@everyone" counts too.
func (s *Server) Pings() []Ping {
	var out []Ping
	check := func(p Ping, parts ...string) {
		for _, c := range parts {
			if c != "" && MentionsBroadcast(c) {
				p.Content = c
				out = append(out, p)
				return
			}
		}
	}
	for _, m := range s.AllMessages() {
		if !m.IsBot() {
			continue
		}
		p := Ping{Where: "message", Channel: m.Channel, TS: m.TS}
		check(p, m.Text, string(m.Blocks), string(m.Attachments))
		if m.Params["link_names"] == "1" || m.Params["link_names"] == "true" || m.Params["parse"] == "full" {
			if plainBroadcastRE.MatchString(m.Text) {
				out = append(out, Ping{Where: "message", Channel: m.Channel, TS: m.TS, Content: m.Text})
			}
		}
		for _, e := range m.Edits {
			check(Ping{Where: "edit", Channel: m.Channel, TS: m.TS}, e.Text, string(e.Blocks), string(e.Attachments))
		}
	}
	for _, e := range s.Ephemerals() {
		check(Ping{Where: "ephemeral", Channel: e.Channel, TS: e.TS}, e.Text, string(e.Blocks))
	}
	for _, f := range s.Files() {
		ch := ""
		if len(f.Channels) > 0 {
			ch = f.Channels[0]
		}
		check(Ping{Where: "file", Channel: ch, TS: f.MessageTS}, f.InitialComment, string(f.Blocks))
	}
	for _, r := range s.ResponsePosts() {
		check(Ping{Where: "response_url"}, r.Text, string(r.Blocks))
	}
	return out
}

var plainBroadcastRE = regexp.MustCompile(`(^|\s)@(channel|here|everyone)\b`)
