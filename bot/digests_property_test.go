package bot_test

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path"
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
)

// slackRecorder is a Slack Web API that answers every call ok and keeps
// what the digests send in messages.
type slackRecorder struct {
	mu   sync.Mutex
	sent []string // JSON of each message's text and blocks, or a rendering
}

func (r *slackRecorder) record(v any) {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	r.sent = append(r.sent, string(b))
	r.mu.Unlock()
}

func (r *slackRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sent
	r.sent = nil
	return out
}

func (r *slackRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_ = req.ParseForm()
	switch path.Base(req.URL.Path) {
	case "chat.postMessage", "chat.postEphemeral", "chat.update":
		r.record(map[string]string{"text": req.Form.Get("text"), "blocks": req.Form.Get("blocks")})
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1.1","message_ts":"1.2"}`)
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

// renderAll sends s through every digest renderer and returns what would
// reach Slack.
func renderAll(t *testing.T, b *bot.Bot, rec *slackRecorder, s string) []string {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	sc := schedule.Schedule{ID: "s1", Channel: s, Owner: "U1", Topic: s, Spec: s, TZ: s, Enabled: true,
		Options: schedule.Options{Depth: s, Language: s, Approval: true}}
	rec.record(bot.ScheduleBlocks([]schedule.Schedule{sc, {ID: "s2", Channel: "C0123", Topic: s, Spec: "@daily", TZ: "UTC"}}, now))
	m := schedule.DigestMessage{ScheduleID: "s1", Topic: s, Title: s, Due: now, Text: s,
		WhatsNew: schedule.WhatsNew{Since: now.Add(-time.Hour), NewFindings: []string{s, s}, NewSources: []research.Source{{URL: s, Title: s}, {URL: "https://a.example/" + s}}, KnownFindings: []string{s}}}
	rec.record(bot.DigestBlocks(m))
	m.WhatsNew.Since = time.Time{}
	ui := b.Digests()
	if _, err := ui.PostDigest(ctx, "C1", m); err != nil {
		t.Fatal(err)
	}
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
	rec.record(view)
	return rec.take()
}

// TestDigestRenderersNeverPingSpoofOrCarryControls: nothing the digests
// sends (schedule lists, digests, approval requests, the modal) notifies
// anyone, shows a link whose text is not its target or carries a control
// character, whatever the topic, digest, channel id or user name holds.
func TestDigestRenderersNeverPingSpoofOrCarryControls(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 2026))
	rec := &slackRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	b := newDigestBot(t, srv.URL+"/api/", &schedule.Manager{}, func(o *bot.Options) { o.PostInterval = -1 })
	inputs := append([]string{}, fragments...)
	for range 150 {
		inputs = append(inputs, hostile(r))
	}
	for _, s := range inputs {
		sent := renderAll(t, b, rec, s)
		if len(sent) != 5 { // lists, digest blocks, the digest, the approval request, the modal
			t.Fatalf("%d payloads from %.120q, want 5", len(sent), s)
		}
		for i, payload := range sent {
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
		cb.View.CallbackID = bot.SchedCallbackCreate
		cb.View.State = &slack.ViewState{Values: map[string]map[string]slack.BlockAction{
			bot.SchedBlockTopic:   {"value": {Value: "AI news"}},
			bot.SchedBlockChannel: {"value": {SelectedConversation: ch}},
			bot.SchedBlockFreq:    {"value": {SelectedOption: slack.OptionBlockObject{Value: "0 9 * * 1"}}},
			bot.SchedBlockTZ:      {"value": {Value: "UTC"}},
		}}
		resp := newDigestBot(t, "", &schedule.Manager{}).Digests().ViewSubmissionResponse(cb)
		if resp == nil || resp.Errors[bot.SchedBlockChannel] == "" {
			t.Errorf("channel %q: ack = %+v, want an error on the channel", ch, resp)
			continue
		}
		if h := bot.Hazards(resp.Errors[bot.SchedBlockChannel]); len(h) > 0 {
			t.Errorf("channel %q: message %v", ch, h)
		}
	}
}

// TestChannelRefusalAfterTheAckIsTold: the channel check runs after the
// ack (it asks Slack); its refusal reaches the user as an ephemeral
// message and nothing is stored.
func TestChannelRefusalAfterTheAckIsTold(t *testing.T) {
	h := newDigestHarness(t)
	ctx := context.Background()
	h.mgr.Channels = refuseAll{}
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
