// Package docs is an embedded full-text index over a folder of internal
// documents (markdown, text, HTML and, with a converter, PDF) that
// implements search.Provider.
//
// Ranking is BM25 over terms that suit English and Japanese alike: words
// for alphabetic scripts, character bigrams for Japanese, Chinese and
// Korean (see tokenize). Documents are cut into passages at their headings
// so that results point at the relevant part.
//
// Result URLs have the form doc://<path relative to the root>#<n>, where n
// is the passage number (1-based) within the file; the path uses "/" and
// keeps non-ASCII characters, escaping only "%", "#", "?", spaces and
// control characters. ParseURL reverses it.
package docs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"deepresearch/tools/search"
)

// Options configures an Index.
type Options struct {
	// Root is the folder to index (cmd/: DEEPRESEARCH_DOCS_DIR).
	Root string
	// Converters maps a file extension (".pdf" or "pdf") to a converter.
	// They replace the built-in ones for the same extension; built-ins
	// handle .md .markdown .mdx .txt .text .html .htm. Files with other
	// extensions are not indexed.
	Converters map[string]ConvertFunc
	// MaxFileSize skips larger files; default 20 MiB.
	MaxFileSize int64
	// ChunkRunes is the target passage size in characters; default 1200.
	ChunkRunes int
	// MaxPerDoc caps how many passages of one file a search returns;
	// default 2.
	MaxPerDoc int
	// SnippetRunes is the snippet length; default 240.
	SnippetRunes int
	Name         string // default "docs"
	Logger       *slog.Logger
	// Now is the clock for Query.Freshness; default time.Now.
	Now func() time.Time
}

// Index is a BM25 index over the files under Options.Root. It is safe for
// concurrent use; Refresh brings it up to date with the folder.
type Index struct {
	opts     Options
	name     string
	root     string // cleaned, symlinks resolved
	conv     map[string]ConvertFunc
	log      *slog.Logger
	refresh  sync.Mutex // one Refresh at a time
	mu       sync.RWMutex
	files    map[string]*fileEntry // by relative slash path
	skipped  map[string]fileStamp  // files that failed or are too big, to log once
	chunks   map[int32]*chunk
	postings map[string]map[int32]float32
	totalLen float64
	nextID   int32
}

type fileStamp struct {
	mtime time.Time
	size  int64
}

type fileEntry struct {
	stamp  fileStamp
	chunks []int32
}

type chunk struct {
	file    string
	ord     int
	title   string
	heading string
	text    string
	length  float64
	terms   []string
	mtime   time.Time
}

// New indexes opts.Root and returns the Index. The folder must exist.
func New(ctx context.Context, opts Options) (*Index, error) {
	if strings.TrimSpace(opts.Root) == "" {
		return nil, fmt.Errorf("docs: %w: no folder; set DEEPRESEARCH_DOCS_DIR", search.ErrMisconfigured)
	}
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ix := &Index{
		opts:     opts,
		name:     opts.Name,
		root:     root,
		conv:     builtinConverters(),
		log:      opts.Logger,
		files:    map[string]*fileEntry{},
		skipped:  map[string]fileStamp{},
		chunks:   map[int32]*chunk{},
		postings: map[string]map[int32]float32{},
	}
	if ix.name == "" {
		ix.name = "docs"
	}
	if ix.log == nil {
		ix.log = slog.Default()
	}
	for ext, f := range opts.Converters {
		if f != nil {
			ix.conv[normExt(ext)] = f
		}
	}
	if _, err := ix.Refresh(ctx); err != nil {
		return nil, err
	}
	return ix, nil
}

// resolveRoot is the folder dir as an absolute path with symlinks
// resolved; an error when it is not a folder.
func resolveRoot(dir string) (string, error) {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return "", fmt.Errorf("docs: %w: DEEPRESEARCH_DOCS_DIR: %w", search.ErrMisconfigured, err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return "", fmt.Errorf("docs: %w: DEEPRESEARCH_DOCS_DIR %q is not a folder", search.ErrMisconfigured, dir)
	}
	return root, nil
}

// withDefaults fills the options left zero (and a chunk size under 50).
func (opts Options) withDefaults() Options {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = 20 << 20
	}
	if opts.ChunkRunes <= 0 {
		opts.ChunkRunes = 1200
	}
	if opts.ChunkRunes < 50 {
		opts.ChunkRunes = 50
	}
	if opts.MaxPerDoc <= 0 {
		opts.MaxPerDoc = 2
	}
	if opts.SnippetRunes <= 0 {
		opts.SnippetRunes = 240
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return opts
}

// Name returns the provider name.
func (ix *Index) Name() string { return ix.name }

// Scope returns search.ScopeInternal.
func (ix *Index) Scope() search.Scope { return search.ScopeInternal }

// Root returns the indexed folder (absolute, symlinks resolved).
func (ix *Index) Root() string { return ix.root }

// Stats describes the index.
type Stats struct {
	Files, Chunks, Terms int
}

// Stats returns the index's current size.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return Stats{Files: len(ix.files), Chunks: len(ix.chunks), Terms: len(ix.postings)}
}

// RefreshStats says what a Refresh changed.
type RefreshStats struct {
	Added, Updated, Removed, Unchanged, Skipped int
}

// Refresh walks the folder and brings the index up to date: new and
// changed files (by modification time and size) are (re)indexed, deleted
// ones removed. Hidden files and folders (".name"), symlinks that lead
// outside the root, symlinked folders, files over MaxFileSize and files
// without a converter are skipped.
func (ix *Index) Refresh(ctx context.Context) (RefreshStats, error) {
	ix.refresh.Lock()
	defer ix.refresh.Unlock()
	r := &refresher{ix: ix, ctx: ctx, seen: map[string]bool{}}
	if err := filepath.WalkDir(ix.root, r.visit); err != nil {
		return r.st, fmt.Errorf("docs: refreshing %s: %w", ix.root, err)
	}
	ix.mu.Lock()
	for rel := range ix.files {
		if !r.seen[rel] {
			ix.removeLocked(rel)
			r.st.Removed++
		}
	}
	for rel := range ix.skipped {
		if !r.seen[rel] {
			delete(ix.skipped, rel)
		}
	}
	ix.mu.Unlock()
	if st := r.st; st.Added+st.Updated+st.Removed > 0 {
		s := ix.Stats()
		ix.log.Info("docs: index refreshed", "added", st.Added, "updated", st.Updated,
			"removed", st.Removed, "files", s.Files, "chunks", s.Chunks)
	}
	return r.st, nil
}

// refresher is one Refresh's walk of the folder.
type refresher struct {
	ix   *Index
	ctx  context.Context
	st   RefreshStats
	seen map[string]bool // files found, by path relative to the root
}

// visit is the WalkDir callback: it skips what cannot be read and hidden
// or temporary names, and indexes the files a converter reads.
func (r *refresher) visit(path string, d fs.DirEntry, err error) error {
	ix := r.ix
	if err != nil {
		if path == ix.root {
			return err
		}
		ix.log.Warn("docs: cannot read; skipped", "path", path, "error", err)
		if d != nil && d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	if cerr := r.ctx.Err(); cerr != nil {
		return cerr
	}
	if path == ix.root {
		return nil
	}
	name := d.Name()
	if hiddenName(name) {
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	if d.IsDir() {
		return nil
	}
	rel, err := filepath.Rel(ix.root, path)
	if err != nil {
		return nil
	}
	conv := ix.conv[normExt(filepath.Ext(name))]
	if conv == nil {
		return nil
	}
	info, ok := ix.statFile(path, d)
	if !ok {
		return nil
	}
	return r.file(path, filepath.ToSlash(rel), fileStamp{mtime: info.ModTime(), size: info.Size()}, conv)
}

// hiddenName reports whether a file or folder name is hidden (".name") or
// an editor's temporary file ("~$name", "name~").
func hiddenName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "~$") || strings.HasSuffix(name, "~")
}

// file brings one file's entry up to date: unchanged files and files
// skipped before with the same stamp are left alone; a file too large or
// that fails to convert is skipped (and remembered as skipped).
func (r *refresher) file(path, rel string, stamp fileStamp, conv ConvertFunc) error {
	ix := r.ix
	r.seen[rel] = true
	ix.mu.RLock()
	old := ix.files[rel]
	prevSkip, wasSkipped := ix.skipped[rel]
	ix.mu.RUnlock()
	if old != nil && old.stamp == stamp {
		r.st.Unchanged++
		return nil
	}
	if wasSkipped && prevSkip == stamp {
		r.st.Skipped++
		return nil
	}
	if stamp.size > ix.opts.MaxFileSize {
		ix.log.Warn("docs: file too large; skipped", "path", rel, "bytes", stamp.size, "max", ix.opts.MaxFileSize)
		ix.skip(rel, stamp)
		r.st.Skipped++
		return nil
	}
	passages, title, err := ix.load(r.ctx, path, rel, conv)
	if err != nil {
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		ix.log.Warn("docs: cannot convert; skipped", "path", rel, "error", err)
		ix.skip(rel, stamp)
		r.st.Skipped++
		return nil
	}
	ix.put(rel, stamp, title, passages)
	if old != nil {
		r.st.Updated++
	} else {
		r.st.Added++
	}
	return nil
}

// statFile returns the file's info, following a symlink only when its
// target is a regular file inside the root.
func (ix *Index) statFile(path string, d fs.DirEntry) (fs.FileInfo, bool) {
	if d.Type()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, false
		}
		if r, err := filepath.Rel(ix.root, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
			ix.log.Debug("docs: symlink leads outside the root; skipped", "path", path)
			return nil, false
		}
		info, err := os.Stat(target)
		if err != nil || !info.Mode().IsRegular() {
			return nil, false
		}
		return info, true
	}
	if !d.Type().IsRegular() {
		return nil, false
	}
	info, err := d.Info()
	if err != nil {
		return nil, false
	}
	return info, true
}

func (ix *Index) skip(rel string, stamp fileStamp) {
	ix.mu.Lock()
	ix.removeLocked(rel)
	ix.skipped[rel] = stamp
	ix.mu.Unlock()
}

func (ix *Index) load(ctx context.Context, path, rel string, conv ConvertFunc) ([]passage, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, ix.opts.MaxFileSize+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(data)) > ix.opts.MaxFileSize {
		return nil, "", errors.New("file grew beyond the size limit")
	}
	title, text, err := safeConvert(ctx, conv, data)
	if err != nil {
		return nil, "", err
	}
	title = strings.TrimSpace(title)
	if title == "" {
		title = titleFromPath(rel)
	}
	return splitPassages(text, ix.opts.ChunkRunes), title, nil
}

func safeConvert(ctx context.Context, conv ConvertFunc, data []byte) (title, text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("converter panicked: %v", r)
		}
	}()
	return conv(ctx, data)
}

// put replaces rel's passages in the index.
func (ix *Index) put(rel string, stamp fileStamp, title string, passages []passage) {
	titleTerms := tokenize(title)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.removeLocked(rel)
	delete(ix.skipped, rel)
	fe := &fileEntry{stamp: stamp}
	for i, p := range passages {
		id := ix.nextID
		ix.nextID++
		tf := map[string]float32{}
		body := tokenize(p.text)
		for _, t := range body {
			tf[t.term]++
		}
		head := tokenize(p.heading)
		// Words in the title and headings count double.
		for _, t := range titleTerms {
			tf[t.term] += 2
		}
		for _, t := range head {
			tf[t.term] += 2
		}
		c := &chunk{file: rel, ord: i + 1, title: title, heading: p.heading, text: p.text,
			length: float64(len(body) + len(titleTerms) + len(head)), mtime: stamp.mtime}
		for term, n := range tf {
			pl := ix.postings[term]
			if pl == nil {
				pl = map[int32]float32{}
				ix.postings[term] = pl
			}
			pl[id] = n
			c.terms = append(c.terms, term)
		}
		ix.chunks[id] = c
		ix.totalLen += c.length
		fe.chunks = append(fe.chunks, id)
	}
	ix.files[rel] = fe
}

func (ix *Index) removeLocked(rel string) {
	fe := ix.files[rel]
	if fe == nil {
		return
	}
	for _, id := range fe.chunks {
		c := ix.chunks[id]
		for _, term := range c.terms {
			pl := ix.postings[term]
			delete(pl, id)
			if len(pl) == 0 {
				delete(ix.postings, term)
			}
		}
		ix.totalLen -= c.length
		delete(ix.chunks, id)
	}
	delete(ix.files, rel)
}

// Watch calls Refresh every interval until ctx ends, logging errors; it
// returns ctx's error. Run it in its own goroutine.
func (ix *Index) Watch(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = 30 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if _, err := ix.Refresh(ctx); err != nil && ctx.Err() == nil {
				ix.log.Warn("docs: refresh failed", "error", err)
			}
		}
	}
}

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Search ranks passages for q with BM25. Query.Freshness filters on the
// files' modification times; Language and Domains are ignored.
func (ix *Index) Search(ctx context.Context, q search.Query) ([]search.Result, error) {
	text, err := q.Validate()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ix.name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := search.ClampMaxResults(q.MaxResults)
	qterms := terms(text)
	if len(qterms) == 0 {
		return []search.Result{}, nil
	}
	var since time.Time
	if q.Freshness > 0 {
		since = ix.opts.Now().Add(-q.Freshness)
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(ix.chunks) == 0 {
		return []search.Result{}, nil
	}
	weights, totalW := termWeights(qterms)
	scores, matched := ix.bm25Locked(qterms, weights)
	hits := make([]hit, 0, len(scores))
	for id, s := range scores {
		c := ix.chunks[id]
		if !since.IsZero() && c.mtime.Before(since) {
			continue
		}
		// Passages that contain more of the query's terms go first.
		cover := matched[id] / totalW
		hits = append(hits, hit{id, s * (0.5 + 0.5*cover)})
	}
	byScore := func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].id < hits[j].id
	}
	sort.Slice(hits, byScore)
	// Proximity: among the best candidates, passages where the query's
	// terms follow each other as in the query ("生成AI規制", "data
	// protection") get up to 30% more.
	if pairs := queryPairs(text); len(pairs) > 0 {
		top := hits[:min(len(hits), proximityCandidates)]
		for i := range top {
			top[i].score *= 1 + 0.3*adjacency(ix.chunks[top[i].id].text, pairs)
		}
		sort.Slice(hits, byScore)
	}
	return ix.resultsLocked(hits, qterms, n), nil
}

// hit is a passage's score for a query.
type hit struct {
	id    int32
	score float64
}

// termWeights weighs the query's terms: hiragana-only terms (particles,
// verb endings) count for less when the query has other terms. total is
// their sum.
func termWeights(qterms []string) (weights []float64, total float64) {
	weights = make([]float64, len(qterms))
	hasContent := false
	for _, t := range qterms {
		if !isHiragana(t) {
			hasContent = true
		}
	}
	for i, t := range qterms {
		weights[i] = 1
		if hasContent && isHiragana(t) {
			weights[i] = 0.2
		}
		total += weights[i]
	}
	return weights, total
}

// bm25Locked scores the passages holding any of the query's terms (BM25,
// each term weighted) and sums the weights of the terms each holds. The
// caller holds ix.mu and has checked that the index is not empty.
func (ix *Index) bm25Locked(qterms []string, weights []float64) (scores, matched map[int32]float64) {
	N := float64(len(ix.chunks))
	avg := ix.totalLen / N
	scores, matched = map[int32]float64{}, map[int32]float64{}
	for i, term := range qterms {
		pl := ix.postings[term]
		if len(pl) == 0 {
			continue
		}
		df := float64(len(pl))
		idf := math.Log(1 + (N-df+0.5)/(df+0.5))
		for id, tf := range pl {
			c := ix.chunks[id]
			f := float64(tf)
			scores[id] += weights[i] * idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*c.length/avg))
			matched[id] += weights[i]
		}
	}
	return scores, matched
}

// resultsLocked turns the ranked hits into at most n results, MaxPerDoc a
// file. The caller holds ix.mu.
func (ix *Index) resultsLocked(hits []hit, qterms []string, n int) []search.Result {
	perDoc := map[string]int{}
	want := map[string]bool{}
	for _, t := range qterms {
		want[t] = true
	}
	out := []search.Result{}
	for _, h := range hits {
		c := ix.chunks[h.id]
		if perDoc[c.file] >= ix.opts.MaxPerDoc {
			continue
		}
		perDoc[c.file]++
		title := displayTitle(c.title, c.heading)
		out = append(out, search.Result{
			Title:     title,
			URL:       FormatURL(c.file, c.ord),
			Snippet:   snippet(c.text, want, ix.opts.SnippetRunes),
			Score:     h.score,
			Published: c.mtime,
			Source:    ix.name,
			Content:   c.text,
		})
		if len(out) == n {
			break
		}
	}
	return out
}

const proximityCandidates = 50

// queryPairs returns the pairs of consecutive query terms.
func queryPairs(text string) [][2]string {
	toks := tokenize(text)
	var pairs [][2]string
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].term != toks[i+1].term {
			pairs = append(pairs, [2]string{toks[i].term, toks[i+1].term})
		}
	}
	return pairs
}

// adjacency is the share of pairs that occur side by side in text.
func adjacency(text string, pairs [][2]string) float64 {
	toks := tokenize(text)
	found := map[[2]string]bool{}
	for i := 0; i+1 < len(toks); i++ {
		found[[2]string{toks[i].term, toks[i+1].term}] = true
	}
	n := 0
	for _, p := range pairs {
		if found[p] {
			n++
		}
	}
	return float64(n) / float64(len(pairs))
}

// displayTitle joins a document title and a passage's heading path,
// leaving out a top heading that repeats the title.
func displayTitle(title, heading string) string {
	if heading == "" {
		return title
	}
	parts := strings.Split(heading, " › ")
	if strings.Contains(title, parts[0]) || strings.Contains(parts[0], title) {
		parts = parts[1:]
	}
	if len(parts) == 0 {
		return title
	}
	return title + " › " + strings.Join(parts, " › ")
}

// Passage returns the text of the passage a doc:// URL names, so the agent
// can "visit" internal results.
func (ix *Index) Passage(docURL string) (title, text string, ok bool) {
	rel, ord, err := ParseURL(docURL)
	if err != nil {
		return "", "", false
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	fe := ix.files[rel]
	if fe == nil {
		return "", "", false
	}
	if ord == 0 { // whole document
		var b strings.Builder
		for i, id := range fe.chunks {
			c := ix.chunks[id]
			if i > 0 {
				b.WriteString("\n\n")
			}
			if c.heading != "" {
				b.WriteString(c.heading + "\n\n")
			}
			b.WriteString(c.text)
			title = c.title
		}
		return title, b.String(), true
	}
	if ord < 1 || ord > len(fe.chunks) {
		return "", "", false
	}
	c := ix.chunks[fe.chunks[ord-1]]
	return c.title, c.text, true
}

// densestWindow is the index of the hit that starts the window of span
// bytes covering the most distinct terms, then the most hits.
func densestWindow(hits []token, span int) int {
	bestI, bestDistinct, bestCount := 0, -1, 0
	for i := range hits {
		distinct := map[string]bool{}
		count := 0
		for j := i; j < len(hits) && hits[j].end-hits[i].start <= span; j++ {
			distinct[hits[j].term] = true
			count++
		}
		if len(distinct) > bestDistinct || (len(distinct) == bestDistinct && count > bestCount) {
			bestI, bestDistinct, bestCount = i, len(distinct), count
		}
	}
	return bestI
}

// snippet returns about limit runes of text around the densest cluster of
// query terms, with "…" where it was cut.
func snippet(text string, want map[string]bool, limit int) string {
	var hits []token
	for _, t := range tokenize(text) {
		if want[t.term] {
			hits = append(hits, t)
			if len(hits) == 1000 {
				break
			}
		}
	}
	start := 0
	if len(hits) > 0 {
		// Choose the window (by byte span, ~3 bytes a rune at worst) that
		// covers the most distinct terms, then the most hits.
		start = hits[densestWindow(hits, limit*3)].start
		// Step back a little so the match has some context, but not
		// past the start of its line.
		for back := limit / 6; back > 0 && start > 0; back-- {
			r, size := utf8.DecodeLastRuneInString(text[:start])
			if r == '\n' {
				break
			}
			start -= size
		}
	}
	end := start
	for n := 0; n < limit && end < len(text); n++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	s := strings.Join(strings.Fields(text[start:end]), " ")
	if start > 0 {
		s = "…" + s
	}
	if end < len(text) {
		s += "…"
	}
	return s
}
