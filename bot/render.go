package bot

import (
	"fmt"
	"strings"
	"time"

	"deepresearch/research"

	"github.com/slack-go/slack"
)

// Slack's limits for what we render.
const (
	maxBlocks       = 50
	maxSectionChars = 3000
	maxMarkdown     = 12000
	maxHeaderChars  = 150
	maxButtonValue  = 2000
	summaryChars    = 2800 // "short summary" in the report message
)

// Action ids of our buttons and the callback id of our modal.
const (
	actApprove      = "dr_approve"
	actRevise       = "dr_revise"
	actMore         = "dr_more"
	actCancelIntr   = "dr_cancel_intr"
	actCancelRun    = "dr_cancel"
	callbackRevise  = "dr_revise_modal"
	blockFeedback   = "dr_feedback"
	actionFeedback  = "text"
	blockIntrAction = "dr_intr"
)

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

func section(s string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwn(Truncate(s, maxSectionChars)), nil, nil)
}

// verbatimSection is a section of mrkdwn that Slack shows as it is
// written: no bare URL, channel name or mention is linked by Slack itself.
func verbatimSection(s string) *slack.SectionBlock {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, Truncate(s, maxSectionChars), false, true), nil, nil)
}

func contextLine(s string) *slack.ContextBlock {
	return slack.NewContextBlock("", mrkdwn(Truncate(s, maxSectionChars)))
}

// statusView is what the status message shows.
type statusView struct {
	Lang      lang // the requester's language
	Question  string
	Requester string // display name, escaped
	State     research.RunState
	Progress  research.Progress
	Started   time.Time
	Now       time.Time
	RunID     string
	Note      string // a final word: "Cancelled by …", an error
}

func fmtElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

func stateIcon(s research.SubtaskState) string {
	switch s {
	case research.SubtaskDone:
		return "✅"
	case research.SubtaskRunning:
		return "⏳"
	case research.SubtaskFailed:
		return "⚠️"
	}
	return "▫️"
}

func runIcon(s research.RunState) string {
	switch s {
	case research.StateQueued:
		return "🕒"
	case research.StateRunning:
		return "🔎"
	case research.StateWaiting:
		return "⏸️"
	case research.StateDone:
		return "✅"
	case research.StateFailed:
		return "❌"
	case research.StateCancelled:
		return "🛑"
	}
	return "•"
}

func stateLabel(s research.RunState) string { return langEN.stateLabel(s) }

func (l lang) stateLabel(s research.RunState) string {
	w := l.words()
	return labelOf(s, map[research.RunState]string{
		research.StateQueued:    w.Queued,
		research.StateRunning:   w.Researching,
		research.StateWaiting:   w.Waiting,
		research.StateDone:      w.Done,
		research.StateFailed:    w.Failed,
		research.StateCancelled: w.Cancelled,
	})
}

// labelOf is k's label, or k itself when it has none.
func labelOf[K ~string](k K, labels map[K]string) string {
	if s, ok := labels[k]; ok {
		return s
	}
	return string(k)
}

// statusBlocks renders a run's status message. The plan, the subtasks and
// the note are the model's and the web's words: no address in them is
// live (inertAddresses).
func statusBlocks(v statusView) (string, []slack.Block) {
	p := v.Progress
	w := v.Lang.words()
	head := fmt.Sprintf("%s *%s:* %s", runIcon(v.State), v.Lang.stateLabel(v.State), truncateEscaped(v.Question, 500))
	blocks := []slack.Block{section(head)}
	if len(p.Plan) > 0 {
		var sb strings.Builder
		sb.WriteString("*" + w.Plan + "*\n")
		for i, step := range p.Plan {
			line := fmt.Sprintf("%d. %s\n", i+1, truncateEscaped(inertAddresses(step), 200))
			if sb.Len()+len(line) > maxSectionChars-20 {
				sb.WriteString("…\n")
				break
			}
			sb.WriteString(line)
		}
		blocks = append(blocks, section(sb.String()))
	}
	if len(p.Subtasks) > 0 {
		var sb strings.Builder
		sb.WriteString("*" + w.Subtasks + "*\n")
		for _, st := range p.Subtasks {
			line := fmt.Sprintf("%s %s\n", stateIcon(st.State), truncateEscaped(inertAddresses(st.Title), 200))
			if sb.Len()+len(line) > maxSectionChars-20 {
				sb.WriteString("…\n")
				break
			}
			sb.WriteString(line)
		}
		blocks = append(blocks, section(sb.String()))
	}
	if p.Note != "" && v.State == research.StateRunning {
		blocks = append(blocks, contextLine("_"+truncateEscaped(inertAddresses(p.Note), 300)+"_"))
	}
	if v.Note != "" {
		blocks = append(blocks, section(v.Note))
	}
	var facts []string
	if p.Phase != "" && v.State.Active() {
		facts = append(facts, w.Phase+truncateEscaped(p.Phase, 40))
	}
	facts = append(facts, fmt.Sprintf(w.SourcesRead, p.SourcesRead))
	facts = append(facts, fmt.Sprintf(w.Tokens, p.Tokens))
	if !v.Started.IsZero() {
		facts = append(facts, w.Elapsed+fmtElapsed(v.Now.Sub(v.Started)))
	}
	if v.Requester != "" {
		facts = append(facts, w.AskedBy+v.Requester)
	}
	blocks = append(blocks, contextLine(strings.Join(facts, " · ")))
	if v.State.Active() {
		btn := slack.NewButtonBlockElement(actCancelRun, v.RunID, plain(w.Cancel))
		btn.Style = slack.StyleDanger
		blocks = append(blocks, slack.NewActionBlock("dr_status", btn))
	}
	text := fmt.Sprintf("%s: %s", v.Lang.stateLabel(v.State), truncateEscaped(v.Question, 200))
	return text, blocks
}

func (l lang) intrTitle(k research.InterruptKind) string {
	w := l.words()
	switch k {
	case research.InterruptPlan:
		return w.IntrPlan
	case research.InterruptDraft:
		return w.IntrDraft
	}
	return w.IntrQuestion
}

// interruptBlocks renders an approval request with its buttons.
func interruptBlocks(runID string, intr research.Interrupt, requester string, l lang) (string, []slack.Block) {
	w := l.words()
	body := intr.Text
	if body == "" {
		body = intr.Draft
	}
	value := runID + "|" + intr.ID
	blocks := []slack.Block{
		section(fmt.Sprintf("*%s*", l.intrTitle(intr.Kind))),
	}
	if body != "" {
		blocks = append(blocks, slack.NewMarkdownBlock("dr_body", truncateEscaped(body, maxMarkdown-100)))
	}
	approve := slack.NewButtonBlockElement(actApprove, value, plain(w.Approve))
	approve.Style = slack.StylePrimary
	cancel := slack.NewButtonBlockElement(actCancelIntr, value, plain(w.Cancel))
	cancel.Style = slack.StyleDanger
	blocks = append(blocks,
		slack.NewActionBlock(blockIntrAction,
			approve,
			slack.NewButtonBlockElement(actRevise, value, plain(w.RequestChanges)),
			slack.NewButtonBlockElement(actMore, value, plain(w.ResearchMore)),
			cancel,
		),
		contextLine(fmt.Sprintf(w.OnlyDecide, requester)),
	)
	return l.intrTitle(intr.Kind), blocks
}

func (l lang) actionLabel(a research.Action) string {
	w := l.words()
	return labelOf(a, map[research.Action]string{
		research.ActionApprove: w.Approved,
		research.ActionRevise:  w.ChangesRequested,
		research.ActionMore:    w.MoreRequested,
		research.ActionCancel:  w.CancelledAction,
		research.ActionAnswer:  w.Answered,
	})
}

// decidedBlocks replaces an approval request's buttons by who decided what.
func decidedBlocks(intr research.PendingInterrupt, d research.Decision, byName string, l lang) (string, []slack.Block) {
	line := fmt.Sprintf(l.words().DecidedBy, l.actionLabel(d.Action), byName)
	if d.Text != "" {
		line += ": " + truncateEscaped(d.Text, 1500)
	}
	blocks := []slack.Block{section(fmt.Sprintf("*%s*", l.intrTitle(intr.Kind)))}
	if intr.Text != "" {
		blocks = append(blocks, slack.NewMarkdownBlock("dr_body", truncateEscaped(intr.Text, maxMarkdown-100)))
	}
	blocks = append(blocks, section(line))
	return strings.ReplaceAll(fmt.Sprintf(l.words().DecidedBy, l.actionLabel(d.Action), byName), "*", ""), blocks
}

// reportBlocks renders the short summary that accompanies the report file.
func reportBlocks(res research.Result, requester string, l lang) []slack.Block {
	w := l.words()
	title := res.Title
	if title == "" {
		title = w.ReportTitle
	}
	blocks := []slack.Block{slack.NewHeaderBlock(plain(truncateEscaped(title, maxHeaderChars)))}
	if res.Summary != "" {
		// These blocks complete a file share, where Slack refuses markdown
		// blocks (internal_error): the summary goes as mrkdwn sections,
		// verbatim so that Slack links nothing by itself (a bare address,
		// a channel name): the only links are the sources read.
		for _, part := range splitLines(mrkdwnFromMarkdown(Truncate(res.Summary, summaryChars), summarySet(res)), maxSectionChars) {
			blocks = append(blocks, verbatimSection(part))
		}
	}
	if res.Extractive {
		blocks = append(blocks, section(w.ModelNotUsed))
	}
	facts := []string{
		fmt.Sprintf(w.NSources, res.Sources),
		fmt.Sprintf(w.NCitations, res.Citations),
		fmt.Sprintf(w.NTokens, res.Tokens),
	}
	if res.Elapsed > 0 {
		facts = append(facts, fmtElapsed(res.Elapsed))
	}
	if requester != "" {
		facts = append(facts, w.AskedBy+requester)
	}
	blocks = append(blocks, contextLine(strings.Join(facts, " · ")+" · "+w.FullReport))
	return blocks
}

// reportTitleBlocks is the plainest share message for the report file: its
// title and facts, for when Slack refuses the summary blocks.
func reportTitleBlocks(res research.Result, requester string, l lang) []slack.Block {
	res.Summary = ""
	return reportBlocks(res, requester, l)
}

// feedbackModal asks for the changes a person wants.
func feedbackModal(runID, intrID string, kind research.InterruptKind) slack.ModalViewRequest {
	input := slack.NewPlainTextInputBlockElement(plain("What should change?"), actionFeedback)
	input.Multiline = true
	input.MaxLength = 3000
	what := "draft"
	if kind == research.InterruptPlan {
		what = "plan"
	}
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      callbackRevise,
		PrivateMetadata: runID + "|" + intrID,
		Title:           plain("Request changes"),
		Submit:          plain("Send"),
		Close:           plain("Cancel"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock(blockFeedback, plain("Changes to the "+what), nil, input),
		}},
	}
}

const helpText = "*deepresearch* researches a question on the web and in internal documents and posts a cited report.\n" +
	"• Mention me with a question: `@deepresearch 2026年の国内生成AI規制の動向を調べて`\n" +
	"• Reply in the thread mentioning me for a follow-up (\"dig deeper into X\", \"rewrite shorter\"); in a DM just reply.\n" +
	"• `/research ask <question>` starts a research in this channel; `/research deep <question>` a deep one by a team of researchers whose findings are cross-checked.\n" +
	"• `/research status` lists your runs, `/research cancel [run]` cancels one, `/research help` shows this."

// homeBlocks renders the App Home with the user's recent runs.
// channels holds the runs' channels (by run id), ratings, when set, their
// feedback tallies.
func homeBlocks(runs []research.Run, channels map[string]string, ratings map[string]research.FeedbackCount, now time.Time) []slack.Block {
	blocks := []slack.Block{
		slack.NewHeaderBlock(plain("Your research")),
		section(helpText),
		slack.NewDividerBlock(),
	}
	if len(runs) == 0 {
		blocks = append(blocks, section("_No research yet. Mention me in a channel with a question._"))
	}
	for _, r := range runs {
		if len(blocks) >= maxBlocks-5 {
			break
		}
		line := fmt.Sprintf("%s *%s* · %s%s\n%s", runIcon(r.State), stateLabel(r.State), ago(now.Sub(r.CreatedAt)),
			ratingText(ratings[r.ID]), truncateEscaped(r.Question, 300))
		if ch := channels[r.ID]; ch != "" {
			line += fmt.Sprintf("\n%s · run `%s`", ChannelRef(ch), r.ID)
		}
		blocks = append(blocks, section(line))
	}
	return blocks
}

func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}
