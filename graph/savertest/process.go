package savertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"deepresearch/graph"
)

// The multi-process race: a store's test starts several copies of its own
// test binary (RunProcesses), each opening the same, fresh database and
// calling Worker; the parent then checks the result (CheckProcesses). It shows
// what goroutines in one process cannot: migrations applied by processes
// starting at once, the compare-and-set holding across processes, and a
// resume accepted exactly once across processes.

// Environment variables passed to the worker processes.
const (
	EnvTarget = "STORAGETEST_TARGET" // the database the workers open
	envWorker = "STORAGETEST_WORKER" // the worker's number, 1…n
)

// WorkerTarget returns the database a worker process must open, or "" in the
// parent (the test then runs normally).
func WorkerTarget() string { return os.Getenv(EnvTarget) }

const (
	raceThread   = "race"
	resumeThread = "resume"
	attempts     = 25
)

// Worker is the body of a worker process: it starts (or loses the race to
// start) the two threads, makes attempts commits on the race thread from the
// head it just loaded, and tries once to resume the resume thread. It prints
// one line, "won=N resumed=R", for the parent.
func Worker(ctx context.Context, s graph.Saver) error {
	n, err := strconv.ParseInt(os.Getenv(envWorker), 10, 64)
	if err != nil {
		return fmt.Errorf("bad %s: %w", envWorker, err)
	}
	for _, th := range []string{raceThread, resumeThread} {
		err := s.Commit(ctx, &graph.Batch{ThreadID: th, Checkpoints: []*graph.StoredCheckpoint{snap(mkcp(1, 0))}})
		if err != nil && !errors.Is(err, graph.ErrConflict) {
			return fmt.Errorf("start %s: %w", th, err)
		}
	}
	won := 0
	for k := int64(1); k <= attempts; k++ {
		ch, err := s.Load(ctx, raceThread, "", 0)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		id := n*1_000_000 + k
		err = s.Commit(ctx, &graph.Batch{ThreadID: raceThread, ExpectHead: ch.Head,
			Checkpoints: []*graph.StoredCheckpoint{mkcp(id, ch.Head)},
			Writes:      []graph.PendingWrite{wr(id, 0, 0, "by", fmt.Sprint(n))}})
		switch {
		case err == nil:
			won++
		case !errors.Is(err, graph.ErrConflict):
			return fmt.Errorf("commit: %w", err)
		}
	}
	resumed := 0
	switch err := s.PutResume(ctx, resumeThread, "", 1, wr(1, 0, -4, "__resume__", fmt.Sprint(n))); {
	case err == nil:
		resumed = 1
	case !errors.Is(err, graph.ErrAlreadyResumed):
		return fmt.Errorf("resume: %w", err)
	}
	fmt.Printf("won=%d resumed=%d\n", won, resumed)
	return nil
}

// Result is what the worker processes reported, summed.
type Result struct{ Won, Resumed int }

// RunProcesses starts n copies of the test binary running test (the name of
// the calling test function) with target in the environment, waits for them
// and sums what they report.
func RunProcesses(t *testing.T, test, target string, n int) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type out struct {
		b   []byte
		err error
	}
	done := make(chan out, n)
	for i := 1; i <= n; i++ {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), EnvTarget+"="+target, fmt.Sprintf("%s=%d", envWorker, i))
		go func() {
			b, err := cmd.CombinedOutput()
			done <- out{b, err}
		}()
	}
	var r Result
	for i := 0; i < n; i++ {
		o := <-done
		if o.err != nil {
			t.Fatalf("worker process: %v\n%s", o.err, o.b)
		}
		var won, resumed int
		found := false
		for _, line := range strings.Split(string(o.b), "\n") {
			if _, err := fmt.Sscanf(line, "won=%d resumed=%d", &won, &resumed); err == nil {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("worker process said no result:\n%s", o.b)
		}
		r.Won += won
		r.Resumed += resumed
	}
	return r
}

// CheckProcesses checks, on a fresh handle, what the workers left: one
// straight chain holding exactly the winning commits, and one resume.
func CheckProcesses(t *testing.T, s graph.Saver, r Result) {
	t.Helper()
	if r.Resumed != 1 {
		t.Errorf("%d processes resumed the same interrupt, want 1", r.Resumed)
	}
	ch := load(t, s, resumeThread, "", 0)
	if ws := ch.Checkpoints[0].Writes; len(ws) != 1 {
		t.Errorf("resume writes = %s", writesString(ws))
	}
	straightChain(t, s, s, raceThread, r.Won)
	t.Logf("%d commits won", r.Won)
}
