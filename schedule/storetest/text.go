package storetest

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
)

// hostileTexts are what users, the model and the web may send (see
// bot/storetest): NUL, invalid UTF-8, \u0000 as text, control characters,
// markup, 100 KB.
var hostileTexts = []string{
	"nul\x00inside", "bad utf8 \xff\xfe", `json escape \u0000 as text`, "esc \x1b]52;c;aGk=\x07",
	"<!channel> [https://good.example](https://evil.example)", "日本語\x00の話題", strings.Repeat("long é ", 15000) + "\x00",
}

// testHostileText: topics, options, errors and digests with any text are
// stored and read back as dbtext made them, on every engine (jsonb refuses
// \u0000, text columns refuse NUL).
// randomTexts are seeded random byte strings (any byte, NUL included).
func randomTexts(n int) []string {
	r := rand.New(rand.NewPCG(7, 2026))
	out := make([]string, n)
	for i := range out {
		b := make([]byte, 1+r.IntN(64))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		out[i] = string(b)
	}
	return out
}

func testHostileText(t *testing.T, s schedule.Store) {
	ctx := ctxT(t)
	for i, text := range append(append([]string{}, hostileTexts...), randomTexts(12)...) {
		id := "h" + string(rune('a'+i))
		sc := mk(id, "C9")
		sc.Topic, sc.Options.Language = text, text
		must(t, s.CreateSchedule(ctx, sc, 0))
		got, err := s.GetSchedule(ctx, id)
		must(t, err)
		want := dbtext.String(text)
		if got.Topic != want || got.Options.Language != want {
			t.Errorf("schedule %d read back as %.60q / %.60q", i, got.Topic, got.Options.Language)
		}
		sc.Topic = text + " (edited)"
		must(t, s.UpdateSchedule(ctx, sc))
		due := t0.Add(time.Duration(i) * time.Hour)
		_, err = s.ClaimFiring(ctx, running(id, due, "p", due.Add(time.Minute)))
		must(t, err)
		d := &schedule.Digest{Title: text, Summary: text, Findings: []string{text, "ok"}, Sources: []schedule.Source{{URL: "https://a.example/" + text, Title: text}}, MessageTS: "1.1"}
		must(t, s.FinishFiring(ctx, id, due, "p", schedule.Outcome{State: schedule.FiringDone, Error: text, Digest: d, FinishedAt: due.Add(time.Minute)}))
		f, err := s.GetFiring(ctx, id, due)
		must(t, err)
		if f.Digest == nil || f.Digest.Title != want || f.Digest.Summary != want || f.Digest.Findings[0] != want || f.Digest.Sources[0].Title != want {
			t.Errorf("digest %d read back as %+v", i, f.Digest)
		}
		if d.Title != text {
			t.Errorf("the store changed the caller's digest")
		}
	}
}
