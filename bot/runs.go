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

	"deepresearch/clock"
	"deepresearch/research"

	"github.com/slack-go/slack"
)

// Causes for cancelling a run's context.
var (
	errLeaseLost = errors.New("bot: lease lost")
)

// cancelRequested is the cause of a run cancelled by a user.
type cancelRequested struct{ by string }

func (c cancelRequested) Error() string { return "bot: cancelled by " + c.by }

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

// newRun creates the run asked for by the Slack message req.msgTS in a
// thread, posts its status message and starts it. It answers the user in
// the thread when the run cannot be created. Handling one message again is
// harmless: the run's id is derived from the message, so a second call
// finds the run (ErrConflict) and only makes sure it gets started.
func (b *Bot) newRun(ctx context.Context, th research.Thread, req runRequest) {
	now := b.now()
	user := req.user
	// where the report is seen decides the MCP sources and the past
	// reports it may use
	req.opts.Channel, req.opts.Private, req.opts.Team = th.Key.Channel, th.DM, th.Key.Team
	owner := user
	if req.requester != "" {
		owner = req.requester
	}
	r := research.Run{
		ID:        messageRunID(th.Key.Team, th.Key.Channel, req.msgTS),
		ThreadID:  th.ThreadID,
		Key:       th.Key,
		Requester: owner,
		Question:  req.question,
		FollowUp:  req.followUp,
		Options:   req.opts,
		CreatedAt: now,
		UpdatedAt: now,
	}
	// The asker's action_token stays in this process's memory; the
	// stored run never holds it.
	token := r.Options.WorkspaceToken
	r.Options.WorkspaceToken = ""
	r.StatusStream = b.planStream(b.team(r))
	log := b.log.With("run_id", r.ID, "thread_id", r.ThreadID)
	if err := b.store.CreateRun(ctx, r, b.opts.MaxRunsPerUser); err != nil {
		b.unplanStream(r)
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
			b.refuse(ctx, th.Key.Channel, th.Key.ThreadTS, user, "busy", b.userLang(ctx, user).words().Busy)
		case errors.Is(err, research.ErrUserLimit):
			if !b.firstAnswer(ctx, th.Key.Channel, req.msgTS, req.redo) {
				return
			}
			b.refuse(ctx, th.Key.Channel, th.Key.ThreadTS, user, "limit", fmt.Sprintf(b.userLang(ctx, user).words().Limit, b.opts.MaxRunsPerUser))
		default:
			log.Error("bot: create run", "err", err)
			b.reply(ctx, th.Key.Channel, th.Key.ThreadTS, "Sorry, I could not start the research (storage error). Please try again.")
		}
		return
	}
	b.tokens.put(r.ID, token, now)
	b.metrics.runs.WithLabelValues(string(research.StateQueued)).Inc()
	log.Info("bot: run created", "requester", owner, "by", user, "follow_up", req.followUp)

	v := statusView{Lang: b.userLang(ctx, owner), Question: req.question, Requester: b.userName(ctx, owner), State: research.StateQueued, Started: now, Now: now, RunID: r.ID}
	streamed := false
	if r.StatusStream {
		if ts, err := b.tryStream(ctx, r, v, log, true); err == nil {
			b.recordStatus(ctx, r, ts, true, log)
			streamed = true
		}
	}
	if !streamed {
		text, blocks := statusBlocks(v)
		ts, err := b.postMessage(ctx, th.Key.Channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionTS(th.Key.ThreadTS))
		if err != nil {
			log.Warn("bot: post status message", "err", err)
		} else {
			b.recordStatus(ctx, r, ts, false, log)
		}
	}
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
func (b *Bot) recordStatus(ctx context.Context, r research.Run, ts string, stream bool, log *slog.Logger) string {
	stored, err := b.store.SetStatusMessage(ctx, r.ID, ts)
	if err != nil {
		log.Warn("bot: record status message", "err", err)
		return ts
	}
	if stored != ts {
		log.Info("bot: the run has another status message; deleting this one", "status_ts", stored, "deleted_ts", ts)
		if stream {
			b.stopStreamQuietly(ctx, r, ts)
		}
		b.deleteExtra(ctx, r.Key.Channel, ts, log)
	}
	return stored
}

// deleteExtra deletes a message of the bot's that duplicates the run's
// recorded status message.
func (b *Bot) deleteExtra(ctx context.Context, channel, ts string, log *slog.Logger) {
	err := b.call(ctx, "chat.delete", true, func(ctx context.Context) error {
		_, _, err := b.api.DeleteMessageContext(ctx, channel, ts)
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
	first, err := b.store.ClaimEvent(ctx, "msg:"+channel+":"+ts, b.now())
	if err != nil {
		b.log.Warn("bot: claim answer", "channel", channel, "ts", ts, "err", err)
		return true
	}
	return first || redo
}

// tryStart acquires a queued run and works on it if this process has a free
// slot; otherwise the run stays queued for the recovery loop.
func (b *Bot) tryStart(ctx context.Context, runID string) {
	select {
	case b.runSlots <- struct{}{}:
	default:
		return
	}
	r, err := b.store.AcquireRun(ctx, runID, b.opts.InstanceID, b.now(), b.opts.Lease)
	if err != nil {
		<-b.runSlots
		if !errors.Is(err, research.ErrNotAcquired) {
			b.log.Warn("bot: acquire run", "run_id", runID, "err", err)
		}
		return
	}
	b.launch(r)
}

// launch works on an acquired run in its own goroutine; a slot is held.
func (b *Bot) launch(r research.Run) {
	b.runWG.Add(1)
	go func() {
		defer b.runWG.Done()
		defer func() { <-b.runSlots }()
		b.execute(r)
	}()
}

// recoveryLoop handles received envelopes whose handler's lease expired,
// picks up queued runs and runs whose lease expired (another process died,
// or this one restarted), and forgets old event ids and handled envelopes.
func (b *Bot) recoveryLoop(ctx context.Context, p *pool) {
	t := b.clk.NewTimer(b.opts.RecoverEvery)
	defer t.Stop()
	lastPrune := time.Time{}
	for {
		// Runs first: a run created by an envelope handed over just now
		// is left to its creator until the next pass.
		b.recover(ctx)
		b.recoverInbox(ctx, p)
		if now := b.now(); now.Sub(lastPrune) > time.Hour {
			if n, err := b.store.PruneEvents(ctx, now.Add(-b.opts.EventTTL)); err != nil {
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

func (b *Bot) recover(ctx context.Context) {
	// Take every free slot; count only those taken, since tryStart may take
	// one between reading len and sending (releasing more than we hold
	// would steal running runs' slots and block here forever).
	held := 0
grab:
	for range cap(b.runSlots) {
		select {
		case b.runSlots <- struct{}{}:
			held++
		default:
			break grab
		}
	}
	if held == 0 {
		return
	}
	runs, err := b.store.AcquireRuns(ctx, b.opts.InstanceID, b.now(), b.opts.Lease, held)
	if err != nil && ctx.Err() == nil {
		b.log.Warn("bot: acquire runs", "err", err)
	}
	for _, r := range runs {
		b.log.Info("bot: picked up run", "run_id", r.ID, "thread_id", r.ThreadID, "attempt", r.Attempt)
		b.launch(r)
		held--
	}
	for range held {
		<-b.runSlots
	}
}

// execute works on an acquired run until it pauses, finishes, is cancelled,
// loses its lease or the process shuts down.
func (b *Bot) execute(r research.Run) {
	ctx, cancel := context.WithCancelCause(b.runCtx)
	defer cancel(nil)
	log := b.log.With("run_id", r.ID, "thread_id", r.ThreadID)
	b.runsMu.Lock()
	b.running[r.ID] = cancel
	b.runsMu.Unlock()
	defer func() {
		b.runsMu.Lock()
		delete(b.running, r.ID)
		b.runsMu.Unlock()
	}()
	b.metrics.runsActive.Inc()
	defer b.metrics.runsActive.Dec()
	b.metrics.runs.WithLabelValues(string(research.StateRunning)).Inc()
	// A cancel that came while the run was being acquired found it running
	// but not yet registered here: look once more now that it is.
	if cur, err := b.store.Run(b.workCtx, r.ID); err == nil && cur.CancelRequestedBy != "" {
		r.CancelRequestedBy = cur.CancelRequestedBy
	}
	if r.CancelRequestedBy != "" {
		cancel(cancelRequested{r.CancelRequestedBy})
	}

	// Slack calls for finishing the run must outlive a cancelled run ctx.
	wctx := b.workCtx
	th, err := b.store.Thread(wctx, r.Key)
	if err != nil {
		th = research.Thread{Key: r.Key, ThreadID: r.ThreadID}
	}
	requester := b.userName(wctx, r.Requester)
	lang := b.userLang(wctx, r.Requester)
	// The lease is renewed from here until the outcome is recorded: posting
	// the status message waits for the channel's pace, and the final status
	// edit for the chat.update budget, either of which can take longer than
	// a short lease when many runs share a channel or a workspace.
	if th.DM {
		// Before the heartbeat starts, so that it can never land after
		// the run's final clear of the status line.
		b.setAssistantStatus(ctx, th.Key, "is researching…")
	}
	hbDone := make(chan struct{})
	hbStopped := make(chan struct{})
	go func(r research.Run) {
		defer close(hbStopped)
		b.heartbeat(ctx, r, th, cancel, hbDone)
	}(r)
	defer func() {
		close(hbDone)
		<-hbStopped
	}()
	status := b.openStatus(wctx, &r, statusView{
		Lang: lang, Question: r.Question, Requester: requester, State: research.StateRunning, Started: r.CreatedAt, RunID: r.ID,
	}, log)
	defer status.halt()
	status.Progress(research.Progress{Phase: "starting"})
	sc := runScope{run: r, thread: th, status: status, requester: requester, log: log}

	if r.Attempt > maxRunAttempts {
		// Picked up again and again without finishing (a process dies on
		// it, or a store write keeps failing): stop paying for it.
		b.fail(wctx, sc, fmt.Errorf("%w: picked up %d times", errTooManyAttempts, r.Attempt))
		return
	}
	outcome, err := b.invoke(ctx, r, status.Progress, log)
	b.countTokens(r.ID, status.lastProgress().Tokens, outcome)

	cause := context.Cause(ctx)
	var cr cancelRequested
	if err == nil && outcome.Interrupt != nil && !errors.As(cause, &cr) {
		// A cancel recorded while the step ended may not have reached
		// this run's context yet (the handler cancels it just after
		// recording): the store says so, and the cancel wins over a pause.
		if cur, err := b.store.Run(wctx, r.ID); err == nil && cur.CancelRequestedBy != "" {
			cause = cancelRequested{cur.CancelRequestedBy}
		}
	}
	switch {
	case errors.As(cause, &cr):
		// Cancelled while the researcher finished a step: the cancel wins,
		// whatever the step produced (a plan to approve, even a report).
		b.cancelled(wctx, sc, cr.by)
	case err == nil && outcome.Interrupt != nil:
		b.pause(wctx, sc, *outcome.Interrupt)
	case err == nil && outcome.Result != nil:
		b.finish(wctx, sc, *outcome.Result)
	case err == nil:
		b.fail(wctx, sc, errors.New("the researcher returned neither a result nor an interrupt"))
	case errors.Is(cause, errShutdown):
		if err := b.store.ReleaseRun(wctx, r.ID, b.opts.InstanceID, b.now()); err != nil {
			log.Warn("bot: release run at shutdown", "err", err)
		} else {
			log.Info("bot: run released for another process")
		}
		status.halt()
	case errors.Is(cause, errLeaseLost):
		log.Warn("bot: lease lost; another process owns the run now")
		status.halt()
	default:
		b.fail(wctx, sc, err)
	}
}

// invoke calls the Researcher: Continue on a retry (falling back to the
// input when nothing was checkpointed), else Resume with the decision or
// Start with the question.
func (b *Bot) invoke(ctx context.Context, r research.Run, sink research.ProgressSink, log *slog.Logger) (research.Outcome, error) {
	if r.Attempt > 1 {
		out, err := b.res.Continue(ctx, r.ThreadID, sink)
		if !errors.Is(err, research.ErrNothingToContinue) {
			log.Info("bot: continued run", "attempt", r.Attempt, "err", err)
			return out, err
		}
	}
	if r.Decision != nil && r.Interrupt != nil && r.Decision.InterruptID == r.Interrupt.ID {
		d := r.Decision
		return b.res.Resume(ctx, r.ThreadID, d.InterruptID, research.Answer{Action: d.Action, Text: d.Text, By: d.By}, sink)
	}
	tag := r.ID
	if r.Options.Redeliver != "" {
		tag = r.Options.Redeliver
	}
	opts := r.Options
	opts.WorkspaceToken = b.tokens.take(r.ID)
	return b.res.Start(ctx, research.StartRequest{
		RunID: tag, ThreadID: r.ThreadID, Question: r.Question, FollowUp: r.FollowUp, Requester: r.Requester, Options: opts,
	}, sink)
}

// heartbeat renews the lease until done; it cancels the run when the lease
// is lost or someone asked to cancel. In assistant threads it refreshes the
// status line before Slack clears it.
func (b *Bot) heartbeat(ctx context.Context, r research.Run, th research.Thread, cancel context.CancelCauseFunc, done <-chan struct{}) {
	t := b.clk.NewTimer(b.opts.HeartbeatEvery)
	defer t.Stop()
	lastStatus := b.now()
	for {
		select {
		case <-done:
			return
		case <-t.C():
		}
		t.Reset(b.opts.HeartbeatEvery)
		cur, err := b.store.Heartbeat(ctx, r.ID, b.opts.InstanceID, b.now(), b.opts.Lease)
		switch {
		case errors.Is(err, research.ErrLeaseLost):
			// A cancel of a running run keeps it running, so this is a takeover
			// or the run ended elsewhere.
			if cur2, err2 := b.store.Run(ctx, r.ID); err2 == nil && cur2.State == research.StateCancelled {
				cancel(cancelRequested{cur2.CancelRequestedBy})
			} else {
				cancel(errLeaseLost)
			}
			return
		case err != nil:
			b.log.Warn("bot: heartbeat", "run_id", r.ID, "err", err)
		case cur.CancelRequestedBy != "":
			cancel(cancelRequested{cur.CancelRequestedBy})
		}
		if th.DM && b.now().Sub(lastStatus) >= b.opts.StatusRefresh {
			b.setAssistantStatus(ctx, th.Key, "is researching…")
			lastStatus = b.now()
		}
	}
}

func (b *Bot) countTokens(runID string, progressTokens int, out research.Outcome) {
	n := progressTokens
	if out.Result != nil && out.Result.Tokens > n {
		n = out.Result.Tokens
	}
	_ = runID
	if n > 0 {
		b.metrics.tokens.Add(float64(n))
	}
}

// runScope is what the steps that end a run's turn share: the run, its
// thread, its status message, the requester's display name and its logger.
type runScope struct {
	run       research.Run
	thread    research.Thread
	status    runStatus
	requester string
	log       *slog.Logger
}

// pause shows an interrupt and records the run as waiting. The status
// message says "Waiting for you" before the run is recorded as waiting:
// once it is, a click can resume the run in any process, and an edit from
// here arriving after that run's own edits would leave a stale picture.
func (b *Bot) pause(ctx context.Context, sc runScope, intr research.Interrupt) {
	r, th, status, log := sc.run, sc.thread, sc.status, sc.log
	if err := status.Final(ctx, research.StateWaiting, ""); err != nil {
		log.Warn("bot: waiting status", "err", err)
	}
	var ts string
	var err error
	if intr.Kind == research.InterruptQuestion {
		ts, err = b.postMessage(ctx, r.Key.Channel, slack.MsgOptionText("❓ "+truncateEscaped(intr.Text, 3000)+"\n_"+b.userLang(ctx, r.Requester).words().ReplyToAnswer+"_", false), slack.MsgOptionTS(r.Key.ThreadTS))
	} else {
		text, blocks := interruptBlocks(r.ID, intr, sc.requester, b.userLang(ctx, r.Requester))
		ts, err = b.postMessage(ctx, r.Key.Channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionTS(r.Key.ThreadTS))
	}
	if err != nil {
		log.Error("bot: post interrupt", "err", err)
	}
	pi := research.PendingInterrupt{ID: intr.ID, Kind: intr.Kind, Text: intr.Text, MessageTS: ts}
	if pi.Text == "" {
		pi.Text = Truncate(intr.Draft, maxMarkdown-200)
	}
	err = b.store.WaitRun(ctx, r.ID, b.opts.InstanceID, pi, b.now())
	if err != nil && !errors.Is(err, research.ErrLeaseLost) {
		// A blip of the database passes; a refusal of the row does not.
		log.Warn("bot: record waiting run; trying once more", "err", err)
		_ = clock.Sleep(ctx, b.clk, time.Second)
		err = b.store.WaitRun(ctx, r.ID, b.opts.InstanceID, pi, b.now())
	}
	if err != nil {
		log.Warn("bot: record waiting run", "err", err)
		if !errors.Is(err, research.ErrLeaseLost) {
			// Left running, the run would be picked up, researched and
			// shown again after every lease; a store that refuses the
			// row will refuse it again. Fail it once instead.
			b.fail(ctx, sc, fmt.Errorf("recording the run as waiting: %w", err))
		}
		return
	}
	b.metrics.runs.WithLabelValues(string(research.StateWaiting)).Inc()
	log.Info("bot: run waiting", "interrupt_id", intr.ID, "kind", intr.Kind)
	if th.DM {
		b.setAssistantStatus(ctx, th.Key, "")
	}
}

// uploadFailedPrefix starts the recorded error of a run whose research
// finished but whose report could not be posted; "retry" in its thread
// posts that report (redeliverable).
const uploadFailedPrefix = "uploading the report: "

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

// uploadRounds is how many more times finish tries a report upload that
// failed with a transient error after the Slack calls' own retries.
const uploadRounds = 3

// finish uploads the report (once) and records the run as done.
func (b *Bot) finish(ctx context.Context, sc runScope, res research.Result) {
	r, th, status, log := sc.run, sc.thread, sc.status, sc.log
	if res.Elapsed == 0 {
		res.Elapsed = b.now().Sub(r.CreatedAt)
	}
	// The report is the product: a Slack outage outlasting one call's
	// retries gets a few more rounds before the run is failed.
	uctx, endUpload := b.traceUpload(ctx, sc, res)
	err := b.uploadReport(uctx, sc, res)
	for round := 1; err != nil && transient(err) && round <= uploadRounds && ctx.Err() == nil; round++ {
		wait := time.Duration(round) * 2 * time.Second
		log.Warn("bot: report upload failed; trying again", "err", err, "round", round, "wait", wait)
		_ = clock.Sleep(ctx, b.clk, wait)
		err = b.uploadReport(uctx, sc, res)
	}
	endUpload(err)
	if err != nil {
		b.fail(ctx, sc, fmt.Errorf("%s%w", uploadFailedPrefix, err))
		return
	}
	p := status.lastProgress()
	if res.Tokens > p.Tokens {
		p.Tokens = res.Tokens
	}
	if res.Sources > p.SourcesRead {
		p.SourcesRead = res.Sources
	}
	status.setProgress(p)
	status.setResult(res)
	// The final status edit comes before the run is recorded as done: a
	// process that dies in between leaves the run to be continued, and the
	// next one renders the (idempotent) edit again. In the other order a
	// death there would leave the message saying "Researching" forever.
	note := b.userLang(ctx, r.Requester).words().ReportBelow
	if late := b.lateCancel(ctx, r); late != "" {
		note += "\n" + late
	}
	if err := status.Final(ctx, research.StateDone, note); err != nil {
		// Recording the run as done anyway: leaving it to be continued
		// would only repeat this while Slack refuses, and the report
		// itself is in the thread.
		log.Error("bot: final status", "err", err)
	}
	// What the run read from the workspace goes before the run is done: a
	// process dying in between leaves a run to continue whose report is
	// recorded (it is not posted again), never the workspace's messages.
	b.endRun(ctx, r, log)
	b.keepReport(ctx, r, th, res, log)
	if err := b.store.FinishRun(ctx, r.ID, b.opts.InstanceID, research.StateDone, "", b.now()); err != nil {
		log.Warn("bot: record finished run", "err", err)
		return
	}
	b.metrics.runs.WithLabelValues(string(research.StateDone)).Inc()
	log.Info("bot: run done", "sources", res.Sources, "tokens", res.Tokens)
	if th.DM {
		b.setAssistantStatus(ctx, th.Key, "")
	}
}

// lateCancel is the word for a cancel that came after the research had
// finished, while its report was being posted (the run is done all the
// same): a note for the status message, "" when no one asked to cancel.
// The person who asked is told in the thread too, since their command was
// answered with "Cancelling".
func (b *Bot) lateCancel(ctx context.Context, r research.Run) string {
	cur, err := b.store.Run(ctx, r.ID)
	if err != nil || cur.CancelRequestedBy == "" {
		return ""
	}
	by := cur.CancelRequestedBy
	b.log.Info("bot: cancel came after the research finished; the report is posted", "run_id", r.ID, "by", by)
	b.ephemeral(ctx, r.Key.Channel, r.Key.ThreadTS, by, b.userLang(ctx, by).words().CancelTooLateYou)
	return fmt.Sprintf(b.userLang(ctx, r.Requester).words().CancelTooLate, b.userName(ctx, by))
}

func (b *Bot) fail(ctx context.Context, sc runScope, cause error) {
	r, th, status, log := sc.run, sc.thread, sc.status, sc.log
	log.Error("bot: run failed", "err", cause)
	// The final picture comes before the run is recorded as failed, as in
	// finish: a process that dies in between leaves the run to be picked
	// up and failed again (the edit is idempotent); the other order would
	// leave "Researching" on the message forever. A run this process no
	// longer holds is not shown as failed.
	if _, err := b.store.Heartbeat(ctx, r.ID, b.opts.InstanceID, b.now(), b.opts.Lease); errors.Is(err, research.ErrLeaseLost) {
		log.Warn("bot: failed run is no longer ours; not recording it", "err", err)
		return
	}
	// The cause is for the log: people get a plain sentence and the run id
	// to quote (internal error strings never reach the channel).
	_ = status.Final(ctx, research.StateFailed, b.userLang(ctx, r.Requester).failedNote(r.ID))
	b.endRun(ctx, r, log)
	if err := b.store.FinishRun(ctx, r.ID, b.opts.InstanceID, research.StateFailed, cause.Error(), b.now()); err != nil {
		log.Warn("bot: record failed run", "err", err)
		return
	}
	b.metrics.runs.WithLabelValues(string(research.StateFailed)).Inc()
	if th.DM {
		b.setAssistantStatus(ctx, th.Key, "")
	}
}

// cancelled finishes a run this process was working on after a cancel.
func (b *Bot) cancelled(ctx context.Context, sc runScope, by string) {
	r, th, status, log := sc.run, sc.thread, sc.status, sc.log
	if err := b.res.Cancel(ctx, r.ThreadID); err != nil {
		log.Warn("bot: researcher cancel", "err", err)
	}
	b.endRun(ctx, r, log)
	if err := b.store.FinishRun(ctx, r.ID, b.opts.InstanceID, research.StateCancelled, "", b.now()); err != nil && !errors.Is(err, research.ErrLeaseLost) {
		log.Warn("bot: record cancelled run", "err", err)
	}
	b.metrics.runs.WithLabelValues(string(research.StateCancelled)).Inc()
	log.Info("bot: run cancelled", "by", by)
	_ = status.Final(ctx, research.StateCancelled, fmt.Sprintf(b.userLang(ctx, r.Requester).words().CancelledBy, b.userName(ctx, by)))
	if th.DM {
		b.setAssistantStatus(ctx, th.Key, "")
	}
}

// endRun tells the researcher that the run has ended, so that what it read
// from the requester's workspace does not outlive it.
func (b *Bot) endRun(ctx context.Context, r research.Run, log *slog.Logger) {
	if b.ender == nil {
		return
	}
	if err := b.ender.EndRun(ctx, r.ThreadID); err != nil {
		log.Warn("bot: tell the researcher the run ended", "err", err)
	}
}

// cancelWaiting tidies up after a queued or waiting run was cancelled in the
// store by this process: no one is running it.
func (b *Bot) cancelWaiting(ctx context.Context, r research.Run, by string) {
	if err := b.res.Cancel(ctx, r.ThreadID); err != nil {
		b.log.Warn("bot: researcher cancel", "run_id", r.ID, "err", err)
	}
	b.endRun(ctx, r, b.log.With("run_id", r.ID))
	b.metrics.runs.WithLabelValues(string(research.StateCancelled)).Inc()
	byName := b.userName(ctx, by)
	if r.StatusTS != "" {
		l := b.userLang(ctx, r.Requester)
		v := statusView{Lang: l, Question: r.Question, Requester: b.userName(ctx, r.Requester), State: research.StateCancelled, Started: r.CreatedAt, Now: b.now(), RunID: r.ID, Note: fmt.Sprintf(l.words().CancelledBy, byName)}
		b.endWaitingStatus(ctx, r, v)
	}
	if r.Interrupt != nil && r.Interrupt.MessageTS != "" && r.Interrupt.Kind != research.InterruptQuestion {
		d := research.Decision{InterruptID: r.Interrupt.ID, Action: research.ActionCancel, By: by}
		if r.Decision != nil {
			d = *r.Decision
		}
		text, blocks := decidedBlocks(*r.Interrupt, d, b.userName(ctx, d.By), b.userLang(ctx, r.Requester))
		if err := b.updateMessage(ctx, r.Key.Channel, r.Interrupt.MessageTS, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)); err != nil {
			b.log.Warn("bot: update decided message", "run_id", r.ID, "err", err)
		}
	}
	if th, err := b.store.Thread(ctx, r.Key); err == nil && th.DM {
		b.setAssistantStatus(ctx, th.Key, "")
	}
}

// cancelLocal cancels a run this process is working on; false if it is not.
func (b *Bot) cancelLocal(runID, by string) bool {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	cancel, ok := b.running[runID]
	if ok {
		cancel(cancelRequested{by})
	}
	return ok
}

func (b *Bot) setAssistantStatus(ctx context.Context, key research.ThreadKey, status string) {
	err := b.call(ctx, "assistant.threads.setStatus", true, func(ctx context.Context) error {
		return b.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
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

// uploadReport posts the report file with its summary once: it skips a
// run whose upload is recorded or already visible in the thread. The files
// v2 flow runs step by step so that each step is retried on its own
// (429/5xx/network) and a failed attempt deletes the file it staged: no
// attempt leaves an unshared file behind. A share that Slack refuses for
// its content (invalid_blocks, msg_blocks_too_long, internal_error — which
// is what it answers to blocks it cannot show with a file) is not retried
// as it is: the file is shared with a plain title instead and the summary
// posted as a message of its own.
func (b *Bot) uploadReport(ctx context.Context, sc runScope, res research.Result) error {
	r, requester, log := sc.run, sc.requester, sc.log
	if _, err := b.store.Upload(ctx, r.ID); err == nil {
		log.Info("bot: report already uploaded")
		return nil
	}
	name := reportFilename(r, res.Title)
	record := func(fileID, ts string) error {
		_, err := b.store.RecordUpload(ctx, research.Upload{RunID: r.ID, FileID: fileID, MessageTS: ts, At: b.now()})
		return err
	}
	if res.Reply {
		// An answer, not a report: a message in the thread, in a markdown
		// block (chat.postMessage renders it). At least once: a crash
		// between the post and the record posts it again.
		ts, err := b.postMessage(ctx, r.Key.Channel, slack.MsgOptionText(summaryMarkdown(res, 3000), false),
			slack.MsgOptionBlocks(slack.NewMarkdownBlock("dr_reply", summaryMarkdown(res, maxMarkdown-100))),
			slack.MsgOptionTS(r.Key.ThreadTS))
		if err != nil {
			return fmt.Errorf("posting the reply: %w", err)
		}
		return record("", ts)
	}
	if id, ts, ok := b.findPostedFile(ctx, r.Key, name); ok {
		log.Info("bot: report found in thread; not posting again", "file_id", id)
		if err := record(id, ts); err != nil {
			return err
		}
		b.clearStaged(ctx, r.ID, id, log)
		b.uploadCharts(ctx, sc, res, name, true)
		return nil
	}
	// Files an earlier attempt staged but never shared (its process died
	// between the upload and the share) are deleted: none is left behind.
	b.clearStaged(ctx, r.ID, "", log)
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
	fileID, err := b.stageReport(ctx, r.ID, name, content, log)
	if err != nil {
		return err
	}
	share := slack.CompleteUploadExternalParameters{
		Files:           []slack.FileSummary{{ID: fileID, Title: plainTitle(Truncate(title, 200))}},
		Blocks:          slack.Blocks{BlockSet: reportBlocks(res, requester, b.userLang(ctx, r.Requester))},
		Channel:         r.Key.Channel,
		ThreadTimestamp: r.Key.ThreadTS,
	}
	err = b.shareFile(ctx, share)
	summaryApart := false
	if err != nil && refusedContent(err) {
		log.Warn("bot: Slack refused the report's summary blocks; sharing the file with its title alone", "err", err)
		share.Blocks = slack.Blocks{BlockSet: reportTitleBlocks(res, requester, b.userLang(ctx, r.Requester))}
		err = b.shareFile(ctx, share)
		if err != nil && !transient(err) {
			// Slack may not take a second completion of a file whose
			// first one failed: stage the bytes again as a new file.
			b.dropStaged(ctx, r.ID, fileID, log)
			if fileID, err = b.stageReport(ctx, r.ID, name, content, log); err != nil {
				return err
			}
			share.Files[0].ID = fileID
			err = b.shareFile(ctx, share)
		}
		summaryApart = err == nil
	}
	if err != nil {
		// The share may have happened although we got an error.
		if id, ts, ok := b.findPostedFile(ctx, r.Key, name); ok {
			if err := record(id, ts); err != nil {
				return err
			}
			b.clearStaged(ctx, r.ID, id, log)
			return nil
		}
		b.dropStaged(ctx, r.ID, fileID, log)
		return fmt.Errorf("sharing the report file: %w", err)
	}
	log.Info("bot: report uploaded", "file_id", fileID, "bytes", len(content))
	if summaryApart && res.Summary != "" {
		// chat.postMessage shows a markdown block that the file share refused.
		md := summaryMarkdown(res, summaryChars)
		if _, err := b.postMessage(ctx, r.Key.Channel, slack.MsgOptionText(summaryMarkdown(res, 300), false),
			slack.MsgOptionBlocks(slack.NewMarkdownBlock("dr_summary", md)), slack.MsgOptionTS(r.Key.ThreadTS)); err != nil {
			log.Warn("bot: post the report summary", "err", err)
		}
	}
	b.uploadCharts(ctx, sc, res, name, false)
	if err := record(fileID, ""); err != nil {
		return err
	}
	b.unstage(ctx, r.ID, fileID, log)
	return nil
}

// stageReport stages the report file and records it as staged before it is
// shared, so that a process dying before the share leaves the next one a
// file to delete, never an orphan. A file that cannot be recorded is
// deleted at once.
func (b *Bot) stageReport(ctx context.Context, runID, name, content string, log *slog.Logger) (string, error) {
	fileID, err := b.stageFile(ctx, name, content)
	if err != nil {
		return "", err
	}
	if err := b.store.StageUpload(ctx, runID, fileID, b.now()); err != nil {
		b.deleteFile(ctx, fileID, log)
		return "", fmt.Errorf("recording the staged report file: %w", err)
	}
	return fileID, nil
}

// dropStaged deletes a staged file that was not shared and forgets it; one
// Slack would not delete stays recorded for the next attempt.
func (b *Bot) dropStaged(ctx context.Context, runID, fileID string, log *slog.Logger) {
	if b.deleteFile(ctx, fileID, log) {
		b.unstage(ctx, runID, fileID, log)
	}
}

// clearStaged settles the files staged by the run's earlier attempts: keep
// (the report found shared in the thread) is forgotten, every other one
// deleted (it was never shared).
func (b *Bot) clearStaged(ctx context.Context, runID, keep string, log *slog.Logger) {
	ids, err := b.store.StagedUploads(ctx, runID)
	if err != nil {
		log.Warn("bot: read staged report files", "err", err)
		return
	}
	for _, id := range ids {
		if id == keep {
			b.unstage(ctx, runID, id, log)
			continue
		}
		log.Info("bot: deleting a report file an earlier attempt staged but never shared", "file_id", id)
		b.dropStaged(ctx, runID, id, log)
	}
}

func (b *Bot) unstage(ctx context.Context, runID, fileID string, log *slog.Logger) {
	if err := b.store.UnstageUpload(ctx, runID, fileID); err != nil {
		log.Warn("bot: forget staged report file", "file_id", fileID, "err", err)
	}
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

// uploadCharts shares the report's charts in its thread, each a PNG file
// of its own after the report's. A chart that cannot be shared is logged,
// never a reason to fail the run (the report holds its table); check
// looks for a chart already in the thread first (a run whose report was
// shared before a crash).
func (b *Bot) uploadCharts(ctx context.Context, sc runScope, res research.Result, report string, check bool) {
	r, log := sc.run, sc.log
	for _, c := range res.Charts {
		name := chartFilename(report, c)
		if check {
			if _, _, ok := b.findPostedFile(ctx, r.Key, name); ok {
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
		if err := b.store.StageUpload(ctx, r.ID, id, b.now()); err != nil {
			b.deleteFile(ctx, id, log)
			log.Warn("bot: record a staged chart", "chart", c.Name, "err", err)
			continue
		}
		err = b.shareFile(ctx, slack.CompleteUploadExternalParameters{
			Files: []slack.FileSummary{{ID: id, Title: title}}, Channel: r.Key.Channel, ThreadTimestamp: r.Key.ThreadTS,
		})
		if err != nil {
			// the share may have happened although we got an error
			if _, _, ok := b.findPostedFile(ctx, r.Key, name); !ok {
				b.dropStaged(ctx, r.ID, id, log)
				log.Warn("bot: share a chart", "chart", c.Name, "err", err)
				continue
			}
		}
		b.unstage(ctx, r.ID, id, log)
		log.Info("bot: chart uploaded", "file_id", id, "bytes", len(c.PNG))
	}
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
	err := b.call(ctx, "files.getUploadURLExternal", true, func(ctx context.Context) error {
		var err error
		up, err = b.api.GetUploadURLExternalContext(ctx, p)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("reserving the report file: %w", err)
	}
	err = b.call(ctx, "files.upload_bytes", true, func(ctx context.Context) error {
		return b.api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: up.UploadURL, Content: content, Filename: name})
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
	err := b.call(ctx, "files.completeUploadExternal", true, func(ctx context.Context) error {
		_, err := b.api.CompleteUploadExternalContext(ctx, p)
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
	err := b.call(ctx, "files.delete", true, func(ctx context.Context) error {
		return b.api.DeleteFileContext(ctx, fileID)
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
func (b *Bot) findPostedFile(ctx context.Context, key research.ThreadKey, name string) (fileID, ts string, ok bool) {
	cursor := ""
	for page := 0; page < maxThreadPages; page++ {
		var msgs []slack.Message
		var next string
		err := b.call(ctx, "conversations.replies", true, func(ctx context.Context) error {
			var err error
			msgs, _, next, err = b.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: key.Channel, Timestamp: key.ThreadTS, Limit: threadPageSize, Cursor: cursor,
			})
			return err
		})
		if err != nil {
			b.log.Debug("bot: read thread", "err", err)
			return "", "", false
		}
		for _, m := range msgs {
			if m.BotID == "" && m.User != b.botUserID {
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
