package slackfake

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // users.info needs zone offsets on machines without zoneinfo
)

// User is a workspace member as users.info reports it.
type User struct {
	ID       string
	Name     string
	RealName string
	TZ       string // IANA name, e.g. "Asia/Tokyo"
	TZLabel  string // e.g. "Japan Standard Time"
	TZOffset int    // seconds east of UTC
	Locale   string // e.g. "ja-JP"
	IsBot    bool
	Deleted  bool
}

// Channel is a conversation as conversations.info reports it.
type Channel struct {
	ID        string
	Name      string
	IsIM      bool     // a direct message with User
	IsPrivate bool     // a private channel
	User      string   // the other member of a DM
	Archived  bool     // conversations.info says is_archived
	BotAbsent bool     // the bot is not a member (is_member false)
	Members   []string // conversations.members; nil: every user of the workspace
}

// Edit is an earlier version of a message, replaced by chat.update (or a
// response_url replace_original).
type Edit struct {
	Text        string
	Blocks      json.RawMessage
	Attachments json.RawMessage
	At          time.Time // when it was replaced
}

// Message is a message in a channel: posted by the bot through the Web API,
// or by a user through one of the Send* event helpers.
type Message struct {
	Channel        string
	TS             string
	ThreadTS       string // "" for a top-level message; the parent's ts for replies
	User           string
	BotID          string // set for the bot's own messages
	Text           string
	Blocks         json.RawMessage
	Attachments    json.RawMessage
	Metadata       json.RawMessage
	Files          []string // ids of files shared with the message
	ReplyBroadcast bool
	Params         map[string]string // other chat.postMessage parameters (mrkdwn, unfurl_links, link_names, username, ...)
	Edits          []Edit            // earlier versions, oldest first
	Deleted        bool
	PostedAt       time.Time
}

// IsBot reports whether the bot posted the message.
func (m Message) IsBot() bool { return m.BotID != "" }

// ButtonValue returns the value of the button with actionID in the message's
// blocks, in an actions block or as a section's accessory; "" when there is
// none.
func (m Message) ButtonValue(actionID string) string {
	type button struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	}
	var blocks []struct {
		Elements  []button `json:"elements"`
		Accessory *button  `json:"accessory"`
	}
	if json.Unmarshal(m.Blocks, &blocks) != nil {
		return ""
	}
	for _, b := range blocks {
		if b.Accessory != nil && b.Accessory.ActionID == actionID {
			return b.Accessory.Value
		}
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return e.Value
			}
		}
	}
	return ""
}

func (m Message) clone() Message {
	m.Files = slices.Clone(m.Files)
	m.Edits = slices.Clone(m.Edits)
	if m.Params != nil {
		p := make(map[string]string, len(m.Params))
		for k, v := range m.Params {
			p[k] = v
		}
		m.Params = p
	}
	return m
}

// Ephemeral is a message only one user sees (chat.postEphemeral or an
// ephemeral response_url reply).
type Ephemeral struct {
	Channel  string
	User     string
	TS       string
	ThreadTS string
	Text     string
	Blocks   json.RawMessage
	Source   string // "chat.postEphemeral" or "response_url"
	At       time.Time
}

// Status is one assistant.threads.setStatus call.
type Status struct {
	Channel         string
	ThreadTS        string
	Status          string // "" clears the status
	LoadingMessages []string
	At              time.Time
}

// Prompt is one suggested prompt.
type Prompt struct {
	Title   string `json:"title"`
	Message string `json:"message"`
}

// SuggestedPrompts is one assistant.threads.setSuggestedPrompts call.
type SuggestedPrompts struct {
	Channel  string
	ThreadTS string
	Title    string
	Prompts  []Prompt
	At       time.Time
}

// Title is one assistant.threads.setTitle call.
type Title struct {
	Channel  string
	ThreadTS string
	Title    string
	At       time.Time
}

// File is a file uploaded with the v2 flow (files.getUploadURLExternal, the
// upload POST, files.completeUploadExternal).
type File struct {
	ID             string
	Name           string
	Title          string
	AltText        string
	SnippetType    string
	Length         int // as declared to files.getUploadURLExternal
	Content        []byte
	Uploaded       bool // the bytes arrived
	Completed      bool // files.completeUploadExternal succeeded
	Channels       []string
	ThreadTS       string
	InitialComment string
	Blocks         json.RawMessage
	MessageTS      string // the message that shared it, if shared
	CreatedAt      time.Time
}

// View is a modal or App Home view the bot opened, pushed, published or updated.
type View struct {
	ID              string
	Type            string // "modal" or "home"
	UserID          string // for home views
	TriggerID       string
	CallbackID      string
	PrivateMetadata string
	ExternalID      string
	Hash            string
	RootViewID      string
	JSON            json.RawMessage   // the view as last sent by the bot
	History         []json.RawMessage // earlier versions, oldest first
	Method          string            // the last method that set it
	UpdatedAt       time.Time
}

// ResponsePost is one POST to a response_url the fake handed out.
type ResponsePost struct {
	URL             string
	Text            string
	ResponseType    string
	ReplaceOriginal bool
	DeleteOriginal  bool
	ThreadTS        string
	Blocks          json.RawMessage
	Body            json.RawMessage
	At              time.Time
}

type channelState struct {
	info Channel
	msgs []*Message // ordered by ts
	byTS map[string]*Message
}

type fileState struct{ File }

type viewState struct{ View }

type responseTarget struct {
	channel   string
	messageTS string
	threadTS  string
	user      string
}

type triggerState struct {
	issued time.Time
	used   bool
}

// tsLess orders Slack timestamps numerically.
func tsLess(a, b string) bool {
	as, au, _ := strings.Cut(a, ".")
	bs, bu, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	if ai != bi {
		return ai < bi
	}
	au = (au + "000000")[:6]
	bu = (bu + "000000")[:6]
	return au < bu
}

func channelFromID(id string) Channel {
	c := Channel{ID: id, Name: strings.ToLower(id)}
	switch {
	case strings.HasPrefix(id, "D"):
		c.IsIM = true
	case strings.HasPrefix(id, "G"):
		c.IsPrivate = true
	}
	return c
}

// channelLocked returns the channel, creating it from its id if new.
func (s *Server) channelLocked(id string) *channelState {
	cs, ok := s.channels[id]
	if !ok {
		cs = &channelState{info: channelFromID(id), byTS: map[string]*Message{}}
		s.channels[id] = cs
		s.chanOrder = append(s.chanOrder, id)
	}
	return cs
}

func (s *Server) addMessageLocked(m *Message) {
	cs := s.channelLocked(m.Channel)
	i, _ := slices.BinarySearchFunc(cs.msgs, m.TS, func(x *Message, ts string) int {
		switch {
		case tsLess(x.TS, ts):
			return -1
		case x.TS == ts:
			return 0
		}
		return 1
	})
	cs.msgs = slices.Insert(cs.msgs, i, m)
	cs.byTS[m.TS] = m
	s.notifyLocked()
}

func (s *Server) findMessageLocked(channel, ts string) *Message {
	cs, ok := s.channels[channel]
	if !ok {
		return nil
	}
	return cs.byTS[ts]
}

// learnUserLocked registers a user seen in an event, with the default time zone.
func (s *Server) learnUserLocked(id string) {
	if id == "" {
		return
	}
	if _, ok := s.users[id]; ok {
		return
	}
	s.users[id] = withZone(User{ID: id, Name: strings.ToLower(id), RealName: "User " + id, TZ: s.cfg.defaultTZ})
}

var zoneLabels = map[string]string{
	"Asia/Tokyo":          "Japan Standard Time",
	"UTC":                 "Coordinated Universal Time",
	"America/New_York":    "Eastern Standard Time",
	"America/Los_Angeles": "Pacific Standard Time",
	"Europe/London":       "Greenwich Mean Time",
}

// withZone fills TZLabel and TZOffset from TZ when they are unset.
func withZone(u User) User {
	if u.TZ == "" {
		return u
	}
	loc, err := time.LoadLocation(u.TZ)
	if err != nil {
		return u
	}
	abbr, off := time.Now().In(loc).Zone()
	if u.TZOffset == 0 {
		u.TZOffset = off
	}
	if u.TZLabel == "" {
		if l, ok := zoneLabels[u.TZ]; ok {
			u.TZLabel = l
		} else {
			u.TZLabel = abbr
		}
	}
	return u
}

// AddUser adds or replaces a user. TZLabel and TZOffset are derived from TZ
// when unset.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = withZone(u)
}

// AddChannel adds or replaces a channel's description; its messages are kept.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channelLocked(c.ID).info = c
}

// AddMessage adds a message as if a user had posted it (no event is sent).
// TS is assigned when empty; the stored message is returned.
func (s *Server) AddMessage(m Message) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.TS == "" {
		m.TS = s.nextTSLocked()
	}
	if m.PostedAt.IsZero() {
		m.PostedAt = time.Now()
	}
	s.learnUserLocked(m.User)
	cp := m.clone()
	s.addMessageLocked(&cp)
	return cp.clone()
}

// Messages returns the channel's messages that are not deleted, top-level
// messages and thread replies alike, in ts order.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.channels[channel]
	if !ok {
		return nil
	}
	var out []Message
	for _, m := range cs.msgs {
		if !m.Deleted {
			out = append(out, m.clone())
		}
	}
	return out
}

// Thread returns a thread's parent (if known) and its replies that are not
// deleted, in ts order.
func (s *Server) Thread(channel, ts string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.threadLocked(channel, ts, false)
}

func (s *Server) threadLocked(channel, ts string, withDeleted bool) []Message {
	cs, ok := s.channels[channel]
	if !ok {
		return nil
	}
	var out []Message
	for _, m := range cs.msgs {
		if m.Deleted && !withDeleted {
			continue
		}
		if m.TS == ts || m.ThreadTS == ts {
			out = append(out, m.clone())
		}
	}
	return out
}

// Message returns one message, deleted or not.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findMessageLocked(channel, ts)
	if m == nil {
		return Message{}, false
	}
	return m.clone(), true
}

// AllMessages returns every message of every channel, deleted ones included,
// channel by channel in the order the channels were first seen.
func (s *Server) AllMessages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, id := range s.chanOrder {
		for _, m := range s.channels[id].msgs {
			out = append(out, m.clone())
		}
	}
	return out
}

// BotMessages returns the bot's messages in a channel ("" for all channels)
// that are not deleted.
func (s *Server) BotMessages(channel string) []Message {
	var out []Message
	for _, m := range s.AllMessages() {
		if m.IsBot() && !m.Deleted && (channel == "" || m.Channel == channel) {
			out = append(out, m)
		}
	}
	return out
}

// Files returns the files created with files.getUploadURLExternal, in order.
func (s *Server) Files() []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]File, 0, len(s.fileOrder))
	for _, id := range s.fileOrder {
		out = append(out, cloneFile(s.files[id].File))
	}
	return out
}

// Orphans returns the files that were created but never shared by a
// successful files.completeUploadExternal (and not deleted): what a failed
// or repeated upload flow leaves behind in a real workspace.
func (s *Server) Orphans() []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []File
	for _, id := range s.fileOrder {
		if f := s.files[id]; !f.Completed {
			out = append(out, cloneFile(f.File))
		}
	}
	return out
}

func cloneFile(f File) File {
	f.Content = slices.Clone(f.Content)
	f.Channels = slices.Clone(f.Channels)
	return f
}

// Views returns the views the bot opened or published, in creation order.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]View, 0, len(s.viewOrder))
	for _, id := range s.viewOrder {
		v := s.views[id].View
		v.History = slices.Clone(v.History)
		out = append(out, v)
	}
	return out
}

// HomeView returns the App Home view published for a user.
func (s *Server) HomeView(user string) (View, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.homeViews[user]
	if !ok {
		return View{}, false
	}
	v := s.views[id].View
	v.History = slices.Clone(v.History)
	return v, true
}

// Ephemerals returns the ephemeral messages, in order.
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ephemerals)
}

// Statuses returns the assistant.threads.setStatus calls, in order.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.statuses)
	for i := range out {
		out[i].LoadingMessages = slices.Clone(out[i].LoadingMessages)
	}
	return out
}

// SuggestedPrompts returns the assistant.threads.setSuggestedPrompts calls.
func (s *Server) SuggestedPrompts() []SuggestedPrompts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.prompts)
	for i := range out {
		out[i].Prompts = slices.Clone(out[i].Prompts)
	}
	return out
}

// Titles returns the assistant.threads.setTitle calls.
func (s *Server) Titles() []Title {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.titles)
}

// ResponsePosts returns the POSTs to response_urls, in order.
func (s *Server) ResponsePosts() []ResponsePost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.responses)
}

// NewTriggerID issues a fresh trigger_id for views.open, as a user action would.
func (s *Server) NewTriggerID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newTriggerLocked()
}

func (s *Server) newTriggerLocked() string {
	now := time.Now()
	id := strconv.FormatInt(now.UnixNano()/1e3, 10) + "." + strconv.FormatUint(s.seq+1, 10) + "." + randomHex(16)
	s.seq++
	s.triggers[id] = triggerState{issued: now}
	return id
}

func (s *Server) newResponseURLLocked(t responseTarget) string {
	key := s.cfg.teamID + "/" + strconv.FormatUint(s.seq+1, 10) + "/" + randomHex(12)
	s.seq++
	s.respURLs[key] = t
	return s.baseURL + "/response/" + key
}
