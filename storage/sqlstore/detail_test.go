package sqlstore_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/storage/jobmap"
)

// The detail holds every field of a run that is no column, and only those.
func TestRunDetailKeys(t *testing.T) {
	b, err := jobmap.RunDetail(FullRun("r1", "1.0", "U1"))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var keys []string
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Every field of research.Run is detail unless it is listed here as a
	// column or the job's.
	columns := []string{"ID", "ThreadID", "Requester", "State", "Owner", "LeaseUntil", "Attempt",
		"Error", "CancelRequestedBy", "CreatedAt", "UpdatedAt", "FinishedAt"}
	var want []string
	for f := range reflect.TypeFor[research.Run]().Fields() {
		if !slices.Contains(columns, f.Name) {
			want = append(want, f.Name)
		}
	}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("detail keys %v, want %v", keys, want)
	}
	for _, nested := range []struct{ key, id string }{{"Interrupt", "ID"}, {"Decision", "InterruptID"}} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(top[nested.key], &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m[nested.id]; ok || len(m) == 0 {
			t.Errorf("%s detail %s: want its fields without %s (a column)", nested.key, top[nested.key], nested.id)
		}
	}
}

func TestRunDetailRoundTrip(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	at := time.Date(2026, 3, 2, 18, 0, 0, 123456789, tokyo)
	full := FullRun("r1", "1.0", "U1")
	for _, tt := range []struct {
		name          string
		in            research.Run
		intrID, decID *string // the columns as stored
		want          research.Run
	}{
		{"every field", full, &full.Interrupt.ID, &full.Decision.InterruptID, full},
		{"no interrupt, no decision", research.Run{ID: "r2", Question: "q"}, nil, nil, research.Run{ID: "r2", Question: "q"}},
		{"the columns say there is none", full, nil, nil, func() research.Run { r := full; r.Interrupt, r.Decision = nil, nil; return r }()},
		{"an id with no detail", research.Run{ID: "r3"}, new("i1"), new("i1"),
			research.Run{ID: "r3", Interrupt: &research.PendingInterrupt{ID: "i1"}, Decision: &research.Decision{InterruptID: "i1"}}},
		{"text storable on every engine, the time in UTC",
			research.Run{ID: "r4", Question: "a\x00b", Options: research.RunOptions{Language: "j\x00a\xff"},
				Decision: &research.Decision{InterruptID: "i1", Text: "x\x00", At: at}},
			nil, new("i1"),
			research.Run{ID: "r4", Question: "ab", Options: research.RunOptions{Language: "ja\uFFFD"},
				Decision: &research.Decision{InterruptID: "i1", Text: "x", At: at.UTC()}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := jobmap.RunDetail(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `\u0000`) || strings.ContainsRune(string(b), 0) {
				t.Errorf("detail %s holds a NUL", b)
			}
			got := tt.in // the columns as scanned; the detail fields are overwritten
			got.Question, got.FollowUp, got.Options = "stale", false, research.RunOptions{Depth: "stale"}
			if err := jobmap.ReadRunDetail(&got, b, tt.intrID, tt.decID); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("read back\n%+v %+v %+v\nwant\n%+v %+v %+v", got, got.Interrupt, got.Decision, tt.want, tt.want.Interrupt, tt.want.Decision)
			}
		})
	}
}
