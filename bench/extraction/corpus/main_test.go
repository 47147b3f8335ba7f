package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func long(word string) string { return strings.Repeat(word+" ", 130) }

// fakeFundus lays out a fundus test_data folder: publisher Daily with two
// pages (crawled in the opposite order of their file names' dates being
// listed) and two parser versions, publisher Short whose body is too short,
// and publisher Odd with two versions but one page.
func fakeFundus(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	dir := filepath.Join(src, "tests", "resources", "parser", "test_data", "us")
	meta := map[string]fundusMeta{
		"Daily_2024_05_01.html.gz": {URL: "https://daily.example/b", CrawlDate: "2024-05-01 10:00:00"},
		"Daily_2023_01_02.html.gz": {URL: "https://daily.example/a", CrawlDate: "2023-01-02 10:00:00"},
		"Short_2023_01_02.html.gz": {URL: "https://short.example/a", CrawlDate: "2023-01-02 10:00:00"},
		"Odd_2023_01_02.html.gz":   {URL: "https://odd.example/a", CrawlDate: "2023-01-02 10:00:00"},
	}
	b, _ := json.Marshal(meta)
	writeFile(t, filepath.Join(dir, "meta.info"), b)
	body := func(summary, para string) map[string]any {
		return map[string]any{"body": map[string]any{
			"summary":  []string{summary},
			"sections": []any{map[string]any{"headline": []string{}, "paragraphs": []string{para}}},
		}}
	}
	for name, v := range map[string]map[string]any{
		"Daily.json": {"V2": body("second summary", long("second")), "V1_1": body("first summary", long("first"))},
		"Short.json": {"V1": body("s", "too short")},
		"Odd.json":   {"V1": body("s", long("odd")), "V2": body("s", long("odd2"))},
	} {
		b, _ := json.Marshal(v)
		writeFile(t, filepath.Join(dir, name), b)
	}
	for f := range meta {
		gz, err := gzipped([]byte("<html>" + f + "</html>"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), gz)
	}
	return src
}

func readTruth(t *testing.T, dir string) map[string]truth {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gt map[string]truth
	if err := json.Unmarshal(b, &gt); err != nil {
		t.Fatal(err)
	}
	return gt
}

func TestFundusPairsVersionsWithPagesByCrawlDate(t *testing.T) {
	src := fakeFundus(t)
	out := t.TempDir()
	if err := run("fundus", src, out, "all", false); err != nil {
		t.Fatal(err)
	}
	gt := readTruth(t, out)
	if len(gt) != 2 {
		t.Fatalf("pages = %v, want Daily's two (Short too short, Odd's counts differ)", gt)
	}
	a, b := gt["fundus-us-Daily_2023_01_02"], gt["fundus-us-Daily_2024_05_01"]
	if !strings.HasPrefix(a.ArticleBody, "first ") || a.URL != "https://daily.example/a" || a.Source != "fundus-us" {
		t.Errorf("earlier page = %+v, want V1_1's body", a)
	}
	if !strings.HasPrefix(b.ArticleBody, "second ") {
		t.Errorf("later page = %q, want V2's body", b.ArticleBody[:20])
	}
	if strings.Contains(a.ArticleBody, "summary") {
		t.Errorf("summary kept without -summary: %q", a.ArticleBody[:30])
	}
	html, err := gunzip(filepath.Join(out, "html", "fundus-us-Daily_2023_01_02.html.gz"))
	if err != nil || string(html) != "<html>Daily_2023_01_02.html.gz</html>" {
		t.Errorf("html = %q, %v", html, err)
	}

	sum := t.TempDir()
	if err := run("fundus", src, sum, "all", true); err != nil {
		t.Fatal(err)
	}
	if got := readTruth(t, sum)["fundus-us-Daily_2023_01_02"].ArticleBody; !strings.HasPrefix(got, "first summary\n\nfirst ") {
		t.Errorf("with -summary: %q", got[:30])
	}
}

func TestFundusHalvesSplitByPublisher(t *testing.T) {
	src := fakeFundus(t)
	seen := map[string]string{}
	for _, half := range []string{"tune", "check"} {
		out := t.TempDir()
		if err := run("fundus", src, out, half, false); err != nil {
			t.Fatal(err)
		}
		for id := range readTruth(t, out) {
			if seen[id] != "" {
				t.Errorf("%s in both halves", id)
			}
			seen[id] = half
		}
	}
	if len(seen) != 2 || seen["fundus-us-Daily_2023_01_02"] != fundusHalf("Daily") || seen["fundus-us-Daily_2024_05_01"] != fundusHalf("Daily") {
		t.Errorf("halves = %v, want both Daily pages in %s", seen, fundusHalf("Daily"))
	}
	if err := run("fundus", src, t.TempDir(), "most", false); err == nil {
		t.Error("-half most accepted")
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"V1", "V1_1", true},
		{"V1_1", "V2", true},
		{"V2", "V10", true},
		{"V10", "V2", false},
		{"V1_2", "V1_10", true},
	} {
		if got := versionLess(c.a, c.b); got != c.want {
			t.Errorf("versionLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

func TestNewspaperSkipsMissingAndFailedPages(t *testing.T) {
	src := t.TempDir()
	dir := filepath.Join(src, "tests", "data")
	writeFile(t, filepath.Join(dir, "text", "good.com1.txt"), []byte(long("body")))
	writeFile(t, filepath.Join(dir, "html", "good.com1.html"), []byte("<p>good</p>"))
	writeFile(t, filepath.Join(dir, "text", "failed.com1.txt"), []byte("LAST PARAGRAPH IS MISSED"))
	writeFile(t, filepath.Join(dir, "html", "failed.com1.html"), []byte("<p>x</p>"))
	writeFile(t, filepath.Join(dir, "text", "nohtml.txt"), []byte(long("orphan")))
	out := t.TempDir()
	if err := run("newspaper", src, out, "all", false); err != nil {
		t.Fatal(err)
	}
	gt := readTruth(t, out)
	if len(gt) != 1 || gt["np-good.com1"].Source != "newspaper" {
		t.Errorf("pages = %v, want only np-good.com1", gt)
	}
	if html, err := gunzip(filepath.Join(out, "html", "np-good.com1.html.gz")); err != nil || string(html) != "<p>good</p>" {
		t.Errorf("html = %q, %v", html, err)
	}
	if err := run("goose", src, out, "all", false); err == nil {
		t.Error("unknown -from accepted")
	}
}

func gunzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
