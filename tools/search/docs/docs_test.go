package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/tools/search"
)

// copyCorpus copies testdata/corpus into a fresh temporary folder.
func copyCorpus(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir("testdata/corpus", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/corpus", path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func fakePDF(_ context.Context, data []byte) (string, string, error) {
	if !strings.HasPrefix(string(data), "%PDF-") {
		return "", "", errors.New("not a PDF")
	}
	return "Board minutes March", "# Decisions\n\nThe board approved the acquisition of Example Robotics.", nil
}

// newTestIndex returns an index on root and its debug log. The handler
// serialises writes; tests read the log only once the calls that log have
// returned.
func newTestIndex(t *testing.T, root string, mod func(*Options)) (*Index, *bytes.Buffer) {
	t.Helper()
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := Options{Root: root, Logger: log, Converters: map[string]ConvertFunc{"pdf": fakePDF}}
	if mod != nil {
		mod(&opts)
	}
	ix, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return ix, logs
}

func TestSearchRanking(t *testing.T) {
	ix, _ := newTestIndex(t, "testdata/corpus", nil)
	tests := []struct {
		query    string
		wantFile string
		title    string // substring of the first result's title
		snippet  string // substring of its snippet
	}{
		{"生成AI規制", "ja/ai-regulation.md", "国内の生成AI規制の動向（2026年） › 生成AI規制の論点", "生成AI規制の主な論点"},
		{"生成AIの規制について教えて", "ja/ai-regulation.md", "", "規制"},
		{"ＡＩ規制", "ja/ai-regulation.md", "", ""},
		{"生成AI 活用事例", "ja/genai-usage.md", "社内の生成AI活用事例", "生成AI"},
		{"個人情報保護法 規制", "ja/privacy.md", "個人情報保護法", "規制"},
		{"著作権", "ja/ai-regulation.md", "生成AI規制の論点", "著作権"},
		{"AI regulation", "en/ai-act.md", "EU AI Act", "regulation"},
		{"general-purpose models obligations", "en/ai-act.md", "General-purpose AI models", "obligations"},
		{"GPU training costs", "en/cloud-costs.txt", "Cloud cost review Q3", "GPU"},
		{"two-factor authentication", "en/onboarding.html", "Employee onboarding handbook › Welcome aboard › Accounts", "two-factor"},
		{"acquisition robotics", "en/board-minutes.pdf", "Board minutes March", "acquisition"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res, err := ix.Search(context.Background(), search.Query{Text: tt.query, MaxResults: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(res) == 0 {
				t.Fatal("no results")
			}
			rel, ord, err := ParseURL(res[0].URL)
			if err != nil || ord < 1 {
				t.Fatalf("bad URL %q: %v", res[0].URL, err)
			}
			if rel != tt.wantFile {
				var got []string
				for _, r := range res {
					got = append(got, fmt.Sprintf("%s %.3f", r.URL, r.Score))
				}
				t.Fatalf("first = %s, want %s; all: %v", rel, tt.wantFile, got)
			}
			r := res[0]
			if !strings.Contains(r.Title, tt.title) {
				t.Errorf("title = %q, want it to contain %q", r.Title, tt.title)
			}
			if !strings.Contains(r.Snippet, tt.snippet) {
				t.Errorf("snippet = %q, want it to contain %q", r.Snippet, tt.snippet)
			}
			if r.Source != "docs" || r.Content == "" || r.Published.IsZero() || r.Score <= 0 {
				t.Errorf("result = %+v", r)
			}
			if len([]rune(r.Snippet)) > 240+2 {
				t.Errorf("snippet too long: %d runes", len([]rune(r.Snippet)))
			}
		})
	}
}

func TestSearchMisc(t *testing.T) {
	ix, _ := newTestIndex(t, "testdata/corpus", nil)
	ctx := context.Background()
	if _, err := ix.Search(ctx, search.Query{Text: "  "}); !errors.Is(err, search.ErrEmptyQuery) {
		t.Errorf("empty query: %v", err)
	}
	res, err := ix.Search(ctx, search.Query{Text: "!!! ???"})
	if err != nil || len(res) != 0 {
		t.Errorf("punctuation-only: %v, %v", res, err)
	}
	res, _ = ix.Search(ctx, search.Query{Text: "zzzunknownzzz"})
	if len(res) != 0 {
		t.Errorf("unknown word matched: %v", res)
	}
	// MaxPerDoc: "生成AI" appears in every section of two files.
	res, _ = ix.Search(ctx, search.Query{Text: "生成AI", MaxResults: 20})
	perDoc := map[string]int{}
	for _, r := range res {
		rel, _, _ := ParseURL(r.URL)
		perDoc[rel]++
	}
	for f, n := range perDoc {
		if n > 2 {
			t.Errorf("%s returned %d passages, max 2", f, n)
		}
	}
	// MaxResults.
	res, _ = ix.Search(ctx, search.Query{Text: "生成AI", MaxResults: 1})
	if len(res) != 1 {
		t.Errorf("MaxResults 1: %d results", len(res))
	}
	// The script in the HTML head is not indexed.
	if res, _ := ix.Search(ctx, search.Query{Text: "tracking"}); len(res) != 0 {
		t.Errorf("script text indexed: %v", res)
	}
	// Passage resolves result URLs.
	res, _ = ix.Search(ctx, search.Query{Text: "著作権"})
	if title, text, ok := ix.Passage(res[0].URL); !ok || text != res[0].Content || !strings.Contains(title, "生成AI規制") {
		t.Errorf("Passage = %q, %q, %v", title, text, ok)
	}
	if _, text, ok := ix.Passage("doc://ja/ai-regulation.md"); !ok || !strings.Contains(text, "今後の見通し") || !strings.Contains(text, "概要") {
		t.Errorf("whole doc = %q, %v", text, ok)
	}
	if _, _, ok := ix.Passage("doc://ja/ai-regulation.md#99"); ok {
		t.Error("passage 99 found")
	}
	if search.ScopeOf(ix) != search.ScopeInternal || ix.Name() != "docs" {
		t.Error("scope/name")
	}
}

func TestNoPDFConverter(t *testing.T) {
	ix, _ := newTestIndex(t, "testdata/corpus", func(o *Options) { o.Converters = nil })
	res, _ := ix.Search(context.Background(), search.Query{Text: "acquisition robotics"})
	if len(res) != 0 {
		t.Errorf("PDF indexed without a converter: %v", res)
	}
	if st := ix.Stats(); st.Files != 6 {
		t.Errorf("files = %d, want 6", st.Files)
	}
}

func TestFreshness(t *testing.T) {
	root := copyCorpus(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if !d.IsDir() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	recent := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(root, "ja/privacy.md"), recent, recent)
	now := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	ix, _ := newTestIndex(t, root, func(o *Options) { o.Now = func() time.Time { return now } })
	res, _ := ix.Search(context.Background(), search.Query{Text: "規制", Freshness: 30 * search.Day, MaxResults: 20})
	if len(res) != 1 || !strings.Contains(res[0].URL, "privacy.md") || !res[0].Published.Equal(recent) {
		t.Errorf("fresh results = %+v", res)
	}
}

func TestRefresh(t *testing.T) {
	root := copyCorpus(t)
	ix, _ := newTestIndex(t, root, nil)
	ctx := context.Background()
	find := func(q string) []string {
		t.Helper()
		res, err := ix.Search(ctx, search.Query{Text: q, MaxResults: 20})
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, r := range res {
			rel, _, _ := ParseURL(r.URL)
			files = append(files, rel)
		}
		return files
	}
	before := ix.Stats()

	// Unchanged folder: nothing to do.
	st, err := ix.Refresh(ctx)
	if err != nil || st.Added+st.Updated+st.Removed != 0 || st.Unchanged != 7 {
		t.Fatalf("idle refresh = %+v, %v", st, err)
	}

	// Change a file (new content, new mtime), add one, delete one.
	later := time.Now().Add(time.Hour)
	p := filepath.Join(root, "en/cloud-costs.txt")
	os.WriteFile(p, []byte("Cloud cost review Q4\n\nSpending on quantum annealers doubled."), 0o644)
	os.Chtimes(p, later, later)
	os.MkdirAll(filepath.Join(root, "ja/new"), 0o755)
	os.WriteFile(filepath.Join(root, "ja/new/量子.md"), []byte("# 量子コンピュータの調達\n\n量子コンピュータの調達方針を定める。"), 0o644)
	os.Remove(filepath.Join(root, "ja/privacy.md"))

	st, err = ix.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Added != 1 || st.Updated != 1 || st.Removed != 1 {
		t.Errorf("refresh = %+v, want 1 added, 1 updated, 1 removed", st)
	}
	if got := find("GPU"); len(got) != 0 {
		t.Errorf("old content still found: %v", got)
	}
	if got := find("quantum annealers"); len(got) == 0 || got[0] != "en/cloud-costs.txt" {
		t.Errorf("new content not found: %v", got)
	}
	if got := find("量子コンピュータ"); len(got) == 0 || got[0] != "ja/new/量子.md" {
		t.Errorf("added file not found: %v", got)
	}
	if got := find("個人情報保護委員会 課徴金"); slices.Contains(got, "ja/privacy.md") {
		t.Errorf("deleted file still found: %v", got)
	}
	if s := ix.Stats(); s.Files != before.Files {
		t.Errorf("files = %d, want %d", s.Files, before.Files)
	}

	// Removing everything empties the index and its term table.
	for _, d := range []string{"en", "ja"} {
		os.RemoveAll(filepath.Join(root, d))
	}
	if _, err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Files != 0 || s.Chunks != 0 || s.Terms != 0 {
		t.Errorf("after deleting all: %+v", s)
	}
	if ix.totalLen > 1e-6 || ix.totalLen < -1e-6 {
		t.Errorf("totalLen = %v", ix.totalLen)
	}
}

func TestSkipRules(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(dir, name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "visible.md", "# Visible\n\nalpha keyword")
	write(root, ".hidden.md", "alpha secret")
	write(root, ".git/config.md", "alpha git")
	write(root, "notes.md~", "alpha backup")
	write(root, "binary.exe", "alpha exe")
	write(root, "big.txt", "alpha "+strings.Repeat("x", 2000))
	write(root, "bad.pdf", "not a pdf at all alpha")
	write(outside, "secret.md", "alpha outside secret")
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "escape.md")); err != nil {
		t.Skip("symlinks not supported:", err)
	}
	os.Symlink(outside, filepath.Join(root, "linkdir"))
	os.Symlink(filepath.Join(root, "visible.md"), filepath.Join(root, "alias.md"))

	ix, logs := newTestIndex(t, root, func(o *Options) { o.MaxFileSize = 1000 })
	res, _ := ix.Search(context.Background(), search.Query{Text: "alpha", MaxResults: 20})
	var got []string
	for _, r := range res {
		rel, _, _ := ParseURL(r.URL)
		got = append(got, rel)
	}
	want := "alias.md visible.md"
	if g := strings.Join(sortedCopy(got), " "); g != want {
		t.Errorf("indexed %q, want %q", g, want)
	}
	if !strings.Contains(logs.String(), "too large") || !strings.Contains(logs.String(), "cannot convert") {
		t.Errorf("skips not logged: %s", logs.String())
	}
	// Skipped files are not retried (nor logged again) until they change.
	n := strings.Count(logs.String(), "too large")
	st, _ := ix.Refresh(context.Background())
	if st.Skipped != 2 || strings.Count(logs.String(), "too large") != n {
		t.Errorf("second refresh = %+v; logs %s", st, logs.String())
	}
	// Fixing the PDF makes it indexable.
	later := time.Now().Add(time.Hour)
	write(root, "bad.pdf", "%PDF-1.7 now valid")
	os.Chtimes(filepath.Join(root, "bad.pdf"), later, later)
	if st, _ := ix.Refresh(context.Background()); st.Added != 1 {
		t.Errorf("fixed PDF not added: %+v", st)
	}
}

func TestNewErrors(t *testing.T) {
	for _, root := range []string{"", "testdata/does-not-exist", "docs.go"} {
		_, err := New(context.Background(), Options{Root: root})
		if !errors.Is(err, search.ErrMisconfigured) || !strings.Contains(err.Error(), "DEEPRESEARCH_DOCS_DIR") {
			t.Errorf("New(%q) = %v", root, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(ctx, Options{Root: "testdata/corpus"}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled New = %v", err)
	}
}

func TestConverterPanic(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.pdf"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "b.md"), []byte("fine"), 0o644)
	ix, logs := newTestIndex(t, root, func(o *Options) {
		o.Converters = map[string]ConvertFunc{".PDF": func(context.Context, []byte) (string, string, error) { panic("bad pdf") }}
	})
	if ix.Stats().Files != 1 || !strings.Contains(logs.String(), "panicked") {
		t.Errorf("stats %+v logs %s", ix.Stats(), logs.String())
	}
}

func TestConcurrentSearchAndRefresh(t *testing.T) {
	root := copyCorpus(t)
	ix, _ := newTestIndex(t, root, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { ix.Watch(ctx, time.Millisecond) })
	for i := range 4 {
		wg.Go(func() {
			for j := range 30 {
				if i == 0 {
					p := filepath.Join(root, "ja/genai-usage.md")
					os.WriteFile(p, []byte(fmt.Sprintf("# 版 %d\n\n生成AI 活用 %d", j, j)), 0o644)
					ts := time.Now().Add(time.Duration(j) * time.Second)
					os.Chtimes(p, ts, ts)
				}
				// searches use their own context: cancel() below stops only the watcher,
				// and searchers may still be running when the last change is seen
				if _, err := ix.Search(context.Background(), search.Query{Text: "生成AI 活用"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, text, ok := ix.Passage("doc://ja/genai-usage.md#1")
		if ok && strings.Contains(text, "活用 29") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Watch did not pick up the last change: %q", text)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}
