package bot

import "time"

// StopHandling makes b store and ack the envelopes it receives but handle
// none of them, and take none over from the inbox, as if the process died
// right after each ack. Runs are not affected.
func StopHandling(b *Bot) { b.intake.skipWork.Store(true) }

// MessageRunID is the id of the run a Slack message asks for.
func MessageRunID(team, channel, ts string) string { return messageRunID(team, channel, ts) }

// Shares is a bot's current share of the workspace's Slack budgets.
type Shares struct {
	Live             int           // replicas counted in the store's instance registry
	UpdatesPerMinute float64       // chat.update rate (-1: unlimited)
	UpdateBurst      int           // chat.update burst
	PostInterval     time.Duration // chat.postMessage pace per channel (-1: unpaced)
	PostBurst        int           // chat.postMessage burst per channel
	EditInterval     time.Duration // spacing of edits per channel
}

// WorkspaceSearchRate returns w's current calls a minute and burst.
func WorkspaceSearchRate(w *WorkspaceSearch) (perMinute float64, burst int) {
	return w.budget.current()
}

// SharesOf returns b's current shares.
func SharesOf(b *Bot) Shares {
	s := Shares{Live: int(b.slackClient.live.Load()), EditInterval: b.slackClient.limiter.every()}
	s.UpdatesPerMinute, s.UpdateBurst = b.slackClient.updates.current()
	s.PostInterval, s.PostBurst = b.slackClient.posts.current()
	return s
}
