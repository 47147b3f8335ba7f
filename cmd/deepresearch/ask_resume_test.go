package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/research"
	"deepresearch/storage"
)

// TestAskKilledResumesWithThread: an `ask` process killed while the writer
// works leaves its run running under a lease; `ask --thread ID` waits for
// the lease to expire, takes the run over and continues it from the last
// checkpoint — no model call that finished before the kill is made again —
// and writes the report once. A third `ask --thread ID` writes nothing.
func TestAskKilledResumesWithThread(t *testing.T) {
	bin := buildBinary(t)
	var hang atomic.Bool
	hang.Store(true)
	writing := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	phase := 1
	calls := map[int]map[string]int{1: {}, 2: {}, 3: {}}
	vars, _ := newAskWorld(t, worldOpts{wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if r.Node() == "writer" && hang.Load() {
			once.Do(func() { close(writing) })
			return llmtest.Hang() // never answered: not a finished call
		}
		mu.Lock()
		calls[phase][r.Node()]++
		mu.Unlock()
		return scripted
	}})
	vars["DEEPRESEARCH_RUN_LEASE"] = "1s"

	cmd := exec.Command(bin, "ask", "What does the EU AI Act require?")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var firstErr syncBuffer
	cmd.Stderr = &firstErr
	var firstOut syncBuffer
	cmd.Stdout = &firstOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-writing:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the research never reached the writer:\n%s", firstErr.String())
	}
	// The checkpoints are written behind the steps (graph.DurabilityAsync:
	// a crash loses at most the last few milliseconds): the supervisor's,
	// just before the writer's call, is given time to land.
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	m := regexp.MustCompile(`thread (cli-\S+)`).FindStringSubmatch(firstErr.String())
	if m == nil {
		t.Fatalf("no thread id on stderr:\n%s", firstErr.String())
	}
	thread := m[1]
	mu.Lock()
	phase = 2
	before := calls[1]
	mu.Unlock()
	hang.Store(false)
	if before["planner"] == 0 {
		t.Fatalf("no planner call before the kill: %v", before)
	}
	// the killed process's run is still running, under its lease
	ctx := context.Background()
	db, err := storage.Open(ctx, storage.Config{DataDir: vars["DEEPRESEARCH_DATA_DIR"]})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run, err := db.Runs().LatestRun(ctx, thread)
	if err != nil || run.State != research.StateRunning || !strings.HasPrefix(run.Owner, "ask-") {
		t.Fatalf("after the kill: %+v, %v", run, err)
	}

	var stdout, stderr bytes.Buffer
	if err := runAsk(ctx, []string{"--thread", thread}, getenv(vars), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	mu.Lock()
	after := calls[2]
	phase = 3
	mu.Unlock()
	for node, n := range before {
		if node != "writer" && after[node] > 0 {
			t.Errorf("node %s: %d calls before the kill and %d again after it (want none again)", node, n, after[node])
		}
	}
	if after["writer"] == 0 {
		t.Errorf("the writer was never called after the takeover: %v", after)
	}
	if n := strings.Count(stdout.String(), "## References"); n != 1 {
		t.Errorf("the report came %d times on stdout, want once:\n%s", n, stdout.String())
	}
	if firstOut.String() != "" {
		t.Errorf("the killed process wrote a report: %q", firstOut.String())
	}
	run, err = db.Runs().Run(ctx, run.ID)
	if err != nil || run.State != research.StateDone || run.Attempt < 2 {
		t.Errorf("after the takeover: %+v, %v", run, err)
	}
	if _, err := db.Runs().Upload(ctx, run.ID); err != nil {
		t.Errorf("no upload recorded: %v", err)
	}

	// The thread's turn is done: a further resume writes nothing.
	stdout.Reset()
	stderr.Reset()
	err = runAsk(ctx, []string{"--thread", thread}, getenv(vars), strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "nothing to continue") || stdout.Len() != 0 {
		t.Errorf("third ask: err %v, stdout %q", err, stdout.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls[3]) != 0 {
		t.Errorf("model calls on the third ask: %v", calls[3])
	}
}
