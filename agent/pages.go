package agent

import (
	"context"
	"errors"
	"net/url"
	"slices"
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
// has read (or is reading), under this URL or as the page's canonical URL
// (a redirect link read before its target), is shared. A failed read is not kept, so a later
// asker tries again; one whose reader was called off is read again at once.
func (a *core) readPage(ctx context.Context, rawURL string) (Page, error) {
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
func (a *core) readPageOnce(ctx context.Context, rawURL string) (_ Page, shared bool, _ error) {
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
			l.mu.Lock()
			if r.err != nil {
				if l.pages[rawURL] == r {
					delete(l.pages, rawURL)
				}
			} else if c := canonicalURL(rawURL, r.pg); c != rawURL && l.pages[c] == nil {
				// the page under its one URL: an asker of that URL (or
				// of the link that led here) reads it from here
				l.pages[c] = r
			}
			l.mu.Unlock()
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
func (a *core) fetchPage(ctx context.Context, rawURL string) (Page, error) {
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
func (a *core) readAhead(ctx context.Context, question string) {
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

// canonicalURL is the one URL of the page read at rawURL: where its
// redirects ended, or the rel=canonical URL it declares when that is on the
// same site (a page may not claim another site's URL).
func canonicalURL(rawURL string, pg Page) string {
	u := normURL(rawURL)
	if pg.FinalURL != "" {
		u = normURL(pg.FinalURL)
	}
	if pg.Canonical != "" {
		if c := normURL(pg.Canonical); c != u && sameSite(c, u) {
			u = c
		}
	}
	return u
}

// sameSite reports whether two URLs are on the same host (ignoring "www.").
func sameSite(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil || ua.Hostname() == "" {
		return false
	}
	h := func(u *url.URL) string { return strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.") }
	return h(ua) == h(ub)
}

// minSameText is the shortest text (in bytes, without white space) by which
// two pages are taken for one: shorter ones (an error page, a cookie wall)
// say nothing about being the same page.
const minSameText = 200

// textKey identifies a page by its extracted text ("" for a text too short
// to tell): two URLs that read the same text are one source.
func textKey(text string) string {
	flat := strings.Join(strings.Fields(text), "")
	if len(flat) < minSameText {
		return ""
	}
	return hashID("text", flat)
}

// withAlias adds urls to a source's aliases (not its own URL, no repeats).
func withAlias(src Source, urls ...string) Source {
	for _, u := range urls {
		if u != "" && u != src.URL && !slices.Contains(src.Aliases, u) {
			src.Aliases = append(src.Aliases, u)
		}
	}
	return src
}
