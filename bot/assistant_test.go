package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/sqlitetest"
)

// themedResearcher is the scripted researcher, planning first: the note
// of the step that made the plan names its theme, and stays until the next
// step changes it (token counts alone do not).
type themedResearcher struct {
	*fakeResearcher
	theme string
}

func (r themedResearcher) Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	sink(research.Progress{Phase: "planning"})
	for i := range 5 {
		sink(research.Progress{Phase: "researching", Plan: []string{"Find recent news", "Compare"}, Tokens: 100 * i, Theme: r.theme, Note: "planned: " + r.theme})
	}
	sink(research.Progress{Phase: "researching", Plan: []string{"Find recent news", "Compare"}, Tokens: 600, Note: "reading source"})
	return r.fakeResearcher.Start(ctx, req, sink)
}

func titlesOf(fake *slackfake.Server, channel, threadTS string) []string {
	var out []string
	for _, ti := range fake.Titles() {
		if ti.Channel == channel && ti.ThreadTS == threadTS {
			out = append(out, ti.Title)
		}
	}
	return out
}

// TestAssistantThreadTitle: a run in an assistant thread titles the thread
// with its question (one line, escaped), then once with the plan's theme,
// however many progress steps follow; a follow-up keeps the title, and a
// channel thread gets none.
func TestAssistantThreadTitle(t *testing.T) {
	h := newHarness(t)
	res := themedResearcher{fakeResearcher: h.res, theme: "EU AI Act\n timeline " + evilText + "\x1b[31m"}
	h.startWith(res, noDraftApproval)
	ctx := testCtx(t)
	h.connected(ctx, 1)
	started, err := h.fake.SendAssistantThreadStarted(ctx, slackfake.AssistantThreadStarted{User: "U5"})
	if err != nil {
		t.Fatal(err)
	}
	dm := "D5"
	h.message(ctx, slackfake.MessageEvent{User: "U5", Channel: dm, ThreadTS: started.TS, Text: "What changed in the EU AI Act?\n<!channel> " + strings.Repeat("detail ", 40)})
	h.waitReports(ctx, dm, started.TS, 1)
	h.waitFor(ctx, "two titles", func() bool { return len(titlesOf(h.fake, dm, started.TS)) >= 2 })

	titles := titlesOf(h.fake, dm, started.TS)
	if len(titles) != 2 {
		t.Fatalf("titles = %q, want the question's and the theme's", titles)
	}
	if !strings.HasPrefix(titles[0], "What changed in the EU AI Act? &lt;!channel&gt; detail") {
		t.Errorf("first title = %q, want the question on one line, escaped", titles[0])
	}
	if !strings.HasPrefix(titles[1], "EU AI Act timeline &lt;!channel&gt;") {
		t.Errorf("second title = %q, want the theme on one line, escaped", titles[1])
	}
	for _, ti := range titles {
		if n := len([]rune(ti)); n > 80 {
			t.Errorf("title %q has %d runes, want at most 80", ti, n)
		}
		if strings.ContainsFunc(ti, func(r rune) bool { return unicode.IsControl(r) }) {
			t.Errorf("title %q has control characters", ti)
		}
		if hz := bot.Hazards(ti); len(hz) > 0 {
			t.Errorf("title %q: %v", ti, hz)
		}
	}

	// A follow-up in the thread keeps its title.
	h.waitState(ctx, dm, started.TS, research.StateDone)
	h.message(ctx, slackfake.MessageEvent{User: "U5", Channel: dm, ThreadTS: started.TS, Text: "rewrite it shorter"})
	h.waitReports(ctx, dm, started.TS, 2)
	if got := titlesOf(h.fake, dm, started.TS); len(got) != 2 {
		t.Errorf("after a follow-up, titles = %q, want the 2 of the first run", got)
	}

	// A channel thread is no assistant thread.
	h.fake.AddChannel(slackfake.Channel{ID: "C1", Name: "research"})
	m := h.mention(ctx, "U5", "C1", "<@"+h.fake.BotUserID()+"> research EU AI Act", "")
	h.waitReports(ctx, "C1", m.TS, 1)
	for _, ti := range h.fake.Titles() {
		if ti.Channel == "C1" {
			t.Errorf("a channel thread got a title: %+v", ti)
		}
	}
}

// TestAssistantSuggestedPromptsFollowLocale: a new assistant thread gets
// suggested prompts in its user's Slack language.
func TestAssistantSuggestedPromptsFollowLocale(t *testing.T) {
	h := newHarness(t)
	h.fake.AddUser(slackfake.User{ID: "UJA", Name: "hanako", Locale: "ja-JP"})
	h.fake.AddUser(slackfake.User{ID: "UEN", Name: "alice", Locale: "en-US"})
	h.start(noDraftApproval)
	ctx := testCtx(t)
	h.connected(ctx, 1)
	tests := []struct {
		user, title string
		japanese    bool
	}{
		{"UJA", "何を調べましょうか？", true},
		{"UEN", "What should I research?", false},
	}
	for _, tt := range tests {
		started, err := h.fake.SendAssistantThreadStarted(ctx, slackfake.AssistantThreadStarted{User: tt.user})
		if err != nil {
			t.Fatal(err)
		}
		var got slackfake.SuggestedPrompts
		h.waitFor(ctx, "prompts for "+tt.user, func() bool {
			for _, p := range h.fake.SuggestedPrompts() {
				if p.ThreadTS == started.TS {
					got = p
					return true
				}
			}
			return false
		})
		if got.Title != tt.title || len(got.Prompts) == 0 || len(got.Prompts) > 4 {
			t.Errorf("%s: prompts = %+v, want title %q and 1 to 4 prompts", tt.user, got, tt.title)
		}
		for _, p := range got.Prompts {
			ja := strings.ContainsFunc(p.Title+p.Message, func(r rune) bool { return unicode.In(r, unicode.Hiragana, unicode.Katakana, unicode.Han) })
			if ja != tt.japanese {
				t.Errorf("%s: prompt %+v, want Japanese %v", tt.user, p, tt.japanese)
			}
			if strings.HasPrefix(p.Message, "/") {
				t.Errorf("%s: prompt %+v is a slash command; a prompt is posted as a message", tt.user, p)
			}
		}
	}
}

// TestAssistantContextDefaultsScheduleChannel: /research schedule from the
// assistant pane offers the channel the user looks at (the latest context
// event of the thread), unless digests may not go there.
func TestAssistantContextDefaultsScheduleChannel(t *testing.T) {
	h := newHarness(t)
	h.fake.AddChannel(slackfake.Channel{ID: "COK", Name: "ok"})
	h.fake.AddChannel(slackfake.Channel{ID: "CNEXT", Name: "next"})
	h.fake.AddChannel(slackfake.Channel{ID: "COFF", Name: "off"})
	h.fake.AddChannel(slackfake.Channel{ID: "CNOBOT", Name: "nobot", BotAbsent: true})
	h.start(func(o *bot.Options) {
		o.Digests = servedBy(&schedule.Manager{Store: sqlitetest.Schedules(t)})
		o.AllowedChannels = []string{"COK", "CNEXT", "CNOBOT"}
	})
	ctx := testCtx(t)
	h.connected(ctx, 1)
	tests := []struct {
		name           string
		user           string
		started, moved string // context channels: at the start, then changed to ("" none)
		want           string // the modal's initial channel
	}{
		{"context at the start", "U11", "COK", "", "COK"},
		{"context changed", "U12", "COK", "CNEXT", "CNEXT"},
		{"changed from nothing", "U13", "", "COK", "COK"},
		{"not on the allow-list", "U14", "COFF", "", "D14"},
		{"changed to a channel off the allow-list", "U15", "COK", "COFF", "D15"},
		{"bot not a member", "U16", "CNOBOT", "", "D16"},
		{"no context", "U17", "", "", "D17"},
	}
	for _, tt := range tests {
		started, err := h.fake.SendAssistantThreadStarted(ctx, slackfake.AssistantThreadStarted{User: tt.user, ContextChannel: tt.started})
		if err != nil {
			t.Fatal(err)
		}
		h.waitDone(ctx, h.inboxKey(started.EnvelopeID))
		dm := "D" + tt.user[1:]
		if tt.moved != "" {
			sent, err := h.fake.SendAssistantThreadContextChanged(ctx, slackfake.AssistantThreadStarted{User: tt.user, Channel: dm, ThreadTS: started.TS, ContextChannel: tt.moved})
			if err != nil {
				t.Fatal(err)
			}
			h.waitDone(ctx, h.inboxKey(sent.EnvelopeID))
		}
		sent, err := h.fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "schedule weekly news", User: tt.user, Channel: dm})
		if err != nil {
			t.Fatal(err)
		}
		h.waitDone(ctx, h.inboxKey(sent.EnvelopeID))
		var modal slackfake.View
		h.waitFor(ctx, "the schedule modal of "+tt.user, func() bool {
			for _, v := range h.fake.Views() {
				if v.CallbackID == bot.SchedCallbackCreate && strings.Contains(v.PrivateMetadata, `"channel":"`+dm+`"`) {
					modal = v
					return true
				}
			}
			return false
		})
		if got := initialConversation(t, modal.JSON); got != tt.want {
			t.Errorf("%s: the modal offers %q, want %q", tt.name, got, tt.want)
		}
	}
}

// initialConversation is the initial channel of the schedule modal's
// channel picker.
func initialConversation(t *testing.T, view json.RawMessage) string {
	t.Helper()
	var v struct {
		Blocks []struct {
			BlockID string `json:"block_id"`
			Element struct {
				InitialConversation string `json:"initial_conversation"`
			} `json:"element"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(view, &v); err != nil {
		t.Fatal(err)
	}
	for _, b := range v.Blocks {
		if b.BlockID == bot.SchedBlockChannel {
			return b.Element.InitialConversation
		}
	}
	t.Fatalf("no channel block in %s", view)
	return ""
}
