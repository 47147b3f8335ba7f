package slackfake

import (
	"slices"
	"strconv"
)

// conversationsMembers answers conversations.members: the channel's
// Members (every user of the workspace, and the bot unless BotAbsent, when
// nil), paginated by
// limit with a cursor that is the next offset. Unknown channels answer
// channel_not_found.
func (s *Server) conversationsMembers(r *apiRequest) apiResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, found := s.channels[r.get("channel")]
	if !found {
		return fail("channel_not_found")
	}
	members := cs.info.Members
	if members == nil {
		for id := range s.users {
			if id != s.cfg.botUserID {
				members = append(members, id)
			}
		}
		if !cs.info.BotAbsent {
			members = append(members, s.cfg.botUserID)
		}
		slices.Sort(members)
	}
	limit, _ := strconv.Atoi(r.get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	from, _ := strconv.Atoi(r.get("cursor"))
	from = min(max(from, 0), len(members))
	to := min(from+limit, len(members))
	next := ""
	if to < len(members) {
		next = strconv.Itoa(to)
	}
	return ok(map[string]any{
		"members":           slices.Clone(members[from:to]),
		"response_metadata": map[string]any{"next_cursor": next},
	})
}

// botsInfo answers bots.info for the app's bot user.
func (s *Server) botsInfo(r *apiRequest) apiResult {
	if r.get("bot") != s.cfg.botID {
		return fail("bot_not_found")
	}
	return ok(map[string]any{"bot": map[string]any{
		"id": s.cfg.botID, "deleted": false, "name": s.cfg.botName, "updated": 1600000000,
		"app_id": s.cfg.appID, "user_id": s.cfg.botUserID,
		"icons": map[string]any{"image_36": "", "image_48": "", "image_72": ""},
	}})
}
