package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/sqlitetest"
	"deepresearch/storage/sqlstore"
)

// fakeResearcher is a research.Researcher whose research of a thread is a
// few model calls; the calls a thread finished are kept (as the agent's
// checkpoints are), so Continue carries on after the last one and a Start
// of a finished thread returns its result without calling anything again.
type fakeResearcher struct {
	mu      sync.Mutex
	results []research.Result // one per new thread, in order
	err     error             // every research fails with it
	steps   int               // model calls per research (0: 2)
	// holdAt, when set, makes call number holdAt wait for hold (or ctx)
	// before it starts: a process that dies there.
	holdAt  int
	hold    chan struct{}
	reached chan struct{} // told when a call waits on hold
	calls   []string      // every model call made: thread#n
	reqs    []research.StartRequest
	threads map[string]*fakeThread
}

type fakeThread struct {
	done     int
	res      research.Result
	finished bool
}

func (f *fakeResearcher) Start(ctx context.Context, req research.StartRequest, _ research.ProgressSink) (research.Outcome, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	if f.threads == nil {
		f.threads = map[string]*fakeThread{}
	}
	th := f.threads[req.ThreadID]
	if th == nil {
		if f.err != nil {
			f.mu.Unlock()
			return research.Outcome{}, f.err
		}
		if len(f.results) == 0 {
			f.mu.Unlock()
			return research.Outcome{}, errors.New("no more results")
		}
		th = &fakeThread{res: f.results[0]}
		f.results = f.results[1:]
		f.threads[req.ThreadID] = th
	}
	f.mu.Unlock()
	return f.work(ctx, req.ThreadID, th)
}

func (f *fakeResearcher) Continue(ctx context.Context, threadID string, _ research.ProgressSink) (research.Outcome, error) {
	f.mu.Lock()
	th := f.threads[threadID]
	f.mu.Unlock()
	if th == nil || th.finished {
		return research.Outcome{}, research.ErrNothingToContinue
	}
	return f.work(ctx, threadID, th)
}

func (f *fakeResearcher) Resume(context.Context, string, string, research.Answer, research.ProgressSink) (research.Outcome, error) {
	return research.Outcome{}, errors.New("a digest is never resumed")
}

func (f *fakeResearcher) Cancel(context.Context, string) error { return nil }

func (f *fakeResearcher) work(ctx context.Context, threadID string, th *fakeThread) (research.Outcome, error) {
	steps := f.steps
	if steps == 0 {
		steps = 2
	}
	for {
		f.mu.Lock()
		if th.finished {
			res := th.res
			f.mu.Unlock()
			return research.Outcome{Result: &res}, nil
		}
		n := th.done + 1
		hold := f.hold
		f.mu.Unlock()
		if n == f.holdAt && hold != nil {
			if f.reached != nil {
				f.reached <- struct{}{}
			}
			select {
			case <-hold:
			case <-ctx.Done():
				return research.Outcome{}, fmt.Errorf("call %d: %w", n, ctx.Err())
			}
		}
		f.mu.Lock()
		f.calls = append(f.calls, fmt.Sprintf("%s#%d", threadID, n))
		th.done = n
		th.finished = n >= steps
		f.mu.Unlock()
	}
}

func (f *fakeResearcher) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeResearcher) Reqs() []research.StartRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// fakePoster is a channel: it keeps the digests' messages and the files
// shared in their threads.
type fakePoster struct {
	mu        sync.Mutex
	messages  []schedule.DigestMessage
	files     map[string]string // name → content, shared
	threads   []string          // the thread of each shared file
	fileIDs   map[string]string // thread/name → file id
	staged    int
	charts    map[string][]research.Chart // report name → its charts shared
	chartIn   []string                    // the thread of each ShareCharts
	deleted   []string
	approvals []schedule.Job
	// dieInUpload, when set, makes an upload stage its file, close it and
	// wait for ctx or unblock: a process that dies before sharing the
	// report.
	dieInUpload chan struct{}
	unblock     chan struct{}
}

func (p *fakePoster) PostDigest(_ context.Context, channel string, m schedule.DigestMessage) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.messages = append(p.messages, m)
	return digestTS(len(p.messages)), nil
}

// digestTS is the ts of the n-th digest message posted (from 1).
func digestTS(n int) string { return "1700000000.00000" + string(rune('0'+n)) }

// FindDigest finds a message of the run among those posted.
func (p *fakePoster) FindDigest(_ context.Context, channel, runID string, _ time.Time) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range p.messages {
		if m.RunID == runID {
			return digestTS(i + 1), nil
		}
	}
	return "", nil
}

func (p *fakePoster) UploadReport(ctx context.Context, channel, threadTS, name, title, md string, charts []research.Chart, st research.Staging) (string, error) {
	p.mu.Lock()
	p.staged++
	id := fmt.Sprintf("F%d", p.staged)
	die := p.dieInUpload
	p.dieInUpload = nil
	p.mu.Unlock()
	if err := st.Stage(ctx, id); err != nil {
		return "", err
	}
	if die != nil {
		close(die)
		select {
		case <-ctx.Done():
		case <-p.unblock:
		}
		return "", errors.New("the process died")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files, p.fileIDs = map[string]string{}, map[string]string{}
	}
	p.files[name] = md
	p.fileIDs[threadTS+"/"+name] = id
	p.threads = append(p.threads, threadTS)
	return id, nil
}

func (p *fakePoster) FindFile(_ context.Context, channel, threadTS, name string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.fileIDs[threadTS+"/"+name]
	return id, ok
}

func (p *fakePoster) ShareCharts(_ context.Context, channel, threadTS, name string, charts []research.Chart, check bool, _ research.Staging) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(charts) == 0 {
		return
	}
	if p.charts == nil {
		p.charts = map[string][]research.Chart{}
	}
	p.charts[name] = charts
	p.chartIn = append(p.chartIn, threadTS)
}

func (p *fakePoster) DeleteFile(_ context.Context, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted = append(p.deleted, id)
	return true
}

func (p *fakePoster) RequestApproval(_ context.Context, job schedule.Job) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.approvals = append(p.approvals, job)
	return nil
}

func (p *fakePoster) Messages() []schedule.DigestMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.messages)
}

func (p *fakePoster) Approvals() []schedule.Job {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.approvals)
}

// world is a database shared by processes: the schedules, the runs, the
// research and the channel.
type world struct {
	st     *sqlstore.Schedules
	runs   *sqlstore.Runs
	slack  *sqlstore.Slack // the digests' summary messages
	res    *fakeResearcher
	poster schedule.Poster
	clk    *clock.Manual
	// status is a process's view of the digests' summary messages, by
	// its name (default: slack).
	status map[string]schedule.StatusMessages
}

func newWorld(t *testing.T, clk *clock.Manual, res *fakeResearcher, poster schedule.Poster) *world {
	t.Helper()
	db := sqlitetest.Open(t)
	return &world{st: sqlite.NewSchedules(db), runs: sqlite.NewRuns(db), slack: sqlite.NewSlack(db), res: res, poster: poster, clk: clk}
}

// proc is one process on the world: its run service (with the digest face)
// and its scheduler.
type proc struct {
	svc   *research.Service
	sched *schedule.Scheduler
}

func (w *world) proc(t *testing.T, name string, edit ...func(*research.ServiceOptions)) *proc {
	t.Helper()
	o := research.ServiceOptions{Owner: name, Kinds: []string{schedule.RunKind}, Lease: time.Minute, HeartbeatEvery: 20 * time.Millisecond, Clock: w.clk,
		RoundWait: time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	for _, e := range edit {
		e(&o)
	}
	var status schedule.StatusMessages = w.slack
	if s, ok := w.status[name]; ok {
		status = s
	}
	face := &schedule.Face{Store: w.st, Poster: w.poster, Status: status}
	svc := research.NewService(w.runs, w.res, face, o)
	t.Cleanup(func() { svc.Shutdown(5 * time.Second) })
	return &proc{svc: svc, sched: &schedule.Scheduler{Store: w.st, Runs: svc, Clock: w.clk, Grace: time.Hour}}
}

// tick ticks p's scheduler and waits until no run is queued or running.
func (w *world) tick(t *testing.T, p *proc) {
	t.Helper()
	if err := p.sched.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.settle(t, p)
}

// settle lets ps pick up runs until none is queued or running.
func (w *world) settle(t *testing.T, ps ...*proc) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, p := range ps {
			p.svc.Recover(ctx)
		}
		active, err := w.runs.ListRuns(ctx, research.RunFilter{States: []research.RunState{research.StateQueued, research.StateRunning}})
		if err != nil {
			t.Fatal(err)
		}
		if len(active) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs still active: %+v", active)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
