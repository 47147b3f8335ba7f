package schedule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"deepresearch/clock"
	"deepresearch/research"
)

// Fields of a Draft named by a ValidationError.
const (
	FieldTopic   = "topic"
	FieldChannel = "channel"
	FieldSpec    = "spec"
	FieldTZ      = "tz"
	FieldOptions = "options"
)

// ValidationError lists what is wrong with a Draft, by field. It wraps
// ErrInvalid.
type ValidationError struct {
	Fields map[string]string
}

func (e *ValidationError) Error() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(e.Fields)) {
		parts = append(parts, e.Fields[k])
	}
	return "schedule: " + strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Draft is what a user asks for when creating a schedule.
type Draft struct {
	Team    string
	Channel string
	Owner   string
	Topic   string
	Spec    string // cron spec or descriptor
	TZ      string // IANA zone; "" → UTC (callers default it to the owner's Slack tz)
	Options Options
}

// Manager applies users' requests to schedules: validation, limits and
// permissions (only the owner or an admin may change a schedule). It is safe
// for concurrent use.
type Manager struct {
	Store     Store
	Scheduler *Scheduler // runs "Run now" and approved firings; may be nil (those fail)
	// Decider records the decisions on firings waiting for approval
	// (research.Store); may be nil (approvals fail).
	Decider Decider
	// Channels confirms that a schedule's owner may have digests posted in
	// its channel (the bot: allow-list, membership, not archived), when a
	// schedule is created, resumed, run by hand or approved. nil:
	// only the id's form is checked.
	Channels ChannelChecker
	Limits   Limits
	Admins   []string    // Slack user ids who may change any schedule
	Clock    clock.Clock // nil: clock.Real
}

func (m *Manager) now() time.Time {
	if m.Clock == nil {
		return time.Now()
	}
	return m.Clock.Now()
}

// Validate checks a draft and returns its normal form (spec normalised).
func (m *Manager) Validate(d Draft) (Draft, error) {
	lim := m.Limits.withDefaults()
	errs := map[string]string{}
	d.Topic = strings.TrimSpace(d.Topic)
	switch {
	case d.Topic == "":
		errs[FieldTopic] = "Please say what to research."
	case utf8.RuneCountInString(d.Topic) > lim.MaxTopicLen:
		errs[FieldTopic] = fmt.Sprintf("The topic is too long (at most %d characters).", lim.MaxTopicLen)
	}
	switch {
	case d.Channel == "":
		errs[FieldChannel] = "Please pick a channel for the digests."
	case !ValidChannelID(d.Channel):
		errs[FieldChannel] = "Pick a public or private channel for the digests (not a direct message)."
	}
	loc, err := LoadLocation(strings.TrimSpace(d.TZ))
	if err != nil {
		errs[FieldTZ] = strings.TrimPrefix(err.Error(), ErrInvalidSpec.Error()+": ")
	}
	d.TZ = strings.TrimSpace(d.TZ)
	spec, err := ParseSpec(d.Spec)
	if err != nil {
		errs[FieldSpec] = strings.TrimPrefix(err.Error(), ErrInvalidSpec.Error()+": ")
	} else {
		d.Spec = spec.String()
		if loc != nil {
			if gap := spec.ShortestInterval(m.now(), loc); gap > 0 && gap < lim.ShortestInterval {
				errs[FieldSpec] = fmt.Sprintf("This runs every %s; the shortest interval allowed is %s.", shortDuration(gap), shortDuration(lim.ShortestInterval))
			}
		}
	}
	switch d.Options.Depth {
	case "", DepthQuick, DepthStandard, DepthDeep:
	default:
		errs[FieldOptions] = fmt.Sprintf("Unknown depth %q (quick, standard or deep).", d.Options.Depth)
	}
	if len(errs) > 0 {
		return d, &ValidationError{Fields: errs}
	}
	return d, nil
}

// shortDuration formats 90m as "1h30m" and 24h as "24h".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Create validates a draft and stores a new, enabled schedule. It fails with
// a *ValidationError, or ErrLimit when the channel has too many schedules.
func (m *Manager) Create(ctx context.Context, d Draft) (Schedule, error) {
	d, err := m.Validate(d)
	if err != nil {
		return Schedule{}, err
	}
	if err := m.checkChannel(ctx, d.Channel, d.Owner); err != nil {
		return Schedule{}, err
	}
	now := m.now().Truncate(time.Second)
	s := Schedule{ID: NewID(), Team: d.Team, Channel: d.Channel, Owner: d.Owner, Topic: d.Topic, Spec: d.Spec, TZ: d.TZ,
		Enabled: true, Options: d.Options, ActiveSince: now, CreatedAt: now, UpdatedAt: now}
	if err := m.Store.CreateSchedule(ctx, s, m.Limits.withDefaults().MaxPerChannel); err != nil {
		if errors.Is(err, ErrLimit) {
			return Schedule{}, fmt.Errorf("schedule: this channel already has %d schedules, the most allowed; delete one first: %w",
				m.Limits.withDefaults().MaxPerChannel, ErrLimit)
		}
		return Schedule{}, err
	}
	return s, nil
}

// get returns schedule id for user to change (pause, resume, delete, run,
// approve): ErrForbidden unless user is its owner or an admin.
func (m *Manager) get(ctx context.Context, id, user string) (Schedule, error) {
	s, err := m.Store.GetSchedule(ctx, id)
	if err != nil {
		return s, err
	}
	if user == "" || (user != s.Owner && !slices.Contains(m.Admins, user)) {
		return s, ErrForbidden
	}
	return s, nil
}

// SetEnabled pauses (false) or resumes (true) a schedule. Due times while
// it was paused are not caught up.
func (m *Manager) SetEnabled(ctx context.Context, id, user string, enabled bool) (Schedule, error) {
	s, err := m.get(ctx, id, user)
	if err != nil || s.Enabled == enabled {
		return s, err
	}
	if enabled {
		if err := m.checkChannel(ctx, s.Channel, s.Owner); err != nil {
			return s, err
		}
	}
	now := m.now().Truncate(time.Second)
	s.Enabled, s.UpdatedAt = enabled, now
	if enabled {
		s.ActiveSince = now
	}
	return s, m.Store.UpdateSchedule(ctx, s)
}

// Delete removes a schedule and its history.
func (m *Manager) Delete(ctx context.Context, id, user string) (Schedule, error) {
	s, err := m.get(ctx, id, user)
	if err != nil {
		return s, err
	}
	return s, m.Store.DeleteSchedule(ctx, id)
}

// RunNow fires a schedule at once (without asking for approval: the person
// asking is the approval). Clicks within the same minute fire once; it
// reports whether this call started a run.
func (m *Manager) RunNow(ctx context.Context, id, user string) (bool, error) {
	s, err := m.get(ctx, id, user)
	if err != nil {
		return false, err
	}
	if m.Scheduler == nil {
		return false, errors.New("schedule: no scheduler in this process")
	}
	if err := m.checkChannel(ctx, s.Channel, s.Owner); err != nil {
		return false, err
	}
	return m.Scheduler.Fire(ctx, s, m.now().Truncate(time.Minute), true)
}

// Approve gives a firing waiting for approval its go-ahead and starts its
// run; only the first of many clicks wins (ErrNotWaiting for the others).
func (m *Manager) Approve(ctx context.Context, id string, due time.Time, user string) error {
	s, err := m.get(ctx, id, user)
	if err != nil {
		return err
	}
	if err := m.checkChannel(ctx, s.Channel, s.Owner); err != nil {
		return err
	}
	if m.Scheduler == nil {
		return errors.New("schedule: no scheduler in this process")
	}
	if err := m.decide(ctx, id, due, research.ActionApprove, user); err != nil {
		return err
	}
	m.Scheduler.Runs.TryStart(ctx, RunID(id, due))
	return nil
}

// Decline skips a firing waiting for approval: its run is cancelled.
func (m *Manager) Decline(ctx context.Context, id string, due time.Time, user string) error {
	if _, err := m.get(ctx, id, user); err != nil {
		return err
	}
	if err := m.decide(ctx, id, due, research.ActionCancel, user); err != nil {
		return err
	}
	return m.Store.RecordOutcome(ctx, id, due, Outcome{Error: "declined by " + user})
}

// Decider records a person's decision on a waiting run (research.Store).
type Decider interface {
	Decide(ctx context.Context, runID string, d research.Decision) (research.Run, error)
}

// decide records user's decision on the go-ahead of the firing's run.
func (m *Manager) decide(ctx context.Context, id string, due time.Time, a research.Action, user string) error {
	if m.Decider == nil {
		return errors.New("schedule: no Decider in this process")
	}
	runID := RunID(id, due)
	_, err := m.Decider.Decide(ctx, runID, research.Decision{InterruptID: research.StartInterruptID, Action: a, By: user, At: m.now()})
	switch {
	case errors.Is(err, research.ErrNotFound):
		return fmt.Errorf("schedule: run %s: %w", runID, ErrNotFound)
	case errors.Is(err, research.ErrAlreadyDecided), errors.Is(err, research.ErrNotWaiting):
		return fmt.Errorf("schedule: run %s: %w", runID, ErrNotWaiting)
	}
	return err
}

// ChannelChecker confirms where digests may be posted (implemented by the
// bot, *bot.Bot).
type ChannelChecker interface {
	// CheckChannel says, in words for the owner, why digests owned by
	// owner may not be posted in channel ("" when they may). It fails
	// only when it could not find out (a transient error).
	CheckChannel(ctx context.Context, channel, owner string) (problem string, err error)
}

// ValidChannelID reports whether id has the form of a public (C…) or
// private (G…) channel id. Anything else (a DM, a user, markup) is refused
// before it is stored, so a stored channel can always be shown as <#id>.
func ValidChannelID(id string) bool {
	if len(id) < 2 || len(id) > 32 || (id[0] != 'C' && id[0] != 'G') {
		return false
	}
	for _, r := range id[1:] {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// checkChannel asks Channels about a schedule's channel: a refusal is a
// *ValidationError on FieldChannel.
func (m *Manager) checkChannel(ctx context.Context, channel, owner string) error {
	if !ValidChannelID(channel) {
		return &ValidationError{Fields: map[string]string{FieldChannel: "Pick a public or private channel for the digests (not a direct message)."}}
	}
	if m.Channels == nil {
		return nil
	}
	problem, err := m.Channels.CheckChannel(ctx, channel, owner)
	if err != nil {
		return fmt.Errorf("schedule: checking the channel: %w", err)
	}
	if problem != "" {
		return &ValidationError{Fields: map[string]string{FieldChannel: problem}}
	}
	return nil
}
