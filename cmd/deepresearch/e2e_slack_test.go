package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
)

// inlineQuotes is the style many models write: the quoted words stand in
// the sentence right before the marker, typographic quotes included, and
// the footnote holds only the title and the URL.
func inlineQuotes(b *strings.Builder, ms [][]string) {
	for i, m := range ms {
		left, right := `"`, `"`
		if i%2 == 1 {
			left, right = "“", "”"
		}
		fmt.Fprintf(b, "- According to %s, %s%s%s[^%d]\n", m[4], left, m[3], right, i+1)
	}
	b.WriteString("\n## Detailed Analysis\n\nSee above.\n\n## References\n\n")
	for i, m := range ms {
		fmt.Fprintf(b, "[^%d]: %s, %s\n", i+1, m[4], m[5])
	}
}

// TestServeEndToEndInlineQuotes runs the real serve against the strict
// slackfake (markdown blocks refused in file shares, as real Slack does),
// the real agent and a model that quotes inline: the report file reaches
// the thread, its citations are verified, the status message says Done.
func TestServeEndToEndInlineQuotes(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	vars := askWorldWriting(t, inlineQuotes)
	vars["SLACK_BOT_TOKEN"], vars["SLACK_APP_TOKEN"], vars["SLACK_API_URL"] = fake.BotToken(), fake.AppToken(), fake.APIURL()
	vars["DEEPRESEARCH_HTTP_ADDR"] = "off"
	vars["DEEPRESEARCH_APPROVE_DRAFT"] = "false"
	srv := startServe(t, fake, vars, 90*time.Second)
	ctx, waitFor := srv.ctx, srv.waitFor
	srv.connected(1)
	sent, err := fake.SendAppMention(ctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "What does the EU AI Act require?"})
	if err != nil {
		t.Fatal(err)
	}
	threadID := slackstate.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}.ThreadID()
	var state research.RunState
	waitFor("the run to end", func() bool {
		r, err := latestRun(ctx, vars, threadID)
		state = r.State
		return err == nil && !r.State.Active()
	})
	if state != research.StateDone {
		t.Fatalf("run ended %s\n%s", state, srv.stderr.String())
	}
	var report slackfake.File
	for _, f := range fake.Files() {
		if f.Completed && f.ThreadTS == sent.TS {
			report = f
		}
	}
	if report.ID == "" {
		t.Fatalf("no report file in the thread; files: %+v", fake.Files())
	}
	if o := fake.Orphans(); len(o) != 0 {
		t.Errorf("unshared files left: %d", len(o))
	}
	// Every footnote quotes its page verbatim (the inline quotes were
	// checked and moved into the footnotes), none is marked unverified.
	checkFootnotes(t, string(report.Content))
	waitFor("the status message to say done", func() bool {
		for _, m := range fake.Thread("C1", sent.TS) {
			if m.IsBot() && strings.Contains(string(m.Blocks), "Done") && strings.Contains(string(m.Blocks), "sources read") {
				return true
			}
		}
		return false
	})
	if p := fake.Pings(); len(p) > 0 {
		t.Errorf("the bot pinged: %+v", p)
	}
	srv.exit()
}
