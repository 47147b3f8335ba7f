package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"deepresearch/clock"
	"deepresearch/research"
)

// Job is a firing as the Slack side shows it (an approval request, which
// only a firing by the cron spec makes: "Run now" needs none).
type Job struct {
	Schedule Schedule
	Due      time.Time // in the schedule's time zone
}

// ApprovalRequester asks a person to approve a firing of a schedule whose
// Options.Approval is set (e.g. a message with Run / Skip buttons); the
// answer arrives through Manager.Approve or Manager.Decline.
type ApprovalRequester interface {
	RequestApproval(ctx context.Context, job Job) error
}

// Runs is where the Scheduler hands its firings as runs (research.Service):
// Create records a queued run (research.ErrConflict when it exists),
// TryStart works on it at once when this process has room; a run left
// queued is picked up by the service's recovery pass.
type Runs interface {
	Create(ctx context.Context, r research.Run, maxPerUser int) error
	TryStart(ctx context.Context, runID string)
}

// Scheduler fires due schedules: each firing becomes a research run of the
// digest kind keyed by (schedule, due time) (RunID), created once however
// many Schedulers share the database (CreateRun's ErrConflict); the run
// service leases it, takes it over after a crash, and the digest face
// (Face) posts it. Set the fields, then call Run (or Tick in tests).
// Fields must not change after.
type Scheduler struct {
	Store Store
	Runs  Runs
	// Channels, when set, is asked before a firing's run is created: a
	// firing whose channel is gone or no longer allowed fails at once
	// instead of after a research nobody can see.
	Channels ChannelChecker
	Clock    clock.Clock // nil: clock.Real

	Interval   time.Duration // between ticks; default 30s
	Grace      time.Duration // how late a missed firing may still run; default 1h
	MaxSkipped int           // missed firings recorded per schedule and tick; default 100
	Logger     *slog.Logger  // default: discard

	once sync.Once
}

func (s *Scheduler) init() {
	s.once.Do(func() {
		if s.Clock == nil {
			s.Clock = clock.Real{}
		}
		if s.Interval <= 0 {
			s.Interval = 30 * time.Second
		}
		if s.Grace <= 0 {
			s.Grace = time.Hour
		}
		if s.MaxSkipped <= 0 {
			s.MaxSkipped = 100
		}
		if s.Logger == nil {
			s.Logger = slog.New(slog.DiscardHandler)
		}
	})
}

// Run ticks every Interval until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	s.init()
	if s.Store == nil || s.Runs == nil {
		return errors.New("schedule: Scheduler needs a Store and Runs")
	}
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

// Tick does one pass: it fires every due time of every enabled schedule
// since its last firing (or since it became active). The latest due time
// within Grace runs; earlier or older ones are recorded as skipped.
func (s *Scheduler) Tick(ctx context.Context) error {
	s.init()
	now := s.Clock.Now()
	list, err := s.Store.ListSchedules(ctx, Filter{EnabledOnly: true})
	if err != nil {
		return err
	}
	var errs []error
	for _, sc := range list {
		if err := s.tickSchedule(ctx, sc, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Scheduler) tickSchedule(ctx context.Context, sc Schedule, now time.Time) error {
	spec, err := ParseSpec(sc.Spec)
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
		ok, err := s.Store.RecordFiring(ctx, Firing{ScheduleID: sc.ID, Due: due, State: FiringSkipped, ClaimedAt: now, FinishedAt: now, Error: reason})
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			s.Logger.Info("schedule: firing skipped", "schedule_id", sc.ID, "due", due, "reason", reason)
		}
	}
	return errors.Join(errs...)
}

// RunKind is the kind of a digest run (research.RunKind of its id): the
// run services that show digests take these runs over after a crash.
const RunKind = "digest"

// RunID is the id of the digest run of the firing (scheduleID, due): the
// same in every process, so that the run is created once.
func RunID(scheduleID string, due time.Time) string {
	return RunKind + ":" + scheduleID + "@" + strconv.FormatInt(due.UnixNano(), 10)
}

// ThreadID is the agent thread of a firing.
func ThreadID(scheduleID string, due time.Time) string {
	return fmt.Sprintf("schedule:%s:%d", scheduleID, due.Unix())
}

// DigestRun is the run of the firing (sc, due): it researches the topic
// without asking anyone, after a person's go-ahead when the schedule asks
// for approval (not for manual firings: the person asking is the approval).
func DigestRun(sc Schedule, due time.Time, manual bool, now time.Time) research.Run {
	return research.Run{
		ID: RunID(sc.ID, due), ThreadID: ThreadID(sc.ID, due), Question: sc.Topic, CreatedAt: now,
		Options: research.RunOptions{
			Depth: sc.Options.Depth, Language: sc.Options.Language, Channel: sc.Channel, Team: sc.Team,
			ApproveStart: sc.Options.Approval && !manual,
			Digest:       &research.DigestOf{Schedule: sc.ID, Due: due, Manual: manual},
		},
	}
}

// Fire creates the run of the firing (sc, due) unless it exists, records
// the firing, and asks the run service to start it. A firing whose
// channel cannot take digests is recorded as failed, with no run. It
// reports whether this call created the firing.
func (s *Scheduler) Fire(ctx context.Context, sc Schedule, due time.Time, manual bool) (bool, error) {
	s.init()
	now := s.Clock.Now()
	log := s.Logger.With("schedule_id", sc.ID, "due", due, "manual", manual)
	if problem := s.channelProblem(ctx, sc); problem != "" {
		ok, err := s.Store.RecordFiring(ctx, Firing{ScheduleID: sc.ID, Due: due, State: FiringFailed, Manual: manual,
			ClaimedAt: now, FinishedAt: now, Error: fmt.Sprintf("%v: %s", ErrChannelUnavailable, problem)})
		if ok {
			log.Warn("schedule: firing failed: its channel is unavailable", "problem", problem)
		}
		return ok, err
	}
	r := DigestRun(sc, due, manual, now)
	err := s.Runs.Create(ctx, r, 0)
	created := err == nil
	if err != nil && !errors.Is(err, research.ErrConflict) {
		return false, fmt.Errorf("schedule: create the run of %s@%s: %w", sc.ID, due, err)
	}
	// The run comes first: a process dying here leaves a run whose firing
	// the next tick records (its run then exists already).
	if _, err := s.Store.RecordFiring(ctx, Firing{ScheduleID: sc.ID, Due: due, State: FiringRunning, Manual: manual, ClaimedAt: now}); err != nil {
		return created, err
	}
	if created {
		log.Info("schedule: firing's run created", "run_id", r.ID, "approval", r.Options.ApproveStart)
		s.Runs.TryStart(ctx, r.ID)
	}
	return created, nil
}

// channelProblem says why sc's channel cannot take digests ("" it can, or
// nobody checks).
func (s *Scheduler) channelProblem(ctx context.Context, sc Schedule) string {
	if !ValidChannelID(sc.Channel) {
		return fmt.Sprintf("%q is not a channel id", sc.Channel)
	}
	if s.Channels == nil {
		return ""
	}
	problem, err := s.Channels.CheckChannel(ctx, sc.Channel, sc.Owner)
	if err != nil {
		// Not known to be gone: the run finds out when it posts.
		s.Logger.Warn("schedule: checking channel", "channel", sc.Channel, "err", err)
		return ""
	}
	return problem
}
