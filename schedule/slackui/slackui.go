// Package slackui is the Slack face of scheduled digests: the
// `/research schedule` modal and its submission, the `/research schedules`
// list with Pause / Resume / Run now / Delete buttons, an App Home section,
// approval messages, and the Poster that posts digests. The bot calls these
// through its extension points (Options.Subcommands, Options.Interactions,
// Options.HomeSections); every action_id and callback_id starts with Prefix.
package slackui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"deepresearch/bot"
	"deepresearch/schedule"
)

// Prefix starts every action_id and callback_id of this package.
const Prefix = "sched_"

// Ids of the modal and the buttons.
const (
	CallbackCreate = "sched_create"

	ActionPause   = "sched_pause"
	ActionResume  = "sched_resume"
	ActionRunNow  = "sched_run"
	ActionDelete  = "sched_delete"
	ActionApprove = "sched_approve"
	ActionDecline = "sched_decline"

	BlockTopic    = "sched_topic"
	BlockChannel  = "sched_channel"
	BlockFreq     = "sched_freq"
	BlockCron     = "sched_cron"
	BlockTZ       = "sched_tz"
	BlockDepth    = "sched_depth"
	BlockApproval = "sched_approval"
	BlockLanguage = "sched_lang"

	actionInput = "value" // the action_id of every input element in the modal
)

// API is the part of *slack.Client the package uses.
type API interface {
	OpenViewContext(ctx context.Context, triggerID string, view slack.ModalViewRequest) (*slack.ViewResponse, error)
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	GetUserInfoContext(ctx context.Context, user string, options ...slack.GetUserInfoOption) (*slack.User, error)
	UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error)
}

// Preset is a frequency offered in the modal.
type Preset struct {
	Label string
	Spec  string
}

// DefaultPresets are the frequencies of the modal's menu.
var defaultPresets = []Preset{
	{"Every Monday 9:00", "0 9 * * 1"},
	{"Every weekday 9:00", "0 9 * * 1-5"},
	{"Every day 9:00", "0 9 * * *"},
	{"Every hour", "@hourly"},
	{"First day of the month 9:00", "0 9 1 * *"},
}

const customPreset = "custom"

// UI serves the Slack pieces. Set Manager and API; the rest is optional.
type UI struct {
	Manager *schedule.Manager
	API     API
	Logger  *slog.Logger // default: discard
	// AckErrors says the bot returns ViewSubmissionResponse in the ack of
	// view submissions (so the modal shows the errors and stays open). When
	// false, HandleInteraction reports them as an ephemeral message.
	AckErrors  bool
	Presets    []Preset     // default: DefaultPresets
	HTTPClient *http.Client // for response_urls; default: 10s timeout
	DefaultTZ  string       // when the user's Slack tz is unknown; default UTC
}

func (u *UI) log() *slog.Logger {
	if u.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return u.Logger
}

func (u *UI) presets() []Preset {
	if len(u.Presets) > 0 {
		return u.Presets
	}
	return defaultPresets
}

// DefaultPresets returns the frequencies offered when UI.Presets is empty.
func DefaultPresets() []Preset { return append([]Preset(nil), defaultPresets...) }

// ---------------------------------------------------------------- escaping

// Escape is bot.Escape: one function makes text from users, the LLM or the
// web safe for Slack (no mention, no spoofed link, no control character).
func Escape(s string) string { return bot.Escape(s) }

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func mrkdwn(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, false)
}

func plain(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, truncate(text, 150), false, false)
}

func (u *UI) userName(ctx context.Context, id string) string {
	if info, err := u.API.GetUserInfoContext(ctx, id); err == nil && info != nil {
		if info.RealName != "" {
			return info.RealName
		}
		if info.Name != "" {
			return info.Name
		}
	}
	return "someone"
}

func (u *UI) userTZ(ctx context.Context, id string) string {
	if info, err := u.API.GetUserInfoContext(ctx, id); err == nil && info != nil && info.TZ != "" {
		return info.TZ
	}
	if u.DefaultTZ != "" {
		return u.DefaultTZ
	}
	return "UTC"
}

// ---------------------------------------------------------------- modal

type modalMeta struct {
	Team    string `json:"team,omitempty"`
	Channel string `json:"channel,omitempty"` // where /research schedule was run
}

// ScheduleModal builds the create modal: topic (prefilled), channel
// (default the current one), frequency presets plus a custom cron field,
// time zone (default the user's), depth, approval, language.
func (u *UI) ScheduleModal(topic, channel, tz string, meta modalMeta) slack.ModalViewRequest {
	topicIn := slack.NewPlainTextInputBlockElement(plain("e.g. Weekly competitor news: pricing, launches, hires"), actionInput)
	topicIn.Multiline = true
	topicIn.InitialValue = bot.CleanText(topic) // the user's own words, editable: no markup is parsed in an input
	topicIn.MaxLength = 2000

	chIn := slack.NewOptionsSelectBlockElement(slack.OptTypeConversations, plain("Channel"), actionInput)
	chIn.InitialConversation = channel
	chIn.DefaultToCurrentConversation = channel == ""
	chIn.Filter = &slack.SelectBlockElementFilter{Include: []string{"public", "private"}, ExcludeBotUsers: true}

	var opts []*slack.OptionBlockObject
	for _, p := range u.presets() {
		opts = append(opts, slack.NewOptionBlockObject(p.Spec, plain(p.Label), nil))
	}
	opts = append(opts, slack.NewOptionBlockObject(customPreset, plain("Custom (cron below)"), nil))
	freq := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Frequency"), actionInput, opts...)
	freq.InitialOption = opts[0]

	cronIn := slack.NewPlainTextInputBlockElement(plain("0 9 * * 1-5   or   @daily"), actionInput)
	tzIn := slack.NewPlainTextInputBlockElement(plain("Asia/Tokyo"), actionInput)
	tzIn.InitialValue = tz

	depthOpts := []*slack.OptionBlockObject{
		slack.NewOptionBlockObject(schedule.DepthQuick, plain("Quick"), nil),
		slack.NewOptionBlockObject(schedule.DepthStandard, plain("Standard"), nil),
		slack.NewOptionBlockObject(schedule.DepthDeep, plain("Deep"), nil),
	}
	depth := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Depth"), actionInput, depthOpts...)
	depth.InitialOption = depthOpts[1]
	apprOpts := []*slack.OptionBlockObject{
		slack.NewOptionBlockObject("no", plain("No: post each digest automatically"), nil),
		slack.NewOptionBlockObject("yes", plain("Yes: ask before each run"), nil),
	}
	appr := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Approval"), actionInput, apprOpts...)
	appr.InitialOption = apprOpts[0]
	lang := slack.NewPlainTextInputBlockElement(plain("ja, en, … (empty: the topic's language)"), actionInput)

	cronBlock := slack.NewInputBlock(BlockCron, plain("Custom frequency (cron)"), plain("minute hour day-of-month month day-of-week, or @hourly/@daily/@weekly/@every 6h. Overrides the menu when filled."), cronIn)
	cronBlock.Optional = true
	langBlock := slack.NewInputBlock(BlockLanguage, plain("Report language"), nil, lang)
	langBlock.Optional = true
	metaJSON, _ := json.Marshal(meta)
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      CallbackCreate,
		Title:           plain("Schedule a digest"),
		Submit:          plain("Schedule"),
		Close:           plain("Cancel"),
		PrivateMetadata: string(metaJSON),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock(BlockTopic, plain("What should I research?"), nil, topicIn),
			slack.NewInputBlock(BlockChannel, plain("Post digests in"), nil, chIn),
			slack.NewInputBlock(BlockFreq, plain("How often"), nil, freq),
			cronBlock,
			slack.NewInputBlock(BlockTZ, plain("Time zone"), plain("An IANA name such as Asia/Tokyo, Europe/London, America/New_York"), tzIn),
			slack.NewInputBlock(BlockDepth, plain("Research depth"), nil, depth),
			slack.NewInputBlock(BlockApproval, plain("Ask for approval before each run?"), nil, appr),
			langBlock,
		}},
	}
}

// SlashSchedule serves `/research schedule [topic]`: it opens the modal.
// It has the signature of bot.SlashHandler.
func (u *UI) SlashSchedule(ctx context.Context, cmd slack.SlashCommand, args string) (string, error) {
	tz := u.userTZ(ctx, cmd.UserID)
	view := u.ScheduleModal(strings.TrimSpace(args), cmd.ChannelID, tz, modalMeta{Team: cmd.TeamID, Channel: cmd.ChannelID})
	if _, err := u.API.OpenViewContext(ctx, cmd.TriggerID, view); err != nil {
		return "", fmt.Errorf("slackui: open schedule modal: %w", err)
	}
	return "", nil
}

func value(cb slack.InteractionCallback, block string) slack.BlockAction {
	if cb.View.State == nil {
		return slack.BlockAction{}
	}
	return cb.View.State.Values[block][actionInput]
}

// Submission reads the modal's values into a Draft. customSpec reports
// whether the spec came from the cron field (for error placement).
func Submission(cb slack.InteractionCallback) (d schedule.Draft, customSpec bool) {
	var meta modalMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	d.Team = meta.Team
	if d.Team == "" {
		d.Team = cb.Team.ID
	}
	d.Owner = cb.User.ID
	d.Topic = value(cb, BlockTopic).Value
	d.Channel = value(cb, BlockChannel).SelectedConversation
	freq := value(cb, BlockFreq).SelectedOption.Value
	cron := strings.TrimSpace(value(cb, BlockCron).Value)
	switch {
	case cron != "":
		d.Spec, customSpec = cron, true
	case freq == customPreset:
		d.Spec, customSpec = "", true
	default:
		d.Spec = freq
	}
	d.TZ = strings.TrimSpace(value(cb, BlockTZ).Value)
	d.Options.Depth = value(cb, BlockDepth).SelectedOption.Value
	d.Options.Approval = value(cb, BlockApproval).SelectedOption.Value == "yes"
	d.Options.Language = strings.TrimSpace(value(cb, BlockLanguage).Value)
	return d, customSpec
}

// submissionErrors maps a validation error to the modal's blocks.
func submissionErrors(err error, customSpec bool) map[string]string {
	var ve *schedule.ValidationError
	out := map[string]string{}
	switch {
	case errors.As(err, &ve):
		for field, msg := range ve.Fields {
			switch field {
			case schedule.FieldTopic:
				out[BlockTopic] = msg
			case schedule.FieldChannel:
				out[BlockChannel] = msg
			case schedule.FieldSpec:
				if customSpec {
					if msg == "the frequency is empty (e.g. \"0 9 * * 1\" or @daily)" {
						msg = "Enter a cron spec, or pick a frequency from the menu."
					}
					out[BlockCron] = msg
				} else {
					out[BlockFreq] = msg
				}
			case schedule.FieldTZ:
				out[BlockTZ] = msg
			default:
				out[BlockDepth] = msg
			}
		}
	case errors.Is(err, schedule.ErrLimit):
		out[BlockChannel] = strings.TrimSuffix(strings.TrimPrefix(err.Error(), "schedule: "), ": "+schedule.ErrLimit.Error())
	}
	return out
}

// ViewSubmissionResponse is what the bot should put in the ack of a
// view_submission whose callback_id starts with Prefix: the validation
// errors (response_action "errors", the modal stays open), or nil to close
// it. It only validates; HandleInteraction stores the schedule.
func (u *UI) ViewSubmissionResponse(cb slack.InteractionCallback) *slack.ViewSubmissionResponse {
	if cb.Type != slack.InteractionTypeViewSubmission || cb.View.CallbackID != CallbackCreate {
		return nil
	}
	d, custom := Submission(cb)
	if _, err := u.Manager.Validate(d); err != nil {
		if errs := submissionErrors(err, custom); len(errs) > 0 {
			return slack.NewErrorsViewSubmissionResponse(errs)
		}
	}
	return nil
}

func (u *UI) onSubmit(ctx context.Context, cb slack.InteractionCallback) error {
	d, custom := Submission(cb)
	var meta modalMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	tell := func(text string) {
		ch := meta.Channel
		if ch == "" && schedule.ValidChannelID(d.Channel) {
			ch = d.Channel // never a DM or anything else the form was given
		}
		if ch == "" {
			return
		}
		if _, err := u.API.PostEphemeralContext(ctx, ch, cb.User.ID, slack.MsgOptionText(text, false)); err != nil {
			u.log().Warn("slackui: ephemeral", "err", err)
		}
	}
	sc, err := u.Manager.Create(ctx, d)
	if err != nil {
		errs := submissionErrors(err, custom)
		if len(errs) == 0 {
			tell("Sorry, I could not save the schedule. Please try again.")
			return fmt.Errorf("slackui: create schedule: %w", err)
		}
		if _, verr := u.Manager.Validate(d); u.AckErrors && verr != nil {
			return nil // the ack showed them in the modal
		}
		// Refusals found after the ack (the channel: the bot or the owner
		// is not in it, it is archived or not allowed) are told here.
		var lines []string
		for _, msg := range errs {
			lines = append(lines, "• "+Escape(msg))
		}
		tell("I could not schedule that:\n" + strings.Join(lines, "\n"))
		return nil
	}
	u.log().Info("slackui: schedule created", "schedule_id", sc.ID, "channel", sc.Channel, "owner", sc.Owner, "spec", sc.Spec, "tz", sc.TZ)
	next := sc.Next(time.Now())
	text := fmt.Sprintf("Scheduled *%s* in %s (`%s`, %s). First digest: %s.",
		Escape(truncate(sc.Topic, 200)), bot.ChannelRef(sc.Channel), Escape(sc.Spec), Escape(sc.TZ), schedule.DateLabel(next))
	tell(text)
	return nil
}

// ---------------------------------------------------------------- list

func status(sc schedule.Schedule, now time.Time) string {
	if !sc.Enabled {
		return "⏸ paused"
	}
	if n := sc.Next(now); !n.IsZero() {
		return "next " + schedule.DateLabel(n)
	}
	return "never due"
}

// ScheduleBlocks renders schedules with their buttons (Pause or Resume, Run
// now, Delete with a confirmation).
func ScheduleBlocks(list []schedule.Schedule, now time.Time) []slack.Block {
	var blocks []slack.Block
	for i, sc := range list {
		if i == 15 { // stay far below Slack's 50 blocks
			blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("…and %d more.", len(list)-15))))
			break
		}
		opts := []string{}
		if sc.Options.Approval {
			opts = append(opts, "asks for approval")
		}
		if sc.Options.Depth != "" {
			opts = append(opts, Escape(sc.Options.Depth))
		}
		text := fmt.Sprintf("*%s*\n`%s` (%s) in %s · %s", Escape(truncate(sc.Topic, 300)), Escape(sc.Spec), Escape(sc.TZ), bot.ChannelRef(sc.Channel), status(sc, now))
		if len(opts) > 0 {
			text += " · " + strings.Join(opts, ", ")
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(text), nil, nil))
		toggle := slack.NewButtonBlockElement(ActionPause, sc.ID, plain("Pause"))
		if !sc.Enabled {
			toggle = slack.NewButtonBlockElement(ActionResume, sc.ID, plain("Resume"))
		}
		run := slack.NewButtonBlockElement(ActionRunNow, sc.ID, plain("Run now"))
		del := slack.NewButtonBlockElement(ActionDelete, sc.ID, plain("Delete")).WithStyle(slack.StyleDanger)
		del.Confirm = slack.NewConfirmationBlockObject(plain("Delete this schedule?"), mrkdwn("Its history goes too. This cannot be undone."), plain("Delete"), plain("Keep"))
		blocks = append(blocks, slack.NewActionBlock("sched_actions_"+sc.ID, toggle, run, del))
	}
	return blocks
}

// listFor returns the schedules of a channel plus the user's own elsewhere.
func (u *UI) listFor(ctx context.Context, channel, user string) ([]schedule.Schedule, error) {
	here, err := u.Manager.List(ctx, schedule.Filter{Channel: channel})
	if err != nil {
		return nil, err
	}
	mine, err := u.Manager.List(ctx, schedule.Filter{Owner: user})
	if err != nil {
		return nil, err
	}
	for _, sc := range mine {
		if sc.Channel != channel {
			here = append(here, sc)
		}
	}
	return here, nil
}

func listMessage(list []schedule.Schedule, now time.Time, note string) ([]slack.Block, string) {
	head := "*Scheduled digests* (this channel, and yours elsewhere)"
	if len(list) == 0 {
		head = "No scheduled digests here yet. Create one with `/research schedule`."
	}
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(head), nil, nil)}
	if note != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(note)))
	}
	blocks = append(blocks, ScheduleBlocks(list, now)...)
	return blocks, fmt.Sprintf("%d scheduled digests", len(list))
}

// SlashSchedules serves `/research schedules`: an ephemeral list with
// buttons. It has the signature of bot.SlashHandler.
func (u *UI) SlashSchedules(ctx context.Context, cmd slack.SlashCommand, _ string) (string, error) {
	list, err := u.listFor(ctx, cmd.ChannelID, cmd.UserID)
	if err != nil {
		return "", fmt.Errorf("slackui: list schedules: %w", err)
	}
	blocks, text := listMessage(list, time.Now(), "")
	if _, err := u.API.PostEphemeralContext(ctx, cmd.ChannelID, cmd.UserID, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)); err != nil {
		u.log().Warn("slackui: post schedule list", "err", err)
		var lines []string
		for _, sc := range list {
			lines = append(lines, fmt.Sprintf("• %s — `%s` (%s) %s", Escape(truncate(sc.Topic, 200)), Escape(sc.Spec), Escape(sc.TZ), status(sc, time.Now())))
		}
		if len(lines) == 0 {
			return "No scheduled digests here yet. Create one with `/research schedule`.", nil
		}
		return strings.Join(lines, "\n"), nil
	}
	return "", nil
}

// HomeSection lists the user's schedules on the App Home. It has the
// signature of bot.HomeSection.
func (u *UI) HomeSection(ctx context.Context, user string) ([]slack.Block, error) {
	list, err := u.Manager.List(ctx, schedule.Filter{Owner: user})
	if err != nil {
		return nil, fmt.Errorf("slackui: list schedules: %w", err)
	}
	blocks := []slack.Block{slack.NewDividerBlock(), slack.NewHeaderBlock(plain("Your scheduled digests"))}
	if len(list) == 0 {
		return append(blocks, slack.NewContextBlock("", mrkdwn("None yet: `/research schedule` in a channel creates one."))), nil
	}
	return append(blocks, ScheduleBlocks(list, time.Now())...), nil
}

// ---------------------------------------------------------------- actions

// HandleInteraction handles block actions and view submissions whose id
// starts with Prefix. It has the signature of bot.InteractionHandler.
func (u *UI) HandleInteraction(ctx context.Context, cb slack.InteractionCallback) error {
	switch cb.Type {
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID == CallbackCreate {
			return u.onSubmit(ctx, cb)
		}
	case slack.InteractionTypeBlockActions:
		var errs []error
		for _, a := range cb.ActionCallback.BlockActions {
			if strings.HasPrefix(a.ActionID, Prefix) {
				errs = append(errs, u.onAction(ctx, cb, a))
			}
		}
		return errors.Join(errs...)
	}
	return nil
}

func (u *UI) onAction(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) error {
	user := cb.User.ID
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	say := func(text string) {
		if channel == "" { // App Home: no channel to answer in
			u.log().Info("slackui: home action", "user", user, "result", text)
			return
		}
		if _, err := u.API.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false)); err != nil {
			u.log().Warn("slackui: ephemeral", "err", err)
		}
	}
	id, dueText, _ := strings.Cut(a.Value, "|")
	var err error
	var msg string
	switch a.ActionID {
	case ActionPause, ActionResume:
		var sc schedule.Schedule
		sc, err = u.Manager.SetEnabled(ctx, id, user, a.ActionID == ActionResume)
		if err == nil {
			msg = fmt.Sprintf("%s *%s*.", map[bool]string{true: "Resumed", false: "Paused"}[sc.Enabled], Escape(truncate(sc.Topic, 200)))
		}
	case ActionRunNow:
		var started bool
		started, err = u.Manager.RunNow(ctx, id, user)
		if err == nil {
			msg = "Running it now; the digest will be posted in its channel."
			if !started {
				msg = "It is already running (started this minute)."
			}
		}
	case ActionDelete:
		var sc schedule.Schedule
		sc, err = u.Manager.Delete(ctx, id, user)
		if err == nil {
			msg = fmt.Sprintf("Deleted *%s*.", Escape(truncate(sc.Topic, 200)))
		}
	case ActionApprove, ActionDecline:
		return u.onDecision(ctx, cb, a, id, dueText)
	default:
		return nil
	}
	switch {
	case errors.Is(err, schedule.ErrForbidden):
		msg = u.forbidden(ctx, id)
	case errors.Is(err, schedule.ErrNotFound):
		msg = "That schedule no longer exists."
	case err != nil:
		say("Sorry, that failed. Please try again.")
		return fmt.Errorf("slackui: %s %s: %w", a.ActionID, id, err)
	}
	if cb.ResponseURL != "" && err == nil && channel != "" {
		if list, lerr := u.listFor(ctx, channel, user); lerr == nil {
			blocks, text := listMessage(list, time.Now(), msg)
			if rerr := u.respond(ctx, cb.ResponseURL, text, blocks); rerr == nil {
				return nil
			}
		}
	}
	say(msg)
	return nil
}

func (u *UI) forbidden(ctx context.Context, id string) string {
	sc, err := u.Manager.Store.GetSchedule(ctx, id)
	if err != nil {
		return "Only the schedule's owner or an admin can change it."
	}
	return fmt.Sprintf("Only %s (who created it) or an admin can change this schedule.", Escape(u.userName(ctx, sc.Owner)))
}

// respond replaces the message that holds the buttons (an ephemeral list).
// When the API is the bot it posts (one client, with the bot's retries).
func (u *UI) respond(ctx context.Context, url, text string, blocks []slack.Block) error {
	msg := map[string]any{"replace_original": true, "response_type": "ephemeral", "text": text, "blocks": blocks}
	if r, ok := u.API.(responder); ok {
		return r.RespondContext(ctx, url, msg)
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	hc := u.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("response_url: HTTP %d", resp.StatusCode)
	}
	return nil
}

// responder posts to response_urls (*bot.Bot does).
type responder interface {
	RespondContext(ctx context.Context, responseURL string, msg map[string]any) error
}

// ---------------------------------------------------------------- approval

// RequestApproval implements schedule.ApprovalRequester: it posts Run /
// Skip buttons in the schedule's channel.
func (u *UI) RequestApproval(ctx context.Context, job schedule.Job) error {
	sc := job.Schedule
	val := sc.ID + "|" + strconv.FormatInt(job.Due.UnixNano(), 10)
	text := fmt.Sprintf("Scheduled digest due (%s): *%s*\nShould I run it? Its owner or an admin can decide.", schedule.DateLabel(job.Due), Escape(truncate(sc.Topic, 500)))
	blocks := []slack.Block{
		slack.NewSectionBlock(mrkdwn(text), nil, nil),
		slack.NewActionBlock("sched_decide",
			slack.NewButtonBlockElement(ActionApprove, val, plain("Run")).WithStyle(slack.StylePrimary),
			slack.NewButtonBlockElement(ActionDecline, val, plain("Skip"))),
	}
	if _, _, err := u.API.PostMessageContext(ctx, sc.Channel, slack.MsgOptionText("Scheduled digest due: "+Escape(truncate(sc.Topic, 200)), false), slack.MsgOptionBlocks(blocks...)); err != nil {
		return fmt.Errorf("slackui: post approval request: %w", err)
	}
	return nil
}

func (u *UI) onDecision(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction, id, dueText string) error {
	user := cb.User.ID
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	n, perr := strconv.ParseInt(dueText, 10, 64)
	if perr != nil {
		return fmt.Errorf("slackui: bad approval value %q", a.Value)
	}
	due := time.Unix(0, n)
	var err error
	verb := "approved"
	if a.ActionID == ActionApprove {
		err = u.Manager.Approve(ctx, id, due, user)
	} else {
		verb = "skipped"
		err = u.Manager.Decline(ctx, id, due, user)
	}
	var note string
	switch {
	case errors.Is(err, schedule.ErrForbidden):
		note = u.forbidden(ctx, id)
	case errors.Is(err, schedule.ErrNotWaiting):
		note = "Someone has already decided on this run."
	case errors.Is(err, schedule.ErrNotFound):
		note = "That schedule no longer exists."
	case err != nil:
		note = "Sorry, that failed. Please try again."
	}
	if note != "" {
		if _, eerr := u.API.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(note, false)); eerr != nil {
			u.log().Warn("slackui: ephemeral", "err", eerr)
		}
		if err != nil && !errors.Is(err, schedule.ErrForbidden) && !errors.Is(err, schedule.ErrNotWaiting) && !errors.Is(err, schedule.ErrNotFound) {
			return fmt.Errorf("slackui: decide %s: %w", id, err)
		}
		return nil
	}
	// Replace the buttons by who decided what.
	ts := cb.Container.MessageTs
	if ts == "" {
		ts = cb.Message.Timestamp
	}
	if ts != "" && channel != "" {
		text := fmt.Sprintf("Scheduled digest due %s: %s by %s.", schedule.DateLabel(due), verb, Escape(u.userName(ctx, user)))
		if _, _, _, uerr := u.API.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(slack.NewSectionBlock(mrkdwn(text), nil, nil))); uerr != nil {
			u.log().Warn("slackui: update approval message", "err", uerr)
		}
	}
	return nil
}

// ---------------------------------------------------------------- poster

// Poster implements schedule.Poster on the Slack Web API.
type Poster struct {
	API API
}

var _ schedule.Poster = (*Poster)(nil)

// DigestBlocks renders a digest's summary message (within Slack's limits).
func DigestBlocks(m schedule.DigestMessage) []slack.Block {
	w := m.WhatsNew
	title := m.Title
	if strings.TrimSpace(title) == "" {
		title = m.Topic
	}
	blocks := []slack.Block{
		slack.NewHeaderBlock(plain("📰 " + Escape(title))),
		slack.NewContextBlock("", mrkdwn(fmt.Sprintf("Scheduled digest · %s%s", schedule.DateLabel(m.Due), map[bool]string{true: " · run by hand", false: ""}[m.Manual]))),
	}
	var head string
	switch {
	case w.First():
		head = fmt.Sprintf("*First digest:* %d findings from %d sources.", len(w.NewFindings), len(w.NewSources))
	case len(w.NewFindings) == 0 && len(w.NewSources) == 0:
		head = fmt.Sprintf("*Nothing new since %s.*", schedule.DateLabel(w.Since.In(m.Due.Location())))
	default:
		head = fmt.Sprintf("*New since %s:* %d findings, %d sources.", schedule.DateLabel(w.Since.In(m.Due.Location())), len(w.NewFindings), len(w.NewSources))
	}
	var b strings.Builder
	b.WriteString(head)
	for i, f := range w.NewFindings {
		if i == 8 {
			fmt.Fprintf(&b, "\n…and %d more in the report.", len(w.NewFindings)-8)
			break
		}
		b.WriteString("\n• " + Escape(truncate(strings.Join(strings.Fields(f), " "), 280)))
	}
	blocks = append(blocks, slack.NewSectionBlock(mrkdwn(truncate(b.String(), 2900)), nil, nil))
	if len(w.NewSources) > 0 {
		var s strings.Builder
		s.WriteString("*New sources:*")
		for i, src := range w.NewSources {
			if i == 8 {
				break
			}
			t := src.Title
			if t == "" {
				t = src.URL
			}
			s.WriteString("\n• " + Escape(truncate(t, 120)) + " — " + Escape(truncate(src.URL, 200)))
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(truncate(s.String(), 2900)), nil, nil))
	}
	if known := len(w.KnownFindings); known > 0 {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("%d findings and %d sources were already in earlier digests; they are listed in the report.", known, len(w.KnownSources)))))
	}
	return blocks
}

// PostDigest implements schedule.Poster.
func (p *Poster) PostDigest(ctx context.Context, channel string, m schedule.DigestMessage) (string, error) {
	_, ts, err := p.API.PostMessageContext(ctx, channel,
		slack.MsgOptionText(Escape(truncate(m.Text, 3000)), false),
		slack.MsgOptionBlocks(DigestBlocks(m)...),
		slack.MsgOptionDisableLinkUnfurl())
	if err != nil {
		return "", fmt.Errorf("slackui: post digest: %w", err)
	}
	return ts, nil
}

// UploadReport implements schedule.Poster (files v2 upload in the thread).
func (p *Poster) UploadReport(ctx context.Context, channel, threadTS, filename, title, markdown string) error {
	_, err := p.API.UploadFileContext(ctx, slack.UploadFileParameters{
		Channel: channel, ThreadTimestamp: threadTS, Filename: filename, Title: title,
		Content: markdown, FileSize: len(markdown), SnippetType: "markdown",
	})
	if err != nil {
		return fmt.Errorf("slackui: upload report: %w", err)
	}
	return nil
}
