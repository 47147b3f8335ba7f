package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"deepresearch/research"
)

// Researcher runs a research to its end without asking anyone (the agent,
// research.Runner).
type Researcher interface {
	Research(ctx context.Context, req research.DigestRequest) (research.Result, error)
}

// DigestMessage is the summary message of a digest, for a Poster to render.
type DigestMessage struct {
	ScheduleID string
	Topic      string
	Title      string
	Due        time.Time
	Manual     bool
	Summary    string
	WhatsNew   WhatsNew
	// Text is a plain mrkdwn rendering (notification and fallback text).
	Text string
}

// Poster posts to Slack (bot.Digests).
type Poster interface {
	// PostDigest posts the summary message and returns its ts.
	PostDigest(ctx context.Context, channel string, msg DigestMessage) (ts string, err error)
	// UploadReport uploads the markdown report as a file in the thread of
	// the summary message.
	UploadReport(ctx context.Context, channel, threadTS, filename, title, markdown string) error
}

// ChartPoster is a Poster that also shares a report's charts (bot.Digests):
// a digest whose report has charts shares each as a PNG file in the same
// thread, after the report.
type ChartPoster interface {
	UploadChart(ctx context.Context, channel, threadTS, filename, title string, png []byte) error
}

// DigestRunner is the Runner that researches a schedule's topic, compares
// the result with the schedule's previous digest and posts a summary message
// plus the report as a .md file.
type DigestRunner struct {
	Researcher Researcher
	Poster     Poster
	// Channels, when set, is asked before researching: a firing whose
	// channel is gone (deleted, archived, the bot removed) or no longer
	// allowed fails at once instead of after a research nobody can see.
	Channels ChannelChecker
	// Logger logs what does not fail a firing (a chart not shared); nil:
	// not logged.
	Logger *slog.Logger
}

// ErrChannelUnavailable fails a firing whose channel cannot take digests.
var ErrChannelUnavailable = errors.New("schedule: the digest channel is unavailable")

var _ Runner = (*DigestRunner)(nil)

// ThreadID is the agent thread of a firing.
func ThreadID(scheduleID string, due time.Time) string {
	return fmt.Sprintf("schedule:%s:%d", scheduleID, due.Unix())
}

// Run implements Runner.
func (r *DigestRunner) Run(ctx context.Context, job Job) (*Digest, error) {
	if r.Researcher == nil || r.Poster == nil {
		return nil, errors.New("schedule: DigestRunner needs a Researcher and a Poster")
	}
	sc := job.Schedule
	if !ValidChannelID(sc.Channel) {
		return nil, fmt.Errorf("%w: %q is not a channel id", ErrChannelUnavailable, sc.Channel)
	}
	if r.Channels != nil {
		problem, err := r.Channels.CheckChannel(ctx, sc.Channel, sc.Owner)
		if err != nil {
			return nil, fmt.Errorf("schedule: checking channel %s: %w", sc.Channel, err)
		}
		if problem != "" {
			return nil, fmt.Errorf("%w: %s", ErrChannelUnavailable, problem)
		}
	}
	res, err := r.Researcher.Research(ctx, research.DigestRequest{
		ThreadID: ThreadID(sc.ID, job.Due), Question: sc.Topic,
		Language: sc.Options.Language, Depth: sc.Options.Depth, Owner: sc.Owner, Channel: sc.Channel,
	})
	if err != nil {
		return nil, fmt.Errorf("schedule: research %q: %w", sc.Topic, err)
	}
	findings := res.Findings
	if len(findings) == 0 {
		findings = ExtractFindings(res.Summary, res.Report)
	}
	w := Compare(job.Previous, findings, res.Cited)
	msg := DigestMessage{ScheduleID: sc.ID, Topic: sc.Topic, Title: res.Title, Due: job.Due, Manual: job.Manual, Summary: res.Summary, WhatsNew: w}
	msg.Text = SummaryText(msg)
	ts, err := r.Poster.PostDigest(ctx, sc.Channel, msg)
	if err != nil {
		return nil, fmt.Errorf("schedule: post digest: %w", err)
	}
	report := ComposeReport(sc, job.Due, w, res)
	name := fmt.Sprintf("digest-%s-%s.md", slug(sc.Topic), job.Due.Format("20060102-1504"))
	title := fmt.Sprintf("%s — %s", truncate(oneLine(sc.Topic), 80), DateLabel(job.Due))
	cp, charts := r.Poster.(ChartPoster)
	charts = charts && len(res.Charts) > 0
	chartName := func(c research.Chart) string { return strings.TrimSuffix(name, ".md") + "-" + c.Name }
	if charts {
		for _, c := range res.Charts {
			report = strings.ReplaceAll(report, "]("+c.Name+")", "]("+chartName(c)+")")
		}
	}
	if err := r.Poster.UploadReport(ctx, sc.Channel, ts, name, title, report); err != nil {
		return nil, fmt.Errorf("schedule: upload report: %w", err)
	}
	if charts {
		for _, c := range res.Charts {
			// the report holds the chart's table: a chart not shared is
			// logged, not a failed firing posted again
			if err := cp.UploadChart(ctx, sc.Channel, ts, chartName(c), c.Title, c.PNG); err != nil && r.Logger != nil {
				r.Logger.Warn("schedule: a digest's chart was not shared", "schedule", sc.ID, "chart", c.Name, "err", err)
			}
		}
	}
	keepF, keepS := Carry(job.Previous, findings, res.Cited)
	return &Digest{Title: res.Title, Summary: truncate(res.Summary, 2000), Findings: keepF, Sources: keepS, MessageTS: ts,
		NewFindings: len(w.NewFindings), NewSources: len(w.NewSources)}, nil
}

// SummaryText renders a digest message as mrkdwn-ish plain text (no
// escaping: Posters escape what they send).
func SummaryText(m DigestMessage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Digest: %s (%s)\n", oneLine(m.Topic), DateLabel(m.Due))
	w := m.WhatsNew
	switch {
	case w.First():
		fmt.Fprintf(&b, "First digest: %d findings, %d sources.\n", len(w.NewFindings), len(w.NewSources))
	case len(w.NewFindings) == 0 && len(w.NewSources) == 0:
		fmt.Fprintf(&b, "Nothing new since %s.\n", DateLabel(w.Since.In(m.Due.Location())))
	default:
		fmt.Fprintf(&b, "New since %s: %d findings, %d sources (%d already reported).\n",
			DateLabel(w.Since.In(m.Due.Location())), len(w.NewFindings), len(w.NewSources), len(w.KnownFindings))
	}
	for i, f := range w.NewFindings {
		if i == 5 {
			fmt.Fprintf(&b, "…and %d more in the report.\n", len(w.NewFindings)-5)
			break
		}
		fmt.Fprintf(&b, "• %s\n", truncate(oneLine(f), 300))
	}
	return strings.TrimSpace(b.String())
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "research"
	}
	return out
}
