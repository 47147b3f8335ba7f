package slackui_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/schedule/slackui"
)

// The bot is the Slack client digests use in serve: one client, with its
// retries, pacing and budget.
var _ slackui.API = (*bot.Bot)(nil)

// And it answers response_urls for the lists' buttons.
var _ interface {
	RespondContext(ctx context.Context, responseURL string, msg map[string]any) error
} = (*bot.Bot)(nil)

// recordingAPI keeps what slackui would send to Slack.
type recordingAPI struct {
	mu   sync.Mutex
	sent []string // JSON of each message's text and blocks, or a view
}

func (r *recordingAPI) record(v any) {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	r.sent = append(r.sent, string(b))
	r.mu.Unlock()
}

func (r *recordingAPI) msg(options ...slack.MsgOption) {
	_, vals, _ := slack.UnsafeApplyMsgOptions("", "C1", "", options...)
	r.record(map[string]string{"text": vals.Get("text"), "blocks": vals.Get("blocks")})
}

func (r *recordingAPI) OpenViewContext(_ context.Context, _ string, view slack.ModalViewRequest) (*slack.ViewResponse, error) {
	r.record(view)
	return &slack.ViewResponse{}, nil
}
func (r *recordingAPI) PostMessageContext(_ context.Context, ch string, o ...slack.MsgOption) (string, string, error) {
	r.msg(o...)
	return ch, "1.1", nil
}
func (r *recordingAPI) PostEphemeralContext(_ context.Context, _, _ string, o ...slack.MsgOption) (string, error) {
	r.msg(o...)
	return "1.2", nil
}
func (r *recordingAPI) UpdateMessageContext(_ context.Context, ch, ts string, o ...slack.MsgOption) (string, string, string, error) {
	r.msg(o...)
	return ch, ts, "", nil
}
func (r *recordingAPI) GetUserInfoContext(context.Context, string, ...slack.GetUserInfoOption) (*slack.User, error) {
	return &slack.User{RealName: "<!channel> ＠here [https://good.example](https://evil.example)"}, nil
}
func (r *recordingAPI) UploadFileContext(_ context.Context, p slack.UploadFileParameters) (*slack.FileSummary, error) {
	r.record(map[string]string{"title": p.Title, "initial_comment": p.InitialComment})
	return &slack.FileSummary{ID: "F1"}, nil
}

var fragments = []string{
	"<!channel>", "<!here|here>", "<!subteam^S1|@team>", "<@U0123>", "@channel", "@all", "＠ｈｅｒｅ", "@\u200beveryone", "<#C1|x> <!channel> <#C1",
	"<https://evil.example|https://good.example>", "[https://good.example](https://evil.example)", "![x](https://evil.example)",
	"[good][1]\n[1]: https://evil.example", "\x00", "\x1b]52;c;aGk=\x07", "\u009b", "\u202e", "\xff", "&", "|", "*", "日本語", "\n",
}

func hostile(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(8) {
		if r.IntN(3) == 0 {
			b.WriteRune(rune(r.IntN(0x3000)))
		} else {
			b.WriteString(fragments[r.IntN(len(fragments))])
		}
	}
	return b.String()
}

// renderAll sends s through every slackui renderer and returns what would
// reach Slack.
func renderAll(t *testing.T, s string) []string {
	t.Helper()
	api := &recordingAPI{}
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	sc := schedule.Schedule{ID: "s1", Channel: s, Owner: "U1", Topic: s, Spec: s, TZ: s, Enabled: true,
		Options: schedule.Options{Depth: s, Language: s, Approval: true}}
	api.record(slackui.ScheduleBlocks([]schedule.Schedule{sc, {ID: "s2", Channel: "C0123", Topic: s, Spec: "@daily", TZ: "UTC"}}, now))
	m := schedule.DigestMessage{ScheduleID: "s1", Topic: s, Title: s, Due: now, Summary: s, Text: s,
		WhatsNew: schedule.WhatsNew{Since: now.Add(-time.Hour), NewFindings: []string{s, s}, NewSources: []research.Source{{URL: s, Title: s}, {URL: "https://a.example/" + s}}, KnownFindings: []string{s}}}
	api.record(slackui.DigestBlocks(m))
	m.WhatsNew.Since = time.Time{}
	if _, err := (&slackui.Poster{API: api}).PostDigest(ctx, "C1", m); err != nil {
		t.Fatal(err)
	}
	ui := &slackui.UI{API: api, Manager: &schedule.Manager{Store: nil}}
	if err := ui.RequestApproval(ctx, schedule.Job{Schedule: sc, Due: now}); err != nil {
		t.Fatal(err)
	}
	// The topic prefills an input: the user's own words to edit, never
	// parsed for mentions or links; only its characters are checked.
	view := ui.ScheduleModal(s, "C1", "UTC", struct {
		Team    string `json:"team,omitempty"`
		Channel string `json:"channel,omitempty"`
	}{})
	initial := view.Blocks.BlockSet[0].(*slack.InputBlock).Element.(*slack.PlainTextInputBlockElement).InitialValue
	if strings.ContainsFunc(initial, func(r rune) bool { return r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r < 0xa0) }) || !utf8.ValidString(initial) {
		t.Errorf("modal prefill %q keeps control characters", initial)
	}
	view.Blocks.BlockSet[0].(*slack.InputBlock).Element.(*slack.PlainTextInputBlockElement).InitialValue = ""
	api.record(view)
	return api.sent
}

// TestSlackUIRenderersNeverPingSpoofOrCarryControls: nothing slackui
// sends (schedule lists, digests, approval requests, the modal) notifies
// anyone, shows a link whose text is not its target or carries a control
// character, whatever the topic, digest, channel id or user name holds.
func TestSlackUIRenderersNeverPingSpoofOrCarryControls(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 2026))
	inputs := append([]string{}, fragments...)
	for range 150 {
		inputs = append(inputs, hostile(r))
	}
	for _, s := range inputs {
		for i, payload := range renderAll(t, s) {
			if h := bot.Hazards(payload); len(h) > 0 {
				t.Errorf("payload %d from %.120q: %v", i, s, h)
			}
		}
	}
}

// TestSubmissionWithAForeignChannelIsRefused: a view submission whose
// channel is someone's DM, a user, or markup is refused in the ack (the
// modal shows why) and never stored.
func TestSubmissionWithAForeignChannelIsRefused(t *testing.T) {
	for _, ch := range []string{"D0SOMEONE", "U0123", "C1|x> <!channel> <#C1", "", "<#C1>"} {
		cb := slack.InteractionCallback{Type: slack.InteractionTypeViewSubmission, User: slack.User{ID: "U1"}}
		cb.View.CallbackID = slackui.CallbackCreate
		cb.View.State = &slack.ViewState{Values: map[string]map[string]slack.BlockAction{
			slackui.BlockTopic:   {"value": {Value: "AI news"}},
			slackui.BlockChannel: {"value": {SelectedConversation: ch}},
			slackui.BlockFreq:    {"value": {SelectedOption: slack.OptionBlockObject{Value: "0 9 * * 1"}}},
			slackui.BlockTZ:      {"value": {Value: "UTC"}},
		}}
		ui := &slackui.UI{API: &recordingAPI{}, AckErrors: true, Manager: &schedule.Manager{}}
		resp := ui.ViewSubmissionResponse(cb)
		if resp == nil || resp.Errors[slackui.BlockChannel] == "" {
			t.Errorf("channel %q: ack = %+v, want an error on the channel", ch, resp)
			continue
		}
		if h := bot.Hazards(resp.Errors[slackui.BlockChannel]); len(h) > 0 {
			t.Errorf("channel %q: message %v", ch, h)
		}
	}
}

// TestChannelRefusalAfterTheAckIsTold: the channel check runs after the
// ack (it asks Slack); its refusal reaches the user as an ephemeral
// message and nothing is stored.
func TestChannelRefusalAfterTheAckIsTold(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.ui.Manager.Channels = refuseAll{}
	v := h.openModal(t)
	sent, err := h.fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "UOWNER", ViewID: v.ID, Values: values("", "0 9 * * 1")})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(t, sent.EnvelopeID)
	if l, _ := h.store.ListSchedules(ctx, schedule.Filter{}); len(l) != 0 {
		t.Fatalf("stored %+v", l)
	}
	eph := h.fake.Ephemerals()
	if len(eph) == 0 || !strings.Contains(eph[len(eph)-1].Text, "I'm not a member of that channel") {
		t.Fatalf("ephemerals = %+v", eph)
	}
}

type refuseAll struct{}

func (refuseAll) CheckChannel(context.Context, string, string) (string, error) {
	return "I'm not a member of that channel. Invite me first.", nil
}
