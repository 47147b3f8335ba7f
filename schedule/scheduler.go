package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"deepresearch/clock"
)

// Job is one firing handed to a Runner.
type Job struct {
	Schedule Schedule
	Due      time.Time // in the schedule's time zone
	Manual   bool      // "Run now"
	Attempt  int       // 1 for the first try, more after a take-over
	// Previous is the schedule's latest posted digest before Due, nil for
	// the first digest.
	Previous *Firing
}

// Runner researches a job's topic and posts the digest. It returns what the
// digest reported, kept for the next firing's "what's new". A Runner must be
// safe for concurrent use.
type Runner interface {
	Run(ctx context.Context, job Job) (*Digest, error)
}

// ApprovalRequester asks a person to approve a firing of a schedule whose
// Options.Approval is set (e.g. a message with Run / Skip buttons); the
// answer arrives through Scheduler.Approve or Scheduler.Decline.
type ApprovalRequester interface {
	RequestApproval(ctx context.Context, job Job) error
}

// Scheduler fires due schedules. Several Schedulers (one per process) may
// share a Store: each firing is claimed once. Set Store, Runner and any
// options, then call Run (or Tick in tests). Fields must not change after.
type Scheduler struct {
	Store  Store
	Runner Runner
	Clock  clock.Clock // nil: clock.Real
	// Approvals is asked for approval of schedules with Options.Approval;
	// nil runs them without asking (and logs a warning).
	Approvals ApprovalRequester

	Owner         string        // lease owner; default host-pid-random
	Interval      time.Duration // between ticks; default 30s
	Grace         time.Duration // how late a missed firing may still run; default 1h
	Lease         time.Duration // running firing's lease, renewed every Lease/3; default 2m
	MaxAttempts   int           // tries of a firing whose process died; default 3
	MaxConcurrent int           // runs at once in this process; default 2
	MaxSkipped    int           // missed firings recorded per schedule and tick; default 100
	Logger        *slog.Logger  // default: discard

	once sync.Once
	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	base context.Context // Run's context: runs outlive the call that started them
}

func (s *Scheduler) init() {
	s.once.Do(func() {
		if s.Clock == nil {
			s.Clock = clock.Real{}
		}
		if s.Owner == "" {
			host, _ := os.Hostname()
			b := make([]byte, 4)
			_, _ = rand.Read(b)
			s.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
		}
		if s.Interval <= 0 {
			s.Interval = 30 * time.Second
		}
		if s.Grace <= 0 {
			s.Grace = time.Hour
		}
		if s.Lease <= 0 {
			s.Lease = 2 * time.Minute
		}
		if s.MaxAttempts <= 0 {
			s.MaxAttempts = 3
		}
		if s.MaxConcurrent <= 0 {
			s.MaxConcurrent = 2
		}
		if s.MaxSkipped <= 0 {
			s.MaxSkipped = 100
		}
		if s.Logger == nil {
			s.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		s.sem = make(chan struct{}, s.MaxConcurrent)
	})
}

// Run ticks every Interval until ctx ends, then waits for the runs in flight
// (which see ctx's end and hand their firings back for another process).
func (s *Scheduler) Run(ctx context.Context) error {
	s.init()
	if s.Store == nil || s.Runner == nil {
		return errors.New("schedule: Scheduler needs a Store and a Runner")
	}
	s.mu.Lock()
	s.base = ctx
	s.mu.Unlock()
	defer s.wg.Wait()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.Logger.Error("schedule: tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.Clock.After(s.Interval):
		}
	}
}

// Wait blocks until the runs started so far have finished.
func (s *Scheduler) Wait() { s.wg.Wait() }

// Tick does one pass: it fails or takes over firings whose process died,
// then claims every due time of every enabled schedule since its last firing
// (or since it became active). The latest due time within Grace runs (in the
// background; see Wait); earlier or older ones are recorded as skipped.
func (s *Scheduler) Tick(ctx context.Context) error {
	s.init()
	now := s.Clock.Now()
	var errs []error
	if n, err := s.Store.FailExpired(ctx, now, s.MaxAttempts); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		s.Logger.Warn("schedule: firings abandoned after their last attempt", "count", n)
	}
	taken, err := s.Store.TakeOverFiring(ctx, s.Owner, now, now.Add(s.Lease), s.MaxAttempts)
	if err != nil {
		errs = append(errs, err)
	}
	for _, f := range taken {
		sc, err := s.Store.GetSchedule(ctx, f.ScheduleID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.Logger.Info("schedule: taking over a firing", "schedule_id", f.ScheduleID, "due", f.Due, "attempt", f.Attempts)
		s.start(ctx, sc, f)
	}
	list, err := s.Store.ListSchedules(ctx, Filter{EnabledOnly: true})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, sc := range list {
		if err := s.tickSchedule(ctx, sc, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Scheduler) tickSchedule(ctx context.Context, sc Schedule, now time.Time) error {
	spec, err := sc.ParsedSpec()
	if err != nil {
		s.Logger.Warn("schedule: invalid spec", "schedule_id", sc.ID, "err", err)
		return nil
	}
	anchor := sc.ActiveSince
	if sc.LastDue.After(anchor) {
		anchor = sc.LastDue
	}
	dues, dropped := spec.DueBetween(anchor, now, sc.Location(), sc.ActiveSince, s.MaxSkipped)
	if dropped > 0 {
		s.Logger.Warn("schedule: many missed firings; recording only the latest", "schedule_id", sc.ID, "not_recorded", dropped)
	}
	var errs []error
	for i, due := range dues {
		last := i == len(dues)-1
		if last && now.Sub(due) <= s.Grace {
			if _, err := s.Fire(ctx, sc, due, false); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		reason := "missed: no scheduler was running within the grace window"
		if !last && now.Sub(due) <= s.Grace {
			reason = "missed: superseded by a later due time"
		}
		ok, err := s.Store.ClaimFiring(ctx, Firing{ScheduleID: sc.ID, Due: due, State: FiringSkipped, Owner: s.Owner,
			ClaimedAt: now, FinishedAt: now, Error: reason})
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			s.Logger.Info("schedule: firing skipped", "schedule_id", sc.ID, "due", due, "reason", reason)
		}
	}
	return errors.Join(errs...)
}

// Fire claims the firing (sc, due) and, if this call claimed it, starts it:
// in the background, or as a request for approval when the schedule needs
// one (not for manual firings, which a person just asked for). It reports
// whether it claimed the firing.
func (s *Scheduler) Fire(ctx context.Context, sc Schedule, due time.Time, manual bool) (bool, error) {
	s.init()
	now := s.Clock.Now()
	f := Firing{ScheduleID: sc.ID, Due: due, State: FiringRunning, Manual: manual, Owner: s.Owner,
		LeaseUntil: now.Add(s.Lease), Attempts: 1, ClaimedAt: now}
	approval := sc.Options.Approval && !manual
	if approval && s.Approvals != nil {
		f.State, f.LeaseUntil, f.Attempts = FiringWaiting, time.Time{}, 0
	}
	ok, err := s.Store.ClaimFiring(ctx, f)
	if err != nil || !ok {
		return false, err
	}
	log := s.Logger.With("schedule_id", sc.ID, "due", due, "manual", manual)
	if f.State == FiringWaiting {
		log.Info("schedule: firing waits for approval")
		job := Job{Schedule: sc, Due: due.In(sc.Location()), Manual: manual}
		if err := s.Approvals.RequestApproval(ctx, job); err != nil {
			log.Error("schedule: request approval", "err", err)
			if ferr := s.Store.FinishFiring(ctx, sc.ID, due, s.Owner, Outcome{State: FiringFailed, Error: "could not ask for approval: " + err.Error(), FinishedAt: s.Clock.Now()}); ferr != nil {
				return true, errors.Join(err, ferr)
			}
			return true, err
		}
		return true, nil
	}
	if approval {
		log.Warn("schedule: the schedule asks for approval but no ApprovalRequester is set; running")
	}
	log.Info("schedule: firing claimed")
	s.start(ctx, sc, f)
	return true, nil
}

// Approve runs a firing that waits for approval; only the first call wins
// (ErrNotWaiting for the others). Permissions are checked by the caller.
func (s *Scheduler) Approve(ctx context.Context, scheduleID string, due time.Time) error {
	s.init()
	now := s.Clock.Now()
	f, err := s.Store.ApproveFiring(ctx, scheduleID, due, s.Owner, now, now.Add(s.Lease))
	if err != nil {
		return err
	}
	sc, err := s.Store.GetSchedule(ctx, scheduleID)
	if err != nil {
		return err
	}
	s.start(ctx, sc, f)
	return nil
}

// Decline records a waiting firing as skipped.
func (s *Scheduler) Decline(ctx context.Context, scheduleID string, due time.Time, by string) error {
	s.init()
	f, err := s.Store.GetFiring(ctx, scheduleID, due)
	if err != nil {
		return err
	}
	if f.State != FiringWaiting {
		return fmt.Errorf("schedule: firing %s@%s is %s: %w", scheduleID, due, f.State, ErrNotWaiting)
	}
	err = s.Store.FinishFiring(ctx, scheduleID, due, f.Owner, Outcome{State: FiringSkipped, Error: "declined by " + by, FinishedAt: s.Clock.Now()})
	if errors.Is(err, ErrLeaseLost) {
		return fmt.Errorf("schedule: firing %s@%s: %w", scheduleID, due, ErrNotWaiting)
	}
	return err
}

func (s *Scheduler) runContext(ctx context.Context) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base != nil {
		return s.base
	}
	return ctx
}

// start runs a claimed firing in the background under its lease.
func (s *Scheduler) start(ctx context.Context, sc Schedule, f Firing) {
	ctx = s.runContext(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(ctx, sc, f)
	}()
}

func (s *Scheduler) run(ctx context.Context, sc Schedule, f Firing) {
	log := s.Logger.With("schedule_id", sc.ID, "due", f.Due, "attempt", f.Attempts)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	var hb sync.WaitGroup
	hb.Add(1)
	go func() { // heartbeat
		defer hb.Done()
		for {
			select {
			case <-stop:
				return
			case <-runCtx.Done():
				return
			case <-s.Clock.After(s.Lease / 3):
			}
			err := s.Store.RenewFiring(runCtx, sc.ID, f.Due, s.Owner, s.Clock.Now().Add(s.Lease))
			if errors.Is(err, ErrLeaseLost) {
				log.Warn("schedule: lease lost; stopping the run")
				cancel(err)
				return
			}
			if err != nil {
				log.Warn("schedule: renew lease", "err", err)
			}
		}
	}()
	defer func() { close(stop); hb.Wait() }()

	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-runCtx.Done():
		s.handBack(sc, f, log)
		return
	}
	job := Job{Schedule: sc, Due: f.Due.In(sc.Location()), Manual: f.Manual, Attempt: f.Attempts}
	if prev, err := s.Store.PreviousDigest(runCtx, sc.ID, f.Due); err == nil {
		job.Previous = &prev
	} else if !errors.Is(err, ErrNotFound) {
		log.Warn("schedule: previous digest", "err", err)
	}
	log.Info("schedule: run starts")
	digest, err := s.Runner.Run(runCtx, job)
	if ctx.Err() != nil { // shutting down: another process continues
		s.handBack(sc, f, log)
		return
	}
	if cause := context.Cause(runCtx); errors.Is(cause, ErrLeaseLost) {
		return
	}
	out := Outcome{State: FiringDone, Digest: digest, FinishedAt: s.Clock.Now()}
	if err != nil {
		out = Outcome{State: FiringFailed, Error: err.Error(), FinishedAt: s.Clock.Now()}
		log.Error("schedule: run failed", "err", err)
	} else {
		log.Info("schedule: digest posted")
	}
	finishCtx, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelFinish()
	if err := s.Store.FinishFiring(finishCtx, sc.ID, f.Due, s.Owner, out); err != nil {
		log.Error("schedule: record outcome", "err", err)
	}
}

// handBack ends this process's lease at once so another process takes the
// firing over at its next tick.
func (s *Scheduler) handBack(sc Schedule, f Firing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Store.RenewFiring(ctx, sc.ID, f.Due, s.Owner, time.Unix(0, 1)); err != nil && !errors.Is(err, ErrLeaseLost) {
		log.Warn("schedule: hand back firing", "err", err)
	}
}
