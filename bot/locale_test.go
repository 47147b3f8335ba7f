package bot_test

import (
	"strings"
	"testing"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/sqlitetest"
)

// TestSlackTextsFollowTheRequestersLocale: the bot's own words (status,
// buttons, approval messages, report facts) are in the requester's
// language as users.info (include_locale) reports it.
func TestSlackTextsFollowTheRequestersLocale(t *testing.T) {
	tests := []struct {
		locale string
		want   []string // in the status message, the draft message and the report share
		not    []string
	}{
		{"ja-JP", []string{"確認待ち", "下書きの確認をお願いします", "承認", "修正を依頼", "完了", "引用 7 件"}, []string{"Waiting for you", "Approve", "Done"}},
		{"en-US", []string{"Waiting for you", "Draft ready for review", "Approve", "Request changes", "Done", "7 citations"}, []string{"確認待ち", "承認"}},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			h := newHarness(t)
			h.fake.AddUser(slackfake.User{ID: "U1", Name: "taro", Locale: tt.locale})
			h.start()
			ctx := testCtx(t)
			sent := h.mention(ctx, "U1", "C1", "2026年の国内生成AI規制の動向を調べて", "")
			approval, val := h.withButton(ctx, "C1", sent.TS, "dr_approve")
			var seen strings.Builder
			seen.Write(approval.Blocks)
			h.waitState(ctx, "C1", sent.TS, research.StateWaiting)
			h.waitFor(ctx, "status waiting", func() bool {
				m, ok := h.statusMessage("C1", sent.TS, 1)
				return ok && strings.Contains(string(m.Blocks), tt.want[0])
			})
			h.click(ctx, "U1", "C1", approval, "dr_approve", val)
			h.waitState(ctx, "C1", sent.TS, research.StateDone)
			h.waitFor(ctx, "status done", func() bool {
				m, _ := h.statusMessage("C1", sent.TS, 1)
				return strings.Contains(string(m.Blocks), tt.want[4])
			})
			for _, m := range h.botMessages("C1", sent.TS) {
				seen.Write(m.Blocks)
				for _, e := range m.Edits {
					seen.Write(e.Blocks)
				}
			}
			for _, f := range h.files("C1", sent.TS) {
				seen.Write(f.Blocks)
			}
			for _, w := range tt.want {
				if !strings.Contains(seen.String(), w) {
					t.Errorf("no %q in the bot's messages", w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(seen.String(), w) {
					t.Errorf("%q in the bot's messages for a %s user", w, tt.locale)
				}
			}
		})
	}
}

// TestAnswersFollowTheUsersLocale: the bot's answers to slash commands and
// to mentions it will not work on are in the language of the person it
// answers, as users.info (include_locale) reports it.
func TestAnswersFollowTheUsersLocale(t *testing.T) {
	tests := []struct {
		locale string
		want   []string // answers to: /research status, /research cancel, /research cancel nope, /research ask, a mention outside the allow-list, /research schedules
		not    []string
	}{
		{"ja-JP", []string{"調査はまだありません。", "進行中の調査はありません。", "調査 `nope` はありません。", "質問を書いてください", "このチャンネルでは有効になっていません。", "ここにはまだ定期ダイジェストがありません。"},
			[]string{"You have no research", "There is no research run", "Please add a question", "I'm not enabled"}},
		{"en-US", []string{"You have no research runs yet.", "You have no research in progress.", "There is no research run `nope`.", "Please add a question", "I'm not enabled in this channel.", "No scheduled digests here yet."},
			[]string{"調査", "チャンネル"}},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			h := newHarness(t)
			h.fake.AddUser(slackfake.User{ID: "U1", Name: "taro", Locale: tt.locale})
			h.fake.AddChannel(slackfake.Channel{ID: "C9", Name: "elsewhere"})
			h.start(func(o *bot.Options) {
				o.AllowedChannels = []string{"C1"}
				o.Digests = servedBy(&schedule.Manager{Store: sqlitetest.Schedules(t)})
			})
			ctx := testCtx(t)
			h.slash(t, "U1", "C1", "status")
			h.slash(t, "U1", "C1", "cancel")
			h.slash(t, "U1", "C1", "cancel nope")
			h.slash(t, "U1", "C1", "ask")
			h.mention(ctx, "U1", "C9", "what changed in the EU AI Act?", "")
			h.slash(t, "U1", "C1", "schedules")
			var seen strings.Builder
			h.waitFor(ctx, "every answer", func() bool {
				seen.Reset()
				for _, r := range h.fake.ResponsePosts() {
					seen.WriteString(r.Text + "\n")
				}
				for _, e := range h.fake.Ephemerals() {
					seen.WriteString(e.Text + "\n" + string(e.Blocks) + "\n")
				}
				for _, w := range tt.want {
					if !strings.Contains(seen.String(), w) {
						return false
					}
				}
				return true
			})
			for _, w := range tt.not {
				if strings.Contains(seen.String(), w) {
					t.Errorf("%q answered to a %s user:\n%s", w, tt.locale, seen.String())
				}
			}
		})
	}
}
