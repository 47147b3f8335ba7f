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

// searchArgs are the arguments of an assistant.search.context call.
type searchArgs struct {
	terms         []string
	types         []string // channel types searched
	limit         int
	before, after float64 // message ts bounds (0: none)
	includeBots   bool
}

// parseSearchArgs reads a call's arguments; code is the error to fail with
// ("" when none), and messages false when the call asks for other content
// than messages (which finds nothing here).
func parseSearchArgs(r *apiRequest) (a searchArgs, messages bool, code string) {
	query := strings.TrimSpace(r.get("query"))
	if query == "" {
		return a, false, "invalid_arguments"
	}
	a = searchArgs{terms: searchTerms(query), types: []string{"public_channel"}, limit: 20, includeBots: r.get("include_bots") == "true"}
	if v := r.get("channel_types"); v != "" {
		a.types = strings.Split(strings.Trim(v, "[]\""), ",")
		for i := range a.types {
			a.types[i] = strings.Trim(strings.TrimSpace(a.types[i]), "\"")
		}
	}
	if ct := r.get("content_types"); ct != "" && !strings.Contains(ct, "messages") {
		return a, false, ""
	}
	if v, err := strconv.Atoi(r.get("limit")); err == nil && v > 0 {
		if v > 20 {
			return a, false, "invalid_limit"
		}
		a.limit = v
	}
	if v, err := strconv.ParseFloat(r.get("before"), 64); err == nil {
		a.before = v
	}
	if v, err := strconv.ParseFloat(r.get("after"), 64); err == nil {
		a.after = v
	}
	return a, true, ""
}

// searchHit is a message found, with how many of the query's terms it has.
type searchHit struct {
	m     *Message
	score int
}

func (s *Server) assistantSearchContext(r *apiRequest) apiResult {
	args, messages, code := parseSearchArgs(r)
	if code != "" {
		return fail(code)
	}
	if !messages {
		return ok(map[string]any{"results": map[string]any{"messages": []any{}}})
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
	hits := s.searchLocked(at.user, args)
	from, _ := strconv.Atoi(r.get("cursor"))
	from = min(max(from, 0), len(hits))
	to := min(from+args.limit, len(hits))
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

// searchLocked finds the messages user may read that match args, best
// first (most terms, then newest).
func (s *Server) searchLocked(user string, args searchArgs) []searchHit {
	var hits []searchHit
	for _, cs := range s.channels {
		if !slices.Contains(args.types, channelKind(cs.info)) || !s.canReadLocked(user, cs) {
			continue
		}
		for _, m := range cs.msgs {
			if score := args.score(m); score > 0 {
				hits = append(hits, searchHit{m, score})
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].m.TS > hits[j].m.TS
	})
	return hits
}

// score is how many of the query's terms m has; 0 when m is not searched
// (deleted, empty, a bot's unless asked for, outside the ts bounds).
func (a searchArgs) score(m *Message) int {
	if m.Deleted || m.Text == "" || (m.BotID != "" && !a.includeBots) {
		return 0
	}
	ts, _ := strconv.ParseFloat(m.TS, 64)
	if (a.before > 0 && ts >= a.before) || (a.after > 0 && ts <= a.after) {
		return 0
	}
	text := strings.ToLower(m.Text)
	score := 0
	for _, t := range a.terms {
		if strings.Contains(text, t) {
			score++
		}
	}
	return score
}

// permalinkLocked is a message's permalink as chat.getPermalink gives it.
func (s *Server) permalinkLocked(m *Message) string {
	link := "https://" + s.cfg.teamDomain + ".slack.com/archives/" + m.Channel + "/p" + strings.ReplaceAll(m.TS, ".", "")
	if m.ThreadTS != "" && m.ThreadTS != m.TS {
		link += "?thread_ts=" + m.ThreadTS + "&cid=" + m.Channel
	}
	return link
}
