package bot

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/slackstate"

	"github.com/slack-go/slack"
)

// slackRuns is the Slack face of the run service (research.Presenter): it
// shows a run in its thread, as a stream or an edited status message, with
// buttons at a pause, and publishes the report as a file in the thread.
type slackRuns struct{ b *Bot }

// Open counts the run as active, learns its place, thread and requester, and
// shows "is researching…" in an assistant thread (before the heartbeat
// starts, so that the heartbeat's refresh can never land after the run's
// final clear of the status line).
func (p slackRuns) Open(ctx context.Context, run research.Run) research.View {
	b := p.b
	if research.RunKind(run.ID) == schedule.RunKind && b.digestFace != nil {
		// A digest run: its face posts to the schedule's channel.
		return b.digestFace.Open(ctx, run)
	}
	b.metrics.runsActive.Inc()
	b.metrics.runs.WithLabelValues(string(research.StateRunning)).Inc()
	wctx := b.workCtx
	log := b.log.With("run_id", run.ID, "thread_id", run.ThreadID)
	v := &slackView{
		runScope:  runScope{requester: b.slackClient.userName(wctx, run.Requester), log: log},
		b:         b,
		lang:      b.slackClient.userLang(wctx, run.Requester),
		refreshed: b.slackClient.now(),
	}
	if err := v.learnPlace(wctx, run); err != nil {
		log.Error("bot: read the run's place in Slack; trying again before its report is posted", "err", err)
	}
	if v.thread.DM {
		b.setAssistantStatus(ctx, v.thread.Key, "is researching…")
	}
	return v
}

// learnPlace reads the run's place in Slack and its thread. On an error of
// the store the place stays empty and placeErr says why: publishing reads
// it again, and fails (to be tried again) rather than post the report
// nowhere.
func (v *slackView) learnPlace(ctx context.Context, run research.Run) error {
	r, err := v.b.readPlace(ctx, run)
	v.run, v.placeErr = r, err
	th, terr := v.b.records.Thread(ctx, r.Key)
	if terr != nil {
		th = slackstate.Thread{Key: r.Key, ThreadID: r.ThreadID}
	}
	v.thread = th
	return err
}

// placeKnown makes sure the run's place was read, reading it again if Open
// could not. The error is transient: the service tries publishing again.
func (v *slackView) placeKnown(ctx context.Context) error {
	if v.placeErr == nil {
		return nil
	}
	// Only the place: the thread (its DM flag for the assistant's status
	// line) is the heartbeat's to read and stays as Open found it.
	r, err := v.b.readPlace(ctx, v.run.Run)
	if err != nil {
		return research.TransientError{Err: fmt.Errorf("bot: read the run's place in Slack: %w", err)}
	}
	v.run, v.placeErr = r, nil
	v.log.Info("bot: the run's place in Slack read on a later try")
	return nil
}

// TakeWorkspaceToken hands the run's action_token, kept in this process's
// memory since the run was created here, to its research.
func (p slackRuns) TakeWorkspaceToken(runID string) string { return p.b.tokens.take(runID) }

// runScope is what the steps that end a run's turn share: the run, its
// thread, its status message, the requester's display name and its logger.
type runScope struct {
	run       placedRun
	thread    slackstate.Thread
	status    runStatus
	requester string
	log       *slog.Logger
}

// slackView shows one run in its Slack thread (research.View).
type slackView struct {
	runScope
	b         *Bot
	lang      lang
	refreshed time.Time // the assistant status line's last refresh (heartbeat goroutine)
	done      sync.Once // the active count taken back
	placeErr  error     // why the run's place could not be read (nil: it was)
}

// Show opens the run's stream or status message (it may post it).
// The run's place stays the one Open read, with the status message
// openStatus records.
func (v *slackView) Show(ctx context.Context, r research.Run) {
	v.run.Run = r
	v.status = v.b.statuses.openStatus(ctx, &v.run, statusView{
		Lang: v.lang, Question: r.Question, Requester: v.requester, State: research.StateRunning, Started: r.CreatedAt, RunID: r.ID,
	}, v.log)
}

func (v *slackView) Progress(p research.Progress) { v.status.Progress(p) }

// Alive refreshes an assistant thread's status line before Slack clears it.
func (v *slackView) Alive(ctx context.Context) {
	if v.thread.DM && v.b.slackClient.now().Sub(v.refreshed) >= v.b.opts.StatusRefresh {
		v.b.setAssistantStatus(ctx, v.thread.Key, "is researching…")
		v.refreshed = v.b.slackClient.now()
	}
}

// Turned counts the tokens the turn spent.
func (v *slackView) Turned(out research.Outcome) {
	n := v.status.lastProgress().Tokens
	if out.Result != nil && out.Result.Tokens > n {
		n = out.Result.Tokens
	}
	if n > 0 {
		v.b.metrics.tokens.Add(float64(n))
	}
}

// Paused says "Waiting for you" on the status message and posts the
// interrupt: a question as a message to reply to, a plan or a draft with
// its buttons. The status comes first: once the run is recorded as
// waiting, a click can resume it in any process, and an edit from here
// arriving after that run's own edits would leave a stale picture.
func (v *slackView) Paused(ctx context.Context, in research.Interrupt) research.PendingInterrupt {
	b, r := v.b, v.run
	if err := v.status.Final(ctx, research.StateWaiting, ""); err != nil {
		v.log.Warn("bot: waiting status", "err", err)
	}
	var ts string
	var err error
	if in.Kind == research.InterruptQuestion {
		ts, err = b.slackClient.postMessage(ctx, r.Key.Channel, slack.MsgOptionText("❓ "+truncateEscaped(in.Text, 3000)+"\n_"+v.lang.words().ReplyToAnswer+"_", false), slack.MsgOptionTS(r.Key.ThreadTS))
	} else {
		text, blocks := interruptBlocks(r.ID, in, v.requester, v.lang)
		ts, err = b.slackClient.postMessage(ctx, r.Key.Channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionTS(r.Key.ThreadTS))
	}
	if err != nil {
		v.log.Error("bot: post interrupt", "err", err)
	}
	pi := research.PendingInterrupt{ID: in.ID, Kind: in.Kind, Text: in.Text, MessageID: ts}
	if pi.Text == "" {
		pi.Text = Truncate(in.Draft, maxMarkdown-200)
	}
	return pi
}

// Finished shows the final picture (the report is in the thread) and
// keeps the report as a source for later questions. A cancel that came
// after the research had finished is noted, and its asker told.
func (v *slackView) Finished(ctx context.Context, res research.Result, lateCancelBy string) {
	b, r := v.b, v.run
	p := v.status.lastProgress()
	if res.Tokens > p.Tokens {
		p.Tokens = res.Tokens
	}
	if res.Sources > p.SourcesRead {
		p.SourcesRead = res.Sources
	}
	v.status.setProgress(p)
	v.status.setResult(res)
	note := v.lang.words().ReportBelow
	if by := lateCancelBy; by != "" {
		b.slackClient.ephemeral(ctx, r.Key.Channel, r.Key.ThreadTS, by, b.slackClient.userLang(ctx, by).words().CancelTooLateYou)
		note += "\n" + fmt.Sprintf(v.lang.words().CancelTooLate, b.slackClient.userName(ctx, by))
	}
	if err := v.status.Final(ctx, research.StateDone, note); err != nil {
		// The run is recorded as done anyway: leaving it to be continued
		// would only repeat this while Slack refuses, and the report
		// itself is in the thread.
		v.log.Error("bot: final status", "err", err)
	}
	b.keepReport(ctx, r, v.thread, res, v.log)
}

// Failed shows a plain sentence and the run id to quote: internal error
// strings never reach the channel.
func (v *slackView) Failed(ctx context.Context, _ error) {
	_ = v.status.Final(ctx, research.StateFailed, v.lang.failedNote(v.run.ID))
}

// Cancelled shows who cancelled the run.
func (v *slackView) Cancelled(ctx context.Context, by string) {
	_ = v.status.Final(ctx, research.StateCancelled, fmt.Sprintf(v.lang.words().CancelledBy, v.b.slackClient.userName(ctx, by)))
}

// Halt stops the status's progress; the first call takes the run back
// from the active count.
func (v *slackView) Halt() {
	if v.status != nil {
		v.status.halt()
	}
	v.done.Do(v.b.metrics.runsActive.Dec)
}

// Ended counts the run's new state and clears an assistant thread's
// status line.
func (v *slackView) Ended(ctx context.Context, state research.RunState) {
	v.b.metrics.runs.WithLabelValues(string(state)).Inc()
	if v.thread.DM {
		v.b.setAssistantStatus(ctx, v.thread.Key, "")
	}
}

// TraceUpload traces the report's upload in the research turn's trace.
func (v *slackView) TraceUpload(ctx context.Context, res research.Result) (context.Context, func(error)) {
	return v.b.spans.traceUpload(ctx, v.runScope, res)
}

// Published looks in the thread for the report file a process that died
// before recording it shared, and shares the charts it may not have.
func (v *slackView) Published(ctx context.Context, res research.Result, st research.Staging) (research.Upload, bool) {
	if res.Reply || v.placeKnown(ctx) != nil {
		return research.Upload{}, false
	}
	name := reportFilename(v.run.Run, res.Title)
	id, ts, ok := v.b.findPostedFile(ctx, v.run.Key, name)
	if !ok {
		return research.Upload{}, false
	}
	v.log.Info("bot: report found in thread; not posting again", "file_id", id)
	v.uploadCharts(ctx, res, name, true, st)
	return research.Upload{FileID: id, MessageID: ts}, true
}

// Discard deletes a staged file that was never shared.
func (v *slackView) Discard(ctx context.Context, fileID string) bool {
	return v.b.deleteFile(ctx, fileID, v.log)
}

// Publish posts the report file with its summary (a reply: a message).
// The files v2 flow runs step by step so that each step is retried on its
// own (429/5xx/network) and a failed attempt deletes the file it staged:
// no attempt leaves an unshared file behind. A share that Slack refuses
// for its content (invalid_blocks, msg_blocks_too_long, internal_error —
// which is what it answers to blocks it cannot show with a file) is not
// retried as it is: the file is shared with a plain title instead and the
// summary posted as a message of its own. An error Slack may not repeat
// is a research.TransientError.
func (v *slackView) Publish(ctx context.Context, res research.Result, st research.Staging) (research.Upload, error) {
	if err := v.placeKnown(ctx); err != nil {
		return research.Upload{}, err
	}
	u, err := v.publish(ctx, res, st)
	if err != nil && transient(err) {
		err = research.TransientError{Err: err}
	}
	return u, err
}

func (v *slackView) publish(ctx context.Context, res research.Result, st research.Staging) (research.Upload, error) {
	b, r, log := v.b, v.run, v.log
	if res.Reply {
		// An answer, not a report: a message in the thread, in a markdown
		// block (chat.postMessage renders it). At least once: a crash
		// between the post and the record posts it again.
		ts, err := b.slackClient.postMessage(ctx, r.Key.Channel, slack.MsgOptionText(summaryMarkdown(res, 3000), false),
			slack.MsgOptionBlocks(slack.NewMarkdownBlock("dr_reply", summaryMarkdown(res, maxMarkdown-100))),
			slack.MsgOptionTS(r.Key.ThreadTS))
		if err != nil {
			return research.Upload{}, fmt.Errorf("posting the reply: %w", err)
		}
		return research.Upload{MessageID: ts}, nil
	}
	name := reportFilename(r.Run, res.Title)
	content := chartLinks(res.Report, res.Charts, name)
	if content == "" {
		content = res.Summary
	}
	if content == "" {
		content = "(empty report)"
	}
	title := res.Title
	if title == "" {
		title = "Research report"
	}
	files := v.files()
	fileID, err := files.stageReport(ctx, name, content, st)
	if err != nil {
		return research.Upload{}, err
	}
	share := slack.CompleteUploadExternalParameters{
		Files:           []slack.FileSummary{{ID: fileID, Title: plainTitle(Truncate(title, 200))}},
		Blocks:          slack.Blocks{BlockSet: reportBlocks(res, v.requester, v.lang)},
		Channel:         r.Key.Channel,
		ThreadTimestamp: r.Key.ThreadTS,
	}
	err = b.shareFile(ctx, share)
	summaryApart := false
	if err != nil && refusedContent(err) {
		log.Warn("bot: Slack refused the report's summary blocks; sharing the file with its title alone", "err", err)
		share.Blocks = slack.Blocks{BlockSet: reportTitleBlocks(res, v.requester, v.lang)}
		err = b.shareFile(ctx, share)
		if err != nil && !transient(err) {
			// Slack may not take a second completion of a file whose
			// first one failed: stage the bytes again as a new file.
			files.dropStaged(ctx, fileID, st)
			if fileID, err = files.stageReport(ctx, name, content, st); err != nil {
				return research.Upload{}, err
			}
			share.Files[0].ID = fileID
			err = b.shareFile(ctx, share)
		}
		summaryApart = err == nil
	}
	if err != nil {
		// The share may have happened although we got an error.
		if id, ts, ok := b.findPostedFile(ctx, r.Key, name); ok {
			return research.Upload{FileID: id, MessageID: ts}, nil
		}
		files.dropStaged(ctx, fileID, st)
		return research.Upload{}, fmt.Errorf("sharing the report file: %w", err)
	}
	log.Info("bot: report uploaded", "file_id", fileID, "bytes", len(content))
	if summaryApart && res.Summary != "" {
		// chat.postMessage shows a markdown block that the file share refused.
		md := summaryMarkdown(res, summaryChars)
		if _, err := b.slackClient.postMessage(ctx, r.Key.Channel, slack.MsgOptionText(summaryMarkdown(res, 300), false),
			slack.MsgOptionBlocks(slack.NewMarkdownBlock("dr_summary", md)), slack.MsgOptionTS(r.Key.ThreadTS)); err != nil {
			log.Warn("bot: post the report summary", "err", err)
		}
	}
	v.uploadCharts(ctx, res, name, false, st)
	return research.Upload{FileID: fileID}, nil
}

// threadFiles shares a report and its charts as files in one thread, for
// both faces: a run's (slackView) and a digest's (Digests). Each file is
// recorded as staged before it is shared, so that a process dying before
// the share leaves the next attempt a file to delete, never an orphan.
type threadFiles struct {
	b   *Bot
	key slackstate.ThreadKey
	log *slog.Logger
}

// files are the files of the run's thread.
func (v *slackView) files() threadFiles { return threadFiles{b: v.b, key: v.run.Key, log: v.log} }

// uploadCharts shares the report's charts in the run's thread
// (threadFiles.uploadCharts).
func (v *slackView) uploadCharts(ctx context.Context, res research.Result, report string, check bool, st research.Staging) {
	v.files().uploadCharts(ctx, res.Charts, report, check, st)
}

// stageReport stages the report file and records it as staged. A file
// that cannot be recorded is deleted at once.
func (f threadFiles) stageReport(ctx context.Context, name, content string, st research.Staging) (string, error) {
	fileID, err := f.b.stageFile(ctx, name, content)
	if err != nil {
		return "", err
	}
	if err := st.Stage(ctx, fileID); err != nil {
		f.b.deleteFile(ctx, fileID, f.log)
		return "", fmt.Errorf("recording the staged report file: %w", err)
	}
	return fileID, nil
}

// dropStaged deletes a staged file that was not shared and forgets it; one
// Slack would not delete stays recorded for the next attempt.
func (f threadFiles) dropStaged(ctx context.Context, fileID string, st research.Staging) {
	if f.b.deleteFile(ctx, fileID, f.log) {
		st.Unstage(ctx, fileID)
	}
}

// uploadCharts shares the charts of the report named report in the
// thread, each a PNG file of its own after the report's. A chart that
// cannot be shared is logged, never a reason to fail the run (the report
// holds its table); check looks for a chart already in the thread first
// (a run whose report was shared before a crash).
func (f threadFiles) uploadCharts(ctx context.Context, charts []research.Chart, report string, check bool, st research.Staging) {
	b, log := f.b, f.log
	for _, c := range charts {
		name := chartFilename(report, c)
		if check {
			if _, _, ok := b.findPostedFile(ctx, f.key, name); ok {
				continue
			}
		}
		title := plainTitle(Truncate(c.Title, 200))
		if title == "" {
			title = "Chart"
		}
		id, err := b.stage(ctx, slack.GetUploadURLExternalParameters{FileName: name, FileSize: len(c.PNG), AltTxt: title}, string(c.PNG))
		if err != nil {
			log.Warn("bot: stage a chart", "chart", c.Name, "err", err)
			continue
		}
		// recorded as staged like the report, so a process dying before
		// the share leaves the next attempt a file to delete
		if err := st.Stage(ctx, id); err != nil {
			b.deleteFile(ctx, id, log)
			log.Warn("bot: record a staged chart", "chart", c.Name, "err", err)
			continue
		}
		err = b.shareFile(ctx, slack.CompleteUploadExternalParameters{
			Files: []slack.FileSummary{{ID: id, Title: title}}, Channel: f.key.Channel, ThreadTimestamp: f.key.ThreadTS,
		})
		if err != nil {
			// the share may have happened although we got an error
			if _, _, ok := b.findPostedFile(ctx, f.key, name); !ok {
				f.dropStaged(ctx, id, st)
				log.Warn("bot: share a chart", "chart", c.Name, "err", err)
				continue
			}
		}
		st.Unstage(ctx, id)
		log.Info("bot: chart uploaded", "file_id", id, "bytes", len(c.PNG))
	}
}
