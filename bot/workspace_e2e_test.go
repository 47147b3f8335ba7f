package bot_test

import (
	"log/slog"
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
)

// The bot tells the production researcher that a run ended.
var _ bot.RunEnder = (*research.Runner)(nil)

// TestDMRunLeavesNothingOfTheWorkspace: a DM run of the real researcher
// (agent over a fake model and web) on SQLite searches the asker's private
// channel through the fake Slack's assistant.search.context and reads a
// message there; once the run is done, no row of the database holds the
// message's text or the asker's action_token (SQLite, PostgreSQL) — not the research notes,
// not the checkpoints or their writes, not the run.
func TestDMRunLeavesNothingOfTheWorkspace(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) { dmRunLeavesNothing(t, kind) })
	}
}

func dmRunLeavesNothing(t *testing.T, kind string) {
	h := newHarness(t)
	h.store = nil // the runs are in SQLite
	ctx := testCtx(t)
	const secret = "Larkspur acquisition: our AI Act timeline puts the budget at 40 million, secret until May."
	h.fake.AddChannel(slackfake.Channel{ID: "G0EXEC", Name: "exec", IsPrivate: true, Members: []string{"U1"}})
	// Written well before the question: the search finds only what was
	// written before the asking message's second.
	h.fake.AddMessage(slackfake.Message{Channel: "G0EXEC", User: "U1", Text: secret, TS: "1700000000.000100"})

	db, find := durableDB(t, kind)
	// One Slack client for the bot and the researcher's workspace search.
	client := bot.NewClient(bot.ClientOptions{BotToken: h.fake.BotToken(), AppToken: h.fake.AppToken(), APIURL: h.fake.APIURL()})
	ws, err := bot.NewWorkspaceSearch(bot.WorkspaceSearchOptions{Client: client, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	web := agenttest.NewWorld()
	srv := llmtest.NewServer(t, agenttest.NewBrain().Respond)
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, srv, nil), Search: web, Fetch: web, Saver: db.Saver(), Notes: db.Notes(),
		Workspace: ws, Logger: slog.New(slog.DiscardHandler)}, agent.Options{MinSources: 2})
	if err != nil {
		t.Fatal(err)
	}
	runner := research.NewRunner(a, research.RunnerOptions{Logger: slog.New(slog.DiscardHandler)})
	h.runOn(runner, db.Runs(), db.Slack(), noDraftApproval, func(o *bot.Options) { o.WorkspaceSearch, o.Client = true, client })

	sent := h.message(ctx, slackfake.MessageEvent{User: "U1", Channel: "D0U1", Text: "What did we decide about the AI Act timeline?"})
	key := slackstate.ThreadKey{Team: h.fake.TeamID(), Channel: "D0U1", ThreadTS: sent.TS}
	var run research.Run
	h.waitFor(ctx, "run done", func() bool {
		run, err = db.Runs().LatestRun(ctx, key.ThreadID())
		return err == nil && !run.State.Active()
	})
	if run.State != research.StateDone {
		t.Fatalf("run ended %s: %s", run.State, run.Error)
	}
	if h.fake.Calls("assistant.search.context") == 0 {
		t.Fatal("the run never searched the workspace: the test needs it to")
	}
	if report := h.files("D0U1", sent.TS); len(report) != 1 || !strings.Contains(string(report[0].Content), "/archives/G0EXEC/") {
		t.Fatal("the report does not cite the private message: the test needs the run to have read it")
	}
	var token string
	for _, c := range h.fake.CallLog("assistant.search.context") {
		token = c.Params.Get("action_token")
	}
	if hits := find(secret[:40], "secret until May", token); len(hits) > 0 {
		t.Errorf("after the run, the database holds what the workspace search found, or the token: %v", hits)
	}
}
