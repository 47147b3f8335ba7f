package bot

import (
	"context"
	"log/slog"
	"strings"

	"deepresearch/research"
	"deepresearch/slackstate"

	"github.com/slack-go/slack"
)

// keepReport stores a posted report as a source for later questions (see
// Options.Reports), cited by the Slack permalink of the thread it was
// posted in. It is kept where it was posted: research.ReportQuery says who
// may find it. A run that read messages of the workspace is not kept: what
// it found there is never stored beyond the run. A report that cannot be kept
// costs nothing but itself; it is stored again if the run is finished
// again (saving is idempotent).
func (b *Bot) keepReport(ctx context.Context, r placedRun, th slackstate.Thread, res research.Result, log *slog.Logger) {
	if b.opts.Reports == nil || res.Reply || res.ReadWorkspace {
		return
	}
	text := res.Report
	if strings.TrimSpace(text) == "" {
		return
	}
	var link string
	err := b.slackClient.call(ctx, "chat.getPermalink", true, func(ctx context.Context) error {
		var err error
		link, err = b.slackClient.api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: r.Key.Channel, Ts: r.Key.ThreadTS})
		return err
	})
	if err != nil || !strings.HasPrefix(link, "https://") {
		log.Warn("bot: the thread's permalink; the report is not kept as a source", "err", err)
		return
	}
	err = b.opts.Reports.SaveReport(ctx, research.PastReport{
		RunID: r.ID, Team: r.Key.Team, Channel: r.Key.Channel, Thread: r.Key.ThreadTS, Private: th.DM,
		Requester: r.Requester, URL: link, Title: res.Title, Question: r.Question, Text: text, CreatedAt: b.slackClient.now(),
	})
	if err != nil {
		log.Warn("bot: keep the report as a source", "err", err)
		return
	}
	log.Info("bot: report kept as a source", "url", link)
}
