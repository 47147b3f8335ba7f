package bot

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// Assistant threads (Slack's AI app pane): suggested prompts when a thread
// opens, the thread's title from the research theme, and the channel the
// user is looking at as the default channel of the schedule modal.
//
// What the bot learns here lives in process memory: it is lost on restart
// and not shared between replicas, so a slash command served by another
// process than the one that saw the context event gets the usual default.

// maxTitleRunes bounds a thread title; Slack shows titles on one line in
// the pane's history.
const maxTitleRunes = 80

// maxAssistantEntries bounds each memory map of assistantState.
const maxAssistantEntries = 10000

// assistantState is the bot's memory of assistant threads.
type assistantState struct {
	mu sync.Mutex
	// the channel the user looks at, per assistant thread (channel and
	// thread_ts) and per assistant DM (its latest context event)
	contexts map[string]string
	latest   map[string]viewing
	// the title last set, per graph thread: a title is set once
	titles map[string]string

	slack    *slackClient
	store    research.Store
	records  slackstate.Store
	log      *slog.Logger
	channels schedule.ChannelChecker // may digests go to the channel in view
}

// viewing is the channel a user looked at from their assistant DM.
type viewing struct{ user, channel string }

func newAssistantState(c *slackClient, store research.Store, records slackstate.Store, log *slog.Logger, channels schedule.ChannelChecker) *assistantState {
	return &assistantState{contexts: map[string]string{}, latest: map[string]viewing{}, titles: map[string]string{},
		slack: c, store: store, records: records, log: log, channels: channels}
}

// bound makes room in m for one more entry.
func bound[V any](m map[string]V) {
	if len(m) < maxAssistantEntries {
		return
	}
	for k := range m {
		delete(m, k)
		if len(m) < maxAssistantEntries {
			return
		}
	}
}

// onAssistantContext remembers the channel the user looks at in an
// assistant thread (assistant_thread_started, _context_changed).
func (a *assistantState) onAssistantContext(at slackevents.AssistantThread) {
	ch := at.Context.ChannelID
	if a == nil || ch == "" || at.ChannelID == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	bound(a.contexts)
	a.contexts[at.ChannelID+"/"+at.ThreadTimeStamp] = ch
	bound(a.latest)
	a.latest[at.ChannelID] = viewing{user: at.UserID, channel: ch}
}

// scheduleDefaultChannel is the channel the schedule modal offers first.
// From a channel it is that channel. From an assistant DM it is the
// channel the user last looked at with the pane open, when digests may go
// there (the allow-list and CheckChannel); otherwise the DM as before,
// which the modal's channel picker does not offer.
func (a *assistantState) scheduleDefaultChannel(ctx context.Context, channel, user string) string {
	if !strings.HasPrefix(channel, "D") || a == nil {
		return channel
	}
	a.mu.Lock()
	v, ok := a.latest[channel]
	a.mu.Unlock()
	if !ok || v.user != user || v.channel == "" {
		return channel
	}
	problem, err := a.channels.CheckChannel(ctx, v.channel, user)
	if err != nil {
		a.log.Warn("bot: check the assistant's context channel", "channel", v.channel, "err", err)
		return channel
	}
	if problem != "" {
		a.log.Debug("bot: the assistant's context channel is not offered", "channel", v.channel, "why", problem)
		return channel
	}
	return v.channel
}

// suggestedPrompts are the prompts offered when an assistant thread opens,
// in the bot's languages.
var suggestedPrompts = map[lang]struct {
	title   string
	prompts []slack.AssistantThreadsPrompt
}{
	langEN: {"What should I research?", []slack.AssistantThreadsPrompt{
		{Title: "Regulation trends", Message: "Research this year's trends in AI regulation in Japan, the EU and the US, with sources."},
		{Title: "Competitor news", Message: "Summarise this month's news about our main competitors, with sources."},
		{Title: "Technology deep dive", Message: "Compare vector databases for a 10M-document RAG system: cost, latency, operations."},
		{Title: "Market overview", Message: "Give me an overview of the market for AI coding assistants: players, pricing, adoption."},
	}},
	langJA: {"何を調べましょうか？", []slack.AssistantThreadsPrompt{
		{Title: "規制の動向", Message: "2026年の国内生成AI規制の動向を、出典つきで調べて"},
		{Title: "競合ニュース", Message: "主要な競合の今月のニュースを、出典つきでまとめて"},
		{Title: "技術の比較", Message: "1000万文書のRAG向けにベクトルDBを比較して（コスト、レイテンシ、運用）"},
		{Title: "市場の概観", Message: "AIコーディング支援ツールの市場を概観して（主要企業、価格、普及状況）"},
	}},
}

// onAssistantThreadStarted offers prompts in the user's language and
// remembers the channel the user is looking at.
func (a *assistantState) onAssistantThreadStarted(ctx context.Context, ev *slackevents.AssistantThreadStartedEvent) {
	at := ev.AssistantThread
	a.onAssistantContext(at)
	sp := suggestedPrompts[a.slack.userLang(ctx, at.UserID)]
	err := a.slack.call(ctx, "assistant.threads.setSuggestedPrompts", true, func(ctx context.Context) error {
		return a.slack.api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{
			ChannelID: at.ChannelID,
			ThreadTS:  at.ThreadTimeStamp,
			Title:     sp.title,
			Prompts:   sp.prompts,
		})
	})
	if err != nil {
		a.log.Warn("bot: suggested prompts", "err", err)
	}
}

// threadTitle makes a thread title of untrusted text: one line, escaped
// (no mention, link or control character survives), at most
// maxTitleRunes.
func threadTitle(s string) string {
	s = strings.Join(strings.FieldsFunc(CleanText(s), func(r rune) bool {
		return unicode.IsSpace(r) || zeroWidth(r) || r == '\u2028' || r == '\u2029'
	}), " ")
	return truncateEscaped(s, maxTitleRunes)
}

// setThreadTitle sets an assistant thread's title unless it has it already.
func (a *assistantState) setThreadTitle(ctx context.Context, key slackstate.ThreadKey, title string) {
	if title == "" {
		return
	}
	id := key.ThreadID()
	a.mu.Lock()
	same := a.titles[id] == title
	a.mu.Unlock()
	if same {
		return
	}
	err := a.slack.call(ctx, "assistant.threads.setTitle", true, func(ctx context.Context) error {
		return a.slack.api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{
			ChannelID: key.Channel, ThreadTS: key.ThreadTS, Title: title,
		})
	})
	if err != nil {
		a.log.Warn("bot: assistant thread title", "thread_id", id, "err", err)
		return
	}
	a.mu.Lock()
	bound(a.titles)
	a.titles[id] = title
	a.mu.Unlock()
}

// forgetTitle drops the memory of a thread's title.
func (a *assistantState) forgetTitle(threadID string) {
	a.mu.Lock()
	delete(a.titles, threadID)
	a.mu.Unlock()
}

// dmThreadID reports whether a graph thread id names a Slack DM thread.
func dmThreadID(id string) bool {
	parts := strings.SplitN(id, ":", 4)
	return len(parts) == 4 && parts[0] == "slack" && strings.HasPrefix(parts[2], "D")
}

// titlingResearcher titles assistant threads while their first run works:
// the question cut short when the research starts, the plan's theme once
// there is a plan. Follow-ups keep the thread's title.
type titlingResearcher struct {
	Researcher
	a *assistantState
}

// titledRun is the thread of the run a researcher call works on, when it
// titles its thread.
func (t titlingResearcher) titledRun(ctx context.Context, threadID string) (slackstate.ThreadKey, bool) {
	if !dmThreadID(threadID) {
		return slackstate.ThreadKey{}, false
	}
	r, err := t.a.store.LatestRun(ctx, threadID)
	if err != nil || r.FollowUp {
		return slackstate.ThreadKey{}, false
	}
	p, err := t.a.records.Place(ctx, r.ID)
	if err != nil || !strings.HasPrefix(p.Key.Channel, "D") {
		return slackstate.ThreadKey{}, false
	}
	return p.Key, true
}

// themeSink passes progress on to sink and, the first time a plan shows
// up with its theme, sets the thread's title to the theme. The title is
// set in the background: a sink must not block the research.
func (t titlingResearcher) themeSink(ctx context.Context, key slackstate.ThreadKey, sink research.ProgressSink) research.ProgressSink {
	var done atomic.Bool
	return func(p research.Progress) {
		sink(p)
		if len(p.Plan) == 0 || done.Load() {
			return
		}
		theme := p.Theme
		if strings.TrimSpace(theme) == "" || done.Swap(true) {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			t.a.setThreadTitle(ctx, key, threadTitle(theme))
		}()
	}
}

// finished forgets a thread's title once its run has ended.
func (t titlingResearcher) finished(threadID string, out research.Outcome, err error) {
	if err == nil && out.Result != nil {
		t.a.forgetTitle(threadID)
	}
}

func (t titlingResearcher) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	r, ok := t.titledRun(ctx, req.ThreadID)
	if !ok {
		return t.Researcher.Start(ctx, req, sink)
	}
	t.a.setThreadTitle(ctx, r, threadTitle(req.Question))
	out, err := t.Researcher.Start(ctx, req, t.themeSink(ctx, r, sink))
	t.finished(req.ThreadID, out, err)
	return out, err
}

func (t titlingResearcher) Resume(ctx context.Context, threadID, interruptID string, ans research.Answer, sink research.ProgressSink) (research.Outcome, error) {
	r, ok := t.titledRun(ctx, threadID)
	if !ok {
		return t.Researcher.Resume(ctx, threadID, interruptID, ans, sink)
	}
	out, err := t.Researcher.Resume(ctx, threadID, interruptID, ans, t.themeSink(ctx, r, sink))
	t.finished(threadID, out, err)
	return out, err
}

func (t titlingResearcher) Continue(ctx context.Context, threadID string, sink research.ProgressSink) (research.Outcome, error) {
	r, ok := t.titledRun(ctx, threadID)
	if !ok {
		return t.Researcher.Continue(ctx, threadID, sink)
	}
	out, err := t.Researcher.Continue(ctx, threadID, t.themeSink(ctx, r, sink))
	t.finished(threadID, out, err)
	return out, err
}

func (t titlingResearcher) Cancel(ctx context.Context, threadID string) error {
	t.a.forgetTitle(threadID)
	return t.Researcher.Cancel(ctx, threadID)
}
