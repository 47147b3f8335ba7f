package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"
)

// Member is one provider of a Multi.
type Member struct {
	Provider Provider
	// Rate limits calls to this provider (requests per second); zero
	// means unlimited. Burst is the bucket size (default 1).
	Rate  float64
	Burst int
	// Weight scales this provider's contribution to the fused rank
	// (default 1). Give internal documents more weight to prefer them.
	Weight float64
	// Timeout bounds this provider's whole search, retries included;
	// zero means only the caller's context applies.
	Timeout time.Duration
}

// MultiOptions configures a Multi.
type MultiOptions struct {
	Members []Member
	// RRFK is the k of reciprocal-rank fusion, score = Σ w/(k+rank);
	// default 60.
	RRFK float64
	// PerProvider is how many results to ask each provider for; default
	// the query's (clamped) MaxResults.
	PerProvider int
	Logger      *slog.Logger
	Name        string // default "multi"
	// Now and Sleep drive the rate limiters; tests inject fakes.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Multi queries several providers concurrently and merges their results:
// URLs are normalised with NormalizeURL, duplicates are merged (Sources
// lists every provider; the fields come from the best-ranked copy, with
// empty ones filled from the others) and results are ordered by weighted
// reciprocal-rank fusion. Score is the fused score.
type Multi struct {
	opts    MultiOptions
	name    string
	members []member
	log     *slog.Logger
}

type member struct {
	Member
	lim *limiter
}

// NewMulti returns a Multi over opts.Members.
func NewMulti(opts MultiOptions) (*Multi, error) {
	if len(opts.Members) == 0 {
		return nil, fmt.Errorf("multi: %w: no providers configured (set TAVILY_API_KEY, SEARXNG_URL, DEEPRESEARCH_DOCS_DIR or AZURE_SEARCH_ENDPOINT)", ErrMisconfigured)
	}
	if opts.RRFK <= 0 {
		opts.RRFK = 60
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepCtx
	}
	m := &Multi{opts: opts, name: opts.Name, log: opts.Logger}
	if m.name == "" {
		m.name = "multi"
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	seen := map[string]bool{}
	for i, mem := range opts.Members {
		if mem.Provider == nil {
			return nil, fmt.Errorf("multi: %w: member %d has no provider", ErrMisconfigured, i)
		}
		if seen[mem.Provider.Name()] {
			return nil, fmt.Errorf("multi: %w: two providers named %q", ErrMisconfigured, mem.Provider.Name())
		}
		seen[mem.Provider.Name()] = true
		if mem.Weight <= 0 {
			mem.Weight = 1
		}
		mm := member{Member: mem}
		if mem.Rate > 0 {
			mm.lim = newLimiter(mem.Rate, mem.Burst, opts.Now, opts.Sleep)
		}
		m.members = append(m.members, mm)
	}
	return m, nil
}

// Name returns the Multi's name.
func (m *Multi) Name() string { return m.name }

// Providers returns the member providers' names in order.
func (m *Multi) Providers() []string {
	names := make([]string, len(m.members))
	for i, mem := range m.members {
		names[i] = mem.Provider.Name()
	}
	return names
}

// Outcome is what one provider did in a Multi search.
type Outcome struct {
	Provider string
	Results  int // before merging
	Err      error
	Elapsed  time.Duration
}

// Response is a merged search with each provider's outcome.
type Response struct {
	Results  []Result
	Outcomes []Outcome // in member order
}

// Err joins the errors of the providers that failed (nil if none did).
func (r *Response) Err() error {
	var errs []error
	for _, o := range r.Outcomes {
		if o.Err != nil {
			errs = append(errs, o.Err)
		}
	}
	return errors.Join(errs...)
}

// Search implements Provider. It succeeds when at least one provider does;
// failures of the others are logged (see SearchAll to get them). When all
// fail the error wraps ErrAllFailed and each provider's error.
func (m *Multi) Search(ctx context.Context, q Query) ([]Result, error) {
	resp, err := m.SearchAll(ctx, q)
	if err != nil {
		return nil, err
	}
	return resp.Results, nil
}

// SearchAll queries every provider concurrently and merges the results.
// The error is non-nil only for an invalid query, or when every provider
// failed; partial failures are in Response.Outcomes.
func (m *Multi) SearchAll(ctx context.Context, q Query) (*Response, error) {
	if _, err := q.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	want := ClampMaxResults(q.MaxResults)
	sub := q
	sub.MaxResults = want
	if m.opts.PerProvider > 0 {
		sub.MaxResults = ClampMaxResults(m.opts.PerProvider)
	}

	lists := make([][]Result, len(m.members))
	outcomes := make([]Outcome, len(m.members))
	var wg sync.WaitGroup
	for i := range m.members {
		wg.Go(func() {
			mem := m.members[i]
			start := m.opts.Now()
			res, err := m.searchOne(ctx, mem, sub)
			outcomes[i] = Outcome{Provider: mem.Provider.Name(), Results: len(res), Err: err,
				Elapsed: m.opts.Now().Sub(start)}
			lists[i] = res
		})
	}
	wg.Wait()

	resp := &Response{Outcomes: outcomes}
	failed := 0
	for _, o := range outcomes {
		if o.Err != nil {
			failed++
			m.log.Warn("search: provider failed", "multi", m.name, "provider", o.Provider, "error", o.Err)
		}
	}
	if failed == len(m.members) {
		return resp, fmt.Errorf("%s: %w: %w", m.name, ErrAllFailed, resp.Err())
	}
	resp.Results = m.merge(lists, want)
	return resp, nil
}

func (m *Multi) searchOne(ctx context.Context, mem member, q Query) (res []Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: panic: %v", mem.Provider.Name(), ErrUnavailable, r)
			res = nil
		}
	}()
	if mem.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, mem.Timeout)
		defer cancel()
	}
	if err := mem.lim.Wait(ctx); err != nil {
		return nil, fmt.Errorf("%s: waiting for rate limit: %w", mem.Provider.Name(), err)
	}
	return mem.Provider.Search(ctx, q)
}

type fused struct {
	r      Result
	score  float64
	best   float64 // best single contribution, decides which copy wins
	first  int     // order of first appearance, for stable ties
	leader int     // member index of the winning copy
}

func (m *Multi) merge(lists [][]Result, want int) []Result {
	byKey := map[string]*fused{}
	var order []*fused
	seq := 0
	for i, list := range lists {
		mem := m.members[i]
		rank := 0
		for _, r := range list {
			key, err := NormalizeURL(r.URL)
			if err != nil {
				m.log.Debug("search: result with invalid URL dropped", "provider", mem.Provider.Name(), "url", r.URL)
				continue
			}
			rank++
			contrib := mem.Weight / (m.opts.RRFK + float64(rank))
			if r.Source == "" {
				r.Source = mem.Provider.Name()
			}
			f, ok := byKey[key]
			if !ok {
				r.Sources = []string{r.Source}
				f = &fused{r: r, score: contrib, best: contrib, first: seq, leader: i}
				seq++
				byKey[key] = f
				order = append(order, f)
				continue
			}
			f.score += contrib
			if !slices.Contains(f.r.Sources, r.Source) {
				f.r.Sources = append(f.r.Sources, r.Source)
			}
			if contrib > f.best {
				f.best = contrib
				r.Sources = f.r.Sources
				fillEmpty(&r, f.r)
				f.r = r
				f.leader = i
			} else {
				fillEmpty(&f.r, r)
			}
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		if order[a].score != order[b].score {
			return order[a].score > order[b].score
		}
		return order[a].first < order[b].first
	})
	if len(order) > want {
		order = order[:want]
	}
	out := make([]Result, len(order))
	for i, f := range order {
		out[i] = f.r
		out[i].Score = f.score
	}
	return out
}

// fillEmpty copies into dst the fields that are empty in dst but set in src.
func fillEmpty(dst *Result, src Result) {
	if dst.Title == "" {
		dst.Title = src.Title
	}
	if dst.Snippet == "" {
		dst.Snippet = src.Snippet
	}
	if dst.Content == "" {
		dst.Content = src.Content
	}
	if dst.Published.IsZero() {
		dst.Published = src.Published
	}
}
