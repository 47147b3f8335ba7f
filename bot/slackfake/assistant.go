package slackfake

import (
	"encoding/json"
	"time"
)

// Assistant threads (docs.slack.dev/reference/methods/assistant.threads.setTitle
// and assistant.threads.setSuggestedPrompts): both name a channel Slack
// knows (channel_not_found otherwise) and a thread in it (invalid_thread_ts
// otherwise); setTitle needs a title, setSuggestedPrompts one to four
// prompts, each with a title and a message.

// maxSuggestedPrompts is how many prompts an assistant thread shows.
const maxSuggestedPrompts = 4

// assistantThread answers the error for a channel and thread that are not
// an assistant thread or a message thread Slack knows.
func (s *Server) assistantThread(channel, ts string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[channel]; !ok {
		return "channel_not_found"
	}
	if ts == "" || s.assistantTS[channel+"/"+ts] || s.findMessageLocked(channel, ts) != nil {
		return ""
	}
	return "invalid_thread_ts"
}

func (s *Server) assistantSetSuggestedPrompts(r *apiRequest) apiResult {
	if r.get("channel_id") == "" {
		return fail("invalid_arguments")
	}
	var prompts []Prompt
	if err := json.Unmarshal([]byte(r.get("prompts")), &prompts); err != nil || len(prompts) == 0 || len(prompts) > maxSuggestedPrompts {
		return fail("invalid_arguments")
	}
	for _, p := range prompts {
		if p.Title == "" || p.Message == "" {
			return fail("invalid_arguments")
		}
	}
	if e := s.assistantThread(r.get("channel_id"), r.get("thread_ts")); e != "" {
		return fail(e)
	}
	return s.record(func() {
		s.prompts = append(s.prompts, SuggestedPrompts{Channel: r.get("channel_id"), ThreadTS: r.get("thread_ts"), Title: r.get("title"), Prompts: prompts, At: time.Now()})
	})
}

func (s *Server) assistantSetTitle(r *apiRequest) apiResult {
	if r.get("channel_id") == "" || r.get("thread_ts") == "" || r.get("title") == "" {
		return fail("invalid_arguments")
	}
	if e := s.assistantThread(r.get("channel_id"), r.get("thread_ts")); e != "" {
		return fail(e)
	}
	return s.record(func() {
		s.titles = append(s.titles, Title{Channel: r.get("channel_id"), ThreadTS: r.get("thread_ts"), Title: r.get("title"), At: time.Now()})
	})
}
