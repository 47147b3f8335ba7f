package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"deepresearch/research"
)

// Feedback runs the conformance suite of research.FeedbackStore. open must
// return an empty store for each subtest.
func Feedback(t *testing.T, open func(t *testing.T) research.FeedbackStore) {
	ctx := context.Background()
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	t.Run("LatestClickWinsAndGoodClearsTheText", func(t *testing.T) {
		s := open(t)
		steps := []research.Feedback{
			{RunID: "r1", User: "U1", Value: research.FeedbackBad, At: at},
			{RunID: "r1", User: "U1", Value: research.FeedbackBad, Text: "the sources are old\x00 ones", At: at.Add(time.Second)},
			{RunID: "r1", User: "U1", Value: research.FeedbackGood, At: at.Add(2 * time.Second)},
			{RunID: "r1", User: "U2", Value: research.FeedbackGood, At: at.Add(3 * time.Second)},
			{RunID: "r2", User: "U1", Value: research.FeedbackBad, At: at.Add(4 * time.Second)},
			{RunID: "r3", User: "U1", Value: research.FeedbackBad, Text: "a claim is wrong", At: at.Add(5 * time.Second)},
			{RunID: "r3", User: "U1", Value: research.FeedbackBad, At: at.Add(6 * time.Second)},
		}
		for _, fb := range steps {
			if err := s.RecordFeedback(ctx, fb); err != nil {
				t.Fatalf("record %+v: %v", fb, err)
			}
		}
		got, err := s.Feedback(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		// "Good" after "Not good" drops the complaint: a positive verdict
		// has no "what was wrong?".
		want := []research.Feedback{
			{RunID: "r1", User: "U1", Value: research.FeedbackGood, At: at.Add(2 * time.Second)},
			{RunID: "r1", User: "U2", Value: research.FeedbackGood, At: at.Add(3 * time.Second)},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("feedback of r1 =\n%+v\nwant\n%+v", got, want)
		}
		// A second "Not good" click (no text) keeps the text of the first.
		got, err = s.Feedback(ctx, "r3")
		if err != nil {
			t.Fatal(err)
		}
		want = []research.Feedback{{RunID: "r3", User: "U1", Value: research.FeedbackBad, Text: "a claim is wrong", At: at.Add(6 * time.Second)}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("feedback of r3 =\n%+v\nwant\n%+v", got, want)
		}
		counts, err := s.CountFeedback(ctx, []string{"r1", "r2", "r3", "r4"})
		if err != nil {
			t.Fatal(err)
		}
		wantCounts := map[string]research.FeedbackCount{"r1": {Good: 2}, "r2": {Bad: 1}, "r3": {Bad: 1}}
		if !reflect.DeepEqual(counts, wantCounts) {
			t.Errorf("counts = %+v, want %+v", counts, wantCounts)
		}
		if counts, err := s.CountFeedback(ctx, nil); err != nil || len(counts) != 0 {
			t.Errorf("counts of no runs = %+v, %v", counts, err)
		}
		if got, err := s.Feedback(ctx, "none"); err != nil || len(got) != 0 {
			t.Errorf("feedback of an unknown run = %+v, %v", got, err)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		s := open(t)
		for _, fb := range []research.Feedback{
			{RunID: "", User: "U1", Value: research.FeedbackGood, At: at},
			{RunID: "r1", User: "", Value: research.FeedbackGood, At: at},
			{RunID: "r1", User: "U1", Value: "meh", At: at},
			{RunID: "r1", User: "U1", Value: research.FeedbackGood},
		} {
			if err := s.RecordFeedback(ctx, fb); err == nil {
				t.Errorf("record %+v: accepted", fb)
			}
		}
		if got, _ := s.Feedback(ctx, "r1"); len(got) != 0 {
			t.Errorf("refused feedback stored: %+v", got)
		}
	})
	t.Run("ConcurrentClicksOneRecordPerUser", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := research.FeedbackGood
				if i%2 == 1 {
					v = research.FeedbackBad
				}
				errs <- s.RecordFeedback(ctx, research.Feedback{RunID: "r", User: fmt.Sprintf("U%d", i%4), Value: v, At: at.Add(time.Duration(i) * time.Millisecond)})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		}
		got, err := s.Feedback(ctx, "r")
		if err != nil || len(got) != 4 {
			t.Fatalf("records = %+v, %v; want one per user", got, err)
		}
		c, _ := s.CountFeedback(ctx, []string{"r"})
		if c["r"].Good+c["r"].Bad != 4 {
			t.Errorf("counts = %+v", c)
		}
	})
}
