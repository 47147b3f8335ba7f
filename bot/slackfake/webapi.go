package slackfake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Slack's limits that the fake enforces.
const (
	maxTextChars        = 40000 // chat.postMessage text; longer → msg_too_long
	maxBlocks           = 50    // per message; more → invalid_blocks
	maxSectionTextChars = 3000
	maxHeaderTextChars  = 150
	maxMarkdownChars    = 12000
)

func (s *Server) authTest(*apiRequest) apiResult {
	return ok(map[string]any{
		"url":                   "https://" + s.cfg.teamDomain + ".slack.com/",
		"team":                  "Fake Workspace",
		"user":                  s.cfg.botName,
		"team_id":               s.cfg.teamID,
		"user_id":               s.cfg.botUserID,
		"bot_id":                s.cfg.botID,
		"is_enterprise_install": false,
	})
}

// rawJSON returns a parameter holding JSON, or nil when absent.
func rawJSON(v string) json.RawMessage {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return json.RawMessage(v)
}

// Limits that Slack enforces on blocks (slack-facts.md, "Blocks and text").
const (
	maxViewBlocks      = 100   // per view; more → invalid_blocks
	maxButtonText      = 75    // button text
	maxButtonValue     = 2000  // button value
	maxBlockID         = 255   // block_id
	maxMessageBlockTxt = 13200 // all text in a message's blocks; more → msg_blocks_too_long (bolt-js#2509)
)

// blockSurface is where blocks are shown: a message, a view, or a file
// share (files.completeUploadExternal), which has its own quirks.
type blockSurface int

const (
	surfaceMessage blockSurface = iota
	surfaceView
	surfaceFileShare
)

// validateBlocks applies Slack's block limits for a message.
func validateBlocks(raw string) string { return validateBlocksOn(raw, surfaceMessage) }

// validateBlocksOn applies Slack's block limits for a surface: the number
// of blocks, per-block text limits, button text and value, unique
// action_ids, block_id length, the whole message's text (msg_blocks_too_long
// below every documented limit), and — on a file share — the refusal of
// markdown blocks with internal_error, which retrying does not change
// (python-slack-sdk#1756, node-slack-sdk#2564, slack-morphism-rust#383).
func validateBlocksOn(raw string, surface blockSurface) string {
	if raw == "" {
		return ""
	}
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return "invalid_blocks_format"
	}
	limit := maxBlocks
	if surface == surfaceView {
		limit = maxViewBlocks
	}
	if len(blocks) > limit {
		return "invalid_blocks"
	}
	actionIDs := map[string]bool{}
	total := 0
	for _, b := range blocks {
		if surface == surfaceView {
			// In a view action_ids need only be unique within a block:
			// inputs are read by block_id, then action_id.
			actionIDs = map[string]bool{}
		}
		if e := validateBlock(b, surface); e != "" {
			return e
		}
		if e := validateElements(b, actionIDs); e != "" {
			return e
		}
		total += textLength(b)
	}
	if surface != surfaceView && total > maxMessageBlockTxt {
		return "msg_blocks_too_long"
	}
	return ""
}

// textLimits are the longest texts of the blocks that have one.
var textLimits = map[string]int{"section": maxSectionTextChars, "header": maxHeaderTextChars, "markdown": maxMarkdownChars}

// validateBlock checks one block on its own (validateBlocksOn checks the
// elements and the whole): its type, block_id and text, a context_actions
// block's elements, and that an actions block holds no context action.
func validateBlock(b map[string]any, surface blockSurface) string {
	typ, _ := b["type"].(string)
	if typ == "" {
		return "invalid_blocks"
	}
	if surface == surfaceFileShare && typ == "markdown" {
		return "internal_error"
	}
	if id, _ := b["block_id"].(string); utf8.RuneCountInString(id) > maxBlockID {
		return "invalid_blocks"
	}
	if limit, ok := textLimits[typ]; ok && utf8.RuneCountInString(blockText(b, "text")) > limit {
		return "invalid_blocks"
	}
	switch typ {
	case "context_actions":
		return validateContextActions(b)
	case "actions":
		// feedback_buttons and icon_button live in context_actions only.
		els, _ := b["elements"].([]any)
		for _, el := range els {
			if m, _ := el.(map[string]any); m["type"] == "feedback_buttons" || m["type"] == "icon_button" {
				return "invalid_blocks"
			}
		}
	}
	return ""
}

// blockText is a block's text field k: a text object's text, or a string.
func blockText(b map[string]any, k string) string {
	if t, ok := b[k].(map[string]any); ok {
		s, _ := t["text"].(string)
		return s
	}
	s, _ := b[k].(string)
	return s
}

// validateContextActions checks a context_actions block, the row of small
// actions under an AI app's answer: one to five elements, each a
// feedback_buttons (a positive and a negative button, each with text and a
// value) or an icon_button (docs.slack.dev: context actions block,
// feedback buttons element).
func validateContextActions(b map[string]any) string {
	els, _ := b["elements"].([]any)
	if len(els) == 0 || len(els) > 5 {
		return "invalid_blocks"
	}
	for _, el := range els {
		m, _ := el.(map[string]any)
		switch m["type"] {
		case "feedback_buttons":
			for _, k := range []string{"positive_button", "negative_button"} {
				btn, _ := m[k].(map[string]any)
				text, _ := btn["text"].(map[string]any)
				label, _ := text["text"].(string)
				value, _ := btn["value"].(string)
				if label == "" || value == "" || utf8.RuneCountInString(label) > maxButtonText || utf8.RuneCountInString(value) > maxButtonValue {
					return "invalid_blocks"
				}
			}
		case "icon_button":
		default:
			return "invalid_blocks"
		}
	}
	return ""
}

// validateElements checks the interactive elements anywhere in a block:
// button text and value limits, and action_ids unique in the message.
func validateElements(v any, actionIDs map[string]bool) string {
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["action_id"].(string); ok && id != "" {
			if actionIDs[id] {
				return "invalid_blocks"
			}
			actionIDs[id] = true
		}
		if x["type"] == "button" {
			if t, ok := x["text"].(map[string]any); ok {
				if s, _ := t["text"].(string); utf8.RuneCountInString(s) > maxButtonText {
					return "invalid_blocks"
				}
			}
			if s, _ := x["value"].(string); utf8.RuneCountInString(s) > maxButtonValue {
				return "invalid_blocks"
			}
		}
		for _, c := range x {
			if e := validateElements(c, actionIDs); e != "" {
				return e
			}
		}
	case []any:
		for _, c := range x {
			if e := validateElements(c, actionIDs); e != "" {
				return e
			}
		}
	}
	return ""
}

// textLength is the number of characters of text a block shows: every
// "text" string anywhere in it.
func textLength(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && k == "text" {
				n += utf8.RuneCountInString(s)
				continue
			}
			n += textLength(c)
		}
	case []any:
		for _, c := range x {
			n += textLength(c)
		}
	}
	return n
}

// resolveChannel maps a user id to the bot's DM with that user, as Slack does.
func (s *Server) resolveChannelLocked(ch string) string {
	if strings.HasPrefix(ch, "U") || strings.HasPrefix(ch, "W") {
		d := "D" + ch[1:]
		cs := s.channelLocked(d)
		cs.info.IsIM, cs.info.User = true, ch
		return d
	}
	return ch
}

var postParams = []string{"mrkdwn", "unfurl_links", "unfurl_media", "link_names", "parse", "username", "icon_url", "icon_emoji", "as_user"}

// messageContent reads the text, blocks and attachments of a message to post
// or update, or the error to answer with when they will not do.
func messageContent(r *apiRequest) (text, blocks, atts, e string) {
	text, blocks, atts = r.get("text"), r.get("blocks"), r.get("attachments")
	switch {
	case text == "" && blocks == "" && atts == "":
		return "", "", "", "no_text"
	case utf8.RuneCountInString(text) > maxTextChars:
		return "", "", "", "msg_too_long"
	}
	if e := validateBlocks(blocks); e != "" {
		return "", "", "", e
	}
	return text, blocks, atts, ""
}

func (s *Server) chatPostMessage(r *apiRequest) apiResult {
	channel := r.get("channel")
	if channel == "" {
		return fail("channel_not_found")
	}
	text, blocks, atts, e := messageContent(r)
	if e != "" {
		return fail(e)
	}
	s.mu.Lock()
	channel = s.resolveChannelLocked(channel)
	m := &Message{
		Channel:        channel,
		TS:             s.nextTSLocked(),
		ThreadTS:       r.get("thread_ts"),
		User:           s.cfg.botUserID,
		BotID:          s.cfg.botID,
		Text:           text,
		Blocks:         rawJSON(blocks),
		Attachments:    rawJSON(atts),
		Metadata:       rawJSON(r.get("metadata")),
		ReplyBroadcast: r.get("reply_broadcast") == "true",
		PostedAt:       time.Now(),
		Params:         map[string]string{},
	}
	for _, k := range postParams {
		if v := r.get(k); v != "" {
			m.Params[k] = v
		}
	}
	if ids := r.get("file_ids"); ids != "" {
		var list []string
		if json.Unmarshal([]byte(ids), &list) != nil {
			list = strings.Split(ids, ",")
		}
		m.Files = list
	}
	s.addMessageLocked(m)
	body := s.messageJSONLocked(m)
	echo := s.cfg.echoBot
	s.mu.Unlock()

	if echo {
		s.echo(m.clone())
	}
	return ok(map[string]any{"channel": channel, "ts": m.TS, "message": body})
}

// echo delivers the bot's own message back as a message event.
func (s *Server) echo(m Message) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		defer cancel()
		ev := map[string]any{
			"type": "message", "subtype": "bot_message", "channel": m.Channel, "user": m.User, "bot_id": m.BotID,
			"text": m.Text, "ts": m.TS, "event_ts": m.TS, "channel_type": channelType(m.Channel),
		}
		if m.ThreadTS != "" {
			ev["thread_ts"] = m.ThreadTS
		}
		if len(m.Blocks) > 0 {
			ev["blocks"] = m.Blocks
		}
		if _, err := s.SendEvent(ctx, ev); err != nil {
			s.log.Warn("slackfake: echo", "err", err)
		}
	}()
}

func channelType(id string) string {
	switch {
	case strings.HasPrefix(id, "D"):
		return "im"
	case strings.HasPrefix(id, "G"):
		return "group"
	}
	return "channel"
}

// messageJSONLocked renders a message as Slack's API does.
func (s *Server) messageJSONLocked(m *Message) map[string]any {
	out := map[string]any{"type": "message", "text": m.Text, "ts": m.TS, "user": m.User}
	if m.BotID != "" {
		out["bot_id"] = m.BotID
		out["app_id"] = s.cfg.appID
		out["team"] = s.cfg.teamID
		out["bot_profile"] = map[string]any{"id": m.BotID, "app_id": s.cfg.appID, "name": s.cfg.botName, "team_id": s.cfg.teamID, "deleted": false}
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if len(m.Blocks) > 0 {
		out["blocks"] = m.Blocks
	}
	if len(m.Attachments) > 0 {
		out["attachments"] = m.Attachments
	}
	if len(m.Metadata) > 0 {
		out["metadata"] = m.Metadata
	}
	if len(m.Edits) > 0 {
		last := m.Edits[len(m.Edits)-1].At
		out["edited"] = map[string]any{"user": m.User, "ts": fmt.Sprintf("%d.%06d", last.Unix(), last.Nanosecond()/1000)}
	}
	if len(m.Files) > 0 {
		var files []map[string]any
		for _, id := range m.Files {
			if f, ok := s.files[id]; ok {
				files = append(files, s.fileJSONLocked(&f.File))
			} else {
				files = append(files, map[string]any{"id": id})
			}
		}
		out["files"] = files
		out["upload"] = true
	}
	// Thread metadata on a parent.
	if cs, ok := s.channels[m.Channel]; ok && (m.ThreadTS == "" || m.ThreadTS == m.TS) {
		n, latest := 0, ""
		users := []string{}
		seen := map[string]bool{}
		for _, r := range cs.msgs {
			if r.ThreadTS == m.TS && r.TS != m.TS && !r.Deleted {
				n++
				latest = r.TS
				if !seen[r.User] {
					seen[r.User] = true
					users = append(users, r.User)
				}
			}
		}
		if n > 0 {
			out["thread_ts"] = m.TS
			out["reply_count"] = n
			out["reply_users_count"] = len(users)
			out["reply_users"] = users
			out["latest_reply"] = latest
		}
	}
	return out
}

func (s *Server) fileJSONLocked(f *File) map[string]any {
	url := s.baseURL + "/files/" + f.ID + "/" + f.Name
	return map[string]any{
		"id": f.ID, "name": f.Name, "title": f.Title, "mimetype": mime.TypeByExtension(extOf(f.Name)),
		"filetype": strings.TrimPrefix(extOf(f.Name), "."), "size": len(f.Content), "user": s.cfg.botUserID,
		"url_private": url, "url_private_download": url,
		"permalink": "https://" + s.cfg.teamDomain + ".slack.com/files/" + s.cfg.botUserID + "/" + f.ID + "/" + f.Name,
		"created":   f.CreatedAt.Unix(),
	}
}

func extOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

func (s *Server) chatUpdate(r *apiRequest) apiResult {
	channel, ts := r.get("channel"), r.get("ts")
	text, blocks, atts, e := messageContent(r)
	if e != "" {
		return fail(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, e := s.botMessageLocked(channel, ts, "cant_update_message")
	if e != "" {
		return fail(e)
	}
	s.editLocked(m, text, rawJSON(blocks), rawJSON(atts))
	return ok(map[string]any{"channel": channel, "ts": ts, "text": m.Text, "message": s.messageJSONLocked(m)})
}

// botMessageLocked finds a message the bot posted, for chat.update and
// chat.delete; not the bot's, it answers cant.
func (s *Server) botMessageLocked(channel, ts, cant string) (*Message, string) {
	if _, ok := s.channels[channel]; !ok {
		return nil, "channel_not_found"
	}
	m := s.findMessageLocked(channel, ts)
	if m == nil || m.Deleted {
		return nil, "message_not_found"
	}
	if m.BotID == "" {
		return nil, cant
	}
	return m, ""
}

func (s *Server) editLocked(m *Message, text string, blocks, atts json.RawMessage) {
	m.Edits = append(m.Edits, Edit{Text: m.Text, Blocks: m.Blocks, Attachments: m.Attachments, At: time.Now()})
	m.Text, m.Blocks = text, blocks
	if atts != nil {
		m.Attachments = atts
	}
	s.notifyLocked()
}

func (s *Server) chatDelete(r *apiRequest) apiResult {
	channel, ts := r.get("channel"), r.get("ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	m, e := s.botMessageLocked(channel, ts, "cant_delete_message")
	if e != "" {
		return fail(e)
	}
	m.Deleted = true
	s.notifyLocked()
	return ok(map[string]any{"channel": channel, "ts": ts})
}

func (s *Server) chatPostEphemeral(r *apiRequest) apiResult {
	channel, user := r.get("channel"), r.get("user")
	if channel == "" {
		return fail("channel_not_found")
	}
	if user == "" {
		return fail("user_not_in_channel")
	}
	text, blocks := r.get("text"), r.get("blocks")
	if text == "" && blocks == "" && r.get("attachments") == "" {
		return fail("no_text")
	}
	if e := validateBlocks(blocks); e != "" {
		return fail(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.nextTSLocked()
	s.ephemerals = append(s.ephemerals, Ephemeral{
		Channel: channel, User: user, TS: ts, ThreadTS: r.get("thread_ts"),
		Text: text, Blocks: rawJSON(blocks), Source: "chat.postEphemeral", At: time.Now(),
	})
	s.notifyLocked()
	return ok(map[string]any{"message_ts": ts})
}

func (s *Server) chatGetPermalink(r *apiRequest) apiResult {
	channel, ts := r.get("channel"), r.get("message_ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[channel]; !ok {
		return fail("channel_not_found")
	}
	m := s.findMessageLocked(channel, ts)
	if m == nil {
		return fail("message_not_found")
	}
	return ok(map[string]any{"channel": channel, "permalink": s.permalinkLocked(m)})
}

// page applies limit/cursor pagination to n items: a page of at most limit
// (default defLimit, at most 1000: Slack's documented maximum), and the
// cursor of the next page, "" on the last. A cursor this server did not
// hand out is refused with invalid_cursor, as Slack does.
func page(r *apiRequest, n, defLimit int) (from, to int, next string, ok bool) {
	limit := defLimit
	if v, err := strconv.Atoi(r.get("limit")); err == nil && v > 0 {
		limit = min(v, 1000)
	}
	if c := r.get("cursor"); c != "" {
		b, err := base64.StdEncoding.DecodeString(c)
		if err != nil {
			return 0, 0, "", false
		}
		rest, found := strings.CutPrefix(string(b), "offset:")
		v, err := strconv.Atoi(rest)
		if !found || err != nil || v < 0 {
			return 0, 0, "", false
		}
		from = min(v, n)
	}
	to = min(from+limit, n)
	if to < n {
		next = base64.StdEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(to)))
	}
	return from, to, next, true
}

func inRange(r *apiRequest, ts string) bool {
	incl := r.get("inclusive") == "1" || r.get("inclusive") == "true"
	if o := r.get("oldest"); o != "" && o != "0" {
		if tsLess(ts, o) || (!incl && ts == o) {
			return false
		}
	}
	if l := r.get("latest"); l != "" {
		if tsLess(l, ts) || (!incl && ts == l) {
			return false
		}
	}
	return true
}

func (s *Server) conversationsReplies(r *apiRequest) apiResult {
	channel, ts := r.get("channel"), r.get("ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok0 := s.channels[channel]
	if !ok0 {
		return fail("channel_not_found")
	}
	parent := cs.byTS[ts]
	if parent == nil || parent.Deleted {
		return fail("thread_not_found")
	}
	var msgs []*Message
	if parent.ThreadTS != "" && parent.ThreadTS != parent.TS {
		msgs = []*Message{parent} // a reply's ts returns just that reply
	} else {
		msgs = append(msgs, parent)
		for _, m := range cs.msgs {
			if m.ThreadTS == ts && m.TS != ts && !m.Deleted && inRange(r, m.TS) {
				msgs = append(msgs, m)
			}
		}
	}
	return s.messagesPageLocked(r, msgs, 1000)
}

// messagesPageLocked answers with one page of msgs, defLimit to a page unless
// the request sets a limit. A message's metadata is in it only when the
// request sets include_all_metadata, as Slack reads history.
func (s *Server) messagesPageLocked(r *apiRequest, msgs []*Message, defLimit int) apiResult {
	from, to, next, valid := page(r, len(msgs), defLimit)
	if !valid {
		return fail("invalid_cursor")
	}
	meta := r.get("include_all_metadata") == "1" || r.get("include_all_metadata") == "true"
	out := make([]map[string]any, 0, to-from)
	for _, m := range msgs[from:to] {
		j := s.messageJSONLocked(m)
		if !meta {
			delete(j, "metadata")
		}
		out = append(out, j)
	}
	return ok(map[string]any{"messages": out, "has_more": next != "", "response_metadata": map[string]any{"next_cursor": next}})
}

func (s *Server) conversationsHistory(r *apiRequest) apiResult {
	channel := r.get("channel")
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok0 := s.channels[channel]
	if !ok0 {
		return fail("channel_not_found")
	}
	if cs.info.BotAbsent {
		// A bot token reads the conversations its bot is a member of.
		return fail("not_in_channel")
	}
	var msgs []*Message
	for i := len(cs.msgs) - 1; i >= 0; i-- { // newest first
		m := cs.msgs[i]
		top := m.ThreadTS == "" || m.ThreadTS == m.TS || m.ReplyBroadcast
		if top && !m.Deleted && inRange(r, m.TS) {
			msgs = append(msgs, m)
		}
	}
	return s.messagesPageLocked(r, msgs, 100)
}

func (s *Server) conversationsInfo(r *apiRequest) apiResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok0 := s.channels[r.get("channel")]
	if !ok0 {
		return fail("channel_not_found")
	}
	c := cs.info
	created := int64(1600000000)
	if len(cs.msgs) > 0 {
		sec, _, _ := strings.Cut(cs.msgs[0].TS, ".")
		created, _ = strconv.ParseInt(sec, 10, 64)
	}
	ch := map[string]any{
		"id": c.ID, "created": created, "is_archived": c.Archived, "is_general": false,
		"is_channel": !c.IsIM && !c.IsPrivate, "is_group": c.IsPrivate, "is_im": c.IsIM, "is_mpim": false,
		"is_private": c.IsPrivate || c.IsIM, "is_member": !c.BotAbsent, "is_ext_shared": false, "is_shared": false,
		"context_team_id": s.cfg.teamID,
	}
	if c.IsIM {
		ch["user"] = c.User
	} else {
		ch["name"] = c.Name
		ch["name_normalized"] = c.Name
	}
	if r.get("include_locale") == "true" {
		ch["locale"] = "ja-JP"
	}
	return ok(map[string]any{"channel": ch})
}

func (s *Server) usersInfo(r *apiRequest) apiResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok0 := s.users[r.get("user")]
	if !ok0 {
		return fail("user_not_found")
	}
	profile := map[string]any{"real_name": u.RealName, "display_name": u.Name, "real_name_normalized": u.RealName, "display_name_normalized": u.Name, "team": s.cfg.teamID}
	if u.IsBot && u.ID == s.cfg.botUserID {
		profile["bot_id"] = s.cfg.botID
	}
	user := map[string]any{
		"id": u.ID, "team_id": s.cfg.teamID, "name": u.Name, "real_name": u.RealName, "deleted": u.Deleted,
		"tz": u.TZ, "tz_label": u.TZLabel, "tz_offset": u.TZOffset, "is_bot": u.IsBot, "is_app_user": false,
		"is_admin": false, "is_owner": false, "is_restricted": false, "is_ultra_restricted": false,
		"updated": 1700000000, "profile": profile,
	}
	if r.get("include_locale") == "true" {
		loc := u.Locale
		if loc == "" {
			loc = "en-US" // a workspace's default language unless the user chose another
		}
		user["locale"] = loc
	}
	return ok(map[string]any{"user": user})
}

// record keeps what a call did, under the lock, and answers ok.
func (s *Server) record(keep func()) apiResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep()
	s.notifyLocked()
	return ok(nil)
}

func (s *Server) assistantSetStatus(r *apiRequest) apiResult {
	if r.get("channel_id") == "" || r.get("thread_ts") == "" {
		return fail("invalid_arguments")
	}
	var loading []string
	if v := r.get("loading_messages"); v != "" {
		loading = strings.Split(v, ",")
	}
	return s.record(func() {
		s.statuses = append(s.statuses, Status{Channel: r.get("channel_id"), ThreadTS: r.get("thread_ts"), Status: r.get("status"), LoadingMessages: loading, At: time.Now()})
	})
}

// --- views ---

func (s *Server) useTriggerLocked(id string) string {
	t, ok := s.triggers[id]
	switch {
	case id == "" || !ok:
		return "invalid_trigger_id"
	case t.used:
		return "exchanged_trigger_id"
	case s.cfg.triggerTTL > 0 && time.Since(t.issued) > s.cfg.triggerTTL:
		return "expired_trigger_id"
	}
	t.used = true
	s.triggers[id] = t
	return ""
}

// parseView reads a view and checks its blocks, and its type unless typ is
// "", or returns the error to answer with.
func parseView(raw, typ string) (map[string]any, string) {
	var v map[string]any
	if err := json.Unmarshal([]byte(raw), &v); err != nil || v == nil {
		return nil, "invalid_arguments"
	}
	if b, err := json.Marshal(v["blocks"]); err == nil && v["blocks"] != nil {
		if e := validateBlocksOn(string(b), surfaceView); e != "" {
			return nil, e
		}
	}
	if e := validateInputs(v["blocks"]); e != "" {
		return nil, e
	}
	if typ != "" && str(v, "type") != typ {
		return nil, "invalid_arguments"
	}
	return v, ""
}

// maxInputLength bounds a plain-text input's min_length and max_length
// (0–3000 and 1–3000, Slack's plain-text input element reference).
const maxInputLength = 3000

// validateInputs checks the plain-text inputs of a view: min_length and
// max_length within Slack's range, min_length not above max_length, and an
// initial_value no longer than max_length. Slack's reference says nothing
// of an initial_value over max_length; the fake refuses the view with
// invalid_arguments (the strict choice: a form that opens already invalid
// cannot be submitted as it is), so a bot must keep them in agreement.
func validateInputs(v any) string {
	switch x := v.(type) {
	case map[string]any:
		if x["type"] == "plain_text_input" {
			lo, hasLo := x["min_length"].(float64)
			hi, hasHi := x["max_length"].(float64)
			switch {
			case hasLo && (lo < 0 || lo > maxInputLength),
				hasHi && (hi < 1 || hi > maxInputLength),
				hasLo && hasHi && lo > hi:
				return "invalid_arguments"
			}
			if iv, _ := x["initial_value"].(string); hasHi && float64(utf8.RuneCountInString(iv)) > hi {
				return "invalid_arguments"
			}
		}
		for _, c := range x {
			if e := validateInputs(c); e != "" {
				return e
			}
		}
	case []any:
		for _, c := range x {
			if e := validateInputs(c); e != "" {
				return e
			}
		}
	}
	return ""
}

func str(m map[string]any, k string) string {
	v, _ := m[k].(string)
	return v
}

func (s *Server) setViewLocked(vs *viewState, raw string, v map[string]any, method string) {
	if vs.JSON != nil {
		vs.History = append(vs.History, vs.JSON)
	}
	vs.JSON = json.RawMessage(raw)
	vs.Type = str(v, "type")
	vs.CallbackID = str(v, "callback_id")
	vs.PrivateMetadata = str(v, "private_metadata")
	vs.ExternalID = str(v, "external_id")
	vs.Hash = strconv.FormatInt(time.Now().UnixNano(), 10) + "." + randomHex(4)
	vs.Method = method
	vs.UpdatedAt = time.Now()
	s.notifyLocked()
}

func (s *Server) viewJSONLocked(vs *viewState) map[string]any {
	var v map[string]any
	_ = json.Unmarshal(vs.JSON, &v)
	if v == nil {
		v = map[string]any{}
	}
	v["id"] = vs.ID
	v["team_id"] = s.cfg.teamID
	v["state"] = map[string]any{"values": map[string]any{}}
	v["hash"] = vs.Hash
	v["root_view_id"] = vs.RootViewID
	v["previous_view_id"] = nil
	v["app_id"] = s.cfg.appID
	v["app_installed_team_id"] = s.cfg.teamID
	v["bot_id"] = s.cfg.botID
	for _, k := range []string{"private_metadata", "callback_id", "external_id"} {
		if _, ok := v[k]; !ok {
			v[k] = ""
		}
	}
	return v
}

func (s *Server) viewsOpen(r *apiRequest) apiResult {
	v, e := parseView(r.get("view"), "modal")
	if e != "" {
		return fail(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.useTriggerLocked(r.get("trigger_id")); e != "" {
		return fail(e)
	}
	vs := &viewState{View{ID: s.nextIDLocked("V"), TriggerID: r.get("trigger_id")}}
	vs.RootViewID = vs.ID
	s.setViewLocked(vs, r.get("view"), v, r.method)
	s.views[vs.ID] = vs
	s.viewOrder = append(s.viewOrder, vs.ID)
	return ok(map[string]any{"view": s.viewJSONLocked(vs)})
}

func (s *Server) viewsPublish(r *apiRequest) apiResult {
	user := r.get("user_id")
	if user == "" {
		return fail("invalid_arguments")
	}
	v, e := parseView(r.get("view"), "home")
	if e != "" {
		return fail(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var vs *viewState
	if id, ok := s.homeViews[user]; ok {
		vs = s.views[id]
		if h := r.get("hash"); h != "" && h != vs.Hash {
			return fail("hash_conflict")
		}
	} else {
		vs = &viewState{View{ID: s.nextIDLocked("V"), UserID: user}}
		vs.RootViewID = vs.ID
		s.views[vs.ID] = vs
		s.viewOrder = append(s.viewOrder, vs.ID)
		s.homeViews[user] = vs.ID
	}
	s.setViewLocked(vs, r.get("view"), v, r.method)
	return ok(map[string]any{"view": s.viewJSONLocked(vs)})
}

func (s *Server) viewsUpdate(r *apiRequest) apiResult {
	v, e := parseView(r.get("view"), "")
	if e != "" {
		return fail(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var vs *viewState
	if id := r.get("view_id"); id != "" {
		vs = s.views[id]
	} else if ext := r.get("external_id"); ext != "" {
		for _, cand := range s.views {
			if cand.ExternalID == ext {
				vs = cand
			}
		}
	}
	if vs == nil {
		return fail("not_found")
	}
	if h := r.get("hash"); h != "" && h != vs.Hash {
		return fail("hash_conflict")
	}
	s.setViewLocked(vs, r.get("view"), v, r.method)
	return ok(map[string]any{"view": s.viewJSONLocked(vs)})
}

// --- files (v2 upload flow) ---

func (s *Server) filesGetUploadURLExternal(r *apiRequest) apiResult {
	name := r.get("filename")
	length, err := strconv.Atoi(r.get("length"))
	if name == "" || err != nil || length <= 0 {
		return fail("invalid_arguments")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextIDLocked("F")
	key := randomHex(16)
	s.uploads[key] = id
	s.files[id] = &fileState{File{ID: id, Name: name, Title: name, AltText: r.get("alt_txt"), SnippetType: r.get("snippet_type"), Length: length, CreatedAt: time.Now()}}
	s.fileOrder = append(s.fileOrder, id)
	s.notifyLocked()
	return ok(map[string]any{"upload_url": s.baseURL + "/upload/v1/" + key, "file_id": id})
}

// handleUpload receives the bytes POSTed to an upload_url, multipart (field
// "file", as slack-go sends) or raw.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/upload/v1/")
	s.mu.Lock()
	id, known := s.uploads[key]
	s.mu.Unlock()
	if !known {
		http.Error(w, "upload url not found", http.StatusNotFound)
		return
	}
	content, err := readUpload(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	f := s.files[id]
	f.Content = content
	f.Uploaded = true
	s.notifyLocked()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "OK - %d", len(content))
}

func readUpload(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, fmt.Errorf("read upload: %w", err)
		}
		return b, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fmt.Errorf("read upload: %w", err)
	}
	for {
		p, err := mr.NextPart()
		if err != nil {
			return nil, fmt.Errorf("read upload: no file part: %w", err)
		}
		if p.FormName() == "file" || p.FileName() != "" {
			b, err := io.ReadAll(p)
			if err != nil {
				return nil, fmt.Errorf("read upload: %w", err)
			}
			return b, nil
		}
	}
}

func (s *Server) filesCompleteUploadExternal(r *apiRequest) apiResult {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(r.get("files")), &files); err != nil || len(files) == 0 {
		return fail("invalid_arguments")
	}
	var channels []string
	if c := r.get("channel_id"); c != "" {
		channels = append(channels, c)
	}
	if cs := r.get("channels"); cs != "" {
		channels = append(channels, strings.Split(cs, ",")...)
	}
	threadTS := r.get("thread_ts")
	if threadTS != "" && len(channels) != 1 {
		return fail("invalid_arguments")
	}
	blocks := r.get("blocks")
	if e := validateBlocksOn(blocks, surfaceFileShare); e != "" {
		return fail(e)
	}
	if r.get("initial_comment") != "" {
		// initial_comment and blocks are exclusive: Slack shows the
		// comment and ignores the blocks.
		blocks = ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(files))
	for _, fr := range files {
		f, ok := s.files[fr.ID]
		if !ok || !f.Uploaded {
			return fail("file_not_found")
		}
		if f.Completed {
			return fail("file_already_completed")
		}
		ids = append(ids, fr.ID)
	}
	summaries := make([]map[string]any, 0, len(files))
	for _, fr := range files {
		f := s.files[fr.ID]
		if fr.Title != "" {
			f.Title = fr.Title
		}
		f.Completed = true
		f.Channels = channels
		f.ThreadTS = threadTS
		f.InitialComment = r.get("initial_comment")
		f.Blocks = rawJSON(blocks)
		summaries = append(summaries, map[string]any{"id": f.ID, "title": f.Title})
	}
	for _, ch := range channels {
		ch = s.resolveChannelLocked(ch)
		m := &Message{
			Channel: ch, TS: s.nextTSLocked(), ThreadTS: threadTS, User: s.cfg.botUserID, BotID: s.cfg.botID,
			Text: r.get("initial_comment"), Blocks: rawJSON(blocks), Files: ids, PostedAt: time.Now(),
		}
		s.addMessageLocked(m)
		for _, id := range ids {
			if s.files[id].MessageTS == "" {
				s.files[id].MessageTS = m.TS
			}
		}
	}
	s.notifyLocked()
	return ok(map[string]any{"files": summaries})
}

// filesDelete deletes a file the bot created, shared or not; its share
// messages lose it. As Slack's method page lists: a file deleted before is
// file_deleted, an id never issued file_not_found.
func (s *Server) filesDelete(r *apiRequest) apiResult {
	id := r.get("file")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deletedFiles[id] {
		return fail("file_deleted")
	}
	if _, ok := s.files[id]; !ok {
		return fail("file_not_found")
	}
	delete(s.files, id)
	s.deletedFiles[id] = true
	for k, v := range s.uploads {
		if v == id {
			delete(s.uploads, k)
		}
	}
	s.fileOrder = slices.DeleteFunc(s.fileOrder, func(x string) bool { return x == id })
	s.notifyLocked()
	return ok(nil)
}

// filesUploadRetired answers files.upload, which Slack retired on
// 2025-11-12: files go through files.getUploadURLExternal and
// files.completeUploadExternal.
func (s *Server) filesUploadRetired(*apiRequest) apiResult { return fail("method_deprecated") }

// handleFileDownload serves url_private of an uploaded file to the bot token.
func (s *Server) handleFileDownload(w http.ResponseWriter, r *http.Request) {
	if tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); tok != s.cfg.botToken {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/files/"), "/")
	s.mu.Lock()
	f, ok := s.files[id]
	var content []byte
	if ok {
		content = append([]byte(nil), f.Content...)
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(content)
}

// handleResponseURL receives POSTs to response_urls handed out in
// interactive and slash command payloads.
func (s *Server) handleResponseURL(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/response/")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	var msg struct {
		Text            string          `json:"text"`
		Blocks          json.RawMessage `json:"blocks"`
		ResponseType    string          `json:"response_type"`
		ReplaceOriginal bool            `json:"replace_original"`
		DeleteOriginal  bool            `json:"delete_original"`
		ThreadTS        string          `json:"thread_ts"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_payload"})
		return
	}
	if string(msg.Blocks) == "null" {
		msg.Blocks = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, known := s.respURLs[key]
	if !known {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "no_service")
		return
	}
	now := time.Now()
	s.responses = append(s.responses, ResponsePost{
		URL: s.baseURL + r.URL.Path, Text: msg.Text, ResponseType: msg.ResponseType, ReplaceOriginal: msg.ReplaceOriginal,
		DeleteOriginal: msg.DeleteOriginal, ThreadTS: msg.ThreadTS, Blocks: msg.Blocks, Body: body, At: now,
	})
	orig := s.findMessageLocked(t.channel, t.messageTS)
	switch {
	case msg.DeleteOriginal && orig != nil:
		orig.Deleted = true
	case msg.ReplaceOriginal && orig != nil:
		s.editLocked(orig, msg.Text, msg.Blocks, nil)
	case msg.ResponseType == "in_channel" && t.channel != "":
		thread := msg.ThreadTS
		if thread == "" {
			thread = t.threadTS
		}
		s.addMessageLocked(&Message{Channel: t.channel, TS: s.nextTSLocked(), ThreadTS: thread, User: s.cfg.botUserID, BotID: s.cfg.botID, Text: msg.Text, Blocks: msg.Blocks, PostedAt: now})
	default:
		s.ephemerals = append(s.ephemerals, Ephemeral{Channel: t.channel, User: t.user, TS: s.nextTSLocked(), ThreadTS: t.threadTS, Text: msg.Text, Blocks: msg.Blocks, Source: "response_url", At: now})
	}
	s.notifyLocked()
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}
