package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"deepresearch/research"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// handleEvent handles an Events API envelope; redo as for handle.
func (b *Bot) handleEvent(ctx context.Context, outer slackevents.EventsAPIEvent, redo bool) {
	team := outer.TeamID
	if team == "" {
		team = b.teamID
	}
	switch ev := outer.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if ev.BotID != "" || ev.User == "" || ev.User == b.botUserID {
			return
		}
		b.onMessage(ctx, incoming{team: team, channel: ev.Channel, user: ev.User, text: ev.Text, ts: ev.TimeStamp, threadTS: ev.ThreadTimeStamp, redo: redo,
			actionToken: actionToken(ev.ActionToken, ev.AssistantThread)})
	case *slackevents.MessageEvent:
		if ev.BotID != "" || ev.SubType != "" || ev.User == "" || ev.User == b.botUserID {
			return
		}
		dm := ev.ChannelType == "im" || strings.HasPrefix(ev.Channel, "D")
		if !dm && strings.Contains(ev.Text, "<@"+b.botUserID+">") {
			return // the app_mention event handles it
		}
		if !dm && ev.ThreadTimeStamp == "" {
			return
		}
		b.onMessage(ctx, incoming{team: team, channel: ev.Channel, user: ev.User, text: ev.Text, ts: ev.TimeStamp, threadTS: ev.ThreadTimeStamp, answerOnly: !dm, redo: redo,
			actionToken: actionToken(ev.ActionToken, ev.AssistantThread)})
	case *slackevents.AppHomeOpenedEvent:
		if ev.Tab == "" || ev.Tab == "home" {
			b.publishHome(ctx, ev.User)
		}
	case *slackevents.AssistantThreadStartedEvent:
		b.onAssistantThreadStarted(ctx, ev)
	case *slackevents.AssistantThreadContextChangedEvent:
		b.onAssistantContext(ev.AssistantThread)
	}
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

// onMessage routes a message to the bot.
func (b *Bot) onMessage(ctx context.Context, m incoming) {
	dm := strings.HasPrefix(m.channel, "D")
	if !b.channelAllowed(m.channel) {
		if !m.answerOnly && b.firstAnswer(ctx, m.channel, m.ts, m.redo) {
			b.ephemeral(ctx, m.channel, m.threadTS, m.user, b.wordsFor(ctx, m.user).NotEnabled)
		}
		return
	}
	// One Slack message can arrive as both app_mention and message events,
	// and a message's handling is repeated when a crash cut it short. The
	// run it asks for has an id derived from it (newRun), and answers that
	// start no run are claimed once per message (firstAnswer).
	runID := messageRunID(m.team, m.channel, m.ts)
	question := strings.TrimSpace(strings.ReplaceAll(m.text, "<@"+b.botUserID+">", ""))
	root := m.threadTS
	if root == "" {
		root = m.ts
	}
	key := research.ThreadKey{Team: m.team, Channel: m.channel, ThreadTS: root}
	th, err := b.store.Thread(ctx, key)
	known := err == nil
	if err != nil && !errors.Is(err, research.ErrNotFound) {
		b.log.Error("bot: load thread", "err", err)
		return
	}
	followUp := false       // the thread has a run before this message's
	var latest research.Run // that run
	hasLatest := false
	if known {
		r, err := b.store.LatestRun(ctx, th.ThreadID)
		followUp = err == nil
		if err == nil {
			latest, hasLatest = r, true
		}
		if err == nil && r.ID == runID {
			b.log.Info("bot: the message's run exists; not creating another", "run_id", r.ID)
			b.tryStart(ctx, r.ID)
			return
		}
		if err == nil && r.State == research.StateWaiting && r.Interrupt != nil && r.Interrupt.Kind == research.InterruptQuestion {
			if !b.mayDecide(r, m.user) {
				if !m.answerOnly && b.firstAnswer(ctx, m.channel, m.ts, m.redo) {
					b.ephemeral(ctx, m.channel, root, m.user, fmt.Sprintf(b.wordsFor(ctx, m.user).WaitingAnswerFrom, b.userName(ctx, r.Requester)))
				}
				return
			}
			if question == "" {
				return
			}
			b.decide(ctx, r, research.Decision{InterruptID: r.Interrupt.ID, Action: research.ActionAnswer, Text: question, By: m.user, At: b.now()}, decisionSource{channel: m.channel, threadTS: root})
			return
		}
		if m.answerOnly {
			return
		}
		if err == nil && r.State.Active() {
			if !b.firstAnswer(ctx, m.channel, m.ts, m.redo) {
				return
			}
			b.refuse(ctx, m.channel, root, m.user, "busy", b.userLang(ctx, m.user).words().Busy)
			return
		}
	}
	if m.answerOnly {
		return
	}
	if question == "" {
		if b.firstAnswer(ctx, m.channel, m.ts, m.redo) {
			b.refuse(ctx, m.channel, root, m.user, "help", helpText)
		}
		return
	}
	if n := utf8.RuneCountInString(question); n > b.opts.MaxQuestionLen {
		if !b.firstAnswer(ctx, m.channel, m.ts, m.redo) {
			return
		}
		b.refuse(ctx, m.channel, root, m.user, "too_long", fmt.Sprintf(b.userLang(ctx, m.user).words().TooLong, n, b.opts.MaxQuestionLen))
		return
	}
	if b.opts.Health != nil {
		if herr := b.opts.Health(ctx); herr != nil {
			if b.firstAnswer(ctx, m.channel, m.ts, m.redo) {
				b.log.Warn("bot: not ready; research refused", "err", herr)
				b.refuse(ctx, m.channel, root, m.user, "unready", fmt.Sprintf(b.userLang(ctx, m.user).words().Unready, Escape(herr.Error())))
			}
			return
		}
	}
	if !known {
		th, err = b.store.PutThread(ctx, research.Thread{Key: key, ThreadID: key.ThreadID(), Requester: m.user, DM: dm, CreatedAt: b.now()})
		if err != nil {
			b.log.Error("bot: store thread", "err", err)
			b.reply(ctx, m.channel, root, b.wordsFor(ctx, m.user).StartStorageFailed)
			return
		}
	}
	opts := b.opts.RunOptions
	requester := m.user
	if prev, ok := redeliverable(latest, question); hasLatest && ok {
		// "retry" after a report that could not be posted: post that
		// report, do not research again. It is the requester's report:
		// only they (or an approver) may have it posted, it stays theirs
		// ("asked by" them), and it never carries a credential of theirs
		// that came with an earlier message, nor anyone else's.
		if !b.mayDecide(prev, m.user) {
			if b.firstAnswer(ctx, m.channel, m.ts, m.redo) {
				b.ephemeral(ctx, m.channel, root, m.user, fmt.Sprintf(b.userLang(ctx, m.user).words().OnlyRetry, b.userName(ctx, prev.Requester)))
			}
			return
		}
		b.log.Info("bot: retry of a run whose report was not posted", "prev_run_id", prev.ID, "by", m.user)
		question, followUp, requester = prev.Question, prev.FollowUp, prev.Requester
		opts = prev.Options
		opts.Redeliver = prev.ID
		opts.WorkspaceToken = ""
		if b.opts.WorkspaceSearch && m.user == prev.Requester {
			opts.WorkspaceToken = m.actionToken
		}
	} else if b.opts.WorkspaceSearch && m.actionToken != "" {
		// The run may search what the team wrote, as this person; private
		// channels only where the report is theirs alone (a DM).
		opts.WorkspaceToken, opts.WorkspacePrivate, opts.WorkspaceBefore = m.actionToken, dm, m.ts
	}
	b.newRun(ctx, th, runRequest{user: m.user, requester: requester, question: question, followUp: followUp, msgTS: m.ts, opts: opts, redo: m.redo})
}

// mayDecide reports whether user may press a run's buttons.
func (b *Bot) mayDecide(r research.Run, user string) bool {
	return user == r.Requester || b.approvers[user]
}

// decisionSource is where a decision came from: the channel and thread
// to answer the decider in and, for a button, the message clicked and the
// interaction's response_url.
type decisionSource struct {
	channel, threadTS      string
	messageTS, responseURL string
}

// decide records a decision once and resumes (or cancels) the run.
func (b *Bot) decide(ctx context.Context, r research.Run, d research.Decision, from decisionSource) {
	channel, threadTS := from.channel, from.threadTS
	cur, err := b.store.Decide(ctx, r.ID, d)
	// The approval message is posted just before its run is recorded as
	// waiting; a quick click lands in between. Give the run a moment.
	for i := 0; i < 20 && errors.Is(err, research.ErrNotWaiting) && cur.State == research.StateRunning && (cur.Interrupt == nil || cur.Interrupt.ID != d.InterruptID); i++ {
		select {
		case <-ctx.Done():
		case <-b.clk.After(150 * time.Millisecond):
		}
		cur, err = b.store.Decide(ctx, r.ID, d)
	}
	switch {
	case errors.Is(err, research.ErrAlreadyDecided):
		if cur.Decision != nil && cur.Decision.By != d.By {
			l := b.userLang(ctx, d.By)
			b.ephemeral(ctx, channel, threadTS, d.By, fmt.Sprintf(l.words().AlreadyDecided, b.userName(ctx, cur.Decision.By), strings.ToLower(l.actionLabel(cur.Decision.Action))))
		}
		return
	case errors.Is(err, research.ErrNotWaiting):
		if cur.State == research.StateRunning && cur.Interrupt != nil && cur.Interrupt.ID != d.InterruptID {
			return
		}
		b.ephemeral(ctx, channel, threadTS, d.By, b.wordsFor(ctx, d.By).NoLongerWaiting)
		return
	case err != nil:
		b.log.Error("bot: decide", "run_id", r.ID, "err", err)
		b.ephemeral(ctx, channel, threadTS, d.By, b.wordsFor(ctx, d.By).DecisionFailed)
		return
	}
	b.log.Info("bot: decision", "run_id", r.ID, "thread_id", r.ThreadID, "action", d.Action, "by", d.By)
	if cur.Interrupt != nil && cur.Interrupt.MessageTS != "" && cur.Interrupt.Kind != research.InterruptQuestion {
		text, blocks := decidedBlocks(*cur.Interrupt, d, b.userName(ctx, d.By), b.userLang(ctx, cur.Requester))
		replaced := false
		if from.responseURL != "" && from.messageTS == cur.Interrupt.MessageTS {
			err := b.replaceOriginal(ctx, from.responseURL, text, blocks)
			if err != nil {
				b.log.Warn("bot: replace decided message", "run_id", r.ID, "err", err)
			}
			replaced = err == nil
		}
		if !replaced {
			if err := b.updateMessage(ctx, cur.Key.Channel, cur.Interrupt.MessageTS, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)); err != nil {
				b.log.Warn("bot: update decided message", "run_id", r.ID, "err", err)
			}
		}
	}
	if d.Action == research.ActionCancel {
		b.cancelWaiting(ctx, cur, d.By)
		return
	}
	b.tryStart(ctx, cur.ID)
}

// ackPayload is the response carried by an ack: validation errors for our
// feedback modal and the schedule modal (so the modal stays open), nothing
// otherwise.
func (b *Bot) ackPayload(ev socketmode.Event) any {
	if ev.Type != socketmode.EventTypeInteractive {
		return nil
	}
	cb, ok := ev.Data.(slack.InteractionCallback)
	if !ok || cb.Type != slack.InteractionTypeViewSubmission {
		return nil
	}
	if cb.View.CallbackID != callbackRevise {
		if b.digests != nil {
			if r := b.digests.ViewSubmissionResponse(cb); r != nil {
				return r
			}
		}
		return nil
	}
	text := strings.TrimSpace(feedbackText(cb))
	if text == "" {
		return slack.NewErrorsViewSubmissionResponse(map[string]string{blockFeedback: b.cachedWords(cb.User.ID).SayWhatChanges})
	}
	if n := utf8.RuneCountInString(text); n > b.opts.MaxQuestionLen {
		return slack.NewErrorsViewSubmissionResponse(map[string]string{blockFeedback: fmt.Sprintf(b.cachedWords(cb.User.ID).FeedbackTooLong, n, b.opts.MaxQuestionLen)})
	}
	return nil
}

func feedbackText(cb slack.InteractionCallback) string {
	if cb.View.State == nil {
		return ""
	}
	return cb.View.State.Values[blockFeedback][actionFeedback].Value
}

func (b *Bot) handleInteraction(ctx context.Context, cb slack.InteractionCallback) {
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		if ch := interactionChannel(cb); !b.channelAllowed(ch) {
			b.ephemeral(ctx, ch, cb.Container.ThreadTs, cb.User.ID, b.wordsFor(ctx, cb.User.ID).NotEnabled)
			return
		}
		for _, a := range cb.ActionCallback.BlockActions {
			if h := b.extension(a.ActionID); h != nil {
				b.runExtension(ctx, h, cb)
				continue
			}
			b.onBlockAction(ctx, cb, a)
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID == callbackRevise {
			b.onFeedbackSubmitted(ctx, cb)
			return
		}
		if h := b.extension(cb.View.CallbackID); h != nil {
			b.runExtension(ctx, h, cb)
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

func (b *Bot) extension(id string) InteractionHandler {
	for prefix, h := range b.opts.Interactions {
		if strings.HasPrefix(id, prefix) {
			return h
		}
	}
	return nil
}

func (b *Bot) runExtension(ctx context.Context, h InteractionHandler, cb slack.InteractionCallback) {
	if err := h(ctx, cb); err != nil {
		b.log.Warn("bot: extension interaction", "err", err)
	}
}

func (b *Bot) onBlockAction(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) {
	user := cb.User.ID
	channel := interactionChannel(cb)
	threadTS := cb.Container.ThreadTs
	say := func(msg string) { b.ephemeral(ctx, channel, threadTS, user, msg) }
	switch a.ActionID {
	case actCancelRun:
		if r, ok := b.clickedRun(ctx, a.Value, user, actCancel, say); ok {
			b.cancelRun(ctx, r, user, say)
		}
	case actApprove, actMore, actCancelIntr, actRevise:
		runID, intrID, ok := strings.Cut(a.Value, "|")
		if !ok {
			return
		}
		r, ok := b.clickedRun(ctx, runID, user, actDecide, say)
		if !ok {
			return
		}
		action := map[string]research.Action{actApprove: research.ActionApprove, actMore: research.ActionMore, actCancelIntr: research.ActionCancel}[a.ActionID]
		if a.ActionID == actRevise {
			if r.State != research.StateWaiting || r.Interrupt == nil || r.Interrupt.ID != intrID {
				say(b.wordsFor(ctx, user).NoLongerWaiting)
				return
			}
			err := b.call(ctx, "views.open", false, func(ctx context.Context) error {
				_, err := b.api.OpenViewContext(ctx, cb.TriggerID, feedbackModal(runID, intrID, r.Interrupt.Kind))
				return err
			})
			if err != nil {
				b.log.Warn("bot: open feedback modal", "run_id", runID, "err", err)
				say(b.wordsFor(ctx, user).FormFailed)
			}
			return
		}
		b.decide(ctx, r, research.Decision{InterruptID: intrID, Action: action, By: user, At: b.now()}, decisionSource{channel: channel, threadTS: threadTS, messageTS: cb.Container.MessageTs, responseURL: cb.ResponseURL})
	}
}

func (b *Bot) onFeedbackSubmitted(ctx context.Context, cb slack.InteractionCallback) {
	text := strings.TrimSpace(feedbackText(cb))
	if text == "" || utf8.RuneCountInString(text) > b.opts.MaxQuestionLen {
		return // the ack carried the validation error
	}
	runID, intrID, ok := strings.Cut(cb.View.PrivateMetadata, "|")
	if !ok {
		return
	}
	r, err := b.store.Run(ctx, runID)
	if err != nil {
		return
	}
	user := cb.User.ID
	if !b.mayAct(ctx, r, user, actDecide, func(msg string) { b.ephemeral(ctx, r.Key.Channel, r.Key.ThreadTS, user, msg) }) {
		return
	}
	b.decide(ctx, r, research.Decision{InterruptID: intrID, Action: research.ActionRevise, Text: text, By: user, At: b.now()}, decisionSource{channel: r.Key.Channel, threadTS: r.Key.ThreadTS})
}

// actKind is what a person does to a run from a button or a form.
type actKind int

const (
	actCancel actKind = iota // cancel the run
	actDecide                // decide on its interrupt
)

// clickedRun loads the run a button names and checks with mayAct that
// user may act on it.
func (b *Bot) clickedRun(ctx context.Context, runID, user string, verb actKind, say func(string)) (research.Run, bool) {
	r, err := b.store.Run(ctx, runID)
	if err != nil {
		say(b.wordsFor(ctx, user).RunGone)
		return research.Run{}, false
	}
	return r, b.mayAct(ctx, r, user, verb, say)
}

// mayAct reports whether user may act on a run from a button or a form
// (verb: what the refusal says they may not do); it tells them with say
// when not.
func (b *Bot) mayAct(ctx context.Context, r research.Run, user string, verb actKind, say func(string)) bool {
	if !b.channelAllowed(r.Key.Channel) {
		say(b.wordsFor(ctx, user).NotEnabled)
		return false
	}
	if !b.mayDecide(r, user) {
		w := b.wordsFor(ctx, user)
		only := w.OnlyDecideOn
		if verb == actCancel {
			only = w.OnlyCancel
		}
		say(fmt.Sprintf(only, b.userName(ctx, r.Requester)))
		return false
	}
	return true
}

// cancelRun cancels a run on behalf of user and tells them with say.
func (b *Bot) cancelRun(ctx context.Context, r research.Run, user string, say func(string)) {
	cur, cancelledNow, err := b.store.RequestCancel(ctx, r.ID, user, b.now())
	switch {
	case errors.Is(err, research.ErrFinished):
		l := b.userLang(ctx, user)
		say(fmt.Sprintf(l.words().AlreadyFinished, strings.ToLower(l.stateLabel(cur.State))))
		return
	case err != nil:
		b.log.Error("bot: request cancel", "run_id", r.ID, "err", err)
		say(b.wordsFor(ctx, user).CancelFailed)
		return
	}
	b.log.Info("bot: cancel requested", "run_id", r.ID, "thread_id", r.ThreadID, "by", user, "immediate", cancelledNow)
	if cancelledNow {
		b.cancelWaiting(ctx, cur, user)
		return
	}
	// Running: here, or in another process that sees it at its next heartbeat.
	b.cancelLocal(r.ID, user)
}

func (b *Bot) publishHome(ctx context.Context, user string) {
	runs, err := b.store.ListRuns(ctx, research.RunFilter{Requester: user, Limit: 15})
	if err != nil {
		b.log.Warn("bot: list runs for home", "err", err)
	}
	blocks := homeBlocks(runs, b.ratingCounts(ctx, runs), b.now())
	if b.digests != nil {
		extra, err := b.digests.HomeSection(ctx, user)
		if err != nil {
			b.log.Warn("bot: home section", "err", err)
		} else if len(blocks)+len(extra) <= maxBlocks {
			blocks = append(blocks, extra...)
		}
	}
	err = b.call(ctx, "views.publish", true, func(ctx context.Context) error {
		_, err := b.api.PublishViewContext(ctx, slack.PublishViewContextRequest{
			UserID: user,
			View:   slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}},
		})
		return err
	})
	if err != nil {
		b.log.Warn("bot: publish home", "err", err)
	}
}
