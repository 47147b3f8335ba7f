package bot

// StopHandling makes b store and ack the envelopes it receives but handle
// none of them, and take none over from the inbox, as if the process died
// right after each ack. Runs are not affected.
func StopHandling(b *Bot) { b.skipWork.Store(true) }

// MessageRunID is the id of the run a Slack message asks for.
func MessageRunID(team, channel, ts string) string { return messageRunID(team, channel, ts) }
