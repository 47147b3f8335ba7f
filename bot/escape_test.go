package bot

import (
	"strings"
	"testing"
	"unicode/utf8"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

func TestEscapeNeverPings(t *testing.T) {
	inputs := []string{
		"<!channel>", "<!here|here>", "<!everyone>", "<@U123>", "<@W123|bob>", "<!subteam^S1|@team>",
		"@channel please", "hey @here", "@everyone!", "@Channel", "a@here.com", "&lt;!channel&gt;",
		"<<!here>>", "<#C123>", "<https://evil.example|click>",
	}
	for _, in := range inputs {
		out := Escape(in)
		if slackfake.MentionsBroadcast(out) {
			t.Errorf("Escape(%q) = %q still pings", in, out)
		}
		if strings.ContainsAny(out, "<>") {
			t.Errorf("Escape(%q) = %q keeps angle brackets", in, out)
		}
		for _, w := range []string{"@channel", "@here", "@everyone"} {
			if strings.Contains(strings.ToLower(out), w) {
				t.Errorf("Escape(%q) = %q keeps %s", in, out, w)
			}
		}
	}
	if got := Escape("a & b"); got != "a &amp; b" {
		t.Errorf("Escape(&) = %q", got)
	}
	if got := Escape("mail me at bob@hereford.example"); got != "mail me at bob@hereford.example" {
		t.Errorf("an address was changed: %q", got)
	}
}

func TestTruncateEscaped(t *testing.T) {
	s := strings.Repeat("<&>", 2000)
	out := truncateEscaped(s, 3000)
	if n := utf8.RuneCountInString(out); n > 3000 {
		t.Fatalf("%d runes", n)
	}
	body := strings.TrimSuffix(out, "…")
	if strings.HasSuffix(body, "&") || strings.HasSuffix(body, "&l") || strings.HasSuffix(body, "&am") {
		t.Errorf("cut inside an escape: %q", out[len(out)-10:])
	}
	if got := truncateEscaped("short", 10); got != "short" {
		t.Errorf("short = %q", got)
	}
	if got := Truncate("日本語のテキスト", 4); got != "日本語…" {
		t.Errorf("Truncate = %q", got)
	}
}

func TestRenderWithinSlackLimits(t *testing.T) {
	long := strings.Repeat("長い計画の手順 <!here> ", 400)
	var plan []string
	var subs []research.Subtask
	for range 200 {
		plan = append(plan, long[:300])
		subs = append(subs, research.Subtask{Title: long[:300], State: research.SubtaskRunning})
	}
	_, blocks := statusBlocks(statusView{Question: long, State: research.StateRunning, Progress: research.Progress{Plan: plan, Subtasks: subs, Note: long}})
	checkBlocks(t, "status", blocks)
	_, blocks = interruptBlocks("r1", research.Interrupt{ID: "i1", Kind: research.InterruptDraft, Text: strings.Repeat(long, 3)}, "bob", langEN)
	checkBlocks(t, "interrupt", blocks)
	blocks = reportBlocks(research.Result{Title: long, Summary: long}, "bob", langEN)
	checkBlocks(t, "report", blocks)
	runs := make([]research.Run, 100)
	for i := range runs {
		runs[i] = research.Run{ID: "r", Question: long, State: research.StateDone}
	}
	checkBlocks(t, "home", homeBlocks(runs, nil, map[string]research.FeedbackCount{runs[0].ID: {Good: 2, Bad: 1}}, runs[0].CreatedAt))
}
