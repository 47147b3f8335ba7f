package slackfake

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

func newAPI(fake *Server, opts ...slack.Option) *slack.Client {
	base := []slack.Option{slack.OptionAPIURL(fake.APIURL()), slack.OptionAppLevelToken(fake.AppToken())}
	return slack.New(fake.BotToken(), append(base, opts...)...)
}

// bot runs a real socketmode client against the fake and forwards its events.
type bot struct {
	sm     *socketmode.Client
	events chan socketmode.Event
	runErr chan error
	cancel context.CancelFunc
	// autoAck acks every envelope as it arrives.
	autoAck bool
}

func startBot(t *testing.T, fake *Server, autoAck bool, opts ...socketmode.Option) *bot {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &bot{
		sm:      socketmode.New(newAPI(fake), opts...),
		events:  make(chan socketmode.Event, 100),
		runErr:  make(chan error, 1),
		cancel:  cancel,
		autoAck: autoAck,
	}
	var wg sync.WaitGroup
	wg.Go(func() { b.runErr <- b.sm.RunContext(ctx) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-b.sm.Events:
				if b.autoAck && ev.Request != nil && ev.Request.EnvelopeID != "" {
					_ = b.sm.Ack(*ev.Request)
				}
				select {
				case b.events <- ev:
				default: // the test is not interested; never block the client
				}
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return b
}

// next returns the next event of the given type.
func (b *bot) next(t *testing.T, typ socketmode.EventType) socketmode.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-b.events:
			if ev.Type == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

// newFake starts a fake, closed when the test ends, with a client of its
// Web API and a context for the test.
func newFake(t *testing.T, opts ...Option) (*Server, *slack.Client, context.Context) {
	t.Helper()
	fake := New(opts...)
	t.Cleanup(fake.Close)
	return fake, newAPI(fake), testCtx(t)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connectedBot starts a bot on fake and waits until it is connected.
func connectedBot(t *testing.T, fake *Server, autoAck bool) (*bot, context.Context) {
	t.Helper()
	b := startBot(t, fake, autoAck)
	ctx := testCtx(t)
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return b, ctx
}

func TestSocketModeHelloEventAck(t *testing.T) {
	fake := New(WithPingInterval(50 * time.Millisecond))
	defer fake.Close()
	b := startBot(t, fake, true)
	ctx := testCtx(t)

	hello := b.next(t, socketmode.EventTypeHello)
	if hello.Request.NumConnections != 1 || hello.Request.ConnectionInfo.AppID != fake.AppID() {
		t.Fatalf("hello = %+v", hello.Request)
	}
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}

	sent, err := fake.SendAppMention(ctx, AppMention{User: "U111", Channel: "C111", Text: "2026年の生成AI規制を調べて"})
	if err != nil {
		t.Fatal(err)
	}
	ev := b.next(t, socketmode.EventTypeEventsAPI)
	outer, ok := ev.Data.(slackevents.EventsAPIEvent)
	if !ok {
		t.Fatalf("data is %T", ev.Data)
	}
	mention, ok := outer.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok {
		t.Fatalf("inner is %T", outer.InnerEvent.Data)
	}
	if mention.User != "U111" || mention.Channel != "C111" || mention.TimeStamp != sent.TS ||
		mention.Text != "<@"+fake.BotUserID()+"> 2026年の生成AI規制を調べて" {
		t.Fatalf("mention = %+v", mention)
	}
	if outer.TeamID != fake.TeamID() || outer.APIAppID != fake.AppID() {
		t.Fatalf("outer = %+v", outer)
	}
	if ev.Request.EnvelopeID != sent.EnvelopeID || ev.Request.RetryAttempt != 0 {
		t.Fatalf("request = %+v", ev.Request)
	}

	ack, err := fake.WaitAck(sent.EnvelopeID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Type != TypeEventsAPI || ack.Latency <= 0 || ack.ConnID == "" || ack.Duplicate {
		t.Fatalf("ack = %+v", ack)
	}
	if got := fake.AckLatencies(); len(got) != 1 {
		t.Fatalf("latencies = %v", got)
	}
	// The user's message is in the channel for conversations.replies.
	if msgs := fake.Thread("C111", sent.TS); len(msgs) != 1 || msgs[0].User != "U111" {
		t.Fatalf("thread = %+v", msgs)
	}
	// The client answers our pings.
	err = fake.Wait(ctx, func() bool {
		c := fake.Connections()
		return len(c) == 1 && c[0].Pongs >= 2
	})
	if err != nil {
		t.Fatalf("no pongs: %v %+v", err, fake.Connections())
	}
	if n := fake.Calls("apps.connections.open"); n != 1 {
		t.Fatalf("connections.open calls = %d", n)
	}
}

func TestSocketModeDisconnectReconnects(t *testing.T) {
	for _, reason := range []string{ReasonRefreshRequested, ReasonWarning, ReasonLinkDisabled} {
		t.Run(reason, func(t *testing.T) {
			fake := New()
			defer fake.Close()
			b, ctx := connectedBot(t, fake, true)
			first := fake.Connections()[0].ID
			if n := fake.DisconnectAll(reason); n != 1 {
				t.Fatalf("told %d", n)
			}
			err := fake.Wait(ctx, func() bool {
				c := fake.Connections()
				return fake.Calls("apps.connections.open") == 2 && len(c) == 1 && c[0].ID != first
			})
			if err != nil {
				t.Fatalf("no reconnect: %v", err)
			}
			conn := b.next(t, socketmode.EventTypeConnected)
			for conn.Data.(*socketmode.ConnectedEvent).ConnectionCount != 1 {
				conn = b.next(t, socketmode.EventTypeConnected)
			}
			// Deliveries go to the new connection.
			sent, err := fake.SendMessage(ctx, MessageEvent{User: "U1", Channel: "D1", Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			ack, err := fake.WaitAck(sent.EnvelopeID, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if ack.ConnID == first {
				t.Fatalf("acked on the old connection")
			}
		})
	}
}

func TestSocketModeDroppedConnectionReconnects(t *testing.T) {
	fake := New()
	defer fake.Close()
	_, ctx := connectedBot(t, fake, true)
	if err := fake.DropConnection(fake.Connections()[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(ctx, func() bool { return fake.Calls("apps.connections.open") == 2 && len(fake.Connections()) == 1 }); err != nil {
		t.Fatal(err)
	}
}

// slack-go drops a connection that Slack has not pinged for its ping interval.
func TestSocketModeClientPingTimeoutReconnects(t *testing.T) {
	fake := New(WithPingInterval(0))
	defer fake.Close()
	startBot(t, fake, true, socketmode.OptionPingInterval(200*time.Millisecond))
	ctx := testCtx(t)
	if err := fake.Wait(ctx, func() bool { return fake.Calls("apps.connections.open") >= 2 }); err != nil {
		t.Fatal(err)
	}
}

func TestSocketModeInvalidAppToken(t *testing.T) {
	fake := New()
	defer fake.Close()
	api := slack.New(fake.BotToken(), slack.OptionAPIURL(fake.APIURL()), slack.OptionAppLevelToken("xapp-1-wrong"))
	sm := socketmode.New(api)
	ctx := testCtx(t)
	go func() {
		for range sm.Events { //nolint:revive // drain
		}
	}()
	err := sm.RunContext(ctx)
	if err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("RunContext = %v, want invalid_auth", err)
	}
	// A bot token where an app token belongs.
	api = slack.New(fake.BotToken(), slack.OptionAPIURL(fake.APIURL()), slack.OptionAppLevelToken(fake.BotToken()))
	if _, _, err := socketmode.New(api).OpenContext(ctx); err == nil || err.Error() != "not_allowed_token_type" {
		t.Fatalf("open with bot token = %v", err)
	}
}

func TestSocketModeInteractiveAndSlash(t *testing.T) {
	fake := New()
	defer fake.Close()
	b, ctx := connectedBot(t, fake, true)
	api := newAPI(fake)

	// The bot posts a plan with buttons; the user clicks "approve".
	_, ts, err := api.PostMessageContext(ctx, "C9", slack.MsgOptionText("plan", false),
		slack.MsgOptionTS("1700000000.000100"),
		slack.MsgOptionBlocks(slack.NewActionBlock("plan_actions",
			slack.NewButtonBlockElement("approve", "run-42", slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)))))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := fake.SendBlockAction(ctx, BlockAction{User: "U5", Channel: "C9", MessageTS: ts, BlockID: "plan_actions", ActionID: "approve", Value: "run-42", Text: "Approve"})
	if err != nil {
		t.Fatal(err)
	}
	ev := b.next(t, socketmode.EventTypeInteractive)
	cb, ok := ev.Data.(slack.InteractionCallback)
	if !ok {
		t.Fatalf("data is %T", ev.Data)
	}
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "U5" || cb.Channel.ID != "C9" ||
		cb.Container.MessageTs != ts || cb.Container.ThreadTs != "1700000000.000100" || cb.Message.Timestamp != ts || cb.Message.Text != "plan" ||
		cb.TriggerID != sent.TriggerID || cb.ResponseURL != sent.ResponseURL || cb.APIAppID != fake.AppID() {
		t.Fatalf("callback = %+v", cb)
	}
	if len(cb.ActionCallback.BlockActions) != 1 {
		t.Fatalf("actions = %+v", cb.ActionCallback)
	}
	if a := cb.ActionCallback.BlockActions[0]; a.ActionID != "approve" || a.Value != "run-42" || a.BlockID != "plan_actions" {
		t.Fatalf("action = %+v", a)
	}

	// Within 3s the bot opens a modal with the trigger.
	modal := slack.ModalViewRequest{
		Type: slack.VTModal, Title: slack.NewTextBlockObject(slack.PlainTextType, "Edit plan", false, false),
		CallbackID: "edit_plan", PrivateMetadata: `{"run":"42"}`,
		Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewInputBlock("plan_block", slack.NewTextBlockObject(slack.PlainTextType, "Plan", false, false), nil,
			slack.NewPlainTextInputBlockElement(nil, "plan_input"))}},
	}
	vr, err := api.OpenViewContext(ctx, cb.TriggerID, modal)
	if err != nil {
		t.Fatal(err)
	}
	if vr.ID == "" || vr.CallbackID != "edit_plan" || vr.Hash == "" {
		t.Fatalf("view = %+v", vr.View)
	}
	if _, err := api.OpenViewContext(ctx, cb.TriggerID, modal); err == nil || err.Error() != "exchanged_trigger_id" {
		t.Fatalf("second open = %v", err)
	}

	// The user submits the modal.
	vs, err := fake.SendViewSubmission(ctx, ViewSubmission{User: "U5", ViewID: vr.ID, Values: map[string]map[string]InputValue{
		"plan_block": {"plan_input": {Value: "1. 調査\n2. 執筆"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, socketmode.EventTypeInteractive)
	cb = ev.Data.(slack.InteractionCallback)
	if cb.Type != slack.InteractionTypeViewSubmission || cb.View.ID != vr.ID || cb.View.CallbackID != "edit_plan" ||
		cb.View.PrivateMetadata != `{"run":"42"}` || cb.View.State.Values["plan_block"]["plan_input"].Value != "1. 調査\n2. 執筆" {
		t.Fatalf("submission = %+v / %+v", cb, cb.View.State)
	}
	if !ev.Request.AcceptsResponsePayload {
		t.Fatalf("view_submission should accept a response payload")
	}
	// The bot answers with response_action: clear in the ack.
	if err := b.sm.Ack(*ev.Request, map[string]any{"response_action": "clear"}); err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(ctx, func() bool {
		for _, a := range fake.Acks() {
			if a.EnvelopeID == vs.EnvelopeID && string(a.Payload) == `{"response_action":"clear"}` {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("ack payload not recorded: %+v", fake.Acks())
	}

	// A slash command.
	sc, err := fake.SendSlashCommand(ctx, SlashCommand{Command: "/research", Text: "every monday 9:00 competitors", User: "U5", Channel: "C9"})
	if err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, socketmode.EventTypeSlashCommand)
	cmd, ok := ev.Data.(slack.SlashCommand)
	if !ok {
		t.Fatalf("data is %T", ev.Data)
	}
	if cmd.Command != "/research" || cmd.Text != "every monday 9:00 competitors" || cmd.UserID != "U5" || cmd.ChannelID != "C9" ||
		cmd.ResponseURL != sc.ResponseURL || cmd.TriggerID != sc.TriggerID || cmd.TeamID != fake.TeamID() {
		t.Fatalf("command = %+v", cmd)
	}

	// The bot answers through the response_url (ephemeral), then replaces the plan message via the action's URL.
	if _, _, err := api.PostMessageContext(ctx, "C9", slack.MsgOptionText("scheduled", false), slack.MsgOptionResponseURL(cmd.ResponseURL, slack.ResponseTypeEphemeral)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C9", slack.MsgOptionText("approved", false), slack.MsgOptionReplaceOriginal(sent.ResponseURL)); err != nil {
		t.Fatal(err)
	}
	if e := fake.Ephemerals(); len(e) != 1 || e[0].Text != "scheduled" || e[0].User != "U5" || e[0].Source != "response_url" {
		t.Fatalf("ephemerals = %+v", e)
	}
	if m, _ := fake.Message("C9", ts); m.Text != "approved" || len(m.Edits) != 1 || m.Edits[0].Text != "plan" {
		t.Fatalf("replaced message = %+v", m)
	}
}

func TestSocketModeHomeAndAssistantEvents(t *testing.T) {
	fake := New()
	defer fake.Close()
	b, ctx := connectedBot(t, fake, true)
	if _, err := fake.SendAppHomeOpened(ctx, "U7", ""); err != nil {
		t.Fatal(err)
	}
	ev := b.next(t, socketmode.EventTypeEventsAPI)
	home, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.AppHomeOpenedEvent)
	if !ok || home.User != "U7" || home.Tab != "home" {
		t.Fatalf("home = %+v", ev.Data)
	}
	if _, err := fake.SendAssistantThreadStarted(ctx, AssistantThreadStarted{User: "U7", ContextChannel: "C1"}); err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, socketmode.EventTypeEventsAPI)
	at, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.AssistantThreadStartedEvent)
	if !ok || at.AssistantThread.UserID != "U7" || at.AssistantThread.ChannelID == "" || at.AssistantThread.ThreadTimeStamp == "" ||
		at.AssistantThread.Context.ChannelID != "C1" {
		t.Fatalf("assistant = %+v", ev.Data)
	}
	// The user looks at another channel with the pane open.
	if _, err := fake.SendAssistantThreadContextChanged(ctx, AssistantThreadStarted{User: "U7", Channel: at.AssistantThread.ChannelID,
		ThreadTS: at.AssistantThread.ThreadTimeStamp, ContextChannel: "C2"}); err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, socketmode.EventTypeEventsAPI)
	cc, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.AssistantThreadContextChangedEvent)
	if !ok || cc.AssistantThread.Context.ChannelID != "C2" || cc.AssistantThread.ThreadTimeStamp != at.AssistantThread.ThreadTimeStamp {
		t.Fatalf("context changed = %+v", ev.Data)
	}
	// A DM reply in the thread.
	if _, err := fake.SendMessage(ctx, MessageEvent{User: "U7", Channel: at.AssistantThread.ChannelID, ThreadTS: at.AssistantThread.ThreadTimeStamp, Text: "競合を調べて"}); err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, socketmode.EventTypeEventsAPI)
	msg, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok || msg.ChannelType != "im" || msg.ThreadTimeStamp != at.AssistantThread.ThreadTimeStamp || msg.Text != "競合を調べて" {
		t.Fatalf("message = %+v", ev.Data)
	}
}

func TestRedeliveryWhenNotAcked(t *testing.T) {
	fake := New(WithRedelivery(100*time.Millisecond, 3))
	defer fake.Close()
	b, ctx := connectedBot(t, fake, false)
	sent, err := fake.SendMessage(ctx, MessageEvent{User: "U1", Channel: "C1", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	first := b.next(t, socketmode.EventTypeEventsAPI)
	if first.Request.RetryAttempt != 0 {
		t.Fatalf("first attempt = %d", first.Request.RetryAttempt)
	}
	second := b.next(t, socketmode.EventTypeEventsAPI)
	if second.Request.EnvelopeID != sent.EnvelopeID || second.Request.RetryAttempt != 1 || second.Request.RetryReason != "timeout" {
		t.Fatalf("second = %+v", second.Request)
	}
	if err := b.sm.Ack(*second.Request); err != nil {
		t.Fatal(err)
	}
	ack, err := fake.WaitAck(sent.EnvelopeID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Attempt != 1 {
		t.Fatalf("ack = %+v", ack)
	}
	// Never acked: 1 delivery + 3 retries, then Slack gives up.
	sent2, err := fake.SendMessage(ctx, MessageEvent{User: "U1", Channel: "C1", Text: "y"})
	if err != nil {
		t.Fatal(err)
	}
	err = fake.Wait(ctx, func() bool {
		for _, e := range fake.Envelopes() {
			if e.ID == sent2.EnvelopeID {
				return len(e.Deliveries) == 4
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	for _, e := range fake.Envelopes() {
		if e.ID == sent2.EnvelopeID && (len(e.Deliveries) != 4 || e.Deliveries[3].Attempt != 3) {
			t.Fatalf("deliveries = %+v", e.Deliveries)
		}
	}
}

func TestDeliverySpreadsOverConnections(t *testing.T) {
	fake := New()
	defer fake.Close()
	startBot(t, fake, true)
	startBot(t, fake, true)
	ctx := testCtx(t)
	if err := fake.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		sent, err := fake.SendMessage(ctx, MessageEvent{User: "U1", Channel: "C1", Text: string(rune('a' + i))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.WaitAck(sent.EnvelopeID, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	per := map[string]int{}
	for _, c := range fake.Connections() {
		per[c.ID] = c.Delivered
	}
	if len(per) != 2 {
		t.Fatalf("per connection = %v", per)
	}
	for id, n := range per {
		if n != 3 {
			t.Fatalf("connection %s got %d of 6: %v", id, n, per)
		}
	}
}

func TestSendWaitsForConnectionUntilContextEnds(t *testing.T) {
	fake := New()
	defer fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := fake.SendMessage(ctx, MessageEvent{User: "U1", Channel: "C1", Text: "x"})
	if !errors.Is(err, ErrNoConnection) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestEchoBotMessages(t *testing.T) {
	fake := New(WithEchoBotMessages(true))
	defer fake.Close()
	b, ctx := connectedBot(t, fake, true)
	if _, _, err := newAPI(fake).PostMessageContext(ctx, "C1", slack.MsgOptionText("report", false)); err != nil {
		t.Fatal(err)
	}
	ev := b.next(t, socketmode.EventTypeEventsAPI)
	msg := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.MessageEvent)
	if msg.BotID != fake.cfg.botID || msg.Text != "report" {
		t.Fatalf("echo = %+v", msg)
	}
}

// Envelopes sent right after a refresh request wait for the new connection
// instead of going to the one that is leaving.
func TestSendDuringRefreshGoesToNewConnection(t *testing.T) {
	fake := New()
	defer fake.Close()
	_, ctx := connectedBot(t, fake, true)
	old := fake.Connections()[0].ID
	fake.DisconnectAll(ReasonRefreshRequested)
	sent, err := fake.SendMessage(ctx, MessageEvent{User: "U1", Channel: "C1", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := fake.WaitAck(sent.EnvelopeID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ack.ConnID == old || ack.Attempt != 0 {
		t.Fatalf("ack = %+v (old %s)", ack, old)
	}
}
