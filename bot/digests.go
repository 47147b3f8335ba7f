package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
)

// Scheduled digests in Slack: the `/research schedule` modal and its
// submission, the `/research schedules` list with Pause / Resume / Run now
// / Delete buttons, an App Home section, approval messages, and the posting
// of digests. The bot serves them when Options.Digests is set; every
// action_id and callback_id starts with SchedPrefix. They call Slack
// through the bot: its retries, pacing and chat.update budget.

// SchedPrefix starts every action_id and callback_id of the digests.
const SchedPrefix = "sched_"

// Ids of the schedule modal and the digests' buttons.
const (
	SchedCallbackCreate = "sched_create"

	SchedActionPause   = "sched_pause"
	SchedActionResume  = "sched_resume"
	SchedActionRunNow  = "sched_run"
	SchedActionDelete  = "sched_delete"
	SchedActionApprove = "sched_approve"
	SchedActionDecline = "sched_decline"

	SchedBlockTopic    = "sched_topic"
	SchedBlockChannel  = "sched_channel"
	SchedBlockFreq     = "sched_freq"
	SchedBlockCron     = "sched_cron"
	SchedBlockTZ       = "sched_tz"
	SchedBlockDepth    = "sched_depth"
	SchedBlockApproval = "sched_approval"
	SchedBlockLanguage = "sched_lang"

	schedInput = "value" // the action_id of every input element in the modal
)

// maxLabelChars is Slack's limit on labels, placeholders, options and
// button texts.
const maxLabelChars = 150

// schedPreset is a frequency offered in the modal.
type schedPreset struct {
	label string
	spec  string
}

// schedPresets are the frequencies of the modal's menu.
var schedPresets = []schedPreset{
	{"Every Monday 9:00", "0 9 * * 1"},
	{"Every weekday 9:00", "0 9 * * 1-5"},
	{"Every day 9:00", "0 9 * * *"},
	{"Every hour", "@hourly"},
	{"First day of the month 9:00", "0 9 1 * *"},
}

const customPreset = "custom"

// Digests is the Slack side of scheduled digests, served by a Bot built
// with Options.Digests. It implements schedule.Poster and
// schedule.ApprovalRequester.
type Digests struct {
	b   *Bot
	mgr *schedule.Manager
}

var (
	_ schedule.Poster            = (*Digests)(nil)
	_ schedule.ApprovalRequester = (*Digests)(nil)
	_ schedule.ChannelChecker    = (*Digests)(nil)
	_ schedule.Runs              = (*Digests)(nil)
	_ schedule.ChannelChecker    = (*Bot)(nil)
)

// Digests returns the bot's digests, nil unless Options.Digests is set.
func (b *Bot) Digests() *Digests { return b.digests }

// newDigests is the digest UI of b, serving the manager build returns;
// nil when build returns none.
func newDigests(b *Bot, build func(*Digests) *schedule.Manager) *Digests {
	d := &Digests{b: b}
	if d.mgr = build(d); d.mgr == nil {
		return nil
	}
	return d
}

// Create implements schedule.Runs: a firing's run is created on the bot's
// run service, which shows it with the digest face. The scheduler calls it
// only once it runs, after New has returned.
func (d *Digests) Create(ctx context.Context, r research.Run, maxPerUser int) error {
	return d.b.runs.Create(ctx, r, maxPerUser)
}

// TryStart implements schedule.Runs: the bot's run service works on the
// firing's run at once when this process has room.
func (d *Digests) TryStart(ctx context.Context, runID string) { d.b.runs.TryStart(ctx, runID) }

// CheckChannel implements schedule.ChannelChecker with Bot.CheckChannel.
func (d *Digests) CheckChannel(ctx context.Context, channel, owner string) (string, error) {
	return d.b.CheckChannel(ctx, channel, owner)
}

// label is text for a label, placeholder, option or button.
func label(text string) *slack.TextBlockObject { return plain(Truncate(text, maxLabelChars)) }

// userTZ is the user's Slack time zone, UTC when unknown.
func (d *Digests) userTZ(ctx context.Context, id string) string {
	var u *slack.User
	err := d.b.slackClient.call(ctx, "users.info", true, func(ctx context.Context) error {
		var err error
		u, err = d.b.slackClient.api.GetUserInfoContext(ctx, id)
		return err
	})
	if err == nil && u != nil && u.TZ != "" {
		return u.TZ
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
func (d *Digests) ScheduleModal(topic, channel, tz string, meta modalMeta) slack.ModalViewRequest {
	topicIn := slack.NewPlainTextInputBlockElement(label("e.g. Weekly competitor news: pricing, launches, hires"), schedInput)
	topicIn.Multiline = true
	topicIn.InitialValue = CleanText(topic) // the user's own words, editable: no markup is parsed in an input
	topicIn.MaxLength = maxTopicInput

	chIn := slack.NewOptionsSelectBlockElement(slack.OptTypeConversations, label("Channel"), schedInput)
	chIn.InitialConversation = channel
	chIn.DefaultToCurrentConversation = channel == ""
	chIn.Filter = &slack.SelectBlockElementFilter{Include: []string{"public", "private"}, ExcludeBotUsers: true}

	var opts []*slack.OptionBlockObject
	for _, p := range schedPresets {
		opts = append(opts, slack.NewOptionBlockObject(p.spec, label(p.label), nil))
	}
	opts = append(opts, slack.NewOptionBlockObject(customPreset, label("Custom (cron below)"), nil))
	freq := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, label("Frequency"), schedInput, opts...)
	freq.InitialOption = opts[0]

	cronIn := slack.NewPlainTextInputBlockElement(label("0 9 * * 1-5   or   @daily"), schedInput)
	tzIn := slack.NewPlainTextInputBlockElement(label("Asia/Tokyo"), schedInput)
	tzIn.InitialValue = tz

	depthOpts := []*slack.OptionBlockObject{
		slack.NewOptionBlockObject(schedule.DepthQuick, label("Quick"), nil),
		slack.NewOptionBlockObject(schedule.DepthStandard, label("Standard"), nil),
		slack.NewOptionBlockObject(schedule.DepthDeep, label("Deep"), nil),
	}
	depth := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, label("Depth"), schedInput, depthOpts...)
	depth.InitialOption = depthOpts[1]
	apprOpts := []*slack.OptionBlockObject{
		slack.NewOptionBlockObject("no", label("No: post each digest automatically"), nil),
		slack.NewOptionBlockObject("yes", label("Yes: ask before each run"), nil),
	}
	appr := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, label("Approval"), schedInput, apprOpts...)
	appr.InitialOption = apprOpts[0]
	lang := slack.NewPlainTextInputBlockElement(label("ja, en, … (empty: the topic's language)"), schedInput)

	cronBlock := slack.NewInputBlock(SchedBlockCron, label("Custom frequency (cron)"), label("minute hour day-of-month month day-of-week, or @hourly/@daily/@weekly/@every 6h. Overrides the menu when filled."), cronIn)
	cronBlock.Optional = true
	langBlock := slack.NewInputBlock(SchedBlockLanguage, label("Report language"), nil, lang)
	langBlock.Optional = true
	metaJSON, _ := json.Marshal(meta)
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      SchedCallbackCreate,
		Title:           label("Schedule a digest"),
		Submit:          label("Schedule"),
		Close:           label("Cancel"),
		PrivateMetadata: string(metaJSON),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock(SchedBlockTopic, label("What should I research?"), nil, topicIn),
			slack.NewInputBlock(SchedBlockChannel, label("Post digests in"), nil, chIn),
			slack.NewInputBlock(SchedBlockFreq, label("How often"), nil, freq),
			cronBlock,
			slack.NewInputBlock(SchedBlockTZ, label("Time zone"), label("An IANA name such as Asia/Tokyo, Europe/London, America/New_York"), tzIn),
			slack.NewInputBlock(SchedBlockDepth, label("Research depth"), nil, depth),
			slack.NewInputBlock(SchedBlockApproval, label("Ask for approval before each run?"), nil, appr),
			langBlock,
		}},
	}
}

// maxTopicInput is the max_length of the modal's topic field, the
// schedules' default topic limit (schedule.Limits.MaxTopicLen).
const maxTopicInput = 2000

// fitTopic cuts a topic to the modal's topic field at a character
// boundary: Slack refuses to open a view whose input is pre-filled beyond
// its max_length (slack-facts.md). cut is the topic's length when it was cut.
func fitTopic(topic string) (fit string, cut int) {
	topic = CleanText(topic)
	n := utf8.RuneCountInString(topic)
	if n <= maxTopicInput {
		return topic, 0
	}
	return string([]rune(topic)[:maxTopicInput]), n
}

// SlashSchedule serves `/research schedule [topic]`: it opens the modal.
// A topic longer than the form takes is cut to fit, and the user is told.
func (d *Digests) SlashSchedule(ctx context.Context, cmd slack.SlashCommand, args string) (string, error) {
	tz := d.userTZ(ctx, cmd.UserID)
	channel := d.b.assistant.scheduleDefaultChannel(ctx, cmd.ChannelID, cmd.UserID) // from the assistant pane: the channel in view
	topic, cut := fitTopic(strings.TrimSpace(args))
	view := d.ScheduleModal(topic, channel, tz, modalMeta{Team: cmd.TeamID, Channel: cmd.ChannelID})
	// A trigger is used once: only rate limits are retried.
	err := d.b.slackClient.call(ctx, "views.open", false, func(ctx context.Context) error {
		_, err := d.b.slackClient.api.OpenViewContext(ctx, cmd.TriggerID, view)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("bot: open schedule modal: %w", err)
	}
	if cut > 0 {
		return fmt.Sprintf("Your topic has %s characters; the form takes %s, so it holds the first %s. Check its end before you schedule.",
			digitsGrouped(cut), digitsGrouped(maxTopicInput), digitsGrouped(maxTopicInput)), nil
	}
	return "", nil
}

// digitsGrouped writes n with thousands separators (6,000).
func digitsGrouped(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func inputValue(cb slack.InteractionCallback, block string) slack.BlockAction {
	if cb.View.State == nil {
		return slack.BlockAction{}
	}
	return cb.View.State.Values[block][schedInput]
}

// submission reads the modal's values into a Draft. customSpec reports
// whether the spec came from the cron field (for error placement).
func submission(cb slack.InteractionCallback) (d schedule.Draft, customSpec bool) {
	var meta modalMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	d.Team = meta.Team
	if d.Team == "" {
		d.Team = cb.Team.ID
	}
	d.Owner = cb.User.ID
	d.Topic = inputValue(cb, SchedBlockTopic).Value
	d.Channel = inputValue(cb, SchedBlockChannel).SelectedConversation
	freq := inputValue(cb, SchedBlockFreq).SelectedOption.Value
	cron := strings.TrimSpace(inputValue(cb, SchedBlockCron).Value)
	switch {
	case cron != "":
		d.Spec, customSpec = cron, true
	case freq == customPreset:
		d.Spec, customSpec = "", true
	default:
		d.Spec = freq
	}
	d.TZ = strings.TrimSpace(inputValue(cb, SchedBlockTZ).Value)
	d.Options.Depth = inputValue(cb, SchedBlockDepth).SelectedOption.Value
	d.Options.Approval = inputValue(cb, SchedBlockApproval).SelectedOption.Value == "yes"
	d.Options.Language = strings.TrimSpace(inputValue(cb, SchedBlockLanguage).Value)
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
				out[SchedBlockTopic] = msg
			case schedule.FieldChannel:
				out[SchedBlockChannel] = msg
			case schedule.FieldSpec:
				if customSpec {
					if msg == "the frequency is empty (e.g. \"0 9 * * 1\" or @daily)" {
						msg = "Enter a cron spec, or pick a frequency from the menu."
					}
					out[SchedBlockCron] = msg
				} else {
					out[SchedBlockFreq] = msg
				}
			case schedule.FieldTZ:
				out[SchedBlockTZ] = msg
			default:
				out[SchedBlockDepth] = msg
			}
		}
	case errors.Is(err, schedule.ErrLimit):
		out[SchedBlockChannel] = strings.TrimSuffix(strings.TrimPrefix(err.Error(), "schedule: "), ": "+schedule.ErrLimit.Error())
	}
	return out
}

// ViewSubmissionResponse is what the ack of a schedule modal's submission
// carries: the validation errors (response_action "errors", the modal
// stays open), or nil to close it. It only validates; HandleInteraction
// stores the schedule.
func (d *Digests) ViewSubmissionResponse(cb slack.InteractionCallback) *slack.ViewSubmissionResponse {
	if cb.Type != slack.InteractionTypeViewSubmission || cb.View.CallbackID != SchedCallbackCreate {
		return nil
	}
	draft, custom := submission(cb)
	if _, err := d.mgr.Validate(draft); err != nil {
		if errs := submissionErrors(err, custom); len(errs) > 0 {
			return slack.NewErrorsViewSubmissionResponse(errs)
		}
	}
	return nil
}

func (d *Digests) onSubmit(ctx context.Context, cb slack.InteractionCallback) error {
	draft, custom := submission(cb)
	var meta modalMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	tell := func(text string) {
		ch := meta.Channel
		if ch == "" && schedule.ValidChannelID(draft.Channel) {
			ch = draft.Channel // never a DM or anything else the form was given
		}
		if ch != "" {
			d.b.slackClient.ephemeral(ctx, ch, "", cb.User.ID, text)
		}
	}
	sc, err := d.mgr.Create(ctx, draft)
	if err != nil {
		errs := submissionErrors(err, custom)
		if len(errs) == 0 {
			tell(d.b.slackClient.wordsFor(ctx, cb.User.ID).SaveFailed)
			return fmt.Errorf("bot: create schedule: %w", err)
		}
		if _, verr := d.mgr.Validate(draft); verr != nil {
			return nil // the ack showed them in the modal
		}
		// Refusals found after the ack (the channel: the bot or the owner
		// is not in it, it is archived or not allowed) are told here.
		var lines []string
		for _, msg := range errs {
			lines = append(lines, "• "+escapeRefusal(msg))
		}
		tell(d.b.slackClient.wordsFor(ctx, cb.User.ID).CannotSchedule + "\n" + strings.Join(lines, "\n"))
		return nil
	}
	d.b.log.Info("bot: schedule created", "schedule_id", sc.ID, "channel", sc.Channel, "owner", sc.Owner, "spec", sc.Spec, "tz", sc.TZ)
	next := sc.Next(d.b.slackClient.now())
	text := fmt.Sprintf(d.b.slackClient.wordsFor(ctx, cb.User.ID).Scheduled,
		Escape(Truncate(sc.Topic, 200)), ChannelRef(sc.Channel), Escape(sc.Spec), Escape(sc.TZ), schedule.DateLabel(next))
	tell(text)
	return nil
}

// channelLinkRE is a channel link as ChannelRef writes it.
var channelLinkRE = regexp.MustCompile(`<#([CG][A-Z0-9]{1,30})>`)

// escapeRefusal makes a refusal safe for mrkdwn. The channel checker
// (CheckChannel) names the channel as a link (ChannelRef); that link is
// kept, everything else is escaped once: escaping the whole message showed
// "&lt;#C2&gt;".
func escapeRefusal(msg string) string {
	var b strings.Builder
	last := 0
	for _, m := range channelLinkRE.FindAllStringSubmatchIndex(msg, -1) {
		b.WriteString(Escape(msg[last:m[0]]))
		b.WriteString(ChannelRef(msg[m[2]:m[3]]))
		last = m[1]
	}
	b.WriteString(Escape(msg[last:]))
	return b.String()
}

// ---------------------------------------------------------------- list

func scheduleStatus(sc schedule.Schedule, now time.Time) string {
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
		text := fmt.Sprintf("*%s*\n`%s` (%s) in %s · %s", Escape(Truncate(sc.Topic, 300)), Escape(sc.Spec), Escape(sc.TZ), ChannelRef(sc.Channel), scheduleStatus(sc, now))
		if len(opts) > 0 {
			text += " · " + strings.Join(opts, ", ")
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(text), nil, nil))
		toggle := slack.NewButtonBlockElement(SchedActionPause, sc.ID, label("Pause"))
		if !sc.Enabled {
			toggle = slack.NewButtonBlockElement(SchedActionResume, sc.ID, label("Resume"))
		}
		run := slack.NewButtonBlockElement(SchedActionRunNow, sc.ID, label("Run now"))
		del := slack.NewButtonBlockElement(SchedActionDelete, sc.ID, label("Delete")).WithStyle(slack.StyleDanger)
		del.Confirm = slack.NewConfirmationBlockObject(label("Delete this schedule?"), mrkdwn("Its history goes too. This cannot be undone."), label("Delete"), label("Keep"))
		blocks = append(blocks, slack.NewActionBlock("sched_actions_"+sc.ID, toggle, run, del))
	}
	return blocks
}

// listFor returns the schedules of a channel plus the user's own elsewhere.
func (d *Digests) listFor(ctx context.Context, channel, user string) ([]schedule.Schedule, error) {
	here, err := d.mgr.Store.ListSchedules(ctx, schedule.Filter{Channel: channel})
	if err != nil {
		return nil, err
	}
	mine, err := d.mgr.Store.ListSchedules(ctx, schedule.Filter{Owner: user})
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

// listMessage is the ephemeral list of schedules with their buttons, in
// w's words, with a note on top ("" for none).
func listMessage(w *words, list []schedule.Schedule, now time.Time, note string) ([]slack.Block, string) {
	head := w.SchedulesHead
	if len(list) == 0 {
		head = w.NoSchedules
	}
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(head), nil, nil)}
	if note != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(note)))
	}
	blocks = append(blocks, ScheduleBlocks(list, now)...)
	return blocks, fmt.Sprintf(w.NSchedules, len(list))
}

// SlashSchedules serves `/research schedules`: an ephemeral list with
// buttons, or plain lines when the list cannot be shown.
func (d *Digests) SlashSchedules(ctx context.Context, cmd slack.SlashCommand, _ string) (string, error) {
	list, err := d.listFor(ctx, cmd.ChannelID, cmd.UserID)
	if err != nil {
		return "", fmt.Errorf("bot: list schedules: %w", err)
	}
	w := d.b.slackClient.wordsFor(ctx, cmd.UserID)
	blocks, text := listMessage(w, list, d.b.slackClient.now(), "")
	err = d.b.slackClient.call(ctx, "chat.postEphemeral", true, func(ctx context.Context) error {
		_, err := d.b.slackClient.api.PostEphemeralContext(ctx, cmd.ChannelID, cmd.UserID, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
		return err
	})
	if err != nil {
		d.b.log.Warn("bot: post schedule list", "err", err)
		var lines []string
		for _, sc := range list {
			lines = append(lines, fmt.Sprintf("• %s — `%s` (%s) %s", Escape(Truncate(sc.Topic, 200)), Escape(sc.Spec), Escape(sc.TZ), scheduleStatus(sc, d.b.slackClient.now())))
		}
		if len(lines) == 0 {
			return w.NoSchedules, nil
		}
		return strings.Join(lines, "\n"), nil
	}
	return "", nil
}

// HomeSection lists the user's schedules for the App Home.
func (d *Digests) HomeSection(ctx context.Context, user string) ([]slack.Block, error) {
	list, err := d.mgr.Store.ListSchedules(ctx, schedule.Filter{Owner: user})
	if err != nil {
		return nil, fmt.Errorf("bot: list schedules: %w", err)
	}
	w := d.b.slackClient.wordsFor(ctx, user)
	blocks := []slack.Block{slack.NewDividerBlock(), slack.NewHeaderBlock(label(w.YourSchedules))}
	if len(list) == 0 {
		return append(blocks, slack.NewContextBlock("", mrkdwn(w.NoneYet))), nil
	}
	return append(blocks, ScheduleBlocks(list, d.b.slackClient.now())...), nil
}

// ---------------------------------------------------------------- actions

// HandleInteraction handles block actions and view submissions whose id
// starts with SchedPrefix.
func (d *Digests) HandleInteraction(ctx context.Context, cb slack.InteractionCallback) error {
	switch cb.Type {
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID == SchedCallbackCreate {
			return d.onSubmit(ctx, cb)
		}
	case slack.InteractionTypeBlockActions:
		var errs []error
		for _, a := range cb.ActionCallback.BlockActions {
			if strings.HasPrefix(a.ActionID, SchedPrefix) {
				errs = append(errs, d.onAction(ctx, cb, a))
			}
		}
		return errors.Join(errs...)
	}
	return nil
}

// change pauses, resumes, runs or deletes schedule id (action) for user
// and says what it did.
func (d *Digests) change(ctx context.Context, action, id, user string) (string, error) {
	w := d.b.slackClient.wordsFor(ctx, user)
	switch action {
	case SchedActionPause, SchedActionResume:
		sc, err := d.mgr.SetEnabled(ctx, id, user, action == SchedActionResume)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(map[bool]string{true: w.Resumed, false: w.Paused}[sc.Enabled], Escape(Truncate(sc.Topic, 200))), nil
	case SchedActionRunNow:
		started, err := d.mgr.RunNow(ctx, id, user)
		if err != nil {
			return "", err
		}
		if !started {
			return w.AlreadyRunning, nil
		}
		return w.RunningNow, nil
	default: // SchedActionDelete
		sc, err := d.mgr.Delete(ctx, id, user)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(w.Deleted, Escape(Truncate(sc.Topic, 200))), nil
	}
}

func (d *Digests) onAction(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) error {
	user := cb.User.ID
	channel := interactionChannel(cb)
	say := func(text string) {
		if channel == "" { // App Home: no channel to answer in
			d.b.log.Info("bot: schedule home action", "user", user, "result", text)
			return
		}
		d.b.slackClient.ephemeral(ctx, channel, "", user, text)
	}
	id, dueText, _ := strings.Cut(a.Value, "|")
	var err error
	var msg string
	switch a.ActionID {
	case SchedActionPause, SchedActionResume, SchedActionRunNow, SchedActionDelete:
		msg, err = d.change(ctx, a.ActionID, id, user)
	case SchedActionApprove, SchedActionDecline:
		return d.onDecision(ctx, cb, a, id, dueText)
	default:
		return nil
	}
	w := d.b.slackClient.wordsFor(ctx, user)
	switch {
	case errors.Is(err, schedule.ErrForbidden):
		msg = d.forbidden(ctx, id, user)
	case errors.Is(err, schedule.ErrNotFound):
		msg = w.ScheduleGone
	case err != nil:
		say(w.ThatFailed)
		return fmt.Errorf("bot: %s %s: %w", a.ActionID, id, err)
	}
	if cb.ResponseURL != "" && err == nil && channel != "" {
		if list, lerr := d.listFor(ctx, channel, user); lerr == nil {
			// Replace the ephemeral list that holds the buttons.
			blocks, text := listMessage(w, list, d.b.slackClient.now(), msg)
			resp := map[string]any{"replace_original": true, "response_type": "ephemeral", "text": text, "blocks": blocks}
			if rerr := d.b.slackClient.postResponse(ctx, cb.ResponseURL, resp); rerr == nil {
				return nil
			}
		}
	}
	say(msg)
	return nil
}

// forbidden tells user who may change schedule id.
func (d *Digests) forbidden(ctx context.Context, id, user string) string {
	w := d.b.slackClient.wordsFor(ctx, user)
	sc, err := d.mgr.Store.GetSchedule(ctx, id)
	if err != nil {
		return w.OnlyOwner
	}
	return fmt.Sprintf(w.OnlyOwnerNamed, d.b.slackClient.userName(ctx, sc.Owner))
}

// ---------------------------------------------------------------- approval

// RequestApproval implements schedule.ApprovalRequester: it posts Run /
// Skip buttons in the schedule's channel.
func (d *Digests) RequestApproval(ctx context.Context, job schedule.Job) error {
	sc := job.Schedule
	val := sc.ID + "|" + strconv.FormatInt(job.Due.UnixNano(), 10)
	text := fmt.Sprintf("Scheduled digest due (%s): *%s*\nShould I run it? Its owner or an admin can decide.", schedule.DateLabel(job.Due), Escape(Truncate(sc.Topic, 500)))
	blocks := []slack.Block{
		slack.NewSectionBlock(mrkdwn(text), nil, nil),
		slack.NewActionBlock("sched_decide",
			slack.NewButtonBlockElement(SchedActionApprove, val, label("Run")).WithStyle(slack.StylePrimary),
			slack.NewButtonBlockElement(SchedActionDecline, val, label("Skip"))),
	}
	if _, err := d.b.slackClient.postMessage(ctx, sc.Channel, slack.MsgOptionText("Scheduled digest due: "+Escape(Truncate(sc.Topic, 200)), false), slack.MsgOptionBlocks(blocks...)); err != nil {
		return fmt.Errorf("bot: post approval request: %w", err)
	}
	return nil
}

func (d *Digests) onDecision(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction, id, dueText string) error {
	user := cb.User.ID
	channel := interactionChannel(cb)
	n, perr := strconv.ParseInt(dueText, 10, 64)
	if perr != nil {
		return fmt.Errorf("bot: bad approval value %q", a.Value)
	}
	due := time.Unix(0, n)
	var err error
	verb := "approved"
	if a.ActionID == SchedActionApprove {
		err = d.mgr.Approve(ctx, id, due, user)
	} else {
		verb = "skipped"
		err = d.mgr.Decline(ctx, id, due, user)
	}
	var note string
	switch {
	case errors.Is(err, schedule.ErrForbidden):
		note = d.forbidden(ctx, id, user)
	case errors.Is(err, schedule.ErrNotWaiting):
		note = d.b.slackClient.wordsFor(ctx, user).RunDecided
	case errors.Is(err, schedule.ErrNotFound):
		note = d.b.slackClient.wordsFor(ctx, user).ScheduleGone
	case err != nil:
		note = d.b.slackClient.wordsFor(ctx, user).ThatFailed
	}
	if note != "" {
		d.b.slackClient.ephemeral(ctx, channel, "", user, note)
		if err != nil && !errors.Is(err, schedule.ErrForbidden) && !errors.Is(err, schedule.ErrNotWaiting) && !errors.Is(err, schedule.ErrNotFound) {
			return fmt.Errorf("bot: decide %s: %w", id, err)
		}
		return nil
	}
	// Replace the buttons by who decided what.
	ts := cb.Container.MessageTs
	if ts == "" {
		ts = cb.Message.Timestamp
	}
	if ts != "" && channel != "" {
		text := fmt.Sprintf("Scheduled digest due %s: %s by %s.", schedule.DateLabel(due), verb, d.b.slackClient.userName(ctx, user))
		if err := d.b.slackClient.updateMessage(ctx, channel, ts, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(slack.NewSectionBlock(mrkdwn(text), nil, nil))); err != nil {
			d.b.log.Warn("bot: update approval message", "err", err)
		}
	}
	return nil
}

// ---------------------------------------------------------------- posting

// DigestBlocks renders a digest's summary message (within Slack's limits).
func DigestBlocks(m schedule.DigestMessage) []slack.Block {
	w := m.WhatsNew
	title := m.Title
	if strings.TrimSpace(title) == "" {
		title = m.Topic
	}
	header := slack.NewHeaderBlock(label("📰 " + Escape(title)))
	if m.RunID != "" {
		header.BlockID = digestBlockID(m.RunID)
	}
	blocks := []slack.Block{
		header,
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
		b.WriteString("\n• " + Escape(inertAddresses(Truncate(strings.Join(strings.Fields(f), " "), 280))))
	}
	blocks = append(blocks, slack.NewSectionBlock(mrkdwn(Truncate(b.String(), 2900)), nil, nil))
	if len(w.NewSources) > 0 {
		var s strings.Builder
		s.WriteString("*New sources:*")
		for i, src := range w.NewSources {
			if i == 8 {
				break
			}
			// The title is words (a title that shows another address
			// gives way to the link's host), the URL the one link.
			line := Escape(Truncate(src.URL, 200))
			if strings.TrimSpace(src.Title) != "" {
				line = Escape(inertAddresses(Truncate(cardSourceText(src.Title, src.URL), 120))) + " — " + line
			}
			s.WriteString("\n• " + line)
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(Truncate(s.String(), 2900)), nil, nil))
	}
	if known := len(w.KnownFindings); known > 0 {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("%d findings and %d sources were already in earlier digests; they are listed in the report.", known, len(w.KnownSources)))))
	}
	return blocks
}

// PostDigest implements schedule.Poster.
func (d *Digests) PostDigest(ctx context.Context, channel string, m schedule.DigestMessage) (string, error) {
	ts, err := d.b.slackClient.postMessage(ctx, channel,
		slack.MsgOptionText(Escape(Truncate(m.Text, 3000)), false),
		slack.MsgOptionBlocks(d.b.ratings.ratingBlocks(DigestBlocks(m), schedule.ThreadID(m.ScheduleID, m.Due))...),
		slack.MsgOptionDisableLinkUnfurl())
	if err != nil {
		return "", fmt.Errorf("bot: post digest: %w", err)
	}
	return ts, nil
}

// digestBlockPrefix starts the block_id of a digest message's header; the
// run's id follows, or a digest of it when it would not fit in Slack's 255
// characters.
const digestBlockPrefix = "sched_digest:"

// digestBlockID is the block_id that marks the summary message of run
// runID.
func digestBlockID(runID string) string {
	id := digestBlockPrefix + runID
	if len(id) > 255 {
		sum := sha256.Sum256([]byte(runID))
		id = digestBlockPrefix + hex.EncodeToString(sum[:])
	}
	return id
}

// History pages of FindDigest: Slack recommends at most 200 a page
// (conversations.history), and digestPages bounds how many it reads.
const (
	digestPageSize = 200
	digestPages    = 25
)

// digestSkew is how much earlier than the run's creation FindDigest
// looks: the run's clock is this process's, a message's ts Slack's.
const digestSkew = 5 * time.Minute

// FindDigest implements schedule.Poster: it reads the channel's history
// since the run was created (conversations.history, newest first, page by
// page) for a message whose blocks hold the run's block_id. Only the bot's
// own messages count: a person's message that copies the block_id is
// passed over. A failure Slack may not repeat (a rate limit, a server or
// network error) is a research.TransientError.
func (d *Digests) FindDigest(ctx context.Context, channel, runID string, since time.Time) (string, error) {
	self, err := d.self(ctx)
	if err != nil {
		return "", err
	}
	want := digestBlockID(runID)
	params := slack.GetConversationHistoryParameters{ChannelID: channel, Limit: digestPageSize, Inclusive: true}
	if !since.IsZero() {
		params.Oldest = slackTS(since.Add(-digestSkew))
	}
	for range digestPages {
		var resp *slack.GetConversationHistoryResponse
		err := d.b.slackClient.call(ctx, "conversations.history", true, func(ctx context.Context) error {
			var err error
			resp, err = d.b.slackClient.api.GetConversationHistoryContext(ctx, &params)
			return err
		})
		if err != nil {
			err = fmt.Errorf("bot: read the digest channel's history: %w", err)
			if transient(err) {
				return "", research.TransientError{Err: err}
			}
			return "", err
		}
		for _, m := range resp.Messages {
			if self.posted(m) && hasBlock(m.Blocks, want) {
				return m.Timestamp, nil
			}
		}
		if resp.ResponseMetaData.NextCursor == "" {
			return "", nil
		}
		params.Cursor = resp.ResponseMetaData.NextCursor
	}
	d.b.log.Warn("bot: the digest channel's history since the run began is too long to read whole; the digest message was not found in it", "channel", channel, "run_id", runID)
	return "", nil
}

// poster is who the bot is in Slack, to tell its messages from others'.
type poster struct{ user, bot string }

// posted reports whether the bot posted m: its user is the bot's user,
// and its bot_id the bot's (when the bot's is known).
func (p poster) posted(m slack.Message) bool {
	return p.user != "" && m.User == p.user && (p.bot == "" || m.BotID == p.bot)
}

// self is who the bot is: learned by Run (auth.test), or asked of Slack
// when the bot serves digests without having run.
func (d *Digests) self(ctx context.Context) (poster, error) {
	if id := d.b.identity; id.botUserID != "" {
		return poster{user: id.botUserID, bot: id.botID}, nil
	}
	var resp *slack.AuthTestResponse
	err := d.b.slackClient.call(ctx, "auth.test", true, func(ctx context.Context) error {
		var err error
		resp, err = d.b.slackClient.api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		err = fmt.Errorf("bot: who the bot is: %w", err)
		if transient(err) {
			return poster{}, research.TransientError{Err: err}
		}
		return poster{}, err
	}
	return poster{user: resp.UserID, bot: resp.BotID}, nil
}

// hasBlock reports whether blocks hold a block whose block_id is id.
func hasBlock(blocks slack.Blocks, id string) bool {
	for _, b := range blocks.BlockSet {
		if b != nil && b.ID() == id {
			return true
		}
	}
	return false
}

// slackTS writes t as a Slack timestamp (seconds.microseconds).
func slackTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

// UploadReport implements schedule.Poster: the markdown report as a file in
// the thread of the digest's message, recorded as staged before it is
// shared, its links to its charts naming the charts' files.
func (d *Digests) UploadReport(ctx context.Context, channel, threadTS, filename, title, markdown string, charts []research.Chart, st research.Staging) (string, error) {
	files := d.files(channel, threadTS)
	fileID, err := files.stageReport(ctx, filename, chartLinks(markdown, charts, filename), st)
	if err != nil {
		return "", fmt.Errorf("bot: upload digest report: %w", err)
	}
	err = d.b.shareFile(ctx, slack.CompleteUploadExternalParameters{
		Files: []slack.FileSummary{{ID: fileID, Title: title}}, Channel: channel, ThreadTimestamp: threadTS,
	})
	if err != nil {
		files.dropStaged(ctx, fileID, st)
		return "", fmt.Errorf("bot: share digest report: %w", err)
	}
	return fileID, nil
}

// FindFile implements schedule.Poster: a file the bot shared in the thread.
func (d *Digests) FindFile(ctx context.Context, channel, threadTS, filename string) (string, bool) {
	id, _, ok := d.b.findPostedFile(ctx, slackstate.ThreadKey{Channel: channel, ThreadTS: threadTS}, filename)
	return id, ok
}

// DeleteFile implements schedule.Poster.
func (d *Digests) DeleteFile(ctx context.Context, fileID string) bool {
	return d.b.deleteFile(ctx, fileID, d.b.log)
}

// ShareCharts implements schedule.Poster with the run face's chart
// sharing (threadFiles.uploadCharts): each chart file is recorded as staged
// (st) until it is shared, as a run's are.
func (d *Digests) ShareCharts(ctx context.Context, channel, threadTS, filename string, charts []research.Chart, check bool, st research.Staging) {
	d.files(channel, threadTS).uploadCharts(ctx, charts, filename, check, st)
}

// files are the files of the digest's thread.
func (d *Digests) files(channel, threadTS string) threadFiles {
	return threadFiles{b: d.b, key: slackstate.ThreadKey{Channel: channel, ThreadTS: threadTS}, log: d.b.log}
}
