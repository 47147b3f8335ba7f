package main

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		pos     []string
		out     string
		yes     bool
		wantErr bool
	}{
		{args: []string{"what is new?", "-o", "r.md"}, pos: []string{"what is new?"}, out: "r.md"},
		{args: []string{"-o", "r.md", "what", "is", "new?"}, pos: []string{"what", "is", "new?"}, out: "r.md"},
		{args: []string{"a", "--yes", "b", "-o=x.md"}, pos: []string{"a", "b"}, out: "x.md", yes: true},
		{args: []string{"--yes", "--", "-o", "is a question"}, pos: []string{"-o", "is a question"}, yes: true},
		{args: []string{"q", "--nope"}, wantErr: true},
		{args: nil, pos: nil},
	} {
		fs := flag.NewFlagSet("ask", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		out := fs.String("o", "", "")
		yes := fs.Bool("yes", false, "")
		pos, err := parseInterspersed(fs, tc.args)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%q: err %v", tc.args, err)
		}
		if tc.wantErr {
			continue
		}
		if !slices.Equal(pos, tc.pos) || *out != tc.out || *yes != tc.yes {
			t.Errorf("%q: pos %q out %q yes %v; want %q %q %v", tc.args, pos, *out, *yes, tc.pos, tc.out, tc.yes)
		}
	}
}
