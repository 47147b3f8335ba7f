package bot

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"deepresearch/research"

	"github.com/slack-go/slack"
)

// Fragments hostile text is built from: mentions in every spelling Slack
// might act on, links whose text is not their target, zero-width and
// full-width variants, control characters, NUL and invalid UTF-8.
var hostileFragments = []string{
	"<!channel>", "<!here>", "<!everyone>", "<!here|here>", "<!subteam^S0123|@team>", "<@U0123>", "<@W0123|bob>", "<#C0123>",
	"@channel", "@here", "@everyone", "@all", "＠channel", "@ｈｅｒｅ", "＠ａｌｌ", "@\u200bchannel", "@\u200dhere", "@c\u200bhannel",
	"<!chan\u200dnel>", "<\u200b!channel>", "&lt;!channel&gt;", "&", "<", ">", "|", "[", "]", "(", ")", "!", "*", "_", "~", "`", "\n", "\t",
	"<https://evil.example|https://good.example>", "<https://evil.example|click>",
	"[https://good.example](https://evil.example)", "[click](https://evil.example \"t\")", "![i](https://evil.example/i.png)",
	"[a [b] c](https://evil.example)", "[good][1]\n[1]: https://evil.example", "[x] (https://evil.example)",
	"https://good.example", "\x00", "\x1b]52;c;aGk=\x07", "\x1b[31m", "\r", "\x7f", "\u0085", "\u009b", "\u202e", "\u2066",
	"\xff", "\xc3", "日本語", "👨\u200d👩\u200d👧", "\u2060", "\ufeff", "**bold**", "# heading", "- item", "> quote", "```",
}

// hostileString builds a random string from fragments and random runes.
func hostileString(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(12) {
		switch r.IntN(4) {
		case 0:
			b.WriteRune(rune(r.IntN(0x3000)))
		case 1:
			b.WriteString(" ")
		default:
			b.WriteString(hostileFragments[r.IntN(len(hostileFragments))])
		}
	}
	return b.String()
}

// renderedPayloads renders s through every renderer of the bot, as the
// JSON Slack would receive (message text and blocks, views).
// With all false, one language, one interrupt kind and one action are
// rendered (long strings: each costs a binary search of the escaped length).
func renderedPayloads(s string, all bool) map[string]any {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	name := Escape(s) // userName escapes display names
	out := map[string]any{}
	add := func(what, text string, blocks []slack.Block) {
		out[what] = map[string]any{"text": text, "blocks": blocks}
	}
	p := research.Progress{Phase: s, Plan: []string{s, s}, Subtasks: []research.Subtask{{Title: s, State: research.SubtaskRunning}}, Note: s, SourcesRead: 3}
	langs, kinds, actions, states := []lang{langEN, langJA}, []research.InterruptKind{research.InterruptPlan, research.InterruptDraft, research.InterruptQuestion}, []research.Action{research.ActionApprove, research.ActionRevise, research.ActionMore, research.ActionCancel, research.ActionAnswer}, research.AllStates
	if !all {
		langs, kinds, actions, states = langs[:1], kinds[:1], actions[1:2], []research.RunState{research.StateRunning, research.StateFailed}
	}
	for _, l := range langs {
		for _, st := range states {
			text, blocks := statusBlocks(statusView{Question: s, Requester: name, State: st, Progress: p, Started: now, Now: now, RunID: "r1", Note: "Cancelled by *" + name + "*.", Lang: l})
			add(fmt.Sprintf("status %s %d", st, l), text, blocks)
		}
	}
	text, blocks := statusBlocks(statusView{Question: s, State: research.StateFailed, RunID: "r1", Note: failedNote("r1")})
	add("status failed note", text, blocks)
	for _, l := range langs {
		for _, k := range kinds {
			text, blocks := interruptBlocks("r1", research.Interrupt{ID: "i1", Kind: k, Text: s, Draft: s}, name, l)
			add(fmt.Sprintf("interrupt %s %d", k, l), text, blocks)
			text, blocks = interruptBlocks("r1", research.Interrupt{ID: "i1", Kind: k, Draft: s}, name, l)
			add(fmt.Sprintf("interrupt draft only %s %d", k, l), text, blocks)
			for _, a := range actions {
				text, blocks := decidedBlocks(research.PendingInterrupt{ID: "i1", Kind: k, Text: s}, research.Decision{InterruptID: "i1", Action: a, Text: s, By: "U1"}, name, l)
				add(fmt.Sprintf("decided %s %s %d", k, a, l), text, blocks)
			}
		}
		add(fmt.Sprintf("report %d", l), "", reportBlocks(research.Result{Title: s, Summary: s, Report: s, Sources: 1}, name, l))
		add(fmt.Sprintf("report title %d", l), "", reportTitleBlocks(research.Result{Title: s, Summary: s}, name, l))
		add(fmt.Sprintf("report untitled %d", l), "", reportBlocks(research.Result{Summary: s + "\n\n" + s}, name, l))
	}
	add("summary apart", "", []slack.Block{slack.NewMarkdownBlock("dr_summary", truncateEscaped(s, summaryChars))}) // runs.go uploadReport
	add("home", "", homeBlocks([]research.Run{{ID: "r1", Question: s, State: research.StateDone}, {ID: "r2", Question: s}}, map[string]string{"r1": s, "r2": "C0123"}, map[string]research.FeedbackCount{"r1": {Good: 1}}, now))
	h := &handlers{opts: &Options{Subcommands: map[string]SlashHandler{s: nil}}}
	out["help"] = map[string]any{"text": h.slashHelp(s)}
	out["channel ref"] = map[string]any{"text": ChannelRef(s)}
	out["upload title"] = map[string]any{"title": plainTitle(Truncate(s, 200))}
	return out
}

// checkRendered fails when a payload rendered from s could notify
// someone, spoof a link or carry a control character.
func checkRendered(t *testing.T, s string, all bool) {
	t.Helper()
	for what, payload := range renderedPayloads(s, all) {
		raw, err := json.Marshal(payload)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if h := Hazards(string(raw)); len(h) > 0 {
			t.Errorf("%s from %.200q: %v", what, s, h)
		}
	}
}

// TestRenderersNeverPingSpoofOrCarryControls is the short, seeded version
// of FuzzRenderers: every adversarial fragment alone and 50 random
// combinations through every renderer in both languages, 150 more and a
// 100 KB string through each renderer once.
func TestRenderersNeverPingSpoofOrCarryControls(t *testing.T) {
	for _, s := range append(append([]string{}, hostileFragments...), adversarial...) {
		checkRendered(t, s, true)
	}
	r := rand.New(rand.NewPCG(12, 2026))
	for i := range 200 {
		checkRendered(t, hostileString(r), i%4 == 0)
	}
	var big strings.Builder
	for big.Len() < 100_000 {
		big.WriteString(hostileString(r))
	}
	checkRendered(t, big.String(), false)
	for _, blocks := range [][]slack.Block{reportBlocks(research.Result{Title: big.String(), Summary: big.String()}, "x", langEN)} {
		checkBlocks(t, "report 100 KB", blocks)
	}
}

func FuzzRenderers(f *testing.F) {
	for _, s := range hostileFragments {
		f.Add(s)
	}
	f.Add("[https://good.example](https://evil.example) <!channel> ＠here \x00")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) && len(s) > 2000 {
			return
		}
		checkRendered(t, s, true)
	})
}
