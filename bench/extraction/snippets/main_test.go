package main

import (
	"fmt"
	"slices"
	"testing"
)

func TestLoadReadsEntriesWithFiles(t *testing.T) {
	entries, err := load("testdata/set")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("got %d entries, want 2 (the one without a file is skipped)", len(entries))
	}
	a := entries[0]
	if a.File != "a.html" || a.URL != "https://example.org/a" || len(a.html) == 0 {
		t.Errorf("first entry = %+v", a)
	}
	if !slices.Equal(a.With, []string{"the harbour opened", "ferries   run"}) || !slices.Equal(a.Without, []string{"Subscribe"}) {
		t.Errorf("snippets = %q / %q", a.With, a.Without)
	}
}

func TestScore(t *testing.T) {
	e := entry{With: []string{"the harbour opened", "ferries   run"}, Without: []string{"Subscribe"}}
	tests := []struct {
		name, text string
		want       counts
	}{
		{"all found, whitespace collapsed on both sides", "Today the harbour\nopened and ferries run.", counts{tp: 2, tn: 1}},
		{"one missing, furniture kept", "the harbour opened. Subscribe now", counts{tp: 1, fn: 1, fp: 1}},
		{"empty text finds nothing", "", counts{fn: 2, tn: 1}},
	}
	for _, tt := range tests {
		if got := score(e, tt.text); got != tt.want {
			t.Errorf("%s: score = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestHalvesSplitThePages(t *testing.T) {
	var all []entry
	for i := range 200 {
		all = append(all, entry{File: fmt.Sprintf("page-%d.html", i)})
	}
	tune, err := halfOf(all, "tune")
	if err != nil {
		t.Fatal(err)
	}
	check, err := halfOf(all, "check")
	if err != nil {
		t.Fatal(err)
	}
	if len(tune)+len(check) != len(all) || len(tune) < 60 || len(check) < 60 {
		t.Fatalf("halves of %d and %d pages from %d", len(tune), len(check), len(all))
	}
	seen := map[string]bool{}
	for _, e := range tune {
		seen[e.File] = true
	}
	for _, e := range check {
		if seen[e.File] {
			t.Errorf("%s is in both halves", e.File)
		}
	}
	again, _ := halfOf(all, "tune")
	if len(again) != len(tune) || again[0].File != tune[0].File {
		t.Error("the split is not the same on a second call")
	}
	if _, err := halfOf(all, "train"); err == nil {
		t.Error("an unknown half is accepted")
	}
}
