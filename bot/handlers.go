package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"deepresearch/research"
	"deepresearch/slackstate"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// handlers handle the envelopes the intake hands them: mentions and
// messages, buttons and forms, /research, the App Home. They answer in the
// asker's language and leave the runs to runControl.
type handlers struct {
	slack     *slackClient
	store     research.Store
	records   slackstate.Store
	opts      *Options // the bot's, with the digests' and ratings' extensions
	log       *slog.Logger
	id        *identity
	allowed   map[string]bool
	approvers map[string]bool
	runs      runControl
	digests   *Digests // nil unless Options.Digests is set
	ratings   *ratings
	assistant *assistantState
}

// runControl is what the handlers ask of the runs (runs.go).
type runControl interface {
	// newRun creates the run a message asks for and starts it.
	newRun(ctx context.Context, th slackstate.Thread, req runRequest)
	// place returns a run with its place in Slack.
	place(ctx context.Context, r research.Run) placedRun
	// tryStart starts a queued or resumable run when a slot is free.
	tryStart(ctx context.Context, runID string)
	// firstAnswer claims the one answer to a message that starts no run.
	firstAnswer(ctx context.Context, channel, ts string, redo bool) bool
	// cancelWaiting ends a run cancelled while it waited for a person.
	cancelWaiting(ctx context.Context, r research.Run, by string)
	// cancelLocal cancels a run this process works on.
	cancelLocal(runID, by string) bool
}

var _ envelopeHandler = (*handlers)(nil)

// handleEvent handles an Events API envelope; redo as for handle.
func (h *handlers) handleEvent(ctx context.Context, outer slackevents.EventsAPIEvent, redo bool) {
	team := outer.TeamID
	if team == "" {
		team = h.id.teamID
	}
	switch ev := outer.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if ev.BotID != "" || ev.User == "" || ev.User == h.id.botUserID {
			return
		}
		h.onMessage(ctx, incoming{team: team, channel: ev.Channel, user: ev.User, text: ev.Text, ts: ev.TimeStamp, threadTS: ev.ThreadTimeStamp, redo: redo,
			actionToken: actionToken(ev.ActionToken, ev.AssistantThread)})
	case *slackevents.MessageEvent:
		if dm, ok := h.forBot(ev); ok {
			h.onMessage(ctx, incoming{team: team, channel: ev.Channel, user: ev.User, text: ev.Text, ts: ev.TimeStamp, threadTS: ev.ThreadTimeStamp, answerOnly: !dm, redo: redo,
				actionToken: actionToken(ev.ActionToken, ev.AssistantThread)})
		}
	case *slackevents.AppHomeOpenedEvent:
		if ev.Tab == "" || ev.Tab == "home" {
			h.publishHome(ctx, ev.User)
		}
	case *slackevents.AssistantThreadStartedEvent:
		h.assistant.onAssistantThreadStarted(ctx, ev)
	case *slackevents.AssistantThreadContextChangedEvent:
		h.assistant.onAssistantContext(ev.AssistantThread)
	}
}

// forBot reports whether a message event is for the bot: a person's DM to
// it, or a plain reply in a thread of a channel (which may answer a
// clarifying question); a mention comes as app_mention instead. dm says
// which.
func (h *handlers) forBot(ev *slackevents.MessageEvent) (dm, ok bool) {
	if ev.BotID != "" || ev.SubType != "" || ev.User == "" || ev.User == h.id.botUserID {
		return false, false
	}
	dm = ev.ChannelType == "im" || strings.HasPrefix(ev.Channel, "D")
	if !dm && strings.Contains(ev.Text, "<@"+h.id.botUserID+">") {
		return false, false // the app_mention event handles it
	}
	if !dm && ev.ThreadTimeStamp == "" {
		return false, false
	}
	return dm, true
}

// incoming is a Slack message for the bot: a mention, a DM, or
// (answerOnly) a plain thread reply in a channel, which only matters as the
// answer to a clarifying question.
type incoming struct {
	team, channel, user, text string
	ts, threadTS              string // the message's; its thread's ("" outside one)
	answerOnly                bool
	redo                      bool // handled again after a crash (see firstAnswer)
	// actionToken came with the message: it lets the run search the
	// workspace as the message's author (WorkspaceSearch).
	actionToken string
}

// actionToken is a message event's action_token: at the top, or in its
// assistant thread.
func actionToken(top string, th *slackevents.AssistantThreadActionToken) string {
	if top == "" && th != nil {
		return th.ActionToken
	}
	return top
}

// message is a message being routed, with what follows from it.
type message struct {
	incoming
	root     string // the ts of its thread (its own outside one)
	question string // its text without the bot's mention
	runID    string // the run it asks for
	key      slackstate.ThreadKey
}

// onMessage routes a message to the bot.
func (h *handlers) onMessage(ctx context.Context, in incoming) {
	if !h.channelAllowed(in.channel) {
		if !in.answerOnly && h.runs.firstAnswer(ctx, in.channel, in.ts, in.redo) {
			h.slack.ephemeral(ctx, in.channel, in.threadTS, in.user, h.slack.wordsFor(ctx, in.user).NotEnabled)
		}
		return
	}
	// One Slack message can arrive as both app_mention and message events,
	// and a message's handling is repeated when a crash cut it short. The
	// run it asks for has an id derived from it (newRun), and answers that
	// start no run are claimed once per message (firstAnswer).
	m := message{incoming: in, root: in.threadTS, runID: messageRunID(in.team, in.channel, in.ts),
		question: strings.TrimSpace(strings.ReplaceAll(in.text, "<@"+h.id.botUserID+">", ""))}
	if m.root == "" {
		m.root = in.ts
	}
	m.key = slackstate.ThreadKey{Team: in.team, Channel: in.channel, ThreadTS: m.root}
	th, err := h.records.Thread(ctx, m.key)
	known := err == nil
	if err != nil && !errors.Is(err, research.ErrNotFound) {
		h.log.Error("bot: load thread", "err", err)
		return
	}
	var latest *research.Run // the thread's run before this message's
	if known {
		if r, err := h.store.LatestRun(ctx, th.ThreadID); err == nil {
			if h.toThreadsRun(ctx, m, r) {
				return
			}
			latest = &r
		}
	}
	if m.answerOnly || h.refused(ctx, m) {
		return
	}
	if !known {
		th, err = h.records.PutThread(ctx, slackstate.Thread{Key: m.key, ThreadID: m.key.ThreadID(), Requester: m.user, DM: m.dm(), CreatedAt: h.slack.now()})
		if err != nil {
			h.log.Error("bot: store thread", "err", err)
			h.slack.reply(ctx, m.channel, m.root, h.slack.wordsFor(ctx, m.user).StartStorageFailed)
			return
		}
	}
	if req, ok := h.runRequest(ctx, m, latest); ok {
		h.runs.newRun(ctx, th, req)
	}
}

// dm reports whether the message is in a direct message.
func (m message) dm() bool { return strings.HasPrefix(m.channel, "D") }

// answerOnce claims the message's one answer (firstAnswer) and reports
// whether this handling gives it.
func (h *handlers) answerOnce(ctx context.Context, m message) bool {
	return h.runs.firstAnswer(ctx, m.channel, m.ts, m.redo)
}

// toThreadsRun handles a message that concerns r, the latest run of its
// thread: r is the message's own run (started, if it has not), r waits for
// an answer the message gives, or r is still going (the message is
// refused); it reports whether the message is handled.
func (h *handlers) toThreadsRun(ctx context.Context, m message, r research.Run) bool {
	switch {
	case r.ID == m.runID:
		h.log.Info("bot: the message's run exists; not creating another", "run_id", r.ID)
		h.runs.tryStart(ctx, r.ID)
		return true
	case r.State == research.StateWaiting && r.Interrupt != nil && r.Interrupt.Kind == research.InterruptQuestion:
		if !h.mayDecide(r, m.user) {
			if !m.answerOnly && h.answerOnce(ctx, m) {
				h.slack.ephemeral(ctx, m.channel, m.root, m.user, fmt.Sprintf(h.slack.wordsFor(ctx, m.user).WaitingAnswerFrom, h.slack.userName(ctx, r.Requester)))
			}
			return true
		}
		if m.question != "" {
			h.decide(ctx, r, research.Decision{InterruptID: r.Interrupt.ID, Action: research.ActionAnswer, Text: m.question, By: m.user, At: h.slack.now()}, decisionSource{channel: m.channel, threadTS: m.root})
		}
		return true
	case m.answerOnly:
		return true
	case r.State.Active():
		if h.answerOnce(ctx, m) {
			h.slack.refuse(ctx, m.channel, m.root, m.user, "busy", h.slack.wordsFor(ctx, m.user).Busy)
		}
		return true
	}
	return false
}

// refused answers a message that asks for no research it can start: no
// question (the help), too long a question, or a model endpoint that is
// not ready; it reports whether it did.
func (h *handlers) refused(ctx context.Context, m message) bool {
	if m.question == "" {
		if h.answerOnce(ctx, m) {
			h.slack.refuse(ctx, m.channel, m.root, m.user, "help", helpText)
		}
		return true
	}
	if n := utf8.RuneCountInString(m.question); n > h.opts.MaxQuestionLen {
		if h.answerOnce(ctx, m) {
			h.slack.refuse(ctx, m.channel, m.root, m.user, "too_long", fmt.Sprintf(h.slack.wordsFor(ctx, m.user).TooLong, n, h.opts.MaxQuestionLen))
		}
		return true
	}
	if h.opts.Health == nil {
		return false
	}
	herr := h.opts.Health(ctx)
	if herr == nil {
		return false
	}
	if h.answerOnce(ctx, m) {
		h.log.Warn("bot: not ready; research refused", "err", herr)
		h.slack.refuse(ctx, m.channel, m.root, m.user, "unready", fmt.Sprintf(h.slack.wordsFor(ctx, m.user).Unready, Escape(herr.Error())))
	}
	return true
}

// runRequest is the run the message asks for, after latest (nil: the
// thread's first); false when the message may not have it.
func (h *handlers) runRequest(ctx context.Context, m message, latest *research.Run) (runRequest, bool) {
	req := runRequest{user: m.user, requester: m.user, question: m.question, followUp: latest != nil, msgTS: m.ts, opts: h.opts.RunOptions, redo: m.redo}
	var prev research.Run
	retry := false
	if latest != nil {
		prev, retry = redeliverable(*latest, m.question)
	}
	switch {
	case retry:
		// "retry" after a report that could not be posted: post that
		// report, do not research again. It is the requester's report:
		// only they (or an approver) may have it posted, it stays theirs
		// ("asked by" them), and it never carries a credential of theirs
		// that came with an earlier message, nor anyone else's.
		if !h.mayDecide(prev, m.user) {
			if h.answerOnce(ctx, m) {
				h.slack.ephemeral(ctx, m.channel, m.root, m.user, fmt.Sprintf(h.slack.wordsFor(ctx, m.user).OnlyRetry, h.slack.userName(ctx, prev.Requester)))
			}
			return runRequest{}, false
		}
		h.log.Info("bot: retry of a run whose report was not posted", "prev_run_id", prev.ID, "by", m.user)
		req.question, req.followUp, req.requester = prev.Question, prev.FollowUp, prev.Requester
		req.opts = prev.Options
		req.opts.Redeliver = prev.ID
		req.opts.WorkspaceToken = ""
		if h.opts.WorkspaceSearch && m.user == prev.Requester {
			req.opts.WorkspaceToken = m.actionToken
		}
	case h.opts.WorkspaceSearch && m.actionToken != "":
		// The run may search what the team wrote, as this person; private
		// channels only where the report is theirs alone (a DM).
		req.opts.WorkspaceToken, req.opts.WorkspacePrivate, req.opts.WorkspaceBefore = m.actionToken, m.dm(), m.ts
	}
	return req, true
}

// mayDecide reports whether user may press a run's buttons.
func (h *handlers) mayDecide(r research.Run, user string) bool {
	return user == r.Requester || h.approvers[user]
}

// decisionSource is where a decision came from: the channel and thread
// to answer the decider in and, for a button, the message clicked and the
// interaction's response_url.
type decisionSource struct {
	channel, threadTS      string
	messageTS, responseURL string
}

// decide records a decision once and resumes (or cancels) the run.
func (h *handlers) decide(ctx context.Context, r research.Run, d research.Decision, from decisionSource) {
	cur, err := h.recordDecision(ctx, r.ID, d)
	if err != nil {
		h.decisionRefused(ctx, r, cur, d, from, err)
		return
	}
	h.log.Info("bot: decision", "run_id", r.ID, "thread_id", r.ThreadID, "action", d.Action, "by", d.By)
	if cur.Interrupt != nil && cur.Interrupt.MessageID != "" && cur.Interrupt.Kind != research.InterruptQuestion {
		h.showDecided(ctx, cur, d, from)
	}
	if d.Action == research.ActionCancel {
		h.runs.cancelWaiting(ctx, cur, d.By)
		return
	}
	h.runs.tryStart(ctx, cur.ID)
}

// recordDecision records d on run runID. The approval message is posted
// just before its run is recorded as waiting, and a quick click lands in
// between: it gives the run a moment.
func (h *handlers) recordDecision(ctx context.Context, runID string, d research.Decision) (research.Run, error) {
	cur, err := h.store.Decide(ctx, runID, d)
	for i := 0; i < 20 && errors.Is(err, research.ErrNotWaiting) && cur.State == research.StateRunning && (cur.Interrupt == nil || cur.Interrupt.ID != d.InterruptID); i++ {
		select {
		case <-ctx.Done():
		case <-h.slack.clk.After(150 * time.Millisecond):
		}
		cur, err = h.store.Decide(ctx, runID, d)
	}
	return cur, err
}

// decisionRefused tells the decider why their decision was not recorded
// (err), unless nobody needs telling.
func (h *handlers) decisionRefused(ctx context.Context, r, cur research.Run, d research.Decision, from decisionSource, err error) {
	var text string
	switch {
	case errors.Is(err, research.ErrAlreadyDecided):
		if cur.Decision == nil || cur.Decision.By == d.By {
			return
		}
		l := h.slack.userLang(ctx, d.By)
		text = fmt.Sprintf(l.words().AlreadyDecided, h.slack.userName(ctx, cur.Decision.By), strings.ToLower(l.actionLabel(cur.Decision.Action)))
	case errors.Is(err, research.ErrNotWaiting):
		if cur.State == research.StateRunning && cur.Interrupt != nil && cur.Interrupt.ID != d.InterruptID {
			return
		}
		text = h.slack.wordsFor(ctx, d.By).NoLongerWaiting
	default:
		h.log.Error("bot: decide", "run_id", r.ID, "err", err)
		text = h.slack.wordsFor(ctx, d.By).DecisionFailed
	}
	h.slack.ephemeral(ctx, from.channel, from.threadTS, d.By, text)
}

// showDecided replaces the buttons of cur's interrupt message by who
// decided what: through the click's response_url when the click came from
// that message, by chat.update otherwise.
func (h *handlers) showDecided(ctx context.Context, cur research.Run, d research.Decision, from decisionSource) {
	text, blocks := decidedBlocks(*cur.Interrupt, d, h.slack.userName(ctx, d.By), h.slack.userLang(ctx, cur.Requester))
	if from.responseURL != "" && from.messageTS == cur.Interrupt.MessageID {
		err := h.slack.replaceOriginal(ctx, from.responseURL, text, blocks)
		if err == nil {
			return
		}
		h.log.Warn("bot: replace decided message", "run_id", cur.ID, "err", err)
	}
	channel := h.runs.place(ctx, cur).Key.Channel
	if err := h.slack.updateMessage(ctx, channel, cur.Interrupt.MessageID, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)); err != nil {
		h.log.Warn("bot: update decided message", "run_id", cur.ID, "err", err)
	}
}

// ackPayload is the response carried by an ack: validation errors for our
// feedback modal and the schedule modal (so the modal stays open), nothing
// otherwise.
func (h *handlers) ackPayload(ev socketmode.Event) any {
	if ev.Type != socketmode.EventTypeInteractive {
		return nil
	}
	cb, ok := ev.Data.(slack.InteractionCallback)
	if !ok || cb.Type != slack.InteractionTypeViewSubmission {
		return nil
	}
	if cb.View.CallbackID != callbackRevise {
		if h.digests != nil {
			if r := h.digests.ViewSubmissionResponse(cb); r != nil {
				return r
			}
		}
		return nil
	}
	text := strings.TrimSpace(feedbackText(cb))
	if text == "" {
		return slack.NewErrorsViewSubmissionResponse(map[string]string{blockFeedback: h.slack.cachedWords(cb.User.ID).SayWhatChanges})
	}
	if n := utf8.RuneCountInString(text); n > h.opts.MaxQuestionLen {
		return slack.NewErrorsViewSubmissionResponse(map[string]string{blockFeedback: fmt.Sprintf(h.slack.cachedWords(cb.User.ID).FeedbackTooLong, n, h.opts.MaxQuestionLen)})
	}
	return nil
}

func feedbackText(cb slack.InteractionCallback) string {
	if cb.View.State == nil {
		return ""
	}
	return cb.View.State.Values[blockFeedback][actionFeedback].Value
}

func (h *handlers) handleInteraction(ctx context.Context, cb slack.InteractionCallback) {
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		if ch := interactionChannel(cb); !h.channelAllowed(ch) {
			h.slack.ephemeral(ctx, ch, cb.Container.ThreadTs, cb.User.ID, h.slack.wordsFor(ctx, cb.User.ID).NotEnabled)
			return
		}
		for _, a := range cb.ActionCallback.BlockActions {
			if ext := h.extension(a.ActionID); ext != nil {
				h.runExtension(ctx, ext, cb)
				continue
			}
			h.onBlockAction(ctx, cb, a)
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID == callbackRevise {
			h.onFeedbackSubmitted(ctx, cb)
			return
		}
		if ext := h.extension(cb.View.CallbackID); ext != nil {
			h.runExtension(ctx, ext, cb)
		}
	}
}

// interactionChannel is the channel an interaction came from ("" for the
// App Home and modals).
func interactionChannel(cb slack.InteractionCallback) string {
	if cb.Container.ChannelID != "" {
		return cb.Container.ChannelID
	}
	return cb.Channel.ID
}

func (h *handlers) extension(id string) InteractionHandler {
	for prefix, ext := range h.opts.Interactions {
		if strings.HasPrefix(id, prefix) {
			return ext
		}
	}
	return nil
}

func (h *handlers) runExtension(ctx context.Context, ext InteractionHandler, cb slack.InteractionCallback) {
	if err := ext(ctx, cb); err != nil {
		h.log.Warn("bot: extension interaction", "err", err)
	}
}

func (h *handlers) onBlockAction(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) {
	user := cb.User.ID
	channel := interactionChannel(cb)
	threadTS := cb.Container.ThreadTs
	say := func(msg string) { h.slack.ephemeral(ctx, channel, threadTS, user, msg) }
	switch a.ActionID {
	case actCancelRun:
		if r, ok := h.clickedRun(ctx, a.Value, user, actCancel, say); ok {
			h.cancelRun(ctx, r.Run, user, say)
		}
	case actApprove, actMore, actCancelIntr, actRevise:
		runID, intrID, ok := strings.Cut(a.Value, "|")
		if !ok {
			return
		}
		r, ok := h.clickedRun(ctx, runID, user, actDecide, say)
		if !ok {
			return
		}
		action := map[string]research.Action{actApprove: research.ActionApprove, actMore: research.ActionMore, actCancelIntr: research.ActionCancel}[a.ActionID]
		if a.ActionID == actRevise {
			if r.State != research.StateWaiting || r.Interrupt == nil || r.Interrupt.ID != intrID {
				say(h.slack.wordsFor(ctx, user).NoLongerWaiting)
				return
			}
			err := h.slack.call(ctx, "views.open", false, func(ctx context.Context) error {
				_, err := h.slack.api.OpenViewContext(ctx, cb.TriggerID, feedbackModal(runID, intrID, r.Interrupt.Kind))
				return err
			})
			if err != nil {
				h.log.Warn("bot: open feedback modal", "run_id", runID, "err", err)
				say(h.slack.wordsFor(ctx, user).FormFailed)
			}
			return
		}
		h.decide(ctx, r.Run, research.Decision{InterruptID: intrID, Action: action, By: user, At: h.slack.now()}, decisionSource{channel: channel, threadTS: threadTS, messageTS: cb.Container.MessageTs, responseURL: cb.ResponseURL})
	}
}

func (h *handlers) onFeedbackSubmitted(ctx context.Context, cb slack.InteractionCallback) {
	text := strings.TrimSpace(feedbackText(cb))
	if text == "" || utf8.RuneCountInString(text) > h.opts.MaxQuestionLen {
		return // the ack carried the validation error
	}
	runID, intrID, ok := strings.Cut(cb.View.PrivateMetadata, "|")
	if !ok {
		return
	}
	run, err := h.store.Run(ctx, runID)
	if err != nil {
		return
	}
	r := h.runs.place(ctx, run)
	user := cb.User.ID
	if !h.mayAct(ctx, r, user, actDecide, func(msg string) { h.slack.ephemeral(ctx, r.Key.Channel, r.Key.ThreadTS, user, msg) }) {
		return
	}
	h.decide(ctx, r.Run, research.Decision{InterruptID: intrID, Action: research.ActionRevise, Text: text, By: user, At: h.slack.now()}, decisionSource{channel: r.Key.Channel, threadTS: r.Key.ThreadTS})
}

// actKind is what a person does to a run from a button or a form.
type actKind int

const (
	actCancel actKind = iota // cancel the run
	actDecide                // decide on its interrupt
)

// clickedRun loads the run a button names and checks with mayAct that
// user may act on it.
func (h *handlers) clickedRun(ctx context.Context, runID, user string, verb actKind, say func(string)) (placedRun, bool) {
	run, err := h.store.Run(ctx, runID)
	if err != nil {
		say(h.slack.wordsFor(ctx, user).RunGone)
		return placedRun{}, false
	}
	r := h.runs.place(ctx, run)
	return r, h.mayAct(ctx, r, user, verb, say)
}

// mayAct reports whether user may act on a run from a button or a form
// (verb: what the refusal says they may not do); it tells them with say
// when not.
func (h *handlers) mayAct(ctx context.Context, r placedRun, user string, verb actKind, say func(string)) bool {
	if !h.channelAllowed(r.Key.Channel) {
		say(h.slack.wordsFor(ctx, user).NotEnabled)
		return false
	}
	if !h.mayDecide(r.Run, user) {
		w := h.slack.wordsFor(ctx, user)
		only := w.OnlyDecideOn
		if verb == actCancel {
			only = w.OnlyCancel
		}
		say(fmt.Sprintf(only, h.slack.userName(ctx, r.Requester)))
		return false
	}
	return true
}

// cancelRun cancels a run on behalf of user and tells them with say.
func (h *handlers) cancelRun(ctx context.Context, r research.Run, user string, say func(string)) {
	cur, cancelledNow, err := h.store.RequestCancel(ctx, r.ID, user, h.slack.now())
	switch {
	case errors.Is(err, research.ErrFinished):
		l := h.slack.userLang(ctx, user)
		say(fmt.Sprintf(l.words().AlreadyFinished, strings.ToLower(l.stateLabel(cur.State))))
		return
	case err != nil:
		h.log.Error("bot: request cancel", "run_id", r.ID, "err", err)
		say(h.slack.wordsFor(ctx, user).CancelFailed)
		return
	}
	h.log.Info("bot: cancel requested", "run_id", r.ID, "thread_id", r.ThreadID, "by", user, "immediate", cancelledNow)
	if cancelledNow {
		h.runs.cancelWaiting(ctx, cur, user)
		return
	}
	// Running: here, or in another process that sees it at its next heartbeat.
	h.runs.cancelLocal(r.ID, user)
}

func (h *handlers) publishHome(ctx context.Context, user string) {
	runs, err := h.store.ListRuns(ctx, research.RunFilter{Requester: user, Limit: 15})
	if err != nil {
		h.log.Warn("bot: list runs for home", "err", err)
	}
	channels := make(map[string]string, len(runs))
	for _, r := range runs {
		if p, err := h.records.Place(ctx, r.ID); err == nil {
			channels[r.ID] = p.Key.Channel
		}
	}
	blocks := homeBlocks(runs, channels, h.ratings.ratingCounts(ctx, runs), h.slack.now())
	if h.digests != nil {
		extra, err := h.digests.HomeSection(ctx, user)
		if err != nil {
			h.log.Warn("bot: home section", "err", err)
		} else if len(blocks)+len(extra) <= maxBlocks {
			blocks = append(blocks, extra...)
		}
	}
	err = h.slack.call(ctx, "views.publish", true, func(ctx context.Context) error {
		_, err := h.slack.api.PublishViewContext(ctx, slack.PublishViewContextRequest{
			UserID: user,
			View:   slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}},
		})
		return err
	})
	if err != nil {
		h.log.Warn("bot: publish home", "err", err)
	}
}
