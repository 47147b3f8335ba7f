package extractbench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, world!", []string{"Hello", "world"}},
		{"snake_case and CamelCase", []string{"snake_case", "and", "CamelCase"}},
		{"café naïve 42nd ½", []string{"café", "naïve", "42nd", "½"}},
		{"日本語の文章。次の文", []string{"日本語の文章", "次の文"}},
		{"don't — stop", []string{"don", "t", "stop"}},
		{"Москва, 2019 г.", []string{"Москва", "2019", "г"}},
	}
	for _, tt := range tests {
		if got := Tokenize(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestShingles(t *testing.T) {
	if got := Shingles(""); len(got) != 0 {
		t.Errorf("empty text has shingles: %v", got)
	}
	if got := Shingles("a b"); len(got) != 1 || got["a\x00b"] != 1 {
		t.Errorf("short text: %v", got)
	}
	// a b c d a b c d → abcd, bcda, cdab, dabc, abcd: abcd twice.
	got := Shingles("a b c d a b c d")
	if got["a\x00b\x00c\x00d"] != 2 || len(got) != 4 {
		t.Errorf("multiset: %v", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestScorePage(t *testing.T) {
	tests := []struct {
		name         string
		truth, pred  string
		tp, fp, fn   float64
		exact        bool
		pOK, rOK     bool
		wantP, wantR float64
	}{
		{name: "identical", truth: "one two three four five", pred: "one, two. three four five!",
			tp: 1, exact: true, pOK: true, rOK: true, wantP: 1, wantR: 1},
		{name: "empty prediction", truth: "one two three four", pred: "",
			fn: 1, rOK: true, wantR: 0},
		// Neither has a shingle: upstream counts the page in neither mean.
		{name: "both empty", truth: "", pred: "...", exact: true},
		// truth shingles: 1234 2345; pred: 1234 2345 3456 → TP 2, FP 1.
		{name: "extra text", truth: "1 2 3 4 5", pred: "1 2 3 4 5 6",
			tp: 2.0 / 3, fp: 1.0 / 3, pOK: true, rOK: true, wantP: 2.0 / 3, wantR: 1},
		// truth: 1234 2345 3456; pred: 1234 → TP 1, FN 2.
		{name: "missing text", truth: "1 2 3 4 5 6", pred: "1 2 3 4",
			tp: 1.0 / 3, fn: 2.0 / 3, pOK: true, rOK: true, wantP: 1, wantR: 1.0 / 3},
		{name: "case matters", truth: "a b c d", pred: "A b c d", fp: 0.5, fn: 0.5, pOK: true, rOK: true},
		{name: "soft hyphen stripped", truth: "extraordinary text here now", pred: "extra\u00adordinary text here now",
			tp: 1, exact: true, pOK: true, rOK: true, wantP: 1, wantR: 1},
		{name: "soft hyphen stripped from the truth too", truth: "extra\u00adordinary text here now", pred: "extraordinary text here now",
			tp: 1, exact: true, pOK: true, rOK: true, wantP: 1, wantR: 1},
		{name: "soft hyphens on both sides", truth: "Wort\u00adteil und noch mehr", pred: "Wort\u00adteil und noch mehr",
			tp: 1, exact: true, pOK: true, rOK: true, wantP: 1, wantR: 1},
		// pred repeats the truth: counts are a multiset, the copy is FP.
		{name: "duplicate", truth: "a b c d", pred: "a b c d a b c d",
			tp: 1.0 / 5, fp: 4.0 / 5, pOK: true, rOK: true, wantP: 0.2, wantR: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ScorePage(tt.truth, tt.pred)
			if !near(s.TP, tt.tp) || !near(s.FP, tt.fp) || !near(s.FN, tt.fn) || s.Exact != tt.exact {
				t.Fatalf("got %+v, want tp=%v fp=%v fn=%v exact=%v", s, tt.tp, tt.fp, tt.fn, tt.exact)
			}
			p, pok := s.Precision()
			r, rok := s.Recall()
			if pok != tt.pOK || rok != tt.rOK {
				t.Fatalf("ok flags %v %v", pok, rok)
			}
			if tt.wantP != 0 && !near(p, tt.wantP) || tt.wantR != 0 && !near(r, tt.wantR) {
				t.Errorf("P=%v R=%v, want %v %v", p, r, tt.wantP, tt.wantR)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	scores := []PageScore{
		ScorePage("1 2 3 4 5", "1 2 3 4 5"),   // P 1, R 1, exact
		ScorePage("1 2 3 4 5 6", "1 2 3 4"),   // P 1, R 1/3
		ScorePage("a b c d", ""),              // no P, R 0
		ScorePage("1 2 3 4 5", "1 2 3 4 5 6"), // P 2/3, R 1
	}
	s := Summarize(scores, 0)
	wantP := (1 + 1 + 2.0/3) / 3
	wantR := (1 + 1.0/3 + 0 + 1) / 4
	if !near(s.Precision, wantP) || !near(s.Recall, wantR) {
		t.Fatalf("P=%v R=%v, want %v %v", s.Precision, s.Recall, wantP, wantR)
	}
	if !near(s.F1, 2*wantP*wantR/(wantP+wantR)) || !near(s.Accuracy, 0.25) {
		t.Errorf("F1=%v Acc=%v", s.F1, s.Accuracy)
	}
	if s.PrecisionPages != 3 || s.RecallPages != 4 {
		t.Errorf("pages %d %d", s.PrecisionPages, s.RecallPages)
	}
	b := Summarize(scores, 200)
	if b.F1 != s.F1 || b.F1Std <= 0 || b.F1Std > 0.5 {
		t.Errorf("bootstrap: F1 %v std %v", b.F1, b.F1Std)
	}
	if again := Summarize(scores, 200); again != b {
		t.Errorf("bootstrap not reproducible")
	}
}

// benchDir locates the Scrapinghub data: $EXTRACT_BENCH_DIR, or the first
// of DefaultDirs, seen from this package's folder.
func benchDir() string {
	if d := os.Getenv("EXTRACT_BENCH_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "..", "shared", "bench", "extraction", "scrapinghub")
}

// TestBenchmarkFloor runs package extract over the 161 benchmark pages and
// requires an F1 of at least 0.95. It skips when the data is absent.
func TestBenchmarkFloor(t *testing.T) {
	dir := benchDir()
	if _, err := os.Stat(filepath.Join(dir, "ground-truth.json")); err != nil {
		t.Skipf("benchmark data not found at %s", dir)
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	pages, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(context.Background(), "deepresearch", pages, Ours, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Line())
	if res.Errors > 0 {
		t.Errorf("%d pages failed", res.Errors)
	}
	if res.Summary.F1 < 0.95 {
		var b strings.Builder
		WritePageTable(&b, res)
		t.Errorf("F1 %.3f below the floor 0.95\n%s", res.Summary.F1, b.String())
	}
}

func TestRunCLIBadDir(t *testing.T) {
	var out, errb strings.Builder
	if err := RunCLI(context.Background(), []string{t.TempDir()}, &out, &errb); err == nil {
		t.Fatal("want an error for a directory without ground truth")
	}
	if err := RunCLI(context.Background(), []string{"a", "b"}, &out, &errb); err == nil {
		t.Fatal("want a usage error")
	}
}

func TestRunCLISmallDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "html"), 0o755); err != nil {
		t.Fatal(err)
	}
	page := `<html><body><nav><a href="/">Home</a></nav><article><p>The quick brown fox jumps over the lazy dog, again and again, until the dog finally wakes up.</p></article></body></html>`
	writeGz(t, filepath.Join(dir, "html", "p1.html.gz"), page)
	gt := `{"p1": {"articleBody": "The quick brown fox jumps over the lazy dog, again and again, until the dog finally wakes up.", "url": "https://example.com/p1"}}`
	if err := os.WriteFile(filepath.Join(dir, "ground-truth.json"), []byte(gt), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if err := RunCLI(context.Background(), []string{"-v", dir}, &out, &errb); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if !strings.Contains(out.String(), "f1=1.000") || !strings.Contains(out.String(), "accuracy=1.000") {
		t.Errorf("output:\n%s", out.String())
	}
}
