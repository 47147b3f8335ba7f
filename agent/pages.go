package agent

import (
	"context"
	"errors"
	"strings"

	"deepresearch/tools/search"
)

// pageRead is one page a run reads: the first researcher to want it
// fetches it, the others wait for that fetch instead of starting their own.
type pageRead struct {
	done chan struct{}
	pg   Page
	err  error
}

// readPage reads rawURL once per run: a page another researcher of the run
// has read (or is reading) is shared. A failed read is not kept, so a later
// asker tries again; one whose reader was called off is read again at once.
func (a *Agent) readPage(ctx context.Context, rawURL string) (Page, error) {
	if a.tr == nil {
		pg, _, err := a.readPageOnce(ctx, rawURL)
		return pg, err
	}
	ctx, span := a.pageSpan(ctx, rawURL)
	pg, shared, err := a.readPageOnce(ctx, rawURL)
	endPageSpan(span, pg, shared, err)
	return pg, err
}

// readPageOnce is readPage; shared reports a page another researcher of
// the run read.
func (a *Agent) readPageOnce(ctx context.Context, rawURL string) (_ Page, shared bool, _ error) {
	l := runLimitsFrom(ctx)
	if l == nil {
		pg, err := a.fetchPage(ctx, rawURL)
		return pg, false, err
	}
	for {
		l.mu.Lock()
		r, ok := l.pages[rawURL]
		if !ok {
			r = &pageRead{done: make(chan struct{})}
			l.pages[rawURL] = r
			l.mu.Unlock()
			r.pg, r.err = a.fetchPage(ctx, rawURL)
			// kept for the run as a researcher keeps it
			r.pg.Text = clip(r.pg.Text, a.opts.PageChars)
			if r.err != nil {
				l.mu.Lock()
				if l.pages[rawURL] == r {
					delete(l.pages, rawURL)
				}
				l.mu.Unlock()
			}
			close(r.done)
			return r.pg, false, r.err
		}
		l.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return Page{}, true, ctx.Err()
		}
		switch {
		case r.err == nil:
			return r.pg, true, nil
		case ctx.Err() != nil:
			return Page{}, true, ctx.Err()
		case !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, context.DeadlineExceeded):
			return Page{}, true, r.err
		}
		// the reader's own context ended, not ours: read it ourselves
	}
}

// fetchPage fetches rawURL within the run's limit per host.
func (a *Agent) fetchPage(ctx context.Context, rawURL string) (Page, error) {
	release, err := fetchSlot(ctx, rawURL)
	if err != nil {
		return Page{}, err
	}
	defer release()
	return a.fetch.Fetch(ctx, rawURL)
}

// readAhead searches the question itself while the plan is being made and
// reads the pages it finds into the run's pages (see readPage), so that a
// researcher whose planned query leads to one of them does not wait for
// it. Nothing it finds enters the research unless a researcher's own search
// leads there; it ends with the run.
func (a *Agent) readAhead(ctx context.Context, question string) {
	l := runLimitsFrom(ctx)
	if l == nil || a.search == nil || a.fetch == nil || l.bg == nil {
		return
	}
	q := clip(strings.TrimSpace(strings.SplitN(question, "\n", 2)[0]), 200)
	if q == "" {
		return
	}
	bctx := l.bgCtx
	l.bg.Go(func() {
		results, err := a.search.Search(bctx, search.Query{Text: q, MaxResults: a.opts.ResultsPerQuery})
		if err != nil {
			a.log.Debug("read-ahead search failed", "err", err)
			return
		}
		n := 0
		for _, r := range results {
			if strings.TrimSpace(r.Content) != "" || normURL(r.URL) == "" {
				continue // read without fetching, or nothing to read
			}
			if n++; n > a.opts.MaxURLs {
				break
			}
			l.bg.Go(func() {
				if _, err := a.readPage(bctx, r.URL); err != nil {
					a.log.Debug("read-ahead fetch failed", "url", r.URL, "err", err)
				}
			})
		}
	})
}
