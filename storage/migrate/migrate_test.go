package migrate

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		want    []int
		wantErr string
	}{
		{"empty", fstest.MapFS{}, nil, ""},
		{"ordered by number, not by name", fstest.MapFS{
			"0002_b.sql": file("B"), "0001_a.sql": file("A"), "10_j.sql": file("J"), "3_c.sql": file("C"),
			"4_d.sql": file("D"), "5_e.sql": file("E"), "6_f.sql": file("F"), "7_g.sql": file("G"),
			"8_h.sql": file("H"), "9_i.sql": file("I"), "README.md": file("not a migration"),
		}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ""},
		{"gap", fstest.MapFS{"0001_a.sql": file("A"), "0003_c.sql": file("C")}, nil, "expected version 2"},
		{"duplicate", fstest.MapFS{"0001_a.sql": file("A"), "0001_b.sql": file("B")}, nil, "expected version 2"},
		{"no underscore", fstest.MapFS{"0001.sql": file("A")}, nil, "NNNN_name.sql"},
		{"not a number", fstest.MapFS{"one_a.sql": file("A")}, nil, "positive version"},
		{"zero", fstest.MapFS{"0000_a.sql": file("A")}, nil, "positive version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := Load(tc.fsys)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != len(tc.want) {
				t.Fatalf("got %d migrations, want %d", len(ms), len(tc.want))
			}
			for i, m := range ms {
				if m.Version != tc.want[i] {
					t.Errorf("migration %d has version %d, want %d", i, m.Version, tc.want[i])
				}
			}
			if len(ms) > 0 && (ms[0].SQL != "A" || ms[0].Name != "0001_a.sql") {
				t.Errorf("first = %+v", ms[0])
			}
		})
	}
}

func TestPending(t *testing.T) {
	all := []Migration{{Version: 1}, {Version: 2}, {Version: 3}}
	got, err := Pending(all, map[int]bool{1: true, 2: true})
	if err != nil || len(got) != 1 || got[0].Version != 3 {
		t.Fatalf("Pending = %v, %v", got, err)
	}
	got, err = Pending(all, nil)
	if err != nil || len(got) != 3 {
		t.Fatalf("Pending(nothing applied) = %v, %v", got, err)
	}
	if _, err := Pending(all, map[int]bool{1: true, 4: true}); err == nil || !strings.Contains(err.Error(), "version 4") {
		t.Fatalf("Pending with an unknown applied version: err = %v", err)
	}
}
