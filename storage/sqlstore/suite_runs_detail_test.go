package sqlstore_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"deepresearch/research"
)

// FullRun returns a run with every field of research.Run (and of the
// values it points to) set to a value of its own, found by reflection, so
// that a field added later is covered without a change here (fields
// tagged json:"-", which are never stored, stay zero): strings
// "<name>-<n>", true, n, t0 plus n seconds, one element per slice.
// The ids, thread, requester and creation time are those given; the
// decision answers the interrupt. It has no lease: state, owner, lease,
// attempt, error and finish time are zero, as CreateRun stores them.
func FullRun(id, threadTS, user string) research.Run {
	var r research.Run
	n := 0
	fill(reflect.ValueOf(&r).Elem(), "Run", &n)
	r.ID, r.ThreadID, r.Requester = id, key(threadTS).ThreadID(), user
	r.CreatedAt, r.UpdatedAt = at(0), at(0)
	r.State, r.Owner, r.LeaseUntil, r.Attempt, r.Error, r.FinishedAt = "", "", time.Time{}, 0, "", time.Time{}
	r.Decision.InterruptID = r.Interrupt.ID
	return r
}

// fill sets v (settable) to a non-zero value named after its field.
func fill(v reflect.Value, name string, n *int) {
	*n++
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(t0.Add(time.Duration(*n) * time.Second)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(name + "-" + string(rune('a'+*n%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), name, n)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), name, n)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, name, n)
		fill(e, name, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			// A field tagged json:"-" is never stored (the asker's
			// credential): it stays zero.
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				fill(v.Field(i), f.Name, n)
			}
		}
	}
}

// testRoundTripAll: a run with every field set (FullRun) reads back
// equal, lease fields aside, after CreateRun, and again after a wait and a
// decision rewrote its interrupt and decision. A field added to
// research.Run is covered here with no change to the suite.
func testRoundTripAll(t *testing.T, s research.Store) {
	c := ctx(t)
	want := FullRun("rf", "7.0", "U1")
	must(t, s.CreateRun(c, want, 0))
	got, err := s.Run(c, "rf")
	must(t, err)
	want.State = research.StateQueued
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run read back as\n%s\nwant\n%s", showRun(got), showRun(want))
	}

	// A wait replaces the interrupt and clears the decision; a decision
	// sets it; the other fields stay as created.
	r2 := FullRun("rf2", "7.1", "U1")
	r2.Interrupt, r2.Decision, r2.CancelRequestedBy = nil, nil, ""
	must(t, s.CreateRun(c, r2, 0))
	_, err = s.AcquireRun(c, "rf2", "A", at(1), time.Minute)
	must(t, err)
	pi := research.PendingInterrupt{ID: "i9", Kind: research.InterruptDraft, Text: "draft", MessageID: "9.0"}
	must(t, s.WaitRun(c, "rf2", "A", pi, at(2)))
	d := research.Decision{InterruptID: "i9", Action: research.ActionRevise, Text: "shorter", By: "U2", At: at(3)}
	got, err = s.Decide(c, "rf2", d)
	must(t, err)
	want = r2
	want.Interrupt, want.Decision, want.UpdatedAt = &pi, &d, at(3)
	got.State, got.Attempt, got.Owner, got.LeaseUntil = "", 0, "", time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decided run read back as\n%s\nwant\n%s", showRun(got), showRun(want))
	}
}

// showRun prints r with its interrupt and decision.
func showRun(r research.Run) string {
	return fmt.Sprintf("%+v interrupt %+v decision %+v", r, r.Interrupt, r.Decision)
}
