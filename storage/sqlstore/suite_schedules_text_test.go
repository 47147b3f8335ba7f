package sqlstore_test

import (
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/dbtext/dbtexttest"
)

// testScheduleHostileText: topics, options, errors and digests with any text are
// stored and read back as dbtext made them, on every engine (jsonb refuses
// \u0000, text columns refuse NUL).
func testScheduleHostileText(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	for i, text := range dbtexttest.Hostile(12) {
		id := "h" + string(rune('a'+i))
		sc := mk(id, "C9")
		sc.Topic, sc.Options.Language = text, text
		mustSchedule(t, s.CreateSchedule(ctx, sc, 0))
		got, err := s.GetSchedule(ctx, id)
		mustSchedule(t, err)
		want := dbtext.String(text)
		if got.Topic != want || got.Options.Language != want {
			t.Errorf("schedule %d read back as %.60q / %.60q", i, got.Topic, got.Options.Language)
		}
		sc.Topic = text + " (edited)"
		mustSchedule(t, s.UpdateSchedule(ctx, sc))
		due := scheduleT0.Add(time.Duration(i) * time.Hour)
		_, err = s.ClaimFiring(ctx, running(id, due, "p", due.Add(time.Minute)))
		mustSchedule(t, err)
		d := &schedule.Digest{Title: text, Summary: text, Findings: []string{text, "ok"}, Sources: []research.Source{{URL: "https://a.example/" + text, Title: text}}, MessageTS: "1.1"}
		mustSchedule(t, s.FinishFiring(ctx, id, due, "p", schedule.Outcome{State: schedule.FiringDone, Error: text, Digest: d, FinishedAt: due.Add(time.Minute)}))
		f, err := s.GetFiring(ctx, id, due)
		mustSchedule(t, err)
		if f.Digest == nil || f.Digest.Title != want || f.Digest.Summary != want || f.Digest.Findings[0] != want || f.Digest.Sources[0].Title != want {
			t.Errorf("digest %d read back as %+v", i, f.Digest)
		}
		if d.Title != text {
			t.Errorf("the store changed the caller's digest")
		}
	}
}
