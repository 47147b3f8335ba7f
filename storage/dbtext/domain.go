package dbtext

import (
	"fmt"

	"deepresearch/research"
	"deepresearch/schedule"
)

// Run returns the run with its free text made storable on every engine: the question comes from a user, the
// interrupt text and the error from the model and the web, the decision's
// text from a person. Every store writes runs through it.
func Run(r research.Run) research.Run {
	r.Question = String(r.Question)
	r.Error = String(r.Error)
	if r.Interrupt != nil {
		i := *r.Interrupt
		i.Text = String(i.Text)
		r.Interrupt = &i
	}
	if r.Decision != nil {
		d := *r.Decision
		d.Text = String(d.Text)
		r.Decision = &d
	}
	return r
}

// Schedule returns the schedule with its free text (topic, spec, time
// zone, language) as every engine stores it (dbtext: no NUL, valid UTF-8).
// Stores call it before writing, so the same text reads back everywhere.
func Schedule(s schedule.Schedule) schedule.Schedule {
	s.Topic = String(s.Topic)
	s.Spec = String(s.Spec)
	s.TZ = String(s.TZ)
	s.Options.Depth = String(s.Options.Depth)
	s.Options.Language = String(s.Options.Language)
	return s
}

// Outcome returns the outcome with its error text and digest as every
// engine stores them (see Schedule).
func Outcome(o schedule.Outcome) schedule.Outcome {
	o.Error = String(o.Error)
	o.Digest = Digest(o.Digest)
	return o
}

// Digest returns a copy of the digest with its text as every engine
// stores it (nil for nil).
func Digest(d *schedule.Digest) *schedule.Digest {
	if d == nil {
		return nil
	}
	c := *d
	c.Title = String(c.Title)
	c.Summary = String(c.Summary)
	c.MessageTS = String(c.MessageTS)
	c.Findings = Strings(c.Findings)
	if c.Sources != nil {
		c.Sources = make([]research.Source, len(d.Sources))
		for i, s := range d.Sources {
			c.Sources[i] = research.Source{URL: String(s.URL), Title: String(s.Title)}
		}
	}
	return &c
}

// Feedback checks a feedback record (run, user, a valid value, a time) and
// returns it with its text made storable.
func Feedback(f research.Feedback) (research.Feedback, error) {
	if f.RunID == "" || f.User == "" || !f.Value.Valid() || f.At.IsZero() {
		return f, fmt.Errorf("feedback needs a run, a user, a value (positive or negative) and a time: %+v", f)
	}
	f.RunID, f.User, f.Text = String(f.RunID), String(f.User), String(f.Text)
	if f.Value == research.FeedbackGood {
		f.Text = "" // a positive verdict has no "what was wrong?"
	}
	return f, nil
}
