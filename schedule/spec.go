package schedule

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	_ "time/tzdata" // time zones work in minimal containers too

	"github.com/robfig/cron/v3"
)

// ErrInvalidSpec is wrapped by every error of ParseSpec.
var ErrInvalidSpec = errors.New("invalid schedule")

// Spec is a parsed cron specification: five fields (minute hour day-of-month
// month day-of-week), a descriptor (@hourly, @daily, @weekly, @monthly,
// @yearly) or "@every <duration>". Its due times are computed on the wall
// clock of a time zone:
//
//   - a wall-clock time that does not exist on a day (skipped by a
//     spring-forward change) fires once, at the same distance past the gap
//     (02:30 becomes 03:30 on a day that jumps from 02:00 to 03:00);
//   - a wall-clock time that occurs twice (fall-back) fires once, at its first
//     occurrence, so a daily digest is never posted twice.
//
// "@every" schedules are not tied to a wall clock: they fire at an anchor
// (when the schedule became active) plus whole multiples of the duration.
type Spec struct {
	text  string
	spec  *cron.SpecSchedule // nil for @every
	every time.Duration
}

var fieldNames = [5]string{"minute", "hour", "day-of-month", "month", "day-of-week"}

var fieldRanges = [5]string{"0–59", "0–23", "1–31", "1–12 or JAN–DEC", "0–6 or SUN–SAT (Sunday is 0)"}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec parses a cron specification. Its errors wrap ErrInvalidSpec and
// name the mistake, e.g. `minute field: 61 is out of range 0–59`.
func ParseSpec(text string) (Spec, error) {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return Spec{}, fmt.Errorf("%w: the frequency is empty (e.g. \"0 9 * * 1\" or @daily)", ErrInvalidSpec)
	}
	if strings.HasPrefix(text, "TZ=") || strings.HasPrefix(text, "CRON_TZ=") {
		return Spec{}, fmt.Errorf("%w: put the time zone in the time zone field, not in the frequency", ErrInvalidSpec)
	}
	if strings.HasPrefix(text, "@") {
		lower := strings.ToLower(text)
		if d, ok := strings.CutPrefix(lower, "@every "); ok {
			dur, err := time.ParseDuration(strings.TrimSpace(d))
			if err != nil {
				return Spec{}, fmt.Errorf("%w: @every needs a duration such as 6h or 24h, not %q", ErrInvalidSpec, strings.TrimSpace(d))
			}
			if dur <= 0 || dur%time.Second != 0 {
				return Spec{}, fmt.Errorf("%w: @every needs a positive whole number of seconds, not %s", ErrInvalidSpec, dur)
			}
			return Spec{text: "@every " + dur.String(), every: dur}, nil
		}
		s, err := parser.Parse(lower)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: unknown descriptor %s (use @hourly, @daily, @weekly, @monthly, @yearly or @every <duration>)", ErrInvalidSpec, text)
		}
		return Spec{text: lower, spec: s.(*cron.SpecSchedule)}, nil
	}
	fields := strings.Fields(text)
	if len(fields) != 5 {
		msg := fmt.Sprintf("expected 5 fields (minute hour day-of-month month day-of-week), found %d in %q", len(fields), text)
		if len(fields) == 6 {
			msg += "; seconds are not supported"
		}
		return Spec{}, fmt.Errorf("%w: %s", ErrInvalidSpec, msg)
	}
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		if _, err := parser.Parse(strings.Join(probe, " ")); err != nil {
			return Spec{}, fmt.Errorf("%w: %s", ErrInvalidSpec, fieldError(i, f, err))
		}
	}
	s, err := parser.Parse(text)
	if err != nil { // not expected once every field parsed
		return Spec{}, fmt.Errorf("%w: %q: %v", ErrInvalidSpec, text, err)
	}
	sp := Spec{text: text, spec: s.(*cron.SpecSchedule)}
	if sp.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}).IsZero() {
		return Spec{}, fmt.Errorf("%w: %q never fires (no such date)", ErrInvalidSpec, text)
	}
	return sp, nil
}

// robfig/cron's messages for a field, as fieldError reads them.
var (
	// "end of range (61) above maximum", "beginning of range (0) below
	// minimum", "negative number (-1) not allowed"
	reOutOfRange = regexp.MustCompile(`(?:range|number) \((-?\d+)\) (?:above|below|not)`)
	reBackward   = regexp.MustCompile(`beginning of range \((\d+)\) beyond end of range \((\d+)\)`)
	reNotInt     = regexp.MustCompile(`failed to parse int from (\S+):`)
)

// fieldError maps robfig/cron's message for field i into one that names the
// field and the mistake.
func fieldError(i int, field string, err error) string {
	name, rng := fieldNames[i], fieldRanges[i]
	msg := err.Error()
	switch {
	case reOutOfRange.MatchString(msg):
		return fmt.Sprintf("%s field: %s is out of range %s", name, reOutOfRange.FindStringSubmatch(msg)[1], rng)
	case reBackward.MatchString(msg):
		m := reBackward.FindStringSubmatch(msg)
		return fmt.Sprintf("%s field: the range %s-%s runs backwards", name, m[1], m[2])
	case strings.Contains(msg, "step of range"):
		return fmt.Sprintf("%s field: the step in %q must be a positive number", name, field)
	case reNotInt.MatchString(msg):
		bad := reNotInt.FindStringSubmatch(msg)[1]
		if _, convErr := strconv.Atoi(bad); convErr != nil {
			return fmt.Sprintf("%s field: %q is not a number or name (use %s)", name, bad, rng)
		}
	case strings.Contains(msg, "too many"):
		return fmt.Sprintf("%s field: %q is malformed (use a value, a-b, */n, a-b/n or a list a,b)", name, field)
	}
	return fmt.Sprintf("%s field: %q: %v", name, field, err)
}

// MustParseSpec is ParseSpec for constants known to be valid; it panics on an
// error.
func MustParseSpec(text string) Spec {
	s, err := ParseSpec(text)
	if err != nil {
		panic(err)
	}
	return s
}

// String returns the specification in its normal form.
func (s Spec) String() string { return s.text }

// Next returns the first due time strictly after t, computed on the wall
// clock of t's location. anchor is used by "@every" specs only: they are due
// at anchor + k·interval. It returns the zero time when nothing is due within
// eight years.
func (s Spec) Next(t time.Time, anchor time.Time) time.Time {
	if s.every > 0 {
		if anchor.IsZero() {
			anchor = t
		}
		anchor = anchor.Truncate(time.Second)
		if t.Before(anchor) {
			return anchor
		}
		k := t.Sub(anchor)/s.every + 1
		return anchor.Add(k * s.every).In(t.Location())
	}
	if s.spec == nil {
		return time.Time{}
	}
	loc := t.Location()
	y, m, d := t.Date()
	day := time.Date(y, m, d, 12, 0, 0, 0, loc) // noon: never in a DST gap
	for range 8 * 366 {
		if s.dayMatches(day) {
			if c := s.nextOnDay(day, t); !c.IsZero() {
				return c
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}
}

const starBit = 1 << 63

func (s Spec) dayMatches(day time.Time) bool {
	sp := s.spec
	if sp.Month&(1<<uint(day.Month())) == 0 {
		return false
	}
	domMatch := sp.Dom&(1<<uint(day.Day())) != 0
	dowMatch := sp.Dow&(1<<uint(day.Weekday())) != 0
	if sp.Dom&starBit != 0 || sp.Dow&starBit != 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// nextOnDay returns the first due time on day's date strictly after t.
func (s Spec) nextOnDay(day, t time.Time) time.Time {
	y, m, d := day.Date()
	loc := day.Location()
	for h := range 24 {
		if s.spec.Hour&(1<<uint(h)) == 0 {
			continue
		}
		for mi := range 60 {
			if s.spec.Minute&(1<<uint(mi)) == 0 {
				continue
			}
			c := wallTime(y, m, d, h, mi, loc)
			if c.After(t) {
				return c
			}
		}
	}
	return time.Time{}
}

// wallTime returns the instant of a wall-clock time: its first occurrence
// when it occurs twice, and the same distance past the gap when it falls in
// one (Go's time.Date leaves both cases unspecified).
func wallTime(y int, m time.Month, d, h, mi int, loc *time.Location) time.Time {
	c := time.Date(y, m, d, h, mi, 0, 0, loc)
	if c.Day() == d && c.Hour() == h && c.Minute() == mi {
		return firstOccurrence(c)
	}
	wall := time.Date(y, m, d, h, mi, 0, 0, time.UTC)
	_, before := c.Add(-12 * time.Hour).Zone()
	_, after := c.Add(12 * time.Hour).Zone()
	a := wall.Add(-time.Duration(before) * time.Second)
	b := wall.Add(-time.Duration(after) * time.Second)
	if b.After(a) {
		a = b
	}
	return a.In(loc)
}

// firstOccurrence returns the earliest instant that shows the same wall clock
// as c (they differ in a repeated fall-back hour).
func firstOccurrence(c time.Time) time.Time {
	best := c
	for _, back := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		e := c.Add(-back)
		if sameWallClock(e, c) {
			best = e
		}
	}
	return best
}

// sameWallClock reports whether a and b show the same date and time of day.
func sameWallClock(a, b time.Time) bool { return a.Format(time.DateTime) == b.Format(time.DateTime) }

// DueBetween returns the due times in (after, until], oldest first, computed
// in loc; at most limit of them (the latest ones are kept when there are more,
// and dropped reports how many were left out).
func (s Spec) DueBetween(after, until time.Time, loc *time.Location, anchor time.Time, limit int) (due []time.Time, dropped int) {
	t := after.In(loc)
	for {
		n := s.Next(t, anchor)
		if n.IsZero() || n.After(until) {
			return due, dropped
		}
		due = append(due, n)
		if limit > 0 && len(due) > limit {
			due = due[1:]
			dropped++
		}
		t = n
	}
}

// ShortestInterval returns the shortest time between two consecutive due
// times over the next year (at most 1000 firings) from `from` in loc.
func (s Spec) ShortestInterval(from time.Time, loc *time.Location) time.Duration {
	if s.every > 0 {
		return s.every
	}
	t := s.Next(from.In(loc), time.Time{})
	end := from.AddDate(1, 0, 0)
	shortest := time.Duration(0)
	for i := 0; i < 1000 && !t.IsZero() && t.Before(end); i++ {
		n := s.Next(t, time.Time{})
		if n.IsZero() {
			break
		}
		if gap := n.Sub(t); shortest == 0 || gap < shortest {
			shortest = gap
		}
		t = n
	}
	return shortest
}

// LoadLocation loads an IANA time zone ("Asia/Tokyo"); "" means UTC. The
// error wraps ErrInvalidSpec and names the zone.
func LoadLocation(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if strings.EqualFold(name, "local") {
		return nil, fmt.Errorf("%w: time zone %q: name an IANA zone such as Asia/Tokyo", ErrInvalidSpec, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: unknown time zone %q (use an IANA name such as Asia/Tokyo or America/New_York)", ErrInvalidSpec, name)
	}
	return loc, nil
}
