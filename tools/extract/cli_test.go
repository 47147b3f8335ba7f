package extract

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunCLI(t *testing.T) {
	page := readPage(t, "en_news.html")
	dir := t.TempDir()
	htmlPath := filepath.Join(dir, "page.html")
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(page)
	zw.Close()
	gzPath := filepath.Join(dir, "page.html.gz")
	if err := os.WriteFile(gzPath, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		args    []string
		stdin   []byte
		want    []string
		notWant []string
		isJSON  bool
		wantErr error
	}{
		{name: "html file", args: []string{htmlPath}, want: []string{"voted seven to two"}, notWant: []string{"My basement"}},
		{name: "gzip file", args: []string{gzPath}, want: []string{"voted seven to two"}},
		{name: "stdin", args: []string{"-"}, stdin: page, want: []string{"voted seven to two"}},
		{name: "gzip stdin", args: []string{"-"}, stdin: gz.Bytes(), want: []string{"voted seven to two"}},
		{name: "markdown", args: []string{"--markdown", htmlPath}, want: []string{"## What happens next", "| Option |"}},
		{name: "json with url after file", args: []string{htmlPath, "--json", "--url", "https://news.example/x/y"},
			isJSON: true, want: []string{`"canonical_url": "https://news.example/news/2024/tide-barrier"`, `"published": "2024-03-05T09:30:00+01:00"`}},
		{name: "no file", args: nil, wantErr: ErrUsage},
		{name: "two files", args: []string{htmlPath, gzPath}, wantErr: ErrUsage},
		{name: "unknown flag", args: []string{"--nope", htmlPath}, wantErr: ErrUsage},
		{name: "json and markdown", args: []string{"--json", "--markdown", htmlPath}, wantErr: ErrUsage},
		{name: "missing file", args: []string{filepath.Join(dir, "absent.html")}, wantErr: os.ErrNotExist},
		{name: "corrupt gzip", args: []string{"-"}, stdin: []byte{0x1f, 0x8b, 1, 2, 3}, wantErr: ErrRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := RunCLI(context.Background(), tt.args, bytes.NewReader(tt.stdin), &out, &errb)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v (stderr %s)", err, errb.String())
			}
			if tt.isJSON {
				var a Article
				if err := json.Unmarshal(out.Bytes(), &a); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out.String())
				}
				if !strings.Contains(a.Text, "voted seven to two") || a.Markdown == "" {
					t.Errorf("JSON lacks the content: %+v", a)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q", w)
				}
			}
		})
	}
}

func TestRunCLICanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	if err := RunCLI(ctx, []string{"-"}, strings.NewReader("<p>x</p>"), &out, &errb); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
