package slackfake

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The Real-time Search API (assistant.search.context): an AI app searches
// the messages the acting user can see, to answer that user. With a bot
// token the call carries the action_token that came with the user's message
// event; results are the messages of conversations the user may read —
// public channels, and private channels, group DMs and DMs only where the
// user is a member — filtered by channel_types (default public_channel),
// before/after, at most 20 a page with cursor paging. Sources: the method's
// reference (docs.slack.dev/reference/methods/assistant.search.context) and
// the Data Access API guide; its rate limit is "10+ per minute" for most
// teams.

// actionTokenTTL is how long an action_token is honoured. Slack does not
// document it; the fake takes a short-lived token (a user's request).
const actionTokenTTL = 10 * time.Minute

type actionToken struct {
	user string
	at   time.Time
}

// ActionToken issues an action_token for a user, as Slack sends one with
// the user's message events (the Send* helpers include one).
func (s *Server) ActionToken(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := fmt.Sprintf("%d.%d.%s", time.Now().Unix(), len(s.actionTokens)+1, randomHex(8))
	s.actionTokens[tok] = actionToken{user: user, at: time.Now()}
	return tok
}

// canReadLocked reports whether user may read channel.
func (s *Server) canReadLocked(user string, cs *channelState) bool {
	info := cs.info
	switch {
	case info.IsIM:
		return info.User == user
	case info.IsPrivate || strings.HasPrefix(info.ID, "G"):
		return slices.Contains(info.Members, user)
	}
	return true // public channels are searchable by every member of the workspace
}

func channelKind(info Channel) string {
	switch {
	case info.IsIM || strings.HasPrefix(info.ID, "D"):
		return "im"
	case strings.HasPrefix(info.ID, "G") && !info.IsPrivate:
		return "mpim"
	case info.IsPrivate || strings.HasPrefix(info.ID, "G"):
		return "private_channel"
	}
	return "public_channel"
}

func searchTerms(q string) []string {
	var terms []string
	for _, f := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		if len([]rune(f)) >= 2 {
			terms = append(terms, f)
		}
	}
	return terms
}

func (s *Server) assistantSearchContext(r *apiRequest) apiResult {
	query := strings.TrimSpace(r.get("query"))
	if query == "" {
		return fail("invalid_arguments")
	}
	types := []string{"public_channel"}
	if v := r.get("channel_types"); v != "" {
		types = strings.Split(strings.Trim(v, "[]\""), ",")
		for i := range types {
			types[i] = strings.Trim(strings.TrimSpace(types[i]), "\"")
		}
	}
	if ct := r.get("content_types"); ct != "" && !strings.Contains(ct, "messages") {
		return ok(map[string]any{"results": map[string]any{"messages": []any{}}})
	}
	limit := 20
	if v, err := strconv.Atoi(r.get("limit")); err == nil && v > 0 {
		if v > 20 {
			return fail("invalid_limit")
		}
		limit = v
	}
	var before, after float64
	if v, err := strconv.ParseFloat(r.get("before"), 64); err == nil {
		before = v
	}
	if v, err := strconv.ParseFloat(r.get("after"), 64); err == nil {
		after = v
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	tok := r.get("action_token")
	if tok == "" {
		return fail("missing_action_token") // a bot token searches for the user whose request it answers
	}
	at, known := s.actionTokens[tok]
	if !known || time.Since(at.at) > actionTokenTTL {
		return fail("invalid_action_token")
	}
	terms := searchTerms(query)
	type hit struct {
		m     *Message
		score int
	}
	var hits []hit
	for _, cs := range s.channels {
		if !slices.Contains(types, channelKind(cs.info)) || !s.canReadLocked(at.user, cs) {
			continue
		}
		for _, m := range cs.msgs {
			if m.Deleted || m.Text == "" || (m.BotID != "" && r.get("include_bots") != "true") {
				continue
			}
			ts, _ := strconv.ParseFloat(m.TS, 64)
			if (before > 0 && ts >= before) || (after > 0 && ts <= after) {
				continue
			}
			text := strings.ToLower(m.Text)
			score := 0
			for _, t := range terms {
				if strings.Contains(text, t) {
					score++
				}
			}
			if score > 0 {
				hits = append(hits, hit{m, score})
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].m.TS > hits[j].m.TS
	})
	from, _ := strconv.Atoi(r.get("cursor"))
	from = min(max(from, 0), len(hits))
	to := min(from+limit, len(hits))
	msgs := make([]any, 0, to-from)
	for _, h := range hits[from:to] {
		msgs = append(msgs, map[string]any{
			"author_user_id": h.m.User, "team_id": s.cfg.teamID, "channel_id": h.m.Channel, "message_ts": h.m.TS,
			"content": h.m.Text, "is_author_bot": h.m.BotID != "",
			"permalink": s.permalinkLocked(h.m),
		})
	}
	meta := map[string]any{"next_cursor": ""}
	if to < len(hits) {
		meta["next_cursor"] = strconv.Itoa(to)
	}
	return ok(map[string]any{"results": map[string]any{"messages": msgs}, "response_metadata": meta})
}

// permalinkLocked is a message's permalink as chat.getPermalink gives it.
func (s *Server) permalinkLocked(m *Message) string {
	link := "https://" + s.cfg.teamDomain + ".slack.com/archives/" + m.Channel + "/p" + strings.ReplaceAll(m.TS, ".", "")
	if m.ThreadTS != "" && m.ThreadTS != m.TS {
		link += "?thread_ts=" + m.ThreadTS + "&cid=" + m.Channel
	}
	return link
}
