package slackfake

import (
	"context"
	"strings"
	"time"
)

// Sent describes an envelope delivered by one of the Send* helpers.
type Sent struct {
	EnvelopeID  string
	TS          string // the user's message ts (events with a message)
	TriggerID   string // interactive and slash payloads
	ResponseURL string // interactive and slash payloads
}

// SendEvent delivers an events_api envelope whose inner event is ev (it must
// have a "type"). The outer event_callback is filled in like Slack's.
func (s *Server) SendEvent(ctx context.Context, ev map[string]any) (string, error) {
	now := time.Now()
	payload := map[string]any{
		"token":      "fakeVerificationToken",
		"team_id":    s.cfg.teamID,
		"api_app_id": s.cfg.appID,
		"event":      ev,
		"type":       "event_callback",
		"event_id":   "Ev" + strings.ToUpper(randomHex(5)),
		"event_time": now.Unix(),
		"authorizations": []map[string]any{{
			"enterprise_id": nil, "team_id": s.cfg.teamID, "user_id": s.cfg.botUserID,
			"is_bot": true, "is_enterprise_install": false,
		}},
		"is_ext_shared_channel": false,
		"event_context":         "4-" + randomHex(20),
	}
	return s.SendEnvelope(ctx, TypeEventsAPI, payload, false)
}

// AppMention is a user mentioning the bot in a channel.
type AppMention struct {
	User     string
	Channel  string
	Text     string // "<@BOT> " is prefixed when the text does not mention the bot
	TS       string // assigned when empty
	ThreadTS string // set for a mention inside a thread
}

// SendAppMention records the user's message in the channel and delivers an
// app_mention event.
func (s *Server) SendAppMention(ctx context.Context, e AppMention) (Sent, error) {
	mention := "<@" + s.cfg.botUserID + ">"
	if !strings.Contains(e.Text, mention) {
		e.Text = mention + " " + e.Text
	}
	m := s.AddMessage(Message{Channel: e.Channel, TS: e.TS, ThreadTS: e.ThreadTS, User: e.User, Text: e.Text})
	ev := map[string]any{
		"type": "app_mention", "user": e.User, "text": m.Text, "ts": m.TS, "channel": e.Channel,
		"event_ts": m.TS, "team": s.cfg.teamID, "client_msg_id": newUUID(), "action_token": s.ActionToken(e.User),
	}
	if e.ThreadTS != "" {
		ev["thread_ts"] = e.ThreadTS
	}
	id, err := s.SendEvent(ctx, ev)
	return Sent{EnvelopeID: id, TS: m.TS}, err
}

// MessageEvent is a message posted in a channel or DM.
type MessageEvent struct {
	User        string
	Channel     string
	ChannelType string // "im", "channel", "group", "mpim"; derived from the channel id when empty
	Text        string
	TS          string // assigned when empty
	ThreadTS    string
	Subtype     string // e.g. "bot_message", "message_changed"; "" for a plain user message
	BotID       string // set to simulate another bot's (or our own) message
}

// SendMessage records the message in the channel and delivers a message event.
func (s *Server) SendMessage(ctx context.Context, e MessageEvent) (Sent, error) {
	if e.ChannelType == "" {
		e.ChannelType = channelType(e.Channel)
	}
	m := s.AddMessage(Message{Channel: e.Channel, TS: e.TS, ThreadTS: e.ThreadTS, User: e.User, BotID: e.BotID, Text: e.Text})
	ev := map[string]any{
		"type": "message", "user": e.User, "text": e.Text, "ts": m.TS, "channel": e.Channel,
		"channel_type": e.ChannelType, "event_ts": m.TS, "team": s.cfg.teamID,
	}
	if e.BotID == "" {
		ev["client_msg_id"] = newUUID()
		ev["action_token"] = s.ActionToken(e.User)
	} else {
		ev["bot_id"] = e.BotID
	}
	if e.Subtype != "" {
		ev["subtype"] = e.Subtype
	}
	if e.ThreadTS != "" {
		ev["thread_ts"] = e.ThreadTS
	}
	id, err := s.SendEvent(ctx, ev)
	return Sent{EnvelopeID: id, TS: m.TS}, err
}

// SendAppHomeOpened delivers app_home_opened for the user's Home tab ("home"
// when tab is empty), with the view currently published for the user.
func (s *Server) SendAppHomeOpened(ctx context.Context, user, tab string) (Sent, error) {
	if tab == "" {
		tab = "home"
	}
	s.mu.Lock()
	s.learnUserLocked(user)
	dm := s.resolveChannelLocked(user)
	ts := s.nextTSLocked()
	ev := map[string]any{"type": "app_home_opened", "user": user, "channel": dm, "tab": tab, "event_ts": ts}
	if id, ok := s.homeViews[user]; ok && tab == "home" {
		ev["view"] = s.viewJSONLocked(s.views[id])
	}
	s.mu.Unlock()
	id, err := s.SendEvent(ctx, ev)
	return Sent{EnvelopeID: id}, err
}

// AssistantThreadStarted is a user opening the assistant side panel.
type AssistantThreadStarted struct {
	User           string
	Channel        string // the assistant DM; derived from User when empty
	ThreadTS       string // assigned when empty
	ContextChannel string // the channel the user was viewing
}

// SendAssistantThreadStarted delivers assistant_thread_started.
func (s *Server) SendAssistantThreadStarted(ctx context.Context, e AssistantThreadStarted) (Sent, error) {
	return s.sendAssistantThreadEvent(ctx, "assistant_thread_started", e)
}

// SendAssistantThreadContextChanged delivers assistant_thread_context_changed:
// the user, with the assistant pane open on thread ThreadTS, now looks at
// ContextChannel.
func (s *Server) SendAssistantThreadContextChanged(ctx context.Context, e AssistantThreadStarted) (Sent, error) {
	return s.sendAssistantThreadEvent(ctx, "assistant_thread_context_changed", e)
}

func (s *Server) sendAssistantThreadEvent(ctx context.Context, typ string, e AssistantThreadStarted) (Sent, error) {
	s.mu.Lock()
	s.learnUserLocked(e.User)
	if e.Channel == "" {
		e.Channel = s.resolveChannelLocked(e.User)
	} else {
		s.channelLocked(e.Channel)
	}
	if e.ThreadTS == "" {
		e.ThreadTS = s.nextTSLocked()
	}
	s.assistantTS[e.Channel+"/"+e.ThreadTS] = true
	evTS := s.nextTSLocked()
	s.mu.Unlock()
	ctxObj := map[string]any{}
	if e.ContextChannel != "" {
		ctxObj = map[string]any{"channel_id": e.ContextChannel, "team_id": s.cfg.teamID, "enterprise_id": ""}
	}
	ev := map[string]any{
		"type": typ,
		"assistant_thread": map[string]any{
			"user_id": e.User, "context": ctxObj, "channel_id": e.Channel, "thread_ts": e.ThreadTS,
		},
		"event_ts": evTS,
	}
	id, err := s.SendEvent(ctx, ev)
	return Sent{EnvelopeID: id, TS: e.ThreadTS}, err
}

// BlockAction is a user clicking a button (or another block element) in a
// message, or in a view when ViewID is set.
type BlockAction struct {
	User        string
	Channel     string
	MessageTS   string // the message holding the button
	ThreadTS    string // the thread of that message, if any (taken from the stored message when empty)
	IsEphemeral bool
	ViewID      string // a button in a modal or the Home tab instead of a message
	ActionID    string
	BlockID     string // "actions" when empty
	Value       string
	ActionType  string // "button" when empty
	Text        string // the button's label
	TriggerID   string // issued when empty
	ResponseURL string // issued when empty (not for views)
}

// SendBlockAction delivers an interactive block_actions envelope. The stored
// message (or view) is included as Slack does.
func (s *Server) SendBlockAction(ctx context.Context, a BlockAction) (Sent, error) {
	if a.BlockID == "" {
		a.BlockID = "actions"
	}
	if a.ActionType == "" {
		a.ActionType = "button"
	}
	s.mu.Lock()
	s.learnUserLocked(a.User)
	if a.TriggerID == "" {
		a.TriggerID = s.newTriggerLocked()
	}
	actionTS := s.nextTSLocked()
	payload := map[string]any{
		"type":                  "block_actions",
		"user":                  map[string]any{"id": a.User, "username": strings.ToLower(a.User), "name": strings.ToLower(a.User), "team_id": s.cfg.teamID},
		"api_app_id":            s.cfg.appID,
		"token":                 "fakeVerificationToken",
		"trigger_id":            a.TriggerID,
		"team":                  map[string]any{"id": s.cfg.teamID, "domain": s.cfg.teamDomain},
		"enterprise":            nil,
		"is_enterprise_install": false,
		"state":                 map[string]any{"values": map[string]any{}},
	}
	action := map[string]any{
		"action_id": a.ActionID, "block_id": a.BlockID, "type": a.ActionType, "value": a.Value, "action_ts": actionTS,
		"text": map[string]any{"type": "plain_text", "text": a.Text, "emoji": true},
	}
	payload["actions"] = []any{action}
	if a.ViewID != "" {
		container := map[string]any{"type": "view", "view_id": a.ViewID}
		payload["container"] = container
		if vs, ok := s.views[a.ViewID]; ok {
			payload["view"] = s.viewJSONLocked(vs)
		}
	} else {
		if m := s.findMessageLocked(a.Channel, a.MessageTS); m != nil {
			payload["message"] = s.messageJSONLocked(m)
			if a.ThreadTS == "" && m.ThreadTS != m.TS {
				a.ThreadTS = m.ThreadTS
			}
		}
		if a.ResponseURL == "" {
			a.ResponseURL = s.newResponseURLLocked(responseTarget{channel: a.Channel, messageTS: a.MessageTS, threadTS: a.ThreadTS, user: a.User})
		}
		container := map[string]any{"type": "message", "message_ts": a.MessageTS, "channel_id": a.Channel, "is_ephemeral": a.IsEphemeral}
		if a.ThreadTS != "" {
			container["thread_ts"] = a.ThreadTS
		}
		payload["container"] = container
		payload["channel"] = map[string]any{"id": a.Channel, "name": strings.ToLower(a.Channel)}
		payload["response_url"] = a.ResponseURL
	}
	s.mu.Unlock()
	id, err := s.SendEnvelope(ctx, TypeInteractive, payload, false)
	return Sent{EnvelopeID: id, TriggerID: a.TriggerID, ResponseURL: a.ResponseURL}, err
}

// InputValue is the state of one input element in a submitted view, e.g.
// {Type: "plain_text_input", Value: "..."} or {Type: "static_select",
// SelectedOption: "weekly"}.
type InputValue struct {
	Type           string
	Value          string
	SelectedOption string   // value of the chosen option (static_select, radio_buttons)
	SelectedDate   string   // datepicker, YYYY-MM-DD
	SelectedTime   string   // timepicker, HH:mm
	SelectedUsers  []string // multi_users_select
	Channel        string   // conversations_select / channels_select
}

func (v InputValue) json() map[string]any {
	typ := v.Type
	if typ == "" {
		typ = "plain_text_input"
	}
	out := map[string]any{"type": typ}
	switch {
	case v.SelectedOption != "":
		out["selected_option"] = map[string]any{"text": map[string]any{"type": "plain_text", "text": v.SelectedOption}, "value": v.SelectedOption}
	case v.SelectedDate != "":
		out["selected_date"] = v.SelectedDate
	case v.SelectedTime != "":
		out["selected_time"] = v.SelectedTime
	case v.SelectedUsers != nil:
		out["selected_users"] = v.SelectedUsers
	case v.Channel != "":
		out["selected_conversation"] = v.Channel
		out["selected_channel"] = v.Channel
	default:
		out["value"] = v.Value
	}
	return out
}

// ViewSubmission is a user submitting a modal.
type ViewSubmission struct {
	User            string
	ViewID          string                           // a view the bot opened; its callback_id, private_metadata and blocks are used
	CallbackID      string                           // overrides the stored view's
	PrivateMetadata string                           // overrides the stored view's when non-empty
	Values          map[string]map[string]InputValue // block_id -> action_id -> value
	TriggerID       string                           // issued when empty
}

// SendViewSubmission delivers an interactive view_submission envelope.
func (s *Server) SendViewSubmission(ctx context.Context, v ViewSubmission) (Sent, error) {
	s.mu.Lock()
	s.learnUserLocked(v.User)
	if v.TriggerID == "" {
		v.TriggerID = s.newTriggerLocked()
	}
	view := map[string]any{"id": v.ViewID, "team_id": s.cfg.teamID, "type": "modal", "app_id": s.cfg.appID, "bot_id": s.cfg.botID, "blocks": []any{}}
	if vs, ok := s.views[v.ViewID]; ok {
		view = s.viewJSONLocked(vs)
	}
	if v.CallbackID != "" {
		view["callback_id"] = v.CallbackID
	}
	if v.PrivateMetadata != "" {
		view["private_metadata"] = v.PrivateMetadata
	}
	values := map[string]any{}
	for block, actions := range v.Values {
		m := map[string]any{}
		for action, val := range actions {
			m[action] = val.json()
		}
		values[block] = m
	}
	view["state"] = map[string]any{"values": values}
	payload := map[string]any{
		"type":                  "view_submission",
		"team":                  map[string]any{"id": s.cfg.teamID, "domain": s.cfg.teamDomain},
		"user":                  map[string]any{"id": v.User, "username": strings.ToLower(v.User), "name": strings.ToLower(v.User), "team_id": s.cfg.teamID},
		"api_app_id":            s.cfg.appID,
		"token":                 "fakeVerificationToken",
		"trigger_id":            v.TriggerID,
		"view":                  view,
		"response_urls":         []any{},
		"is_enterprise_install": false,
		"enterprise":            nil,
	}
	s.mu.Unlock()
	id, err := s.SendEnvelope(ctx, TypeInteractive, payload, true)
	return Sent{EnvelopeID: id, TriggerID: v.TriggerID}, err
}

// SlashCommand is a user running a slash command.
type SlashCommand struct {
	Command     string // e.g. "/research"
	Text        string
	User        string
	Channel     string
	ChannelName string
	TriggerID   string // issued when empty
	ResponseURL string // issued when empty
}

// SendSlashCommand delivers a slash_commands envelope (accepts_response_payload: true).
func (s *Server) SendSlashCommand(ctx context.Context, c SlashCommand) (Sent, error) {
	s.mu.Lock()
	s.learnUserLocked(c.User)
	s.channelLocked(c.Channel)
	if c.TriggerID == "" {
		c.TriggerID = s.newTriggerLocked()
	}
	if c.ResponseURL == "" {
		c.ResponseURL = s.newResponseURLLocked(responseTarget{channel: c.Channel, user: c.User})
	}
	if c.ChannelName == "" {
		c.ChannelName = strings.ToLower(c.Channel)
		if strings.HasPrefix(c.Channel, "D") {
			c.ChannelName = "directmessage"
		}
	}
	s.mu.Unlock()
	payload := map[string]any{
		"token": "fakeVerificationToken", "team_id": s.cfg.teamID, "team_domain": s.cfg.teamDomain,
		"channel_id": c.Channel, "channel_name": c.ChannelName, "user_id": c.User, "user_name": strings.ToLower(c.User),
		"command": c.Command, "text": c.Text, "api_app_id": s.cfg.appID, "is_enterprise_install": false,
		"response_url": c.ResponseURL, "trigger_id": c.TriggerID,
	}
	id, err := s.SendEnvelope(ctx, TypeSlashCommands, payload, true)
	return Sent{EnvelopeID: id, TriggerID: c.TriggerID, ResponseURL: c.ResponseURL}, err
}
