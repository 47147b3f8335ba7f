package sqlite

import "deepresearch/storage/sqlstore"

// SQL returns the stores' view of the database: the writer, whose
// transactions begin IMMEDIATE, and the readers.
func (s *Store) SQL() *sqlstore.DB { return s.sql }

// NewRuns returns the research.Store on s's database.
func NewRuns(s *Store) *sqlstore.Runs { return sqlstore.NewRuns(s.sql) }

// NewSlack returns the slackstate.Store (the Slack bot's own records) on
// s's database.
func NewSlack(s *Store) *sqlstore.Slack { return sqlstore.NewSlack(s.sql) }

// NewJobs returns the jobs.Queue on s's database.
func NewJobs(s *Store) *sqlstore.Jobs { return sqlstore.NewJobs(s.sql) }

// NewSchedules returns the schedule.Store on s's database.
func NewSchedules(s *Store) *sqlstore.Schedules { return sqlstore.NewSchedules(s.sql) }

// NewNotes returns the research notes store on s's database.
func NewNotes(s *Store) *sqlstore.Notes { return sqlstore.NewNotes(s.sql) }

// NewFeedback returns the feedback store on s's database.
func NewFeedback(s *Store) *sqlstore.Feedback { return sqlstore.NewFeedback(s.sql) }

// NewReports returns the store of finished reports on s's database.
func NewReports(s *Store) *sqlstore.Reports { return sqlstore.NewReports(s.sql) }
