// Package schedule runs recurring research digests: a Schedule (a topic, a
// channel, a cron spec and a time zone) fires at its due times, and each
// firing is a research run of the digest kind (RunID, DigestRun) that the
// run service (research.Service) works on like any run; its face (Face)
// posts a digest that leads with what is new since the schedule's
// previous digest.
//
// Exactly once across replicas: a firing's run id is derived from (schedule
// id, due time), so any number of Schedulers may share one database and the
// run is created once; its lease, takeover after a crash and exactly-once
// publication are the run service's. A firing missed while every process
// was down runs once when a Scheduler starts, if it is within the grace
// window, and is recorded as skipped otherwise.
//
// The store is in storage (Schedules in storage/sqlstore, on SQLite and
// Postgres; tables from migrations 0003_schedules.sql and
// 0016_firings_on_runs.sql), with its conformance suite run on both. The
// Slack pieces (the modal, the list, App Home, the poster) are in bot
// (digests.go).
package schedule

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"deepresearch/research"
)

// Errors at the package's edge. Store implementations return them (wrapped).
var (
	ErrNotFound      = errors.New("schedule: not found")
	ErrForbidden     = errors.New("schedule: only the owner or an admin may change this schedule")
	ErrLimit         = errors.New("schedule: limit reached")
	ErrInvalid       = errors.New("schedule: invalid")
	ErrNotWaiting    = errors.New("schedule: firing is not waiting for approval")
	ErrAlreadyExists = errors.New("schedule: already exists")
)

// Depth values of Options.Depth (the agent's).
const (
	DepthQuick    = "quick"
	DepthStandard = "standard"
	DepthDeep     = "deep"
)

// Options tune the research a schedule runs.
type Options struct {
	Depth    string `json:"depth,omitempty"`    // quick, standard (default), deep
	Approval bool   `json:"approval,omitempty"` // a person approves each firing before it runs
	Language string `json:"language,omitempty"` // report language ("ja", "en"); "" = the topic's
}

// Schedule is a recurring research digest.
type Schedule struct {
	ID      string
	Team    string // Slack team id (informational)
	Channel string // where digests are posted
	Owner   string // Slack user id of the creator
	Topic   string // the research question
	Spec    string // cron spec, normal form (see ParseSpec)
	TZ      string // IANA time zone the spec is read in
	Enabled bool   // false: paused
	Options Options
	// ActiveSince is when the schedule was created or resumed: due times
	// before it are never run or recorded.
	ActiveSince time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// LastDue is the due time of the schedule's latest firing (any state);
	// filled in by the Store's List and Get, zero when it never fired.
	LastDue time.Time
}

// Location returns the schedule's time zone (UTC when unset or unknown).
func (s Schedule) Location() *time.Location {
	loc, err := LoadLocation(s.TZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Next returns the schedule's first due time strictly after t, in its time
// zone; zero if the spec is invalid or never due.
func (s Schedule) Next(t time.Time) time.Time {
	sp, err := ParseSpec(s.Spec)
	if err != nil {
		return time.Time{}
	}
	return sp.Next(t.In(s.Location()), s.ActiveSince)
}

// FiringState is where a firing stands.
type FiringState string

// Firing states.
const (
	FiringRunning FiringState = "running" // claimed, research in progress (under a lease)
	FiringWaiting FiringState = "waiting" // waiting for a person to approve
	FiringDone    FiringState = "done"    // the digest was posted
	FiringFailed  FiringState = "failed"
	FiringSkipped FiringState = "skipped" // missed beyond the grace window, or declined
)

// Firing is one due time of a schedule, claimed once.
type Firing struct {
	ScheduleID string
	Due        time.Time
	State      FiringState
	Manual     bool      // "Run now" rather than the cron spec
	Owner      string    // the process holding the lease
	LeaseUntil time.Time // running: another process may take over after it
	Attempts   int
	ClaimedAt  time.Time
	FinishedAt time.Time
	Error      string
	Digest     *Digest // set when done
}

// Digest is what a posted digest reported, kept for the next one's "what's new".
type Digest struct {
	Title     string            `json:"title,omitempty"`
	Summary   string            `json:"summary,omitempty"`
	Findings  []string          `json:"findings,omitempty"`
	Sources   []research.Source `json:"sources,omitempty"`
	MessageTS string            `json:"message_ts,omitempty"` // the summary message in the channel
	// NewFindings and NewSources count what was new in this digest.
	NewFindings int `json:"new_findings,omitempty"`
	NewSources  int `json:"new_sources,omitempty"`
}

// Limits bound what users may create.
type Limits struct {
	MaxPerChannel    int           // schedules per channel; 0: 10
	ShortestInterval time.Duration // between two due times; 0: 1h
	MaxTopicLen      int           // characters; 0: 2000
}

func (l Limits) withDefaults() Limits {
	if l.MaxPerChannel <= 0 {
		l.MaxPerChannel = 10
	}
	if l.ShortestInterval <= 0 {
		l.ShortestInterval = time.Hour
	}
	if l.MaxTopicLen <= 0 {
		l.MaxTopicLen = 2000
	}
	return l
}

// NewID returns a random schedule id ("sch_" + 16 hex digits).
func NewID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "sch_" + hex.EncodeToString(b)
}
