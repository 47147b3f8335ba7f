package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"deepresearch/agent/citation"
	"deepresearch/research"

	"github.com/slack-go/slack"
)

// handleSlash serves /research: ask, status, cancel, help, plus the
// subcommands in Options.Subcommands. Text that starts with none of these is
// a question (ask), unless it looks like a mistyped subcommand (one word of
// letters, or a word close to a known subcommand), which gets the help. In
// a channel outside Options.AllowedChannels only help is answered.
func (b *Bot) handleSlash(ctx context.Context, cmd slack.SlashCommand) {
	text := strings.TrimSpace(cmd.Text)
	word, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	say := func(msg string) { b.respond(ctx, cmd.ResponseURL, msg, nil) }
	sub := strings.ToLower(word)
	if sub == "" || sub == "help" {
		say(b.slashHelp(""))
		return
	}
	if !b.channelAllowed(cmd.ChannelID) {
		say(notEnabledText)
		return
	}
	switch sub {
	case "ask":
		b.slashAsk(ctx, cmd, rest, say, b.opts.RunOptions)
	case "deep":
		// a deep research by a team: each subtask researched several
		// ways, the findings cross-checked
		opts := b.opts.RunOptions
		opts.Depth, opts.TeamSize = "deep", DeepTeamSize
		b.slashAsk(ctx, cmd, rest, say, opts)
	case "status":
		b.slashStatus(ctx, cmd, say)
	case "cancel":
		b.slashCancel(ctx, cmd, rest, say)
	default:
		if h, ok := b.opts.Subcommands[sub]; ok {
			reply, err := h(ctx, cmd, rest)
			if err != nil {
				ref := randomID(4)
				b.log.Warn("bot: subcommand", "subcommand", sub, "ref", ref, "err", err)
				reply = "Sorry, that failed. Please try again; if it keeps failing, tell an admin the reference `" + ref + "`."
			}
			if reply != "" {
				say(reply)
			}
			return
		}
		if sub == "schedule" || sub == "schedules" {
			say("Scheduled digests are not available yet.")
			return
		}
		if b.mistypedSubcommand(word, rest) {
			say(b.slashHelp(word))
			return
		}
		b.slashAsk(ctx, cmd, text, say, b.opts.RunOptions)
	}
}

// notEnabledText answers anything asked in a channel outside the allow-list.
const notEnabledText = "I'm not enabled in this channel. Ask an admin to add it to the allow-list, or DM me."

// channelAllowed applies Options.AllowedChannels: DMs are always allowed,
// every channel when the list is empty.
func (b *Bot) channelAllowed(channel string) bool {
	if len(b.allowed) == 0 || b.allowed[channel] {
		return true
	}
	return strings.HasPrefix(channel, "D")
}

// subcommandHelp describes the subcommands an extension may register.
var subcommandHelp = map[string]string{
	"schedule":  "`/research schedule [topic]` schedules a recurring digest posted in a channel",
	"schedules": "`/research schedules` lists the digests of this channel and yours, with Pause / Resume / Run now / Delete",
}

// slashHelp is the help text with every subcommand; unknown names a word
// that is not one.
func (b *Bot) slashHelp(unknown string) string {
	var sb strings.Builder
	if unknown != "" {
		fmt.Fprintf(&sb, "I don't know the subcommand `%s`. To research it, use `/research ask %s`.\n\n", Escape(Truncate(unknown, 40)), Escape(Truncate(unknown, 40)))
	}
	sb.WriteString(helpText)
	names := make([]string, 0, len(b.opts.Subcommands)+2)
	for name := range b.opts.Subcommands {
		names = append(names, name)
	}
	for name := range subcommandHelp {
		if _, ok := b.opts.Subcommands[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		line, known := subcommandHelp[name]
		if !known {
			line = "`/research " + Escape(name) + "`"
		}
		if _, ok := b.opts.Subcommands[name]; !ok {
			line += " (not enabled on this bot)"
		}
		sb.WriteString("\n• " + line + ".")
	}
	return sb.String()
}

// mistypedSubcommand reports whether /research text that is not a known
// subcommand looks like a command rather than a question: a lone word of
// ASCII letters (no question is one English word), or a first word one or
// two edits away from a subcommand ("shedule weekly news").
func (b *Bot) mistypedSubcommand(word, rest string) bool {
	lw := strings.ToLower(word)
	if rest == "" && len(lw) <= 20 && !strings.ContainsFunc(lw, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r == '-' || r == '_') }) {
		return true
	}
	if len(lw) < 4 {
		return false
	}
	known := []string{"ask", "deep", "status", "cancel", "help", "schedule", "schedules"}
	for name := range b.opts.Subcommands {
		known = append(known, name)
	}
	for _, k := range known {
		if d := citation.EditDistance([]byte(lw), []byte(k)); d > 0 && d <= 2 && len(k) >= 4 {
			return true
		}
	}
	return false
}

// DeepTeamSize is the team of a `/research deep` run: researchers per
// subtask (see agent.Request.TeamSize).
const DeepTeamSize = 3

func (b *Bot) slashAsk(ctx context.Context, cmd slack.SlashCommand, question string, say func(string), opts research.RunOptions) {
	if question == "" {
		say("Please add a question: `/research ask <question>` (or `/research deep <question>`).")
		return
	}
	if n := utf8.RuneCountInString(question); n > b.opts.MaxQuestionLen {
		say(fmt.Sprintf("Your question is too long (%d characters; the limit is %d). Please shorten it.", n, b.opts.MaxQuestionLen))
		return
	}
	dm := strings.HasPrefix(cmd.ChannelID, "D")
	if !b.channelAllowed(cmd.ChannelID) {
		say(notEnabledText)
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
	key := research.ThreadKey{Team: team, Channel: cmd.ChannelID, ThreadTS: ts}
	th, err := b.store.PutThread(ctx, research.Thread{Key: key, ThreadID: key.ThreadID(), Requester: cmd.UserID, DM: dm, CreatedAt: b.now()})
	if err != nil {
		b.log.Error("bot: store thread", "err", err)
		say("Sorry, I could not start the research (storage error).")
		return
	}
	say("Started — follow the progress in the thread.")
	// The message was just posted: the claim of its answer is the first.
	b.newRun(ctx, th, runRequest{user: cmd.UserID, question: question, msgTS: ts, opts: opts})
}

func (b *Bot) slashStatus(ctx context.Context, cmd slack.SlashCommand, say func(string)) {
	runs, err := b.store.ListRuns(ctx, research.RunFilter{Requester: cmd.UserID, Limit: 10})
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
	ratings := b.ratingCounts(ctx, runs)
	for _, r := range runs {
		fmt.Fprintf(&sb, "%s `%s` %s · %s%s · %s\n", runIcon(r.State), r.ID, stateLabel(r.State), ago(now.Sub(r.CreatedAt)),
			ratingText(ratings[r.ID]), truncateEscaped(r.Question, 120))
	}
	say(Truncate(sb.String(), 3000))
}

func (b *Bot) slashCancel(ctx context.Context, cmd slack.SlashCommand, runID string, say func(string)) {
	if runID == "" {
		active, err := b.store.ListRuns(ctx, research.RunFilter{Requester: cmd.UserID, States: []research.RunState{research.StateQueued, research.StateRunning, research.StateWaiting}})
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
	if errors.Is(err, research.ErrNotFound) {
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

// maxRunAttempts bounds how often a run is picked up (Run.Attempt) since
// its last input before it is failed.
const maxRunAttempts = 5

// failedNote is what a failed run's status message says: a plain sentence
// and a reference for the log, never the internal error.
func failedNote(runID string) string { return langEN.failedNote(runID) }

func (l lang) failedNote(runID string) string {
	return fmt.Sprintf(l.words().FailedNote, "`"+runID+"`")
}
