package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"deepresearch/research"
	"deepresearch/slackstate"

	"github.com/slack-go/slack"
)

// runRequest is a run asked for by a Slack message.
type runRequest struct {
	user, question string
	// requester is whose run it is when that is not user: an approver's
	// retry posts the original requester's report ("" is user).
	requester string
	followUp  bool // the thread has an earlier run
	msgTS     string
	opts      research.RunOptions
	redo      bool // firstAnswer's
}

// placedRun is a run with its place in Slack: its thread (Key), its
// status message (StatusTS) and whether that is a stream (Stream).
type placedRun struct {
	research.Run
	slackstate.Place
}

// place returns run r with its place, read from the store. A run without
// one (a digest's before its summary message, an `ask` run) or whose place
// cannot be read (logged) gets an empty place: no thread to show it in.
func (b *Bot) place(ctx context.Context, r research.Run) placedRun {
	pr, err := b.readPlace(ctx, r)
	if err != nil {
		b.log.Error("bot: read the run's place in Slack", "run_id", r.ID, "err", err)
	}
	return pr
}

// readPlace is place that returns the store's error (not ErrNotFound: a
// run with no place gets an empty one) with the empty place.
func (b *Bot) readPlace(ctx context.Context, r research.Run) (placedRun, error) {
	p, err := b.records.Place(ctx, r.ID)
	if err != nil {
		p = slackstate.Place{RunID: r.ID}
		if errors.Is(err, slackstate.ErrNotFound) {
			err = nil
		}
	}
	return placedRun{Run: r, Place: p}, err
}

// newRun creates the run asked for by the Slack message req.msgTS in a
// thread, posts its status message and starts it. It answers the user in
// the thread when the run cannot be created. Handling one message again is
// harmless: the run's id is derived from the message, so a second call
// finds the run (ErrConflict) and only makes sure it gets started.
func (b *Bot) newRun(ctx context.Context, th slackstate.Thread, req runRequest) {
	now := b.slackClient.now()
	user := req.user
	// where the report is seen decides the MCP sources and the past
	// reports it may use
	req.opts.Channel, req.opts.Private, req.opts.Team = th.Key.Channel, th.DM, th.Key.Team
	owner := user
	if req.requester != "" {
		owner = req.requester
	}
	id := messageRunID(th.Key.Team, th.Key.Channel, req.msgTS)
	r := placedRun{Run: research.Run{
		ID:        id,
		ThreadID:  th.ThreadID,
		Requester: owner,
		Question:  req.question,
		FollowUp:  req.followUp,
		Options:   req.opts,
		CreatedAt: now,
		UpdatedAt: now,
	}, Place: slackstate.Place{RunID: id, Key: th.Key}}
	// The asker's action_token stays in this process's memory; the
	// stored run never holds it.
	token := r.Options.WorkspaceToken
	r.Options.WorkspaceToken = ""
	r.Stream = b.statuses.planStream(b.statuses.team(r))
	log := b.log.With("run_id", r.ID, "thread_id", r.ThreadID)
	// A recovery pass of this process may acquire the queued run before
	// its status is posted: it waits for this one instead of posting its own.
	statusDone := b.statuses.creatingStatus(r.ID)
	defer statusDone()
	if err := b.records.CreateRun(ctx, r.Run, r.Place, b.opts.MaxRunsPerUser); err != nil {
		statusDone() // this call posts no status
		b.statuses.unplanStream(r)
		switch {
		case errors.Is(err, research.ErrConflict):
			// The message came as two events, or its handling is repeated
			// after a crash. If no one works on the run, start it here;
			// execute posts the status message if it was never posted.
			log.Info("bot: the message's run exists; not creating another")
			b.tryStart(ctx, r.ID)
		case errors.Is(err, research.ErrThreadBusy):
			if !b.firstAnswer(ctx, th.Key.Channel, req.msgTS, req.redo) {
				return
			}
			b.slackClient.refuse(ctx, th.Key.Channel, th.Key.ThreadTS, user, "busy", b.slackClient.userLang(ctx, user).words().Busy)
		case errors.Is(err, research.ErrUserLimit):
			if !b.firstAnswer(ctx, th.Key.Channel, req.msgTS, req.redo) {
				return
			}
			b.slackClient.refuse(ctx, th.Key.Channel, th.Key.ThreadTS, user, "limit", fmt.Sprintf(b.slackClient.userLang(ctx, user).words().Limit, b.opts.MaxRunsPerUser))
		default:
			log.Error("bot: create run", "err", err)
			b.slackClient.reply(ctx, th.Key.Channel, th.Key.ThreadTS, "Sorry, I could not start the research (storage error). Please try again.")
		}
		return
	}
	b.tokens.put(r.ID, token, now)
	b.metrics.runs.WithLabelValues(string(research.StateQueued)).Inc()
	log.Info("bot: run created", "requester", owner, "by", user, "follow_up", req.followUp)

	v := statusView{Lang: b.slackClient.userLang(ctx, owner), Question: req.question, Requester: b.slackClient.userName(ctx, owner), State: research.StateQueued, Started: now, Now: now, RunID: r.ID}
	streamed := false
	if r.Stream {
		if ts, err := b.statuses.tryStream(ctx, r, v, log, true); err == nil {
			b.recordStatus(ctx, r, ts, true, log)
			streamed = true
		}
	}
	if !streamed {
		text, blocks := statusBlocks(v)
		ts, err := b.slackClient.postMessage(ctx, th.Key.Channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionTS(th.Key.ThreadTS))
		if err != nil {
			log.Warn("bot: post status message", "err", err)
		} else {
			b.recordStatus(ctx, r, ts, false, log)
		}
	}
	statusDone()
	if th.DM {
		b.setAssistantStatus(ctx, th.Key, "is researching…")
	}
	b.tryStart(ctx, r.ID)
}

// recordStatus records ts as the run's status message and returns the one
// recorded. Two status messages can be posted for one run: by its creator
// (newRun), and by a process that acquired the queued run before the
// creator recorded its message (recovery, or the message handled twice),
// which posts one when it finds none. The set-if-empty picks one; the loser
// deletes the message it posted (a stream, stopped first). A stream's ts
// is recorded the same way, so a process taking the run over finds it.
func (b *Bot) recordStatus(ctx context.Context, r placedRun, ts string, stream bool, log *slog.Logger) string {
	stored, err := b.records.SetStatusMessage(ctx, r.ID, ts)
	if err != nil {
		log.Warn("bot: record status message", "err", err)
		return ts
	}
	if stored != ts {
		log.Info("bot: the run has another status message; deleting this one", "status_ts", stored, "deleted_ts", ts)
		if stream {
			b.statuses.stopStreamQuietly(ctx, r, ts)
		}
		b.deleteExtra(ctx, r.Key.Channel, ts, log)
	}
	return stored
}

// deleteExtra deletes a message of the bot's that duplicates the run's
// recorded status message.
func (b *Bot) deleteExtra(ctx context.Context, channel, ts string, log *slog.Logger) {
	err := b.slackClient.call(ctx, "chat.delete", true, func(ctx context.Context) error {
		_, _, err := b.slackClient.api.DeleteMessageContext(ctx, channel, ts)
		return err
	})
	if err != nil && errorCode(err) != "message_not_found" {
		log.Warn("bot: delete extra status message", "ts", ts, "err", err)
	}
}

// messageRunID is the id of the run a Slack message asks for. It is derived
// from the message, so that handling the message twice (it came as two
// events, or its handling was cut short by a crash and is repeated) finds
// the run instead of creating a second one.
func messageRunID(team, channel, ts string) string {
	sum := sha256.Sum256([]byte(team + "\x00" + channel + "\x00" + ts))
	return "r" + hex.EncodeToString(sum[:8])
}

// firstAnswer claims the bot's answer to a Slack message that starts no
// run (a refusal, the help text) and reports whether to send it: false
// when the message was answered already because it came as two events
// (app_mention and message). A handler that handles an envelope again after
// a crash (redo) answers anyway: the crash may have come between the claim
// and the post, so such answers are at least once (a crash after the post
// repeats the answer).
func (b *Bot) firstAnswer(ctx context.Context, channel, ts string, redo bool) bool {
	first, err := b.records.ClaimEvent(ctx, "msg:"+channel+":"+ts, b.slackClient.now())
	if err != nil {
		b.log.Warn("bot: claim answer", "channel", channel, "ts", ts, "err", err)
		return true
	}
	return first || redo
}

// tryStart acquires a queued run and works on it if this process has a free
// slot; otherwise the run stays queued for the recovery loop.
func (b *Bot) tryStart(ctx context.Context, runID string) { b.runs.TryStart(ctx, runID) }

// cancelLocal cancels a run this process is working on; false if it is not.
func (b *Bot) cancelLocal(runID, by string) bool { return b.runs.CancelLocal(runID, by) }

// recoveryLoop handles received envelopes whose handler's lease expired,
// picks up queued runs and runs whose lease expired (another process died,
// or this one restarted), and forgets old event ids and handled envelopes.
func (b *Bot) recoveryLoop(ctx context.Context, p *pool) {
	t := b.slackClient.clk.NewTimer(b.opts.RecoverEvery)
	defer t.Stop()
	lastPrune := time.Time{}
	for {
		// Runs first: a run created by an envelope handed over just now
		// is left to its creator until the next pass.
		b.runs.Recover(ctx)
		b.recoverInbox(ctx, p)
		if now := b.slackClient.now(); now.Sub(lastPrune) > time.Hour {
			if n, err := b.records.PruneEvents(ctx, now.Add(-b.opts.EventTTL)); err != nil {
				b.log.Warn("bot: prune events", "err", err)
			} else if n > 0 {
				b.log.Info("bot: pruned event ids", "count", n)
			}
			lastPrune = now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		t.Reset(b.opts.RecoverEvery)
	}
}

// uploadFailedPrefix starts the recorded error of a run whose research
// finished but whose report could not be posted; "retry" in its thread
// posts that report (redeliverable).
const uploadFailedPrefix = research.UploadFailedPrefix

// retryRE matches a short message that asks to try again.
var retryRE = regexp.MustCompile(`(?i)^\W*(please\s+)?(retry|try\s+again|again|re-?upload|upload\s+again|post\s+again|send\s+again)\b|もう一度|もう一回|再試行|リトライ|やり直|再送|再アップ`)

// redeliverable returns the run whose report a retry message in its thread
// should post: the thread's latest run, failed after its research finished.
func redeliverable(latest research.Run, question string) (research.Run, bool) {
	if latest.State != research.StateFailed || !strings.HasPrefix(latest.Error, uploadFailedPrefix) {
		return research.Run{}, false
	}
	if len([]rune(question)) > 60 || !retryRE.MatchString(strings.TrimSpace(question)) {
		return research.Run{}, false
	}
	return latest, true
}

// cancelWaiting tidies up after a queued or waiting run was cancelled in the
// store by this process: no one is running it.
func (b *Bot) cancelWaiting(ctx context.Context, run research.Run, by string) {
	b.runs.CancelWaiting(ctx, run)
	r := b.place(ctx, run)
	b.metrics.runs.WithLabelValues(string(research.StateCancelled)).Inc()
	byName := b.slackClient.userName(ctx, by)
	if r.StatusTS != "" {
		l := b.slackClient.userLang(ctx, r.Requester)
		v := statusView{Lang: l, Question: r.Question, Requester: b.slackClient.userName(ctx, r.Requester), State: research.StateCancelled, Started: r.CreatedAt, Now: b.slackClient.now(), RunID: r.ID, Note: fmt.Sprintf(l.words().CancelledBy, byName)}
		b.statuses.endWaitingStatus(ctx, r, v)
	}
	if r.Interrupt != nil && r.Interrupt.MessageID != "" && r.Interrupt.Kind != research.InterruptQuestion {
		d := research.Decision{InterruptID: r.Interrupt.ID, Action: research.ActionCancel, By: by}
		if r.Decision != nil {
			d = *r.Decision
		}
		text, blocks := decidedBlocks(*r.Interrupt, d, b.slackClient.userName(ctx, d.By), b.slackClient.userLang(ctx, r.Requester))
		if err := b.slackClient.updateMessage(ctx, r.Key.Channel, r.Interrupt.MessageID, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)); err != nil {
			b.log.Warn("bot: update decided message", "run_id", r.ID, "err", err)
		}
	}
	if th, err := b.records.Thread(ctx, r.Key); err == nil && th.DM {
		b.setAssistantStatus(ctx, th.Key, "")
	}
}

func (b *Bot) setAssistantStatus(ctx context.Context, key slackstate.ThreadKey, status string) {
	err := b.slackClient.call(ctx, "assistant.threads.setStatus", true, func(ctx context.Context) error {
		return b.slackClient.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
			ChannelID: key.Channel, ThreadTS: key.ThreadTS, Status: status,
		})
	})
	if err != nil {
		b.log.Debug("bot: assistant status", "err", err)
	}
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// reportFilename is unique per run, so a posted report can be recognised.
func reportFilename(r research.Run, title string) string {
	slug := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(title), "-"), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	if slug == "" {
		slug = "report"
	}
	return fmt.Sprintf("%s-%s.md", slug, r.ID)
}

// chartFilename is the name a chart of the report named report is shared
// under: the report's name (unique per run) with the chart's.
func chartFilename(report string, c research.Chart) string {
	return strings.TrimSuffix(report, ".md") + "-" + c.Name
}

// chartLinks points the report's links to its charts at the files they
// are shared as.
func chartLinks(report string, charts []research.Chart, name string) string {
	for _, c := range charts {
		report = strings.ReplaceAll(report, "]("+c.Name+")", "]("+chartFilename(name, c)+")")
	}
	return report
}

// stageFile reserves a report file and uploads its bytes; it deletes the
// file when the bytes cannot be uploaded.
func (b *Bot) stageFile(ctx context.Context, name, content string) (string, error) {
	return b.stage(ctx, slack.GetUploadURLExternalParameters{FileName: name, FileSize: len(content), SnippetType: "markdown"}, content)
}

// stage reserves a file as p describes it and uploads its bytes; it
// deletes the file when the bytes cannot be uploaded.
func (b *Bot) stage(ctx context.Context, p slack.GetUploadURLExternalParameters, content string) (string, error) {
	name := p.FileName
	var up *slack.GetUploadURLExternalResponse
	err := b.slackClient.call(ctx, "files.getUploadURLExternal", true, func(ctx context.Context) error {
		var err error
		up, err = b.slackClient.api.GetUploadURLExternalContext(ctx, p)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("reserving the report file: %w", err)
	}
	err = b.slackClient.call(ctx, "files.upload_bytes", true, func(ctx context.Context) error {
		return b.slackClient.api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: up.UploadURL, Content: content, Filename: name})
	})
	if err != nil {
		b.deleteFile(ctx, up.FileID, b.log)
		return "", fmt.Errorf("uploading the report's bytes: %w", err)
	}
	return up.FileID, nil
}

// shareFile completes a staged file into the thread. A repeat after a lost
// answer finds the file completed already, which counts as shared.
func (b *Bot) shareFile(ctx context.Context, p slack.CompleteUploadExternalParameters) error {
	err := b.slackClient.call(ctx, "files.completeUploadExternal", true, func(ctx context.Context) error {
		_, err := b.slackClient.api.CompleteUploadExternalContext(ctx, p)
		return err
	})
	if errorCode(err) == "file_already_completed" {
		return nil
	}
	return err
}

// deleteFile removes a staged file that was never shared; it reports
// whether the file is gone (deleted now, or already).
func (b *Bot) deleteFile(ctx context.Context, fileID string, log *slog.Logger) bool {
	err := b.slackClient.call(ctx, "files.delete", true, func(ctx context.Context) error {
		return b.slackClient.api.DeleteFileContext(ctx, fileID)
	})
	if err == nil {
		return true
	}
	switch errorCode(err) {
	case "file_not_found", "file_deleted":
		return true
	}
	log.Warn("bot: delete unshared report file", "file_id", fileID, "err", err)
	return false
}

// refusedContent reports whether Slack refused a call for what it carried,
// so that the same payload would be refused again.
func refusedContent(err error) bool {
	switch errorCode(err) {
	case "invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long", "internal_error", "invalid_arguments":
		return true
	}
	return false
}

// findPostedFile looks in the thread for a file we posted with this name.
// It reads the whole thread, page by page (conversations.replies is
// cursor-paginated: a long thread does not come in one answer, and the
// report is near its end).
func (b *Bot) findPostedFile(ctx context.Context, key slackstate.ThreadKey, name string) (fileID, ts string, ok bool) {
	cursor := ""
	for page := 0; page < maxThreadPages; page++ {
		var msgs []slack.Message
		var next string
		err := b.slackClient.call(ctx, "conversations.replies", true, func(ctx context.Context) error {
			var err error
			msgs, _, next, err = b.slackClient.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: key.Channel, Timestamp: key.ThreadTS, Limit: threadPageSize, Cursor: cursor,
			})
			return err
		})
		if err != nil {
			b.log.Debug("bot: read thread", "err", err)
			return "", "", false
		}
		for _, m := range msgs {
			if !b.identity.ownFileShare(m) {
				continue
			}
			for _, f := range m.Files {
				if f.Name == name {
					return f.ID, m.Timestamp, true
				}
			}
		}
		if next == "" { // Slack: no next_cursor, no more pages
			return "", "", false
		}
		cursor = next
	}
	b.log.Warn("bot: thread too long to read whole; the report was not found in it", "thread_ts", key.ThreadTS)
	return "", "", false
}

// threadPageSize is the page of conversations.replies that findPostedFile
// asks for (Slack recommends 100-200; the maximum is 1000), and
// maxThreadPages bounds how many pages it reads.
const (
	threadPageSize = 200
	maxThreadPages = 100
)
