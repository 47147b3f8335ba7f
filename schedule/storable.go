package schedule

import (
	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Storable returns the schedule with its free text (topic, spec, time
// zone, language) as every engine stores it (dbtext: no NUL, valid UTF-8).
// Stores call it before writing, so the same text reads back everywhere.
func (s Schedule) Storable() Schedule {
	s.Topic = dbtext.String(s.Topic)
	s.Spec = dbtext.String(s.Spec)
	s.TZ = dbtext.String(s.TZ)
	s.Options.Depth = dbtext.String(s.Options.Depth)
	s.Options.Language = dbtext.String(s.Options.Language)
	return s
}

// Storable returns the outcome with its error text and digest as every
// engine stores them (see Schedule.Storable).
func (o Outcome) Storable() Outcome {
	o.Error = dbtext.String(o.Error)
	o.Digest = o.Digest.Storable()
	return o
}

// Storable returns a copy of the digest with its text as every engine
// stores it (nil for nil).
func (d *Digest) Storable() *Digest {
	if d == nil {
		return nil
	}
	c := *d
	c.Title = dbtext.String(c.Title)
	c.Summary = dbtext.String(c.Summary)
	c.MessageTS = dbtext.String(c.MessageTS)
	c.Findings = dbtext.Strings(c.Findings)
	if c.Sources != nil {
		c.Sources = make([]research.Source, len(d.Sources))
		for i, s := range d.Sources {
			c.Sources[i] = research.Source{URL: dbtext.String(s.URL), Title: dbtext.String(s.Title)}
		}
	}
	return &c
}
