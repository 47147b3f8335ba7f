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
	"deepresearch/slackstate"

	"github.com/slack-go/slack"
)

// handleSlash serves /research: ask, status, cancel, help, plus the
// subcommands in Options.Subcommands. Text that starts with none of these is
// a question (ask), unless it looks like a mistyped subcommand (one word of
// letters, or a word close to a known subcommand), which gets the help. In
// a channel outside Options.AllowedChannels only help is answered.
func (h *handlers) handleSlash(ctx context.Context, cmd slack.SlashCommand) {
	text := strings.TrimSpace(cmd.Text)
	word, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	say := func(msg string) { h.slack.respond(ctx, cmd.ResponseURL, msg, nil) }
	sub := strings.ToLower(word)
	if sub == "" || sub == "help" {
		say(h.slashHelp(""))
		return
	}
	if !h.channelAllowed(cmd.ChannelID) {
		say(h.slack.wordsFor(ctx, cmd.UserID).NotEnabled)
		return
	}
	switch sub {
	case "ask":
		h.slashAsk(ctx, cmd, rest, say, h.opts.RunOptions)
	case "deep":
		// a deep research by a team: each subtask researched several
		// ways, the findings cross-checked
		opts := h.opts.RunOptions
		opts.Depth, opts.TeamSize = "deep", DeepTeamSize
		h.slashAsk(ctx, cmd, rest, say, opts)
	case "status":
		h.slashStatus(ctx, cmd, say)
	case "cancel":
		h.slashCancel(ctx, cmd, rest, say)
	default:
		if run, ok := h.opts.Subcommands[sub]; ok {
			reply, err := run(ctx, cmd, rest)
			if err != nil {
				ref := randomID(4)
				h.log.Warn("bot: subcommand", "subcommand", sub, "ref", ref, "err", err)
				reply = fmt.Sprintf(h.slack.wordsFor(ctx, cmd.UserID).SlashFailed, ref)
			}
			if reply != "" {
				say(reply)
			}
			return
		}
		if sub == "schedule" || sub == "schedules" {
			say(h.slack.wordsFor(ctx, cmd.UserID).DigestsUnavailable)
			return
		}
		if h.mistypedSubcommand(word, rest) {
			say(h.slashHelp(word))
			return
		}
		h.slashAsk(ctx, cmd, text, say, h.opts.RunOptions)
	}
}

// channelAllowed applies Options.AllowedChannels: DMs are always allowed,
// every channel when the list is empty.
func (h *handlers) channelAllowed(channel string) bool {
	if len(h.allowed) == 0 || h.allowed[channel] {
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
func (h *handlers) slashHelp(unknown string) string {
	var sb strings.Builder
	if unknown != "" {
		fmt.Fprintf(&sb, "I don't know the subcommand `%s`. To research it, use `/research ask %s`.\n\n", Escape(Truncate(unknown, 40)), Escape(Truncate(unknown, 40)))
	}
	sb.WriteString(helpText)
	names := make([]string, 0, len(h.opts.Subcommands)+2)
	for name := range h.opts.Subcommands {
		names = append(names, name)
	}
	for name := range subcommandHelp {
		if _, ok := h.opts.Subcommands[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		line, known := subcommandHelp[name]
		if !known {
			line = "`/research " + Escape(name) + "`"
		}
		if _, ok := h.opts.Subcommands[name]; !ok {
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
func (h *handlers) mistypedSubcommand(word, rest string) bool {
	lw := strings.ToLower(word)
	if rest == "" && len(lw) <= 20 && !strings.ContainsFunc(lw, func(r rune) bool { return (r < 'a' || r > 'z') && r != '-' && r != '_' }) {
		return true
	}
	if len(lw) < 4 {
		return false
	}
	known := []string{"ask", "deep", "status", "cancel", "help", "schedule", "schedules"}
	for name := range h.opts.Subcommands {
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

func (h *handlers) slashAsk(ctx context.Context, cmd slack.SlashCommand, question string, say func(string), opts research.RunOptions) {
	if question == "" {
		say(h.slack.wordsFor(ctx, cmd.UserID).AddQuestion)
		return
	}
	if n := utf8.RuneCountInString(question); n > h.opts.MaxQuestionLen {
		say(fmt.Sprintf(h.slack.wordsFor(ctx, cmd.UserID).SlashTooLong, n, h.opts.MaxQuestionLen))
		return
	}
	dm := strings.HasPrefix(cmd.ChannelID, "D")
	if !h.channelAllowed(cmd.ChannelID) {
		say(h.slack.wordsFor(ctx, cmd.UserID).NotEnabled)
		return
	}
	who := h.slack.userName(ctx, cmd.UserID)
	ts, err := h.slack.postMessage(ctx, cmd.ChannelID, slack.MsgOptionText(fmt.Sprintf("🔎 *%s* asked: %s", who, truncateEscaped(question, 3000)), false))
	if err != nil {
		if errorCode(err) == "not_in_channel" || errorCode(err) == "channel_not_found" {
			say(h.slack.wordsFor(ctx, cmd.UserID).CannotPost)
			return
		}
		h.log.Warn("bot: slash ask post", "err", err)
		say(h.slack.wordsFor(ctx, cmd.UserID).StartFailed)
		return
	}
	team := cmd.TeamID
	if team == "" {
		team = h.id.teamID
	}
	key := slackstate.ThreadKey{Team: team, Channel: cmd.ChannelID, ThreadTS: ts}
	th, err := h.records.PutThread(ctx, slackstate.Thread{Key: key, ThreadID: key.ThreadID(), Requester: cmd.UserID, DM: dm, CreatedAt: h.slack.now()})
	if err != nil {
		h.log.Error("bot: store thread", "err", err)
		say(h.slack.wordsFor(ctx, cmd.UserID).StartStore)
		return
	}
	say(h.slack.wordsFor(ctx, cmd.UserID).Started)
	// The message was just posted: the claim of its answer is the first.
	h.runs.newRun(ctx, th, runRequest{user: cmd.UserID, question: question, msgTS: ts, opts: opts})
}

func (h *handlers) slashStatus(ctx context.Context, cmd slack.SlashCommand, say func(string)) {
	runs, err := h.store.ListRuns(ctx, research.RunFilter{Requester: cmd.UserID, Limit: 10})
	l := h.slack.userLang(ctx, cmd.UserID)
	if err != nil {
		say(l.words().ReadRunsFailed)
		return
	}
	if len(runs) == 0 {
		say(l.words().NoRuns)
		return
	}
	var sb strings.Builder
	sb.WriteString(l.words().RecentResearch + "\n")
	now := h.slack.now()
	ratings := h.ratings.ratingCounts(ctx, runs)
	for _, r := range runs {
		fmt.Fprintf(&sb, "%s `%s` %s · %s%s · %s\n", runIcon(r.State), r.ID, l.stateLabel(r.State), ago(now.Sub(r.CreatedAt)),
			ratingText(ratings[r.ID]), truncateEscaped(r.Question, 120))
	}
	say(Truncate(sb.String(), 3000))
}

func (h *handlers) slashCancel(ctx context.Context, cmd slack.SlashCommand, runID string, say func(string)) {
	if runID == "" {
		active, err := h.store.ListRuns(ctx, research.RunFilter{Requester: cmd.UserID, States: []research.RunState{research.StateQueued, research.StateRunning, research.StateWaiting}})
		if err != nil {
			say(h.slack.wordsFor(ctx, cmd.UserID).ReadRunsFailed)
			return
		}
		switch len(active) {
		case 0:
			say(h.slack.wordsFor(ctx, cmd.UserID).NoneInProgress)
			return
		case 1:
			runID = active[0].ID
		default:
			ids := make([]string, len(active))
			for i, r := range active {
				ids[i] = "`" + r.ID + "`"
			}
			say(fmt.Sprintf(h.slack.wordsFor(ctx, cmd.UserID).WhichRun, strings.Join(ids, ", ")))
			return
		}
	}
	r, err := h.store.Run(ctx, runID)
	if errors.Is(err, research.ErrNotFound) {
		say(fmt.Sprintf(h.slack.wordsFor(ctx, cmd.UserID).NoSuchRun, Escape(runID)))
		return
	} else if err != nil {
		say(h.slack.wordsFor(ctx, cmd.UserID).ReadRunFailed)
		return
	}
	if !h.mayDecide(r, cmd.UserID) {
		say(fmt.Sprintf(h.slack.wordsFor(ctx, cmd.UserID).OnlyCancel, h.slack.userName(ctx, r.Requester)))
		return
	}
	done := false
	h.cancelRun(ctx, r, cmd.UserID, func(msg string) { say(msg); done = true })
	if !done {
		say(fmt.Sprintf(h.slack.wordsFor(ctx, cmd.UserID).Cancelling, r.ID))
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
