package bot_test

import (
	"strings"
	"testing"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

// `/research deep <question>` starts a deep run by a team, within the
// channel allow-list and the per-user limit like any other.
func TestSlashDeepStartsATeamRun(t *testing.T) {
	h := newHarness(t)
	defer h.holdRuns()()
	h.start(func(o *bot.Options) {
		o.AllowedChannels = []string{"C1"}
		o.MaxRunsPerUser = 1
	})
	ctx := testCtx(t)

	h.slash(t, "U1", "C2", "deep what changed in the EU AI Act?")
	h.responseContaining(t, "not enabled in this channel")

	h.slash(t, "U1", "C1", "deep what changed in the EU AI Act?")
	var top slackfake.Message
	h.waitFor(ctx, "top-level question message", func() bool {
		for _, m := range h.fake.Messages("C1") {
			if m.IsBot() && m.ThreadTS == "" && strings.Contains(m.Text, "EU AI Act") {
				top = m
				return true
			}
		}
		return false
	})
	r := h.waitState(ctx, "C1", top.TS, research.StateRunning)
	if r.Options.TeamSize != bot.DeepTeamSize || r.Options.Depth != "deep" || r.Question != "what changed in the EU AI Act?" {
		t.Errorf("run %q with options %+v", r.Question, r.Options)
	}

	h.slash(t, "U1", "C1", "deep and another question about the AI Act?")
	h.waitFor(ctx, "per-user limit", func() bool {
		for _, m := range h.fake.Messages("C1") {
			if strings.Contains(m.Text, "already have 1") {
				return true
			}
		}
		for _, e := range h.fake.Ephemerals() {
			if strings.Contains(e.Text, "already have 1") {
				return true
			}
		}
		return false
	})
	if runs, _ := h.store.ListRuns(ctx, research.RunFilter{}); len(runs) != 1 {
		t.Errorf("%d runs, want 1", len(runs))
	}
}
