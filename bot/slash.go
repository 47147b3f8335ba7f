package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// handleSlash serves /research: ask, status, cancel, help, plus the
// subcommands in Options.Subcommands. Text that starts with none of these is
// a question (ask).
func (b *Bot) handleSlash(ctx context.Context, cmd slack.SlashCommand) {
	text := strings.TrimSpace(cmd.Text)
	word, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	say := func(msg string) { b.respond(ctx, cmd.ResponseURL, msg, nil) }
	switch strings.ToLower(word) {
	case "", "help":
		say(helpText)
	case "ask":
		b.slashAsk(ctx, cmd, rest, say)
	case "status":
		b.slashStatus(ctx, cmd, say)
	case "cancel":
		b.slashCancel(ctx, cmd, rest, say)
	default:
		if h, ok := b.opts.Subcommands[strings.ToLower(word)]; ok {
			reply, err := h(ctx, cmd, rest)
			if err != nil {
				b.log.Warn("bot: subcommand", "subcommand", word, "err", err)
				reply = "Sorry, that failed: " + Escape(err.Error())
			}
			if reply != "" {
				say(reply)
			}
			return
		}
		if word == "schedule" || word == "schedules" {
			say("Scheduled digests are not available yet.")
			return
		}
		b.slashAsk(ctx, cmd, text, say)
	}
}

func (b *Bot) slashAsk(ctx context.Context, cmd slack.SlashCommand, question string, say func(string)) {
	if question == "" {
		say("Please add a question: `/research ask <question>`.")
		return
	}
	if n := utf8.RuneCountInString(question); n > b.opts.MaxQuestionLen {
		say(fmt.Sprintf("Your question is too long (%d characters; the limit is %d). Please shorten it.", n, b.opts.MaxQuestionLen))
		return
	}
	dm := strings.HasPrefix(cmd.ChannelID, "D")
	if !dm && len(b.allowed) > 0 && !b.allowed[cmd.ChannelID] {
		say("I'm not enabled in this channel. Ask an admin to add it to the allow-list, or DM me.")
		return
	}
	who := b.userName(ctx, cmd.UserID)
	ts, err := b.postMessage(ctx, cmd.ChannelID, slack.MsgOptionText(fmt.Sprintf("🔎 *%s* asked: %s", who, truncateEscaped(question, 3000)), false))
	if err != nil {
		if errorCode(err) == "not_in_channel" || errorCode(err) == "channel_not_found" {
			say("I can't post here. Invite me to the channel first (`/invite @deepresearch`).")
			return
		}
		b.log.Warn("bot: slash ask post", "err", err)
		say("Sorry, I could not start the research. Please try again.")
		return
	}
	team := cmd.TeamID
	if team == "" {
		team = b.teamID
	}
	key := ThreadKey{Team: team, Channel: cmd.ChannelID, ThreadTS: ts}
	th, err := b.store.PutThread(ctx, Thread{Key: key, ThreadID: key.ThreadID(), Requester: cmd.UserID, DM: dm, CreatedAt: b.now()})
	if err != nil {
		b.log.Error("bot: store thread", "err", err)
		say("Sorry, I could not start the research (storage error).")
		return
	}
	say("Started — follow the progress in the thread.")
	b.newRun(ctx, th, cmd.UserID, question, false, ts)
}

func (b *Bot) slashStatus(ctx context.Context, cmd slack.SlashCommand, say func(string)) {
	runs, err := b.store.ListRuns(ctx, RunFilter{Requester: cmd.UserID, Limit: 10})
	if err != nil {
		say("Sorry, I could not read your runs (storage error).")
		return
	}
	if len(runs) == 0 {
		say("You have no research runs yet.")
		return
	}
	var sb strings.Builder
	sb.WriteString("*Your recent research*\n")
	now := b.now()
	for _, r := range runs {
		fmt.Fprintf(&sb, "%s `%s` %s · %s · %s\n", runIcon(r.State), r.ID, stateLabel(r.State), ago(now.Sub(r.CreatedAt)), truncateEscaped(r.Question, 120))
	}
	say(Truncate(sb.String(), 3000))
}

func (b *Bot) slashCancel(ctx context.Context, cmd slack.SlashCommand, runID string, say func(string)) {
	if runID == "" {
		active, err := b.store.ListRuns(ctx, RunFilter{Requester: cmd.UserID, States: []RunState{StateQueued, StateRunning, StateWaiting}})
		if err != nil {
			say("Sorry, I could not read your runs (storage error).")
			return
		}
		switch len(active) {
		case 0:
			say("You have no research in progress.")
			return
		case 1:
			runID = active[0].ID
		default:
			ids := make([]string, len(active))
			for i, r := range active {
				ids[i] = "`" + r.ID + "`"
			}
			say("You have several runs in progress; say which: `/research cancel <run>` with one of " + strings.Join(ids, ", "))
			return
		}
	}
	r, err := b.store.Run(ctx, runID)
	if errors.Is(err, ErrNotFound) {
		say("There is no research run `" + Escape(runID) + "`. See `/research status`.")
		return
	} else if err != nil {
		say("Sorry, I could not read that run (storage error).")
		return
	}
	if !b.mayDecide(r, cmd.UserID) {
		say("Only " + b.userName(ctx, r.Requester) + " (who asked) or a configured approver can cancel this research.")
		return
	}
	done := false
	b.cancelRun(ctx, r, cmd.UserID, func(msg string) { say(msg); done = true })
	if !done {
		say("Cancelling `" + r.ID + "`.")
	}
}
