package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/clock"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/sqlitetest"
	"deepresearch/storage/sqlstore"
)

// digestHarness connects slack-go's real Socket Mode client to the fake
// Slack and dispatches interactive envelopes the way the bot does: ack at
// once (with ViewSubmissionResponse for view submissions), then
// HandleInteraction. The digests call Slack through a bot built on the fake
// (not running: the harness dispatches).
type digestHarness struct {
	fake    *slackfake.Server
	api     *slack.Client
	bot     *bot.Bot
	ui      *bot.Digests
	mgr     *schedule.Manager
	store   *sqlstore.Schedules
	runs    *sqlstore.Runs
	sched   *schedule.Scheduler
	clock   *clock.Manual
	handled chan string // envelope ids, after HandleInteraction returned
	res     *fakeResearcher
}

// starts counts the digest researches started.
func (h *digestHarness) starts() int {
	n := 0
	for _, c := range h.res.Calls() {
		if strings.HasPrefix(c, "start:schedule:") {
			n++
		}
	}
	return n
}

// settle lets the bot's run service work until no run is queued or
// running.
func (h *digestHarness) settle(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h.bot.RunService().Recover(ctx)
		active, err := h.runs.ListRuns(ctx, research.RunFilter{States: []research.RunState{research.StateQueued, research.StateRunning}})
		if err != nil {
			t.Fatal(err)
		}
		if len(active) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs still active: %+v", active)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// newDigestHarness builds the harness; res, when given, researches the
// digests (default: the bot tests' fakeResearcher).
func newDigestHarness(t *testing.T, res ...research.Researcher) *digestHarness {
	t.Helper()
	return newDigestHarnessOn(t, nil, res...)
}

// newDigestHarnessOn builds the harness with the bot's Slack store made by
// records from the database's (nil: that one).
func newDigestHarnessOn(t *testing.T, records func(*sqlstore.Slack) slackstate.Store, res ...research.Researcher) *digestHarness {
	t.Helper()
	fake := slackfake.New(slackfake.WithTriggerTTL(0))
	t.Cleanup(fake.Close)
	fake.AddUser(slackfake.User{ID: "UOWNER", Name: "owner", RealName: "Olivia Owner", TZ: "America/New_York"})
	fake.AddUser(slackfake.User{ID: "USTRANGER", Name: "stranger", RealName: "Sam Stranger", TZ: "Asia/Tokyo"})
	fake.AddChannel(slackfake.Channel{ID: "C1", Name: "research"})
	api := slack.New(fake.BotToken(), slack.OptionAPIURL(fake.APIURL()), slack.OptionAppLevelToken(fake.AppToken()))
	db := sqlitetest.Open(t)
	runs, st := sqlite.NewRuns(db), sqlite.NewSchedules(db)
	clk := clock.NewManual(time.Now())
	fr := newFakeResearcher()
	var r research.Researcher = fr
	if len(res) > 0 {
		r = res[0]
	}
	var (
		sched *schedule.Scheduler
		mgr   *schedule.Manager
	)
	// The scheduler hands its firings' runs to the bot's run service through
	// the bot's digest UI, as serve wires it.
	var rec slackstate.Store = sqlite.NewSlack(db)
	if records != nil {
		rec = records(sqlite.NewSlack(db))
	}
	b, err := bot.New(r, runs, rec, bot.Options{BotToken: slackfake.DefaultBotToken, AppToken: slackfake.DefaultAppToken, APIURL: fake.APIURL(),
		InstanceID: "test", Clock: clk, Digests: func(ui *bot.Digests) *schedule.Manager {
			sched = &schedule.Scheduler{Store: st, Runs: ui, Clock: clk}
			mgr = &schedule.Manager{Store: st, Scheduler: sched, Decider: runs, Admins: []string{"UADMIN"}, Clock: clk}
			return mgr
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.RunService().Shutdown(5 * time.Second) })
	ui := b.Digests()
	h := &digestHarness{fake: fake, api: api, bot: b, ui: ui, mgr: mgr, store: st, runs: runs, sched: sched, clock: clk, handled: make(chan string, 16), res: fr}

	ctx, cancel := context.WithCancel(context.Background())
	sm := socketmode.New(api)
	done := make(chan struct{})
	go func() { defer close(done); _ = sm.RunContext(ctx) }()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-sm.Events:
				if ev.Type != socketmode.EventTypeInteractive || ev.Request == nil {
					continue
				}
				cb, ok := ev.Data.(slack.InteractionCallback)
				if !ok {
					continue
				}
				var payload any
				if resp := ui.ViewSubmissionResponse(cb); resp != nil {
					payload = resp
				}
				sm.Ack(*ev.Request, payload)
				if err := ui.HandleInteraction(ctx, cb); err != nil {
					t.Errorf("HandleInteraction: %v", err)
				}
				h.handled <- ev.Request.EnvelopeID
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := fake.WaitConnections(wctx, 1); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *digestHarness) wait(t *testing.T, id string) {
	t.Helper()
	select {
	case got := <-h.handled:
		if got != id {
			t.Fatalf("handled %s, want %s", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("envelope %s not handled", id)
	}
}

func (h *digestHarness) openModal(t *testing.T) slackfake.View {
	t.Helper()
	reply, err := h.ui.SlashSchedule(context.Background(), slack.SlashCommand{
		Command: "/research", Text: "schedule competitor news", UserID: "UOWNER", ChannelID: "C1",
		TeamID: h.fake.TeamID(), TriggerID: h.fake.NewTriggerID()}, "competitor news")
	if err != nil || reply != "" {
		t.Fatalf("SlashSchedule = %q, %v", reply, err)
	}
	views := h.fake.Views()
	if len(views) == 0 {
		t.Fatal("no modal opened")
	}
	v := views[len(views)-1]
	if v.CallbackID != bot.SchedCallbackCreate {
		t.Fatalf("view = %+v", v)
	}
	return v
}

func values(cron, freq string) map[string]map[string]slackfake.InputValue {
	return map[string]map[string]slackfake.InputValue{
		bot.SchedBlockTopic:    {"value": {Value: "Competitor news <!channel>"}},
		bot.SchedBlockChannel:  {"value": {Type: "conversations_select", Channel: "C1"}},
		bot.SchedBlockFreq:     {"value": {Type: "static_select", SelectedOption: freq}},
		bot.SchedBlockCron:     {"value": {Value: cron}},
		bot.SchedBlockTZ:       {"value": {Value: "America/New_York"}},
		bot.SchedBlockDepth:    {"value": {Type: "static_select", SelectedOption: "quick"}},
		bot.SchedBlockApproval: {"value": {Type: "static_select", SelectedOption: "no"}},
	}
}

// TestModalRoundTrip: /research schedule opens the modal (trigger_id,
// the user's Slack time zone prefilled); an invalid submission is answered
// in the ack with response_action "errors" naming the field; a valid one
// stores the schedule and confirms.
func TestModalRoundTrip(t *testing.T) {
	h := newDigestHarness(t)
	ctx := context.Background()
	v := h.openModal(t)
	js := string(v.JSON)
	for _, want := range []string{`"America/New_York"`, `competitor news`, bot.SchedBlockCron, `"initial_conversation":"C1"`} {
		if !strings.Contains(js, want) {
			t.Errorf("modal lacks %s: %s", want, js)
		}
	}
	sent, err := h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "UOWNER", ViewID: v.ID, Values: values("61 9 * * *", "custom")})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(t, sent.EnvelopeID)
	if action, errs := viewAck(t, h.fake, sent.EnvelopeID); action != "errors" || errs[bot.SchedBlockCron] != "minute field: 61 is out of range 0–59" {
		t.Fatalf("ack = %q %v", action, errs)
	}
	if l, _ := h.store.ListSchedules(ctx, schedule.Filter{}); len(l) != 0 {
		t.Fatalf("stored an invalid schedule: %+v", l)
	}

	sent, err = h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "UOWNER", ViewID: v.ID, Values: values("", "0 9 * * 1")})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(t, sent.EnvelopeID)
	if ack, _ := h.fake.WaitAck(sent.EnvelopeID, 5*time.Second); len(ack.Payload) != 0 && string(ack.Payload) != "null" {
		t.Fatalf("valid submission acked with %s", ack.Payload)
	}
	l, err := h.store.ListSchedules(ctx, schedule.Filter{})
	if err != nil || len(l) != 1 {
		t.Fatalf("schedules = %+v, %v", l, err)
	}
	sc := l[0]
	if sc.Owner != "UOWNER" || sc.Channel != "C1" || sc.Spec != "0 9 * * 1" || sc.TZ != "America/New_York" || !sc.Enabled ||
		sc.Options.Depth != "quick" || sc.Options.Approval || sc.Team != h.fake.TeamID() {
		t.Fatalf("stored %+v", sc)
	}
	eph := h.fake.Ephemerals()
	if len(eph) == 0 || !strings.Contains(eph[len(eph)-1].Text, "Scheduled *Competitor news &lt;!channel&gt;*") {
		t.Fatalf("confirmation = %+v", eph)
	}
	if p := h.fake.Pings(); len(p) != 0 {
		t.Fatalf("notified people: %+v", p)
	}
}

// TestListButtonsAndPermissions: the list has the buttons; a stranger's
// Pause is refused with an explanation, the owner's applies.
func TestListButtonsAndPermissions(t *testing.T) {
	h := newDigestHarness(t)
	ctx := context.Background()
	sc, err := h.mgr.Create(ctx, schedule.Draft{Channel: "C1", Owner: "UOWNER", Topic: "competitor news", Spec: "@daily", TZ: "Asia/Tokyo"})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := h.ui.SlashSchedules(ctx, slack.SlashCommand{UserID: "UOWNER", ChannelID: "C1"}, "")
	if err != nil || reply != "" {
		t.Fatalf("SlashSchedules = %q, %v", reply, err)
	}
	eph := h.fake.Ephemerals()
	list := string(eph[len(eph)-1].Blocks)
	for _, want := range []string{bot.SchedActionPause, bot.SchedActionRunNow, bot.SchedActionDelete, "competitor news", "`@daily`"} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %s: %s", want, list)
		}
	}
	click := func(user, action string) {
		t.Helper()
		sent, err := h.fake.SendBlockAction(ctx, slackfake.BlockAction{User: user, Channel: "C1", ActionID: action, Value: sc.ID, IsEphemeral: true})
		if err != nil {
			t.Fatal(err)
		}
		h.wait(t, sent.EnvelopeID)
	}
	click("USTRANGER", bot.SchedActionPause)
	eph = h.fake.Ephemerals()
	// People are named as everywhere in the bot: by their display name
	// (the fake's is the user name).
	if last := eph[len(eph)-1]; last.User != "USTRANGER" || last.Text != "Only owner (who created it) or an admin can change this schedule." {
		t.Fatalf("stranger got %+v", last)
	}
	click("USTRANGER", bot.SchedActionDelete)
	if got, _ := h.store.GetSchedule(ctx, sc.ID); !got.Enabled {
		t.Fatal("a stranger paused or deleted the schedule")
	}
	click("UOWNER", bot.SchedActionPause)
	if got, _ := h.store.GetSchedule(ctx, sc.ID); got.Enabled {
		t.Fatal("the owner could not pause")
	}
	posts := h.fake.ResponsePosts()
	if len(posts) == 0 || !posts[len(posts)-1].ReplaceOriginal || !strings.Contains(string(posts[len(posts)-1].Blocks), bot.SchedActionResume) {
		t.Fatalf("the list was not refreshed with Resume: %+v", posts)
	}
	click("UOWNER", bot.SchedActionRunNow)
	h.settle(t)
	if h.starts() != 1 {
		t.Fatalf("run now ran %d researches", h.starts())
	}
	home, err := h.ui.HomeSection(ctx, "UOWNER")
	if err != nil || len(home) < 3 {
		t.Fatalf("home = %d blocks, %v", len(home), err)
	}
	click("UOWNER", bot.SchedActionDelete)
	if _, err := h.store.GetSchedule(ctx, sc.ID); err == nil {
		t.Fatal("the owner could not delete")
	}
}

// TestApprovalButtons: a schedule that asks for approval posts Run/Skip;
// a stranger cannot decide; two owner clicks run it once and the buttons
// are replaced by who decided.
func TestApprovalButtons(t *testing.T) {
	h := newDigestHarness(t)
	ctx := context.Background()
	sc, err := h.mgr.Create(ctx, schedule.Draft{Channel: "C1", Owner: "UOWNER", Topic: "weekly", Spec: "@hourly", TZ: "UTC",
		Options: schedule.Options{Approval: true}})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(61 * time.Minute)
	if err := h.sched.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	h.settle(t) // the run asks for approval
	msgs := h.fake.BotMessages("C1")
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Blocks), bot.SchedActionApprove) {
		t.Fatalf("approval message = %+v", msgs)
	}
	var val string
	var blocks []map[string]any
	_ = json.Unmarshal(msgs[0].Blocks, &blocks)
	for _, b := range blocks {
		if els, ok := b["elements"].([]any); ok {
			val = els[0].(map[string]any)["value"].(string)
		}
	}
	if !strings.HasPrefix(val, sc.ID+"|") {
		t.Fatalf("button value %q", val)
	}
	click := func(user string) {
		t.Helper()
		sent, err := h.fake.SendBlockAction(ctx, slackfake.BlockAction{User: user, Channel: "C1", MessageTS: msgs[0].TS, ActionID: bot.SchedActionApprove, Value: val})
		if err != nil {
			t.Fatal(err)
		}
		h.wait(t, sent.EnvelopeID)
	}
	click("USTRANGER")
	h.settle(t)
	if h.starts() != 0 {
		t.Fatal("a stranger approved")
	}
	click("UOWNER")
	click("UOWNER")
	h.settle(t)
	if h.starts() != 1 {
		t.Fatalf("approved run ran %d times", h.starts())
	}
	m, _ := h.fake.Message("C1", msgs[0].TS)
	if !strings.Contains(m.Text, "approved by owner") || strings.Contains(string(m.Blocks), bot.SchedActionApprove) {
		t.Fatalf("approval message after decision: %q %s", m.Text, m.Blocks)
	}
	eph := h.fake.Ephemerals()
	if last := eph[len(eph)-1]; last.Text != "Someone has already decided on this run." {
		t.Fatalf("second click got %+v", last)
	}
}

// TestDigestPostedThroughFake: a digest run shown by the bot's digest face
// posts a summary message and the report file in its thread, with nothing
// that notifies people.
func TestDigestPostedThroughFake(t *testing.T) {
	h := newDigestHarness(t, resultResearcher(research.Result{Title: "Competitor news", WriterSummary: "- X cut prices <!here> @channel\n- Y hired <@U123> as CTO",
		Report: "# Report\n\nBody.", Cited: []research.Source{{URL: "https://x.example/a", Title: "X <!everyone>"}}}))
	f := fireDigest(t, h, "competitor news")
	msgs := h.fake.BotMessages("C1")
	if len(msgs) == 0 || !strings.Contains(string(msgs[0].Blocks), "First digest") || f.Digest == nil || f.Digest.MessageTS != msgs[0].TS {
		t.Fatalf("messages = %+v, firing %+v", msgs, f)
	}
	files := h.fake.Files()
	if len(files) != 1 || !files[0].Completed || files[0].ThreadTS != msgs[0].TS || !strings.HasSuffix(files[0].Name, ".md") ||
		!strings.Contains(string(files[0].Content), "## Findings") {
		t.Fatalf("files = %+v", files)
	}
	if p := h.fake.Pings(); len(p) != 0 {
		t.Fatalf("the digest notifies people: %+v", p)
	}
}

// fireDigest creates a weekly schedule on topic in C1, fires it by hand and
// waits for its run; it returns the firing.
func fireDigest(t *testing.T, h *digestHarness, topic string) schedule.Firing {
	t.Helper()
	ctx := context.Background()
	sc := schedule.Schedule{ID: "s1", Channel: "C1", Owner: "UOWNER", Topic: topic, Spec: "@weekly", TZ: "Asia/Tokyo", Enabled: true,
		CreatedAt: h.clock.Now(), ActiveSince: h.clock.Now(), UpdatedAt: h.clock.Now()}
	if err := h.store.CreateSchedule(ctx, sc, 0); err != nil {
		t.Fatal(err)
	}
	due := time.Date(2026, 3, 9, 9, 0, 0, 0, sc.Location())
	if ok, err := h.sched.Fire(ctx, sc, due, true); err != nil || !ok {
		t.Fatalf("fire: %v, %v", ok, err)
	}
	h.settle(t)
	f, err := h.store.GetFiring(ctx, sc.ID, due)
	if err != nil || f.State != schedule.FiringDone {
		t.Fatalf("firing = %+v, %v", f, err)
	}
	return f
}

// resultResearcher researches every digest to res.
type resultResearcher research.Result

func (r resultResearcher) Start(context.Context, research.StartRequest, research.ProgressSink) (research.Outcome, error) {
	res := research.Result(r)
	return research.Outcome{Result: &res}, nil
}

func (r resultResearcher) Resume(context.Context, string, string, research.Answer, research.ProgressSink) (research.Outcome, error) {
	return research.Outcome{}, errors.New("not resumable")
}

func (r resultResearcher) Continue(context.Context, string, research.ProgressSink) (research.Outcome, error) {
	return research.Outcome{}, research.ErrNothingToContinue
}

func (r resultResearcher) Cancel(context.Context, string) error { return nil }

// viewAck waits for the ack of a view submission and returns its
// response_action and errors.
func viewAck(t *testing.T, fake *slackfake.Server, envelopeID string) (string, map[string]string) {
	t.Helper()
	ack, err := fake.WaitAck(envelopeID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if len(ack.Payload) > 0 {
		if err := json.Unmarshal(ack.Payload, &resp); err != nil {
			t.Fatalf("ack payload %s: %v", ack.Payload, err)
		}
	}
	return resp.ResponseAction, resp.Errors
}

// servedBy is an Options.Digests that serves mgr.
func servedBy(mgr *schedule.Manager) func(*bot.Digests) *schedule.Manager {
	return func(*bot.Digests) *schedule.Manager { return mgr }
}

// newDigestBot is a bot serving mgr's digests, calling Slack at apiURL.
func newDigestBot(t *testing.T, apiURL string, mgr *schedule.Manager, edit ...func(*bot.Options)) *bot.Bot {
	t.Helper()
	o := bot.Options{BotToken: slackfake.DefaultBotToken, AppToken: slackfake.DefaultAppToken, APIURL: apiURL, Digests: servedBy(mgr)}
	for _, e := range edit {
		e(&o)
	}
	runs, records := stores(t)
	b, err := bot.New(newFakeResearcher(), runs, records, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDigestsServedByTheBot: a running bot given Options.Digests serves
// them itself: /research schedule opens the modal, a bad cron is refused in
// the ack of the submission (nothing stored), /research schedules lists
// the schedules with their buttons, and the App Home shows the user's.
func TestDigestsServedByTheBot(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	h.fake.AddUser(slackfake.User{ID: "UOWNER", Name: "owner", TZ: "Asia/Tokyo"})
	h.fake.AddChannel(slackfake.Channel{ID: "C1", Name: "research"})
	st := sqlitetest.Schedules(t)
	mgr := &schedule.Manager{Store: st}
	h.start(func(o *bot.Options) { o.Digests = servedBy(mgr) })
	h.connected(ctx, 1)
	if _, err := h.fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "schedule weekly news", User: "UOWNER", Channel: "C1"}); err != nil {
		t.Fatal(err)
	}
	var modal slackfake.View
	h.waitFor(ctx, "the schedule modal", func() bool {
		for _, v := range h.fake.Views() {
			if v.CallbackID == bot.SchedCallbackCreate {
				modal = v
				return true
			}
		}
		return false
	})
	if js := string(modal.JSON); !strings.Contains(js, `"Asia/Tokyo"`) || !strings.Contains(js, "weekly news") {
		t.Fatalf("modal = %s", js)
	}

	vals := values("0 25 * * *", "custom")
	sent, err := h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "UOWNER", ViewID: modal.ID, Values: vals})
	if err != nil {
		t.Fatal(err)
	}
	if action, errs := viewAck(t, h.fake, sent.EnvelopeID); action != "errors" || !strings.Contains(errs[bot.SchedBlockCron], "hour field") {
		t.Fatalf("ack = %q %v", action, errs)
	}
	if l, _ := st.ListSchedules(ctx, schedule.Filter{}); len(l) != 0 {
		t.Fatalf("stored an invalid schedule: %+v", l)
	}

	sc, err := mgr.Create(ctx, schedule.Draft{Channel: "C1", Owner: "UOWNER", Topic: "competitor news", Spec: "@daily", TZ: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "schedules", User: "UOWNER", Channel: "C1"}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "the schedule list", func() bool {
		for _, e := range h.fake.Ephemerals() {
			if e.User == "UOWNER" && strings.Contains(string(e.Blocks), bot.SchedActionRunNow) && strings.Contains(string(e.Blocks), sc.ID) {
				return true
			}
		}
		return false
	})
	if _, err := h.fake.SendAppHomeOpened(ctx, "UOWNER", "home"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ctx, "the App Home section", func() bool {
		v, ok := h.fake.HomeView("UOWNER")
		return ok && strings.Contains(string(v.JSON), "Your scheduled digests") && strings.Contains(string(v.JSON), sc.ID)
	})
}

// TestScheduleRefusalShowsTheChannelLink: a refusal found after the ack
// (the bot is not in the channel picked) names the channel as a link, once
// escaped: "<#C2>", never "&lt;#C2&gt;".
func TestScheduleRefusalShowsTheChannelLink(t *testing.T) {
	h := newDigestHarness(t)
	h.fake.AddChannel(slackfake.Channel{ID: "C2", Name: "nobot", BotAbsent: true})
	h.mgr.Channels = h.bot
	ctx := context.Background()
	v := h.openModal(t)
	vals := values("", "0 9 * * 1")
	vals[bot.SchedBlockChannel] = map[string]slackfake.InputValue{"value": {Type: "conversations_select", Channel: "C2"}}
	sent, err := h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "UOWNER", ViewID: v.ID, Values: vals})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(t, sent.EnvelopeID)
	if l, _ := h.store.ListSchedules(ctx, schedule.Filter{}); len(l) != 0 {
		t.Fatalf("stored a refused schedule: %+v", l)
	}
	eph := h.fake.Ephemerals()
	if len(eph) == 0 {
		t.Fatal("the refusal was not told")
	}
	text := eph[len(eph)-1].Text
	if !strings.Contains(text, "I could not schedule that") || !strings.Contains(text, "<#C2>") || strings.Contains(text, "&lt;") || strings.Contains(text, "&amp;") {
		t.Errorf("refusal = %q, want the channel as <#C2>, escaped once", text)
	}
	if hz := bot.Hazards(text); len(hz) > 0 {
		t.Errorf("refusal hazards: %v", hz)
	}
}

// TestScheduleLongTopicKeepsTheFormValid: `/research schedule` with a
// topic longer than the form's topic field takes (2,000 characters) opens
// the form with the topic cut at a character boundary to fit, and says so;
// Slack refuses a view whose input is pre-filled beyond its max_length.
func TestScheduleLongTopicKeepsTheFormValid(t *testing.T) {
	h := newDigestHarness(t)
	long := strings.Repeat("調査", 3000) // 6,000 characters, 18,000 bytes
	reply, err := h.ui.SlashSchedule(context.Background(), slack.SlashCommand{
		Command: "/research", Text: "schedule " + long, UserID: "UOWNER", ChannelID: "C1",
		TeamID: h.fake.TeamID(), TriggerID: h.fake.NewTriggerID()}, long)
	if err != nil {
		t.Fatalf("SlashSchedule: %v", err)
	}
	views := h.fake.Views()
	if len(views) != 1 {
		t.Fatalf("%d views opened, want the form", len(views))
	}
	var form struct {
		Blocks []struct {
			BlockID string `json:"block_id"`
			Element struct {
				InitialValue string `json:"initial_value"`
				MaxLength    int    `json:"max_length"`
			} `json:"element"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(views[0].JSON, &form); err != nil {
		t.Fatal(err)
	}
	var topic string
	for _, b := range form.Blocks {
		if b.BlockID == bot.SchedBlockTopic {
			topic = b.Element.InitialValue
			if b.Element.MaxLength != 2000 {
				t.Errorf("topic max_length = %d", b.Element.MaxLength)
			}
		}
	}
	if n := utf8.RuneCountInString(topic); n != 2000 || !utf8.ValidString(topic) || !strings.HasPrefix(long, topic) {
		t.Errorf("pre-filled topic: %d characters, valid UTF-8 %v, a prefix of the asked %v", n, utf8.ValidString(topic), strings.HasPrefix(long, topic))
	}
	if !strings.Contains(reply, "6,000") || !strings.Contains(reply, "2,000") {
		t.Errorf("reply = %q, want it to say the topic was cut", reply)
	}
}
