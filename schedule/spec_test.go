package schedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"deepresearch/schedule"
)

func loc(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func nexts(t *testing.T, spec string, from time.Time, n int) []string {
	t.Helper()
	sp, err := schedule.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for range n {
		from = sp.Next(from, time.Time{})
		out = append(out, from.Format("2006-01-02 15:04 MST"))
	}
	return out
}

func eq(t *testing.T, name string, got, want []string) {
	t.Helper()
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("%s:\n got  %q\n want %q", name, got, want)
	}
}

func TestNextNewYorkSpringForward(t *testing.T) {
	ny := loc(t, "America/New_York")
	from := time.Date(2026, 3, 7, 12, 0, 0, 0, ny) // DST starts 2026-03-08 02:00 → 03:00
	// 02:30 does not exist on the 8th: it fires once, an hour later on the wall clock.
	got := nexts(t, "30 2 * * *", from, 3)
	eq(t, "daily 02:30", got, []string{"2026-03-08 03:30 EDT", "2026-03-09 02:30 EDT", "2026-03-10 02:30 EDT"})
	eq(t, "daily 09:00", nexts(t, "0 9 * * *", from, 2), []string{"2026-03-08 09:00 EDT", "2026-03-09 09:00 EDT"})
	// Hourly: 02:00 does not exist; 03:00 fires once, not twice.
	from = time.Date(2026, 3, 8, 0, 30, 0, 0, ny)
	eq(t, "hourly", nexts(t, "@hourly", from, 3), []string{"2026-03-08 01:00 EST", "2026-03-08 03:00 EDT", "2026-03-08 04:00 EDT"})
	// Every due time is strictly increasing in real time.
	sp := schedule.MustParseSpec("*/20 1-3 * * *")
	prev := from
	for range 12 {
		n := sp.Next(prev, time.Time{})
		if !n.After(prev) {
			t.Fatalf("Next(%v) = %v, not after", prev, n)
		}
		prev = n
	}
}

func TestNextNewYorkFallBack(t *testing.T) {
	ny := loc(t, "America/New_York")
	from := time.Date(2026, 10, 31, 12, 0, 0, 0, ny) // DST ends 2026-11-01 02:00 → 01:00
	// 01:30 happens twice on the 1st: a daily digest fires once, at the first.
	eq(t, "daily 01:30", nexts(t, "30 1 * * *", from, 3), []string{"2026-11-01 01:30 EDT", "2026-11-02 01:30 EST", "2026-11-03 01:30 EST"})
	eq(t, "daily 09:00", nexts(t, "0 9 * * *", from, 2), []string{"2026-11-01 09:00 EST", "2026-11-02 09:00 EST"})
	// Starting inside the repeated hour, after its first 01:30: not again.
	second := time.Date(2026, 11, 1, 5, 45, 0, 0, time.UTC).In(ny) // 01:45 EDT
	eq(t, "inside repeated hour", nexts(t, "30 1 * * *", second, 1), []string{"2026-11-02 01:30 EST"})
	eq(t, "weekly sunday 1:30", nexts(t, "30 1 * * 0", from, 2), []string{"2026-11-01 01:30 EDT", "2026-11-08 01:30 EST"})
}

func TestNextTokyoAndLondon(t *testing.T) {
	tokyo := loc(t, "Asia/Tokyo")
	from := time.Date(2026, 3, 6, 10, 0, 0, 0, tokyo) // a Friday
	got := nexts(t, "0 9 * * 1", from, 2)             // Mondays 09:00 JST
	eq(t, "tokyo weekly", got, []string{"2026-03-09 09:00 JST", "2026-03-16 09:00 JST"})
	sp := schedule.MustParseSpec("0 9 * * 1")
	if n := sp.Next(from, time.Time{}); !n.Equal(time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Monday 09:00 JST = %v UTC, want 00:00 UTC", n.UTC())
	}
	london := loc(t, "Europe/London")
	// BST starts 2026-03-29 01:00 → 02:00; ends 2026-10-25 02:00 → 01:00.
	eq(t, "london spring", nexts(t, "30 1 * * *", time.Date(2026, 3, 28, 12, 0, 0, 0, london), 2),
		[]string{"2026-03-29 02:30 BST", "2026-03-30 01:30 BST"})
	eq(t, "london fall", nexts(t, "30 1 * * *", time.Date(2026, 10, 24, 12, 0, 0, 0, london), 2),
		[]string{"2026-10-25 01:30 BST", "2026-10-26 01:30 GMT"})
	eq(t, "london weekly", nexts(t, "@weekly", time.Date(2026, 3, 25, 0, 0, 0, 0, london), 2),
		[]string{"2026-03-29 00:00 GMT", "2026-04-05 00:00 BST"})
}

func TestNextDescriptorsAndEvery(t *testing.T) {
	utc := time.Date(2026, 1, 30, 10, 0, 0, 0, time.UTC)
	eq(t, "@daily", nexts(t, "@daily", utc, 2), []string{"2026-01-31 00:00 UTC", "2026-02-01 00:00 UTC"})
	eq(t, "@monthly", nexts(t, "@monthly", utc, 2), []string{"2026-02-01 00:00 UTC", "2026-03-01 00:00 UTC"})
	eq(t, "dom or dow", nexts(t, "0 8 1 * 1", utc, 3), []string{"2026-02-01 08:00 UTC", "2026-02-02 08:00 UTC", "2026-02-09 08:00 UTC"})
	eq(t, "feb 29", nexts(t, "0 0 29 2 *", utc, 1), []string{"2028-02-29 00:00 UTC"})
	sp := schedule.MustParseSpec("@every 6h")
	anchor := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	if n := sp.Next(utc, anchor); !n.Equal(time.Date(2026, 1, 30, 15, 0, 0, 0, time.UTC)) {
		t.Errorf("@every 6h from anchor 03:00 after 10:00 = %v, want 15:00", n)
	}
	if n := sp.Next(anchor.Add(-time.Hour), anchor); !n.Equal(anchor) {
		t.Errorf("@every before the anchor = %v, want the anchor", n)
	}
	if d := sp.ShortestInterval(utc, time.UTC); d != 6*time.Hour {
		t.Errorf("ShortestInterval = %v", d)
	}
	if d := schedule.MustParseSpec("0 9,10 * * 1-5").ShortestInterval(utc, time.UTC); d != time.Hour {
		t.Errorf("ShortestInterval 9,10 = %v", d)
	}
}

func TestParseSpecErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"61 * * * *":         "minute field: 61 is out of range 0–59",
		"0 24 * * *":         "hour field: 24 is out of range 0–23",
		"0 9 0 * *":          "day-of-month field: 0 is out of range 1–31",
		"0 9 * 13 *":         "month field: 13 is out of range 1–12 or JAN–DEC",
		"0 9 * * 8":          "day-of-week field: 8 is out of range 0–6 or SUN–SAT (Sunday is 0)",
		"0 9 * * MON-XYZ":    `day-of-week field: "XYZ" is not a number or name`,
		"x 9 * * *":          `minute field: "x" is not a number or name`,
		"1-70 * * * *":       "minute field: 70 is out of range 0–59",
		"30-10 * * * *":      "minute field: the range 30-10 runs backwards",
		"*/0 * * * *":        `minute field: the step in "*/0" must be a positive number`,
		"1-2-3 * * * *":      `minute field: "1-2-3" is malformed`,
		"* * * *":            "expected 5 fields (minute hour day-of-month month day-of-week), found 4",
		"0 0 9 * * 1":        "seconds are not supported",
		"@fortnightly":       "unknown descriptor @fortnightly",
		"@every 10x":         "@every needs a duration such as 6h or 24h",
		"@every -1h":         "@every needs a positive whole number of seconds",
		"":                   "the frequency is empty",
		"0 0 30 2 *":         "never fires",
		"CRON_TZ=UTC @daily": "put the time zone in the time zone field",
	} {
		_, err := schedule.ParseSpec(spec)
		if err == nil {
			t.Errorf("ParseSpec(%q) succeeded", spec)
			continue
		}
		if !errors.Is(err, schedule.ErrInvalidSpec) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSpec(%q) = %q, want it to contain %q", spec, err, want)
		}
	}
	for _, ok := range []string{"0 9 * * 1", "@daily", "@Weekly", "@hourly", "@every 2h", "*/15 9-17 * * MON-FRI", "0 9 1,15 JAN-JUN *"} {
		if _, err := schedule.ParseSpec(ok); err != nil {
			t.Errorf("ParseSpec(%q): %v", ok, err)
		}
	}
	if _, err := schedule.LoadLocation("Mars/Olympus"); err == nil || !strings.Contains(err.Error(), `unknown time zone "Mars/Olympus"`) {
		t.Errorf("LoadLocation: %v", err)
	}
}
