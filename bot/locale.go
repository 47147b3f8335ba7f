package bot

import (
	"context"
	"strings"
)

// lang is the language of the bot's own words in Slack: the requester's
// locale (users.info with include_locale), as the CLI and the reports
// follow the question's language. Text from the model or the web is shown
// as it is.
type lang int

const (
	langEN lang = iota
	langJA
)

// langOf maps a Slack locale ("ja-JP", "en-US", …) to the bot's languages;
// anything but Japanese is English.
func langOf(locale string) lang {
	if strings.HasPrefix(strings.ToLower(locale), "ja") {
		return langJA
	}
	return langEN
}

// words are the bot's own texts in one language. Strings with %s or %d are
// format strings.
type words struct {
	Queued, Researching, Waiting, Done, Failed, Cancelled string

	Plan, Subtasks                                   string
	Phase, SourcesRead, Tokens, Elapsed, AskedBy     string
	Cancel                                           string
	IntrPlan, IntrDraft, IntrQuestion                string
	Approve, RequestChanges, ResearchMore            string
	OnlyDecide                                       string // %s: requester
	Approved, ChangesRequested, MoreRequested        string
	CancelledAction, Answered                        string
	DecidedBy                                        string // %s action, %s name
	ReportTitle                                      string
	NSources, NCitations, NTokens, FullReport        string // %d
	ReportBelow, CancelledBy, ReplyToAnswer          string // CancelledBy: %s
	Busy, Limit, TooLong, Unready, FailedRetry       string
	FailedNote                                       string // %s: the run id as reference
	ModelNotUsed                                     string
	SummaryApart                                     string
	AlreadyDecided, NoLongerWaiting, AlreadyFinished string
	CancelTooLate, CancelTooLateYou                  string // CancelTooLate: %s canceller
	OnlyRetry                                        string // %s: requester

	// Answers to mentions, buttons and forms.
	NotEnabled, WaitingAnswerFrom      string // WaitingAnswerFrom: %s requester
	StartStorageFailed, DecisionFailed string
	SayWhatChanges, FeedbackTooLong    string // FeedbackTooLong: %d length, %d limit
	RunGone, FormFailed, CancelFailed  string
	OnlyCancel, OnlyDecideOn           string // %s: requester
	// Answers to /research.
	SlashFailed, DigestsUnavailable      string // SlashFailed: %s reference
	AddQuestion, SlashTooLong            string // SlashTooLong: %d length, %d limit
	CannotPost, StartFailed, StartStore  string
	Started, ReadRunsFailed, NoRuns      string
	NoneInProgress, WhichRun             string // WhichRun: %s run ids
	NoSuchRun, ReadRunFailed, Cancelling string // NoSuchRun, Cancelling: %s run id
	RecentResearch                       string
	// Answers about scheduled digests.
	SaveFailed, CannotSchedule, Scheduled  string // Scheduled: %s topic, %s channel, %s spec, %s zone, %s first
	SchedulesHead, NoSchedules, NSchedules string // NSchedules: %d
	YourSchedules, NoneYet                 string
	Resumed, Paused, Deleted               string // %s topic
	AlreadyRunning, RunningNow             string
	ScheduleGone, ThatFailed               string
	OnlyOwner, OnlyOwnerNamed              string // OnlyOwnerNamed: %s owner
	RunDecided                             string
	// Why digests may not go to a channel (CheckChannel), told to the owner.
	NotAChannel, NotAllowedHere, Archived string // NotAllowedHere, Archived: %s channel
	NotMember, CannotSee, OwnerNotMember  string // %s channel
}

var wordsEN = words{
	Queued: "Queued", Researching: "Researching", Waiting: "Waiting for you", Done: "Done", Failed: "Failed", Cancelled: "Cancelled",
	Plan: "Plan", Subtasks: "Subtasks",
	Phase: "phase: ", SourcesRead: "sources read: %d", Tokens: "tokens: %d", Elapsed: "elapsed: ", AskedBy: "asked by ",
	Cancel:   "Cancel",
	IntrPlan: "📋 Research plan ready for review", IntrDraft: "📝 Draft ready for review", IntrQuestion: "❓ Question",
	Approve: "Approve", RequestChanges: "Request changes", ResearchMore: "Research more",
	OnlyDecide: "Only %s or an approver can decide.",
	Approved:   "✅ Approved", ChangesRequested: "✏️ Changes requested", MoreRequested: "🔎 More research requested",
	CancelledAction: "🛑 Cancelled", Answered: "💬 Answered",
	DecidedBy:   "%s by *%s*",
	ReportTitle: "Research report",
	NSources:    "%d sources", NCitations: "%d citations", NTokens: "%d tokens", FullReport: "full report attached",
	ReportBelow: "The report is below.", CancelledBy: "Cancelled by *%s*.", ReplyToAnswer: "Reply in this thread to answer.",
	Busy:           "I'm still working on this thread's previous question. Wait for it to finish, or press Cancel on its status message.",
	Limit:          "You already have %d research runs in progress. Wait for one to finish or cancel one (`/research status`).",
	TooLong:        "Your question is too long (%d characters; the limit is %d). Please shorten it and mention me again.",
	Unready:        "I can't research right now: %s\nAn admin needs to fix the bot's configuration; mention me again afterwards.",
	FailedRetry:    "Mention me again to retry.",
	FailedNote:     "Something went wrong and I could not finish this research (reference %s; the details are in the bot's log).\nMention me again to retry.",
	ModelNotUsed:   "⚠️ The model could not be reached for part of this research: the report was written without it (extractive) and says so.",
	SummaryApart:   "Summary",
	AlreadyDecided: "%s already decided this (%s).", NoLongerWaiting: "This research is no longer waiting for that decision.",
	AlreadyFinished:  "This research has already finished (%s).",
	CancelTooLate:    "The cancel by *%s* came too late: the report was already being posted.",
	CancelTooLateYou: "Your cancel came too late: the research had finished and its report was already being posted.",
	OnlyRetry:        "Only %s (who asked) or an approver can have this report posted again.",

	NotEnabled:         "I'm not enabled in this channel. Ask an admin to add it to the allow-list, or DM me.",
	WaitingAnswerFrom:  "This research is waiting for an answer from %s.",
	StartStorageFailed: "Sorry, I could not start the research (storage error). Please try again.",
	DecisionFailed:     "Sorry, I could not record your decision (storage error). Please try again.",
	SayWhatChanges:     "Please say what should change.",
	FeedbackTooLong:    "This is too long (%d characters; the limit is %d). Please shorten it.",
	RunGone:            "I can't find that research any more.",
	FormFailed:         "I couldn't open the feedback form; please press the button again.",
	CancelFailed:       "Sorry, I could not cancel (storage error). Please try again.",
	OnlyCancel:         "Only %s (who asked) or a configured approver can cancel this research.",
	OnlyDecideOn:       "Only %s (who asked) or a configured approver can decide on this research.",
	SlashFailed:        "Sorry, that failed. Please try again; if it keeps failing, tell an admin the reference `%s`.",
	DigestsUnavailable: "Scheduled digests are not available yet.",
	AddQuestion:        "Please add a question: `/research ask <question>` (or `/research deep <question>`).",
	SlashTooLong:       "Your question is too long (%d characters; the limit is %d). Please shorten it.",
	CannotPost:         "I can't post here. Invite me to the channel first (`/invite @deepresearch`).",
	StartFailed:        "Sorry, I could not start the research. Please try again.",
	StartStore:         "Sorry, I could not start the research (storage error).",
	Started:            "Started — follow the progress in the thread.",
	ReadRunsFailed:     "Sorry, I could not read your runs (storage error).",
	NoRuns:             "You have no research runs yet.",
	NoneInProgress:     "You have no research in progress.",
	WhichRun:           "You have several runs in progress; say which: `/research cancel <run>` with one of %s",
	NoSuchRun:          "There is no research run `%s`. See `/research status`.",
	ReadRunFailed:      "Sorry, I could not read that run (storage error).",
	Cancelling:         "Cancelling `%s`.",
	RecentResearch:     "*Your recent research*",

	SaveFailed:     "Sorry, I could not save the schedule. Please try again.",
	CannotSchedule: "I could not schedule that:",
	Scheduled:      "Scheduled *%s* in %s (`%s`, %s). First digest: %s.",
	SchedulesHead:  "*Scheduled digests* (this channel, and yours elsewhere)",
	NoSchedules:    "No scheduled digests here yet. Create one with `/research schedule`.",
	NSchedules:     "%d scheduled digests",
	YourSchedules:  "Your scheduled digests",
	NoneYet:        "None yet: `/research schedule` in a channel creates one.",
	Resumed:        "Resumed *%s*.",
	Paused:         "Paused *%s*.",
	Deleted:        "Deleted *%s*.",
	AlreadyRunning: "It is already running (started this minute).",
	RunningNow:     "Running it now; the digest will be posted in its channel.",
	ScheduleGone:   "That schedule no longer exists.",
	ThatFailed:     "Sorry, that failed. Please try again.",
	OnlyOwner:      "Only the schedule's owner or an admin can change it.",
	OnlyOwnerNamed: "Only %s (who created it) or an admin can change this schedule.",
	RunDecided:     "Someone has already decided on this run.",

	NotAChannel:    "Pick a public or private channel for the digests (not a direct message).",
	NotAllowedHere: "I'm not enabled in %s. Pick a channel on the allow-list.",
	Archived:       "%s is archived.",
	NotMember:      "I'm not a member of %s. Invite me first (`/invite @deepresearch`).",
	CannotSee:      "I can't see %s: it does not exist, or it is private and I'm not in it.",
	OwnerNotMember: "You are not a member of %s, so digests cannot be posted there in your name.",
}

var wordsJA = words{
	Queued: "待機中", Researching: "調査中", Waiting: "確認待ち", Done: "完了", Failed: "失敗", Cancelled: "キャンセル済み",
	Plan: "計画", Subtasks: "サブタスク",
	Phase: "段階: ", SourcesRead: "読んだ情報源: %d", Tokens: "トークン: %d", Elapsed: "経過: ", AskedBy: "依頼者 ",
	Cancel:   "キャンセル",
	IntrPlan: "📋 調査計画の確認をお願いします", IntrDraft: "📝 下書きの確認をお願いします", IntrQuestion: "❓ 質問",
	Approve: "承認", RequestChanges: "修正を依頼", ResearchMore: "さらに調査",
	OnlyDecide: "%s さんか承認者だけが決定できます。",
	Approved:   "✅ 承認", ChangesRequested: "✏️ 修正依頼", MoreRequested: "🔎 追加調査の依頼",
	CancelledAction: "🛑 キャンセル", Answered: "💬 回答",
	DecidedBy:   "%s（*%s*）",
	ReportTitle: "調査レポート",
	NSources:    "情報源 %d 件", NCitations: "引用 %d 件", NTokens: "%d トークン", FullReport: "レポート全文を添付",
	ReportBelow: "レポートは下にあります。", CancelledBy: "*%s* さんがキャンセルしました。", ReplyToAnswer: "このスレッドに返信して答えてください。",
	Busy:           "このスレッドの前の質問をまだ調査中です。終わるまでお待ちいただくか、状況メッセージのキャンセルを押してください。",
	Limit:          "進行中の調査がすでに %d 件あります。終わるのを待つか、どれかをキャンセルしてください（`/research status`）。",
	TooLong:        "質問が長すぎます（%d 文字、上限は %d 文字）。短くしてもう一度メンションしてください。",
	Unready:        "いまは調査できません: %s\n管理者がボットの設定を直す必要があります。直ったらもう一度メンションしてください。",
	FailedRetry:    "もう一度メンションすると再試行します。",
	FailedNote:     "問題が起きたため、この調査を完了できませんでした（参照 %s、詳細はボットのログにあります）。\nもう一度メンションすると再試行します。",
	ModelNotUsed:   "⚠️ 調査の途中でモデルに接続できませんでした。レポートはモデルなしで（抽出のみで）作成され、その旨が記載されています。",
	SummaryApart:   "要約",
	AlreadyDecided: "%s さんがすでに決定しています（%s）。", NoLongerWaiting: "この調査はもうその決定を待っていません。",
	AlreadyFinished:  "この調査はすでに終了しています（%s）。",
	CancelTooLate:    "*%s* さんのキャンセルは間に合いませんでした。レポートはすでに投稿中でした。",
	CancelTooLateYou: "キャンセルは間に合いませんでした。調査は終わっていて、レポートはすでに投稿中でした。",
	OnlyRetry:        "このレポートを再投稿できるのは %s さん（依頼者）か承認者だけです。",

	NotEnabled:         "このチャンネルでは有効になっていません。管理者に許可リストへの追加を頼むか、DM でお尋ねください。",
	WaitingAnswerFrom:  "この調査は %s さんの回答を待っています。",
	StartStorageFailed: "申し訳ありません。調査を開始できませんでした（保存エラー）。もう一度お試しください。",
	DecisionFailed:     "申し訳ありません。決定を記録できませんでした（保存エラー）。もう一度お試しください。",
	SayWhatChanges:     "何を変えるべきか書いてください。",
	FeedbackTooLong:    "長すぎます（%d 文字、上限は %d 文字）。短くしてください。",
	RunGone:            "その調査はもう見つかりません。",
	FormFailed:         "フィードバックのフォームを開けませんでした。もう一度ボタンを押してください。",
	CancelFailed:       "申し訳ありません。キャンセルできませんでした（保存エラー）。もう一度お試しください。",
	OnlyCancel:         "この調査をキャンセルできるのは %s さん（依頼者）か承認者だけです。",
	OnlyDecideOn:       "この調査について決定できるのは %s さん（依頼者）か承認者だけです。",
	SlashFailed:        "申し訳ありません。失敗しました。もう一度お試しください。失敗が続く場合は、参照 `%s` を管理者に伝えてください。",
	DigestsUnavailable: "定期ダイジェストはまだ使えません。",
	AddQuestion:        "質問を書いてください: `/research ask <質問>`（または `/research deep <質問>`）。",
	SlashTooLong:       "質問が長すぎます（%d 文字、上限は %d 文字）。短くしてください。",
	CannotPost:         "ここには投稿できません。先にチャンネルに招待してください（`/invite @deepresearch`）。",
	StartFailed:        "申し訳ありません。調査を開始できませんでした。もう一度お試しください。",
	StartStore:         "申し訳ありません。調査を開始できませんでした（保存エラー）。",
	Started:            "開始しました。進み具合はスレッドでご覧ください。",
	ReadRunsFailed:     "申し訳ありません。調査の一覧を読めませんでした（保存エラー）。",
	NoRuns:             "調査はまだありません。",
	NoneInProgress:     "進行中の調査はありません。",
	WhichRun:           "進行中の調査が複数あります。どれかを指定してください: `/research cancel <調査>`（%s のどれか）",
	NoSuchRun:          "調査 `%s` はありません。`/research status` をご覧ください。",
	ReadRunFailed:      "申し訳ありません。その調査を読めませんでした（保存エラー）。",
	Cancelling:         "`%s` をキャンセルしています。",
	RecentResearch:     "*最近の調査*",

	SaveFailed:     "申し訳ありません。スケジュールを保存できませんでした。もう一度お試しください。",
	CannotSchedule: "そのスケジュールは登録できませんでした:",
	Scheduled:      "*%s* を %s に登録しました（`%s`、%s）。最初のダイジェスト: %s。",
	SchedulesHead:  "*定期ダイジェスト*（このチャンネルのものと、ほかのチャンネルのあなたのもの）",
	NoSchedules:    "ここにはまだ定期ダイジェストがありません。`/research schedule` で作成できます。",
	NSchedules:     "定期ダイジェスト %d 件",
	YourSchedules:  "あなたの定期ダイジェスト",
	NoneYet:        "まだありません。チャンネルで `/research schedule` を使うと作成できます。",
	Resumed:        "*%s* を再開しました。",
	Paused:         "*%s* を一時停止しました。",
	Deleted:        "*%s* を削除しました。",
	AlreadyRunning: "すでに実行中です（この1分以内に開始）。",
	RunningNow:     "いま実行しています。ダイジェストはそのチャンネルに投稿されます。",
	ScheduleGone:   "そのスケジュールはもうありません。",
	ThatFailed:     "申し訳ありません。失敗しました。もう一度お試しください。",
	OnlyOwner:      "このスケジュールを変更できるのは作成者か管理者だけです。",
	OnlyOwnerNamed: "このスケジュールを変更できるのは %s さん（作成者）か管理者だけです。",
	RunDecided:     "この実行はすでに誰かが決定しています。",

	NotAChannel:    "ダイジェストには公開または非公開のチャンネルを選んでください（DM は使えません）。",
	NotAllowedHere: "%s では有効になっていません。許可リストにあるチャンネルを選んでください。",
	Archived:       "%s はアーカイブされています。",
	NotMember:      "%s のメンバーではありません。先に招待してください（`/invite @deepresearch`）。",
	CannotSee:      "%s が見えません。存在しないか、非公開で私が参加していません。",
	OwnerNotMember: "あなたは %s のメンバーではないため、あなたの名前でダイジェストを投稿できません。",
}

func (l lang) words() *words {
	if l == langJA {
		return &wordsJA
	}
	return &wordsEN
}

// wordsFor is the bot's words in user's language (userLang).
func (c *slackClient) wordsFor(ctx context.Context, user string) *words {
	return c.userLang(ctx, user).words()
}

// cachedWords is wordsFor without asking Slack: the user's language when
// an earlier users.info told it, English otherwise. An ack's payload uses
// it, since an ack must not wait for a Slack call.
func (c *slackClient) cachedWords(user string) *words {
	if v, ok := c.langs.Load(user); ok {
		return v.(lang).words()
	}
	return langEN.words()
}

// userLang is the language of a user's Slack client (users.info with
// include_locale, asked once with the user's name); English when unknown.
func (c *slackClient) userLang(ctx context.Context, id string) lang {
	if id == "" {
		return langEN
	}
	if v, ok := c.langs.Load(id); ok {
		return v.(lang)
	}
	c.userName(ctx, id)
	if v, ok := c.langs.Load(id); ok {
		return v.(lang)
	}
	return langEN
}
