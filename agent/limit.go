package agent

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// Default concurrency limits (see Options). A run's model calls are
// capped at the widest step of a standard run: four subtasks summarising
// three queries each at once.
const (
	DefaultRunModelCalls     = 12
	DefaultProcessModelCalls = 256
	DefaultHostFetches       = 4
)

// slots is a counting semaphore; a nil *slots never blocks.
type slots chan struct{}

func newSlots(n int) slots {
	if n <= 0 {
		return nil
	}
	return make(slots, n)
}

// take waits for a slot (or ctx); release gives it back.
func (s slots) take(ctx context.Context) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runLimits are the limits of one run (one Start, Resume or Continue): its
// model calls and its page fetches per host; and what the run shares among
// its researchers: the pages read (see readPage) and the work done ahead of
// need (see readAhead), which ends with the run.
type runLimits struct {
	model slots
	per   int
	mu    sync.Mutex
	hosts map[string]slots
	pages map[string]*pageRead
	// team maps a subtask (see teamClaim) to the pages its team's
	// members picked to read, by the member that picked each.
	team map[string]map[string]int

	bgCtx context.Context
	bg    *sync.WaitGroup
}

type runLimitsKey struct{}

// withRunLimits starts a run's limits; stop ends the work the run started
// ahead of need and waits for it.
func (a *core) withRunLimits(ctx context.Context) (_ context.Context, stop func()) {
	l := &runLimits{model: newSlots(a.opts.RunModelCalls), per: a.opts.HostFetches, hosts: map[string]slots{},
		pages: map[string]*pageRead{}, team: map[string]map[string]int{}, bg: &sync.WaitGroup{}}
	ctx = context.WithValue(ctx, runLimitsKey{}, l)
	bgCtx, cancel := context.WithCancel(ctx)
	l.bgCtx = bgCtx
	return ctx, func() {
		cancel()
		l.bg.Wait()
	}
}

func runLimitsFrom(ctx context.Context) *runLimits {
	l, _ := ctx.Value(runLimitsKey{}).(*runLimits)
	return l
}

// teamClaim claims a search result's page for the member of the team
// researching t's subtask, so that the members read different pages (each
// page's findings once): false when another member picked it first in
// this run. A researcher alone always gets its page.
func teamClaim(ctx context.Context, t researchTask, u string) bool {
	l := runLimitsFrom(ctx)
	if l == nil {
		return true
	}
	key := fmt.Sprintf("%d.%d.%d", t.Turn, t.Round, t.Index)
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.team[key]
	if m == nil {
		m = map[string]int{}
		l.team[key] = m
	}
	if who, ok := m[u]; ok && who != t.Member {
		return false
	}
	m[u] = t.Member
	return true
}

// modelSlot waits until both the run and the process may make another
// model call.
func (a *core) modelSlot(ctx context.Context) (func(), error) {
	var run slots
	if l := runLimitsFrom(ctx); l != nil {
		run = l.model
	}
	relRun, err := run.take(ctx)
	if err != nil {
		return nil, err
	}
	relProc, err := a.modelCalls.take(ctx)
	if err != nil {
		relRun()
		return nil, err
	}
	return func() { relProc(); relRun() }, nil
}

// fetchSlot waits until the run may fetch another page from rawURL's host.
func fetchSlot(ctx context.Context, rawURL string) (func(), error) {
	l := runLimitsFrom(ctx)
	if l == nil || l.per <= 0 {
		return func() {}, nil
	}
	host := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		host = strings.ToLower(u.Hostname())
	}
	l.mu.Lock()
	s, ok := l.hosts[host]
	if !ok {
		s = newSlots(l.per)
		l.hosts[host] = s
	}
	l.mu.Unlock()
	return s.take(ctx)
}
