package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"deepresearch/research"
)

// Poster posts to Slack (bot.Digests).
type Poster interface {
	ApprovalRequester
	// PostDigest posts the summary message, marked with msg.RunID, and
	// returns its ts.
	PostDigest(ctx context.Context, channel string, msg DigestMessage) (ts string, err error)
	// FindDigest looks in channel for the summary message of run runID
	// that the bot itself posted at or after since (an attempt that died
	// before recording it), and returns its ts; "" when there is none. An
	// error that may pass when tried again is a research.TransientError.
	FindDigest(ctx context.Context, channel, runID string, since time.Time) (ts string, err error)
	// UploadReport uploads the markdown report as a file in the thread of
	// the summary message: the file is recorded with st.Stage before it is
	// shared (a file it cannot record is deleted). It returns the file's id.
	// The report's links to its charts name the charts' files (ShareCharts).
	UploadReport(ctx context.Context, channel, threadTS, filename, title, markdown string, charts []research.Chart, st research.Staging) (fileID string, err error)
	// FindFile looks for a file the bot shared in the thread under the
	// name.
	FindFile(ctx context.Context, channel, threadTS, filename string) (fileID string, ok bool)
	// ShareCharts shares the charts of the report filename in the thread,
	// each a PNG file of its own, recorded with st.Stage before it is
	// shared; check skips those already there. A chart not shared is
	// logged: the report holds its table.
	ShareCharts(ctx context.Context, channel, threadTS, filename string, charts []research.Chart, check bool, st research.Staging)
	// DeleteFile deletes a file never shared and reports whether it is gone.
	DeleteFile(ctx context.Context, fileID string) bool
}

// DigestMessage is the summary message of a digest, for a Poster to render.
type DigestMessage struct {
	// RunID is the firing's run: the message carries it, so that an
	// attempt that did not record the message finds it (FindDigest).
	RunID      string
	ScheduleID string
	Topic      string
	Title      string
	Due        time.Time
	Manual     bool
	WhatsNew   WhatsNew
	// Text is a plain mrkdwn rendering (notification and fallback text).
	Text string
}

// StatusMessages keeps where a run is shown, by run id (the chat face's
// store, slackstate.Store): the digest's summary message is its run's
// status message, posted once.
type StatusMessages interface {
	// StatusMessage returns the ts of the run's status message, "" when
	// none is recorded.
	StatusMessage(ctx context.Context, runID string) (string, error)
	// SetStatusMessage records ts if the run has none yet and returns the
	// recorded one (set-if-empty, then read).
	SetStatusMessage(ctx context.Context, runID, ts string) (string, error)
}

// ErrChannelUnavailable fails a firing whose channel cannot take digests.
var ErrChannelUnavailable = errors.New("schedule: the digest channel is unavailable")

// Face is the digest face of the run service (research.Presenter) for the
// runs of firings (RunOptions.Digest set): it asks for approval at a
// go-ahead, posts the summary message — what is new since the schedule's
// previous digest — and the report as a .md file in its thread, exactly
// once through the service's upload record and staged files, and records
// the digest for the next firing's "what's new".
type Face struct {
	Store  Store
	Poster Poster
	Status StatusMessages
	// Logger logs what does not fail a firing (a previous digest not
	// read, an approval not asked for); nil: not logged. The Poster logs
	// a chart not shared.
	Logger *slog.Logger
}

var _ research.Presenter = (*Face)(nil)

// Open implements research.Presenter.
func (f *Face) Open(_ context.Context, r research.Run) research.View {
	log := f.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &digestView{f: f, run: r, log: log.With("run_id", r.ID)}
	if r.Options.Digest != nil {
		v.of = *r.Options.Digest
	}
	return v
}

// digestView shows one digest run (research.View).
type digestView struct {
	f   *Face
	run research.Run
	of  research.DigestOf
	log *slog.Logger

	sc    Schedule
	scErr error
	prev  *Firing
	// statusTS is the summary message an earlier attempt recorded, once
	// read (statusRead).
	statusTS   string
	statusRead bool
	ts         string // the summary message
}

func (v *digestView) Show(ctx context.Context, r research.Run) {
	v.run = r
	v.sc, v.scErr = v.f.Store.GetSchedule(ctx, v.of.Schedule)
	if v.scErr != nil {
		return
	}
	prev, err := v.f.Store.PreviousDigest(ctx, v.sc.ID, v.of.Due)
	switch {
	case err == nil:
		v.prev = &prev
	case !errors.Is(err, ErrNotFound):
		v.log.Warn("schedule: previous digest", "err", err)
	}
}

// recorded returns the summary message recorded for the run ("" when
// none), read once.
func (v *digestView) recorded(ctx context.Context) (string, error) {
	if !v.statusRead {
		ts, err := v.f.Status.StatusMessage(ctx, v.run.ID)
		if err != nil {
			return "", fmt.Errorf("schedule: the digest message: %w", err)
		}
		v.statusTS, v.statusRead = ts, true
	}
	return v.statusTS, nil
}

func (v *digestView) due() time.Time             { return v.of.Due.In(v.sc.Location()) }
func (v *digestView) Progress(research.Progress) {}
func (v *digestView) Alive(context.Context)      {}
func (v *digestView) Turned(research.Outcome)    {}
func (v *digestView) Failed(_ context.Context, cause error) {
	v.log.Error("schedule: digest failed", "schedule_id", v.of.Schedule, "due", v.of.Due, "err", cause)
}
func (v *digestView) Cancelled(context.Context, string)        {}
func (v *digestView) Halt()                                    {}
func (v *digestView) Ended(context.Context, research.RunState) {}

// Paused asks for approval of the firing (the go-ahead before research).
func (v *digestView) Paused(ctx context.Context, in research.Interrupt) research.PendingInterrupt {
	pi := research.PendingInterrupt{ID: in.ID, Kind: in.Kind, Text: in.Text}
	if v.scErr != nil {
		return pi
	}
	if err := v.f.Poster.RequestApproval(ctx, Job{Schedule: v.sc, Due: v.due()}); err != nil {
		v.log.Error("schedule: request approval", "err", err)
	}
	return pi
}

// digestOf is what a result makes of the digest: what is new since the
// previous one, and the findings carried to the next.
func (v *digestView) digestOf(res research.Result) (WhatsNew, []string) {
	findings := res.Findings
	if len(findings) == 0 {
		findings = ExtractFindings(res.WriterSummary, res.Report)
	}
	return Compare(v.prev, findings, res.Cited), findings
}

// names are the report's file name and title.
func (v *digestView) names() (name, title string) {
	due := v.due()
	name = fmt.Sprintf("digest-%s-%s.md", slug(v.sc.Topic), due.Format("20060102-1504"))
	title = fmt.Sprintf("%s — %s", truncate(oneLine(v.sc.Topic), 80), DateLabel(due))
	return name, title
}

// Published finds the report in the thread of the summary message that an
// earlier attempt posted (it died before recording the upload), and shares
// the charts that attempt may not have.
func (v *digestView) Published(ctx context.Context, res research.Result, st research.Staging) (research.Upload, bool) {
	if v.scErr != nil {
		return research.Upload{}, false
	}
	recorded, err := v.recorded(ctx)
	if err != nil || recorded == "" {
		// Publish reads it again (an error there fails the attempt).
		return research.Upload{}, false
	}
	name, _ := v.names()
	id, ok := v.f.Poster.FindFile(ctx, v.sc.Channel, recorded, name)
	if !ok {
		return research.Upload{}, false
	}
	v.ts = recorded
	v.shareCharts(ctx, res, name, true, st)
	return research.Upload{FileID: id, MessageID: v.ts}, true
}

// shareCharts shares the report's charts in the digest's thread, each
// recorded as staged (st) until it is shared; check skips those already
// there.
func (v *digestView) shareCharts(ctx context.Context, res research.Result, report string, check bool, st research.Staging) {
	v.f.Poster.ShareCharts(ctx, v.sc.Channel, v.ts, report, res.Charts, check, st)
}

// Discard deletes a report file an earlier attempt staged.
func (v *digestView) Discard(ctx context.Context, fileID string) bool {
	return v.f.Poster.DeleteFile(ctx, fileID)
}

// Publish posts the summary message (once: its ts is the run's status
// message, and one an earlier attempt posted without recording it is
// found in the channel), the report in its thread, then the report's
// charts.
func (v *digestView) Publish(ctx context.Context, res research.Result, st research.Staging) (research.Upload, error) {
	if v.scErr != nil {
		return research.Upload{}, fmt.Errorf("schedule: schedule %s: %w", v.of.Schedule, v.scErr)
	}
	sc, due := v.sc, v.due()
	w, _ := v.digestOf(res)
	ts, err := v.recorded(ctx)
	if err != nil {
		// the store's: another round reads it again
		return research.Upload{}, research.TransientError{Err: err}
	}
	if ts == "" {
		if ts, err = v.postOnce(ctx, res, w); err != nil {
			return research.Upload{}, err
		}
	}
	v.ts = ts
	name, title := v.names()
	fileID, err := v.f.Poster.UploadReport(ctx, sc.Channel, ts, name, title, ComposeReport(sc, due, w, res), res.Charts, st)
	if err != nil {
		return research.Upload{}, fmt.Errorf("schedule: upload report: %w", err)
	}
	v.shareCharts(ctx, res, name, false, st)
	return research.Upload{FileID: fileID, MessageID: ts}, nil
}

// postOnce posts the summary message unless an earlier attempt posted it
// and died before recording it (FindDigest finds it in the channel), and
// records it as the run's status message; it returns the recorded ts.
func (v *digestView) postOnce(ctx context.Context, res research.Result, w WhatsNew) (string, error) {
	sc := v.sc
	posted, err := v.f.Poster.FindDigest(ctx, sc.Channel, v.run.ID, v.run.CreatedAt)
	switch {
	case err != nil && research.Transient(err):
		return "", fmt.Errorf("schedule: look for the digest message: %w", err)
	case err != nil:
		// Slack will not tell (a scope missing, say): post, at the risk of
		// a second message, rather than never.
		v.log.Warn("schedule: could not look for a digest message an earlier attempt posted; posting it", "err", err)
	case posted != "":
		v.log.Info("schedule: digest message found in the channel; not posting again", "ts", posted)
	}
	if posted == "" {
		msg := DigestMessage{RunID: v.run.ID, ScheduleID: sc.ID, Topic: sc.Topic, Title: research.ReportHeading(res.Report), Due: v.due(), Manual: v.of.Manual, WhatsNew: w}
		msg.Text = SummaryText(msg)
		if posted, err = v.f.Poster.PostDigest(ctx, sc.Channel, msg); err != nil {
			return "", fmt.Errorf("schedule: post digest: %w", err)
		}
	}
	ts, err := v.f.Status.SetStatusMessage(ctx, v.run.ID, posted)
	if err != nil {
		// Another round finds the message posted and records it.
		return "", research.TransientError{Err: fmt.Errorf("schedule: record the digest message: %w", err)}
	}
	v.statusTS, v.statusRead = ts, true
	return ts, nil
}

// Finished records the digest posted, for the next firing's "what's new".
func (v *digestView) Finished(ctx context.Context, res research.Result, _ string) {
	if v.scErr != nil {
		return
	}
	w, findings := v.digestOf(res)
	ts := v.ts
	if ts == "" {
		ts = v.statusTS
	}
	keepF, keepS := Carry(v.prev, findings, res.Cited)
	d := &Digest{Title: research.ReportHeading(res.Report), Summary: truncate(res.WriterSummary, 2000), Findings: keepF, Sources: keepS, MessageTS: ts,
		NewFindings: len(w.NewFindings), NewSources: len(w.NewSources)}
	if err := v.f.Store.RecordOutcome(ctx, v.sc.ID, v.of.Due, Outcome{Digest: d}); err != nil {
		v.log.Error("schedule: record the digest", "err", err)
		return
	}
	v.log.Info("schedule: digest posted", "schedule_id", v.sc.ID, "due", v.of.Due)
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

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// slug is the topic in a file name: lower-case ASCII letters and digits,
// runs of anything else as one dash, at most 40 bytes.
func slug(s string) string {
	out := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(out) > 40 {
		out = strings.Trim(out[:40], "-")
	}
	if out == "" {
		return "research"
	}
	return out
}
