package sqlstore_test

import (
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/dbtext/dbtexttest"
)

// testHostileText: every text field a run carries is accepted with any
// content and reads back as dbtext.String made it, on every engine: a
// row refused once would be refused on every retry and wedge the run.
func testHostileText(t *testing.T, s research.Store) {
	c := ctx(t)
	for i, text := range dbtexttest.Hostile(12) {
		id := "rh" + string(rune('a'+i))
		r := newRun(id, "9"+string(rune('a'+i))+".0", "U1")
		r.Question = text
		must(t, s.CreateRun(c, r, 0))
		got, err := s.Run(c, id)
		must(t, err)
		want := dbtext.String(text)
		if got.Question != want {
			t.Errorf("question %d read back as %.80q, want %.80q", i, got.Question, want)
		}
		_, err = s.AcquireRun(c, id, "A", at(0), time.Minute)
		must(t, err)
		pi := research.PendingInterrupt{ID: "i1", Kind: research.InterruptPlan, Text: text, MessageID: "5.0"}
		must(t, s.WaitRun(c, id, "A", pi, at(1)))
		got, err = s.Run(c, id)
		must(t, err)
		if got.Interrupt == nil || got.Interrupt.Text != want {
			t.Errorf("interrupt %d read back as %+v", i, got.Interrupt)
		}
		_, err = s.Decide(c, id, research.Decision{InterruptID: "i1", Action: research.ActionRevise, Text: text, By: "U1", At: at(2)})
		must(t, err)
		got, err = s.Run(c, id)
		must(t, err)
		if got.Decision == nil || got.Decision.Text != want {
			t.Errorf("decision %d read back as %+v", i, got.Decision)
		}
		_, err = s.AcquireRun(c, id, "A", at(3), time.Minute)
		must(t, err)
		must(t, s.FinishRun(c, id, "A", research.StateFailed, text, at(4)))
		got, err = s.Run(c, id)
		must(t, err)
		if got.State != research.StateFailed || got.Error != want {
			t.Errorf("error %d read back as %.80q (%s)", i, got.Error, got.State)
		}
	}
}
