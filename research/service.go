package research

// The Service is the run's lifecycle in one place, whatever face shows the
// run: a run is created, acquired under a lease, kept alive by a heartbeat
// (through which a cancel request reaches it), started, continued after a
// crash or resumed with a person's decision, paused for a person, finished
// with its report published exactly once, failed, or cancelled; at
// shutdown it is handed back, and after a crash another process takes it
// over (the recovery pass, with a bound on pickups).
//
// A face — the chat bot, the terminal (`ask`), a digest posted to a channel —
// implements Presenter and View: it shows progress, the pause, the end,
// and publishes the report. The Service decides when, records each step
// in the RunStore, and makes publication exactly once with the store's
// upload record and staged files, so a crash between publishing and
// recording never publishes twice.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"deepresearch/clock"
)

// Researcher runs research on a thread; the Runner is the agent's. Every
// method blocks until the call finishes, pauses on an interrupt, or ctx
// ends; progress is reported through sink while it runs. An Outcome
// carries either an Interrupt (the run waits for an Answer) or a Result.
//
// When ctx ends the methods return an error wrapping ctx's error; the
// thread must then be resumable with Continue. Two calls never run at once
// for one thread: the run's lease guarantees it across processes.
type Researcher interface {
	// Start asks a new question on a thread: the first one, or a follow-up
	// on a thread that already has history.
	Start(ctx context.Context, req StartRequest, sink ProgressSink) (Outcome, error)
	// Resume answers the pending interrupt with id interruptID. A second
	// answer to the same interrupt must fail (the Service sends one).
	Resume(ctx context.Context, threadID, interruptID string, ans Answer, sink ProgressSink) (Outcome, error)
	// Continue carries on a run that stopped without finishing (the process
	// died, its lease was lost, or it was shut down) from the last
	// checkpoint. It returns ErrNothingToContinue when the thread has no
	// unfinished work; the Service then repeats Start or Resume.
	Continue(ctx context.Context, threadID string, sink ProgressSink) (Outcome, error)
	// Cancel discards the unfinished work of a thread (a cancelled run), so
	// that a later Start on the thread begins afresh. Cancelling a thread
	// with nothing pending is not an error.
	Cancel(ctx context.Context, threadID string) error
}

// RunEnder is a Researcher told when a run on a thread has ended (done,
// failed or cancelled), to drop what must not outlive the run: what it
// read from the requester's workspace (the Runner implements it).
type RunEnder interface {
	EndRun(ctx context.Context, threadID string) error
}

// RunStore is what the Service keeps runs in: the run records under a
// lease, decisions, and the upload record with its staged files (Store
// has every method; see its comments for the rules).
type RunStore interface {
	CreateRun(ctx context.Context, r Run, maxPerUser int) error
	Run(ctx context.Context, id string) (Run, error)
	LatestRun(ctx context.Context, threadID string) (Run, error)
	AcquireRun(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (Run, error)
	AcquireRuns(ctx context.Context, kind, owner string, now time.Time, lease time.Duration, limit int) ([]Run, error)
	Heartbeat(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (Run, error)
	ReleaseRun(ctx context.Context, id, owner string, now time.Time) error
	WaitRun(ctx context.Context, id, owner string, intr PendingInterrupt, now time.Time) error
	FinishRun(ctx context.Context, id, owner string, state RunState, errText string, now time.Time) error
	Decide(ctx context.Context, runID string, d Decision) (Run, error)
	RecordUpload(ctx context.Context, u Upload) (bool, error)
	Upload(ctx context.Context, runID string) (Upload, error)
	StageUpload(ctx context.Context, runID, fileID string, at time.Time) error
	StagedUploads(ctx context.Context, runID string) ([]string, error)
	UnstageUpload(ctx context.Context, runID, fileID string) error
}

// Presenter is a face's way of showing the runs a Service works on. A
// process whose runs have several faces (a digest beside a conversation's runs) gives
// the Service one Presenter that picks the face by the run.
type Presenter interface {
	// Open begins showing run r, just acquired by this process, before
	// its heartbeat starts: it must be quick (a status line, no message
	// that waits for a pace).
	Open(ctx context.Context, r Run) View
}

// View shows one run while this process works on it. The Service calls
// its methods from the run's goroutine, except Progress (the researcher's)
// and Alive (the heartbeat's). ctx outlives a cancelled run, so that the
// end can be shown.
type View interface {
	// Show puts up the run's live status (a face records where itself).
	Show(ctx context.Context, r Run)
	// Progress is the run's progress (the ProgressSink): the whole
	// current picture each time; it must not block.
	Progress(Progress)
	// Alive is called on every heartbeat, whether it kept the lease or not.
	Alive(ctx context.Context)
	// Turned is told how the researcher's call ended (zero on an error),
	// before the outcome is shown.
	Turned(out Outcome)
	// Paused shows an interrupt before the run is recorded as waiting on
	// it and returns what to record as shown: the interrupt, with where
	// it is shown (MessageID, "" when nowhere in particular) and its text
	// as the face keeps it.
	Paused(ctx context.Context, in Interrupt) PendingInterrupt
	// Finished shows the final picture of a run whose report is published;
	// lateCancelBy is who asked to cancel after the research had ended
	// ("": no one). The run is recorded as done after it returns.
	Finished(ctx context.Context, res Result, lateCancelBy string)
	// Failed shows that the run failed; cause is for the log.
	Failed(ctx context.Context, cause error)
	// Cancelled shows that the run, recorded as cancelled, was cancelled
	// by by.
	Cancelled(ctx context.Context, by string)
	// Halt stops showing progress and leaves what is shown: the run goes
	// on elsewhere (handed back at shutdown, or its lease lost).
	Halt()
	// Ended is told the run's new state once it is recorded (waiting,
	// done, failed or cancelled).
	Ended(ctx context.Context, state RunState)
	Publisher
}

// Publisher publishes a run's report. The Service makes it exactly once:
// it asks Published before Publish, records what Publish returns, and
// keeps the files Publish reserves before they are visible as staged (st),
// deleting with Discard those an attempt that died left behind.
type Publisher interface {
	// Published reports whether the report was published by an earlier
	// attempt whose record was lost (it died between publishing and
	// recording), and where; it completes what that attempt may have left
	// out (the report's charts).
	Published(ctx context.Context, res Result, st Staging) (Upload, bool)
	// Publish publishes the report and returns where. An error that
	// Transient reports may be tried again.
	Publish(ctx context.Context, res Result, st Staging) (Upload, error)
	// Discard deletes a staged file that was never made visible and
	// reports whether it is gone.
	Discard(ctx context.Context, fileID string) bool
}

// Staging records the files a Publish reserves before they are visible,
// so that a process dying in between leaves them to the next attempt.
type Staging interface {
	// Stage records fileID as staged; a file that cannot be recorded must
	// be deleted by the caller.
	Stage(ctx context.Context, fileID string) error
	// Unstage forgets a staged file (visible now, or deleted).
	Unstage(ctx context.Context, fileID string)
}

// Credentials is a Presenter holding a run's short-lived credential
// (RunOptions.WorkspaceToken), which is never stored: the Service takes it
// when the run's research starts.
type Credentials interface {
	TakeWorkspaceToken(runID string) string
}

// UploadTracer is a View that traces the publication of a report: the
// returned end is called with its outcome.
type UploadTracer interface {
	TraceUpload(ctx context.Context, res Result) (context.Context, func(error))
}

// TransientError marks an error of Publish that may pass when tried again
// (a network error, a rate limit, a server error).
type TransientError struct{ Err error }

func (e TransientError) Error() string { return e.Err.Error() }
func (e TransientError) Unwrap() error { return e.Err }

// Transient reports whether err (of Publish) may pass when tried again.
func Transient(err error) bool {
	var t TransientError
	return errors.As(err, &t)
}

// Causes of a run's context ending.
var (
	// ErrShutdown ends the runs of a Service that shuts down: they are
	// handed back to the store for another process.
	ErrShutdown = errors.New("research: shutting down")
	// ErrTooManyAttempts fails a run picked up more than MaxAttempts
	// times without finishing.
	ErrTooManyAttempts = errors.New("research: the run was picked up too often without finishing")
	errLeaseLost       = errors.New("research: lease lost")
)

// CancelRequested is the cause of a run cancelled by a person.
type CancelRequested struct{ By string }

func (c CancelRequested) Error() string { return "research: cancelled by " + c.By }

// UploadFailedPrefix starts the recorded error of a run whose research
// finished but whose report could not be published.
const UploadFailedPrefix = "uploading the report: "

// ServiceOptions tune a Service.
type ServiceOptions struct {
	Owner string // this process as a lease owner (required)
	// Kinds are the kinds of run (RunKind) this Service takes over in
	// Recover, in this order of precedence: those its Presenter shows
	// (one that shows several picks the face by RunKind). "" is a
	// conversation's run (a chat thread's); `ask` runs are "ask"; a
	// digest's firing, keyed by its schedule and due time, would be
	// "digest". Default: [""].
	Kinds          []string
	Lease          time.Duration // run lease (default 30s)
	HeartbeatEvery time.Duration // lease renewal (default Lease/3)
	Slots          int           // runs worked on at once (default 8)
	// MaxAttempts bounds the pickups of a run since its last input; a run
	// picked up more often is failed (default 5).
	MaxAttempts int
	// Ender is told when a run has ended (default: the researcher, when
	// it is a RunEnder).
	Ender RunEnder
	// PublishRounds is how many more times a publication that failed with
	// a transient error is tried (default 3), RoundWait the first wait
	// (default 2s, growing linearly).
	PublishRounds int
	RoundWait     time.Duration
	Logger        *slog.Logger // default: discard
	// LogPrefix starts every message the Service logs (default
	// "research: "; a face may keep its own, e.g. "bot: ").
	LogPrefix string
	Clock     clock.Clock // default clock.Real{}
}

// Service runs research runs through their lifecycle; see the file's
// comment. It is safe for concurrent use.
type Service struct {
	store RunStore
	res   Researcher
	ender RunEnder // nil when the researcher is not told
	pres  Presenter
	o     ServiceOptions
	log   *slog.Logger
	pfx   string // LogPrefix
	clk   clock.Clock

	slots   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	turns   map[string]chan struct{} // run id -> closed when this process's latest turn of the run is over
	ends    uint64                   // turns over so far (under mu)
	base    context.Context          // parent of every run; cancelled at Shutdown
	stop    context.CancelCauseFunc
	work    context.Context // outlives the runs: their ends are shown in it
}

// NewService returns a Service keeping runs in store, researching with
// res and showing runs with p.
func NewService(store RunStore, res Researcher, p Presenter, o ServiceOptions) *Service {
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.HeartbeatEvery <= 0 {
		o.HeartbeatEvery = o.Lease / 3
	}
	if len(o.Kinds) == 0 {
		o.Kinds = []string{""}
	}
	if o.Slots <= 0 {
		o.Slots = 8
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.PublishRounds == 0 {
		o.PublishRounds = 3
	}
	if o.RoundWait <= 0 {
		o.RoundWait = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LogPrefix == "" {
		o.LogPrefix = "research: "
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	s := &Service{store: store, res: res, pres: p, o: o, log: o.Logger, pfx: o.LogPrefix, clk: o.Clock,
		slots: make(chan struct{}, o.Slots), running: map[string]context.CancelCauseFunc{},
		turns: map[string]chan struct{}{}}
	s.ender = o.Ender
	if s.ender == nil {
		s.ender, _ = res.(RunEnder)
	}
	s.Begin(context.Background())
	return s
}

// Begin makes ctx the parent of the runs launched from now on. Its end
// does not end them (Shutdown does); it is where their ends are shown and
// recorded, so it should outlive Shutdown.
func (s *Service) Begin(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base, s.stop = context.WithCancelCause(context.WithoutCancel(ctx))
	s.work = ctx
}

// Shutdown stops the runs this process works on, which hand their leases
// back to the store, and waits up to timeout for them; false when some
// were still busy (their leases expire instead).
func (s *Service) Shutdown(timeout time.Duration) bool {
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	stop(ErrShutdown)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := s.clk.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C():
		return false
	}
}

// Owner is this process as a lease owner.
func (s *Service) Owner() string { return s.o.Owner }

// Lease is the run lease.
func (s *Service) Lease() time.Duration { return s.o.Lease }

// Create records a new queued run (CreateRun's rules: ErrConflict,
// ErrThreadBusy, ErrUserLimit).
func (s *Service) Create(ctx context.Context, r Run, maxPerUser int) error {
	return s.store.CreateRun(ctx, r, maxPerUser)
}

// TryStart acquires a queued run and works on it in its own goroutine if
// this process has a free slot; otherwise the run stays queued for the
// recovery pass.
func (s *Service) TryStart(ctx context.Context, runID string) {
	select {
	case s.slots <- struct{}{}:
	default:
		return
	}
	since := s.endsSoFar()
	r, err := s.store.AcquireRun(ctx, runID, s.o.Owner, s.clk.Now(), s.o.Lease)
	if err != nil {
		<-s.slots
		if !errors.Is(err, ErrNotAcquired) {
			s.log.Warn(s.pfx+"acquire run", "run_id", runID, "err", err)
		}
		return
	}
	s.launch(r, since)
}

// launch works on an acquired run in its own goroutine; a slot is held.
// since is endsSoFar as the run was being acquired.
func (s *Service) launch(r Run, since uint64) {
	s.mu.Lock()
	base, work := s.base, s.work
	s.mu.Unlock()
	prev, raced, end := s.turnAfter(r.ID, since)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.slots }()
		defer end()
		if s.stillOurs(work, prev, raced, r) {
			s.execute(base, work, r)
		}
	}()
}

// endsSoFar counts the turns of this process that are over.
func (s *Service) endsSoFar() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ends
}

// turnAfter registers a turn of run id in this process. It returns the
// turn before it that is not over yet (nil when none); raced, whether a
// turn ended since endsSoFar said since (the one before this one may have
// ended as the run was being acquired); and end, which the new turn calls
// when it is over.
func (s *Service) turnAfter(id string, since uint64) (prev <-chan struct{}, raced bool, end func()) {
	mine := make(chan struct{})
	s.mu.Lock()
	if p, ok := s.turns[id]; ok {
		prev = p
	}
	raced = s.ends != since
	s.turns[id] = mine
	s.mu.Unlock()
	return prev, raced, func() {
		s.mu.Lock()
		if s.turns[id] == mine {
			delete(s.turns, id)
		}
		s.ends++
		s.mu.Unlock()
		close(mine)
	}
}

// stillOurs waits for the turn before this one (prev) to be over and
// reports whether acquisition r still holds the run: running, leased to
// this process and not picked up since. This process acquires a run it is
// still working on when the run's lease lapsed meanwhile (the store or the
// machine stalled for longer than the lease): the earlier turn goes on,
// its heartbeat renewing the lease of the same owner, and researching the
// run a second time beside it would show and publish it twice. So the new
// turn works on the run only once the earlier one left it running here
// without an outcome (a decision that came as the earlier turn paused).
// When a turn ended while the run was being acquired (raced), it may have
// been the one before: the store says whether it left the run to do.
func (s *Service) stillOurs(ctx context.Context, prev <-chan struct{}, raced bool, r Run) bool {
	if prev == nil && !raced {
		return true
	}
	if prev != nil {
		s.log.Warn(s.pfx+"acquired a run this process still works on (its lease lapsed); waiting for that turn to end",
			"run_id", r.ID, "attempt", r.Attempt)
		<-prev
	}
	cur, err := s.store.Run(ctx, r.ID)
	if err != nil {
		s.log.Warn(s.pfx+"read run after its earlier turn; its lease lapses and it is picked up again", "run_id", r.ID, "err", err)
		return false
	}
	return cur.State == StateRunning && cur.Owner == s.o.Owner && cur.Attempt == r.Attempt
}

// Recover takes over, up to the free slots, the runs that are queued or
// whose lease expired (another process died, or this one restarted) and
// works on each in its own goroutine.
func (s *Service) Recover(ctx context.Context) {
	// Take every free slot; count only those taken, since TryStart may take
	// one between reading len and sending.
	held := 0
	since := s.endsSoFar()
grab:
	for range cap(s.slots) {
		select {
		case s.slots <- struct{}{}:
			held++
		default:
			break grab
		}
	}
	if held == 0 {
		return
	}
	for _, kind := range s.o.Kinds {
		if held == 0 {
			break
		}
		runs, err := s.store.AcquireRuns(ctx, kind, s.o.Owner, s.clk.Now(), s.o.Lease, held)
		if err != nil && ctx.Err() == nil {
			s.log.Warn(s.pfx+"acquire runs", "kind", kind, "err", err)
		}
		for _, r := range runs {
			s.log.Info(s.pfx+"picked up run", "run_id", r.ID, "thread_id", r.ThreadID, "attempt", r.Attempt)
			s.launch(r, since)
			held--
		}
	}
	for range held {
		<-s.slots
	}
}

// Work acquires the run and works on it in the caller's goroutine until
// it pauses, ends, or ctx ends (then it is handed back, as at shutdown).
// It returns the run as stored afterwards, or ErrNotAcquired when another
// process holds it (or it is waiting or finished).
func (s *Service) Work(ctx context.Context, runID string) (Run, error) {
	since := s.endsSoFar()
	r, err := s.store.AcquireRun(ctx, runID, s.o.Owner, s.clk.Now(), s.o.Lease)
	if err != nil {
		return Run{}, fmt.Errorf("research: acquire run %s: %w", runID, err)
	}
	base, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	halt := context.AfterFunc(ctx, func() { stop(ErrShutdown) })
	defer halt()
	prev, raced, end := s.turnAfter(r.ID, since)
	if s.stillOurs(context.WithoutCancel(ctx), prev, raced, r) {
		s.execute(base, context.WithoutCancel(ctx), r)
	}
	end()
	r, err = s.store.Run(context.WithoutCancel(ctx), runID)
	if err != nil {
		return Run{}, fmt.Errorf("research: read run %s: %w", runID, err)
	}
	return r, nil
}

// CancelLocal cancels a run this process works on on behalf of by; false
// when it works on no such run.
func (s *Service) CancelLocal(runID, by string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cancel, ok := s.running[runID]
	if ok {
		cancel(CancelRequested{by})
	}
	return ok
}

// Decide records a person's decision on the interrupt a waiting run shows
// (Decide's rules: exactly once, ErrAlreadyDecided, ErrNotWaiting); the
// run is then queued to be resumed, or, for ActionCancel, cancelled and
// its thread's unfinished work discarded.
func (s *Service) Decide(ctx context.Context, runID string, d Decision) (Run, error) {
	r, err := s.store.Decide(ctx, runID, d)
	if err != nil {
		return r, err
	}
	if r.State == StateCancelled {
		s.CancelWaiting(ctx, r)
	}
	return r, nil
}

// CancelWaiting tells the researcher and the run's end to a queued or
// waiting run that this process cancelled in the store: no one is running
// it.
func (s *Service) CancelWaiting(ctx context.Context, r Run) {
	if err := s.res.Cancel(ctx, r.ThreadID); err != nil {
		s.log.Warn(s.pfx+"researcher cancel", "run_id", r.ID, "err", err)
	}
	s.endRun(ctx, r, s.log.With("run_id", r.ID))
}

// turn is one working turn of a run in this process.
type turn struct {
	run  Run
	view View
	log  *slog.Logger
}

// execute works on an acquired run until it pauses, finishes, is
// cancelled, loses its lease or base ends (ErrShutdown). work is for the
// store and the view past the run's end.
func (s *Service) execute(base, work context.Context, r Run) {
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	log := s.log.With("run_id", r.ID, "thread_id", r.ThreadID)
	s.mu.Lock()
	s.running[r.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, r.ID)
		s.mu.Unlock()
	}()
	// A cancel that came while the run was being acquired found it running
	// but not yet registered here: look once more now that it is.
	if cur, err := s.store.Run(work, r.ID); err == nil && cur.CancelRequestedBy != "" {
		r.CancelRequestedBy = cur.CancelRequestedBy
	}
	if r.CancelRequestedBy != "" {
		cancel(CancelRequested{r.CancelRequestedBy})
	}
	view := s.pres.Open(ctx, r)
	// The lease is renewed from here until the outcome is recorded: showing
	// the status may wait for a pace longer than a short lease.
	hbDone := make(chan struct{})
	hbStopped := make(chan struct{})
	go func(r Run) {
		defer close(hbStopped)
		s.heartbeat(ctx, r, view, cancel, hbDone)
	}(r)
	defer func() {
		close(hbDone)
		<-hbStopped
	}()
	view.Show(work, r)
	defer view.Halt()
	view.Progress(Progress{Phase: "starting"})
	t := turn{run: r, view: view, log: log}

	if r.Attempt > s.o.MaxAttempts {
		// Picked up again and again without finishing (a process dies on
		// it, or a store write keeps failing): stop paying for it.
		s.fail(work, t, fmt.Errorf("%w: picked up %d times", ErrTooManyAttempts, r.Attempt))
		return
	}
	outcome, err := s.invoke(ctx, r, view, log)
	view.Turned(outcome)
	s.settle(ctx, work, t, outcome, err)
}

// settle records and shows how a turn ended.
func (s *Service) settle(ctx, work context.Context, t turn, outcome Outcome, err error) {
	cause := context.Cause(ctx)
	var cr CancelRequested
	if err == nil && outcome.Interrupt != nil && !errors.As(cause, &cr) {
		// A cancel recorded while the step ended may not have reached this
		// run's context yet: the store says so, and the cancel wins over a
		// pause.
		if cur, err := s.store.Run(work, t.run.ID); err == nil && cur.CancelRequestedBy != "" {
			cause = CancelRequested{cur.CancelRequestedBy}
		}
	}
	switch {
	case errors.As(cause, &cr):
		// Cancelled while the researcher finished a step: the cancel wins,
		// whatever the step produced.
		s.cancelled(work, t, cr.By)
	case err == nil && outcome.Interrupt != nil:
		s.pause(work, t, *outcome.Interrupt)
	case err == nil && outcome.Result != nil:
		s.finish(work, t, *outcome.Result)
	case err == nil:
		s.fail(work, t, errors.New("the researcher returned neither a result nor an interrupt"))
	case errors.Is(cause, ErrShutdown):
		if err := s.store.ReleaseRun(work, t.run.ID, s.o.Owner, s.clk.Now()); err != nil {
			t.log.Warn(s.pfx+"release run at shutdown", "err", err)
		} else {
			t.log.Info(s.pfx + "run released for another process")
		}
		t.view.Halt()
	case errors.Is(cause, errLeaseLost):
		t.log.Warn(s.pfx + "lease lost; another process owns the run now")
		t.view.Halt()
	default:
		s.fail(work, t, err)
	}
}

// invoke calls the Researcher: Continue on a retry (falling back to the
// input when nothing was checkpointed), else Resume with the decision or
// Start with the question. A run without a question continues its thread.
func (s *Service) invoke(ctx context.Context, r Run, view View, log *slog.Logger) (Outcome, error) {
	sink := view.Progress
	if r.Options.ApproveStart && r.Decision == nil {
		// Nothing is researched before the go-ahead.
		return Outcome{Interrupt: &Interrupt{ID: StartInterruptID, Kind: InterruptStart, Text: r.Question}}, nil
	}
	if r.Attempt > 1 || r.Question == "" {
		out, err := s.res.Continue(ctx, r.ThreadID, sink)
		if !errors.Is(err, ErrNothingToContinue) || r.Question == "" && r.Decision == nil {
			log.Info(s.pfx+"continued run", "attempt", r.Attempt, "err", err)
			return out, err
		}
	}
	if r.Decision != nil && r.Interrupt != nil && r.Decision.InterruptID == r.Interrupt.ID && r.Interrupt.Kind != InterruptStart {
		d := r.Decision
		return s.res.Resume(ctx, r.ThreadID, d.InterruptID, Answer{Action: d.Action, Text: d.Text, By: d.By}, sink)
	}
	tag := r.ID
	if r.Options.Redeliver != "" {
		tag = r.Options.Redeliver
	}
	opts := r.Options
	if c, ok := s.pres.(Credentials); ok {
		opts.WorkspaceToken = c.TakeWorkspaceToken(r.ID)
	}
	return s.res.Start(ctx, StartRequest{
		RunID: tag, ThreadID: r.ThreadID, Question: r.Question, FollowUp: r.FollowUp, Requester: r.Requester, Options: opts,
	}, sink)
}

// heartbeat renews the lease until done; it cancels the run when the lease
// is lost or someone asked to cancel.
func (s *Service) heartbeat(ctx context.Context, r Run, view View, cancel context.CancelCauseFunc, done <-chan struct{}) {
	t := s.clk.NewTimer(s.o.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C():
		}
		t.Reset(s.o.HeartbeatEvery)
		cur, err := s.store.Heartbeat(ctx, r.ID, s.o.Owner, s.clk.Now(), s.o.Lease)
		switch {
		case errors.Is(err, ErrLeaseLost):
			// A cancel of a running run keeps it running, so this is a
			// takeover or the run ended elsewhere.
			if cur2, err2 := s.store.Run(ctx, r.ID); err2 == nil && cur2.State == StateCancelled {
				cancel(CancelRequested{cur2.CancelRequestedBy})
			} else {
				cancel(errLeaseLost)
			}
			return
		case err != nil:
			s.log.Warn(s.pfx+"heartbeat", "run_id", r.ID, "err", err)
		case cur.CancelRequestedBy != "":
			cancel(CancelRequested{cur.CancelRequestedBy})
		}
		view.Alive(ctx)
	}
}

// pause shows an interrupt and records the run as waiting. The view shows
// it before the run is recorded as waiting: once it is, a decision can
// resume the run in any process.
func (s *Service) pause(ctx context.Context, t turn, in Interrupt) {
	pi := t.view.Paused(ctx, in)
	err := s.store.WaitRun(ctx, t.run.ID, s.o.Owner, pi, s.clk.Now())
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		// A blip of the database passes; a refusal of the row does not.
		t.log.Warn(s.pfx+"record waiting run; trying once more", "err", err)
		_ = clock.Sleep(ctx, s.clk, time.Second)
		err = s.store.WaitRun(ctx, t.run.ID, s.o.Owner, pi, s.clk.Now())
	}
	if err != nil {
		t.log.Warn(s.pfx+"record waiting run", "err", err)
		if !errors.Is(err, ErrLeaseLost) {
			// Left running, the run would be picked up, researched and
			// shown again after every lease. Fail it once instead.
			s.fail(ctx, t, fmt.Errorf("recording the run as waiting: %w", err))
		}
		return
	}
	t.log.Info(s.pfx+"run waiting", "interrupt_id", in.ID, "kind", in.Kind)
	t.view.Ended(ctx, StateWaiting)
}

// finish publishes the report (once) and records the run as done.
func (s *Service) finish(ctx context.Context, t turn, res Result) {
	r := t.run
	if res.Elapsed == 0 {
		res.Elapsed = s.clk.Now().Sub(r.CreatedAt)
	}
	// The report is the product: an outage outlasting one call's retries
	// gets a few more rounds before the run is failed.
	uctx, end := ctx, func(error) {}
	if tr, ok := t.view.(UploadTracer); ok {
		uctx, end = tr.TraceUpload(ctx, res)
	}
	err := s.publish(uctx, t, res)
	for round := 1; err != nil && Transient(err) && round <= s.o.PublishRounds && ctx.Err() == nil; round++ {
		wait := time.Duration(round) * s.o.RoundWait
		t.log.Warn(s.pfx+"report upload failed; trying again", "err", err, "round", round, "wait", wait)
		_ = clock.Sleep(ctx, s.clk, wait)
		err = s.publish(uctx, t, res)
	}
	end(err)
	if err != nil {
		s.fail(ctx, t, fmt.Errorf("%s%w", UploadFailedPrefix, err))
		return
	}
	// The final picture comes before the run is recorded as done: a
	// process that dies in between leaves the run to be continued, and the
	// next one shows it again. In the other order a death there would
	// leave the run shown as researching forever.
	t.view.Finished(ctx, res, s.lateCancel(ctx, r))
	// What the run read from the workspace goes before the run is done.
	s.endRun(ctx, r, t.log)
	if err := s.store.FinishRun(ctx, r.ID, s.o.Owner, StateDone, "", s.clk.Now()); err != nil {
		t.log.Warn(s.pfx+"record finished run", "err", err)
		return
	}
	t.log.Info(s.pfx+"run done", "sources", res.Sources, "tokens", res.Tokens)
	t.view.Ended(ctx, StateDone)
}

// lateCancel is who asked to cancel the run after its research finished,
// while its report was being published ("" no one): the run is done all
// the same.
func (s *Service) lateCancel(ctx context.Context, r Run) string {
	cur, err := s.store.Run(ctx, r.ID)
	if err != nil || cur.CancelRequestedBy == "" {
		return ""
	}
	s.log.Info(s.pfx+"cancel came after the research finished; the report is published", "run_id", r.ID, "by", cur.CancelRequestedBy)
	return cur.CancelRequestedBy
}

// publish publishes the report exactly once: a run whose upload is
// recorded, or whose report the view finds published, is not published
// again; files an earlier attempt staged but never made visible are
// deleted.
func (s *Service) publish(ctx context.Context, t turn, res Result) error {
	r := t.run
	if _, err := s.store.Upload(ctx, r.ID); err == nil {
		t.log.Info(s.pfx + "report already uploaded")
		return nil
	}
	st := staging{s: s, runID: r.ID, log: t.log}
	if u, ok := t.view.Published(ctx, res, st); ok {
		t.log.Info(s.pfx+"report found published; not publishing again", "file_id", u.FileID)
		if err := s.record(ctx, r, u); err != nil {
			return err
		}
		s.clearStaged(ctx, t, u.FileID)
		return nil
	}
	if !res.Reply {
		s.clearStaged(ctx, t, "")
	}
	u, err := t.view.Publish(ctx, res, st)
	if err != nil {
		return err
	}
	if err := s.record(ctx, r, u); err != nil {
		return err
	}
	if u.FileID != "" {
		st.Unstage(ctx, u.FileID)
	}
	return nil
}

func (s *Service) record(ctx context.Context, r Run, u Upload) error {
	u.RunID, u.At = r.ID, s.clk.Now()
	_, err := s.store.RecordUpload(ctx, u)
	return err
}

// clearStaged settles the files staged by the run's earlier attempts: keep
// (the report found published) is forgotten, every other one deleted (it
// was never made visible).
func (s *Service) clearStaged(ctx context.Context, t turn, keep string) {
	ids, err := s.store.StagedUploads(ctx, t.run.ID)
	if err != nil {
		t.log.Warn(s.pfx+"read staged report files", "err", err)
		return
	}
	st := staging{s: s, runID: t.run.ID, log: t.log}
	for _, id := range ids {
		if id == keep {
			st.Unstage(ctx, id)
			continue
		}
		t.log.Info(s.pfx+"deleting a report file an earlier attempt staged but never shared", "file_id", id)
		if t.view.Discard(ctx, id) {
			st.Unstage(ctx, id)
		}
	}
}

// staging is the Staging of one run.
type staging struct {
	s     *Service
	runID string
	log   *slog.Logger
}

func (st staging) Stage(ctx context.Context, fileID string) error {
	return st.s.store.StageUpload(ctx, st.runID, fileID, st.s.clk.Now())
}

func (st staging) Unstage(ctx context.Context, fileID string) {
	if err := st.s.store.UnstageUpload(ctx, st.runID, fileID); err != nil {
		st.log.Warn(st.s.pfx+"forget staged report file", "file_id", fileID, "err", err)
	}
}

// fail records the run as failed, after showing it. A run this process no
// longer holds is neither shown nor recorded as failed.
func (s *Service) fail(ctx context.Context, t turn, cause error) {
	r := t.run
	t.log.Error(s.pfx+"run failed", "err", cause)
	if _, err := s.store.Heartbeat(ctx, r.ID, s.o.Owner, s.clk.Now(), s.o.Lease); errors.Is(err, ErrLeaseLost) {
		t.log.Warn(s.pfx+"failed run is no longer ours; not recording it", "err", err)
		return
	}
	// The final picture comes before the record, as in finish.
	t.view.Failed(ctx, cause)
	s.endRun(ctx, r, t.log)
	if err := s.store.FinishRun(ctx, r.ID, s.o.Owner, StateFailed, cause.Error(), s.clk.Now()); err != nil {
		t.log.Warn(s.pfx+"record failed run", "err", err)
		return
	}
	t.view.Ended(ctx, StateFailed)
}

// cancelled finishes a run this process was working on after a cancel.
func (s *Service) cancelled(ctx context.Context, t turn, by string) {
	r := t.run
	if err := s.res.Cancel(ctx, r.ThreadID); err != nil {
		t.log.Warn(s.pfx+"researcher cancel", "err", err)
	}
	s.endRun(ctx, r, t.log)
	if err := s.store.FinishRun(ctx, r.ID, s.o.Owner, StateCancelled, "", s.clk.Now()); err != nil && !errors.Is(err, ErrLeaseLost) {
		t.log.Warn(s.pfx+"record cancelled run", "err", err)
	}
	t.log.Info(s.pfx+"run cancelled", "by", by)
	t.view.Cancelled(ctx, by)
	t.view.Ended(ctx, StateCancelled)
}

// endRun tells the researcher that the run has ended, so that what it read
// from the requester's workspace does not outlive it.
func (s *Service) endRun(ctx context.Context, r Run, log *slog.Logger) {
	if s.ender == nil {
		return
	}
	if err := s.ender.EndRun(ctx, r.ThreadID); err != nil {
		log.Warn(s.pfx+"tell the researcher the run ended", "err", err)
	}
}
