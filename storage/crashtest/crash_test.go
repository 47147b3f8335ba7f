// Package crashtest kills real processes running graphs on SQLite and
// Postgres with SIGKILL at random moments, restarts them, and checks that
// every run finishes with the right state and that no task whose writes had
// been stored ran again.
package crashtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"deepresearch/graph"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlite"
)

const (
	threads = 10
	workers = 6
	chain   = 8
)

type state struct {
	Items []int    `json:"items"`
	Steps []string `json:"steps"`
	Total int      `json:"total"`
}

func build(saver graph.Saver, rnd *rand.Rand, mu *sync.Mutex) (*graph.Graph[state], error) {
	s := graph.NewSchema[state]()
	items := graph.Append(s, "items", func(st *state) *[]int { return &st.Items })
	steps := graph.Append(s, "steps", func(st *state) *[]string { return &st.Steps })
	total := graph.LastValue(s, "total", func(st *state) *int { return &st.Total })
	pause := func(lo, hi int) {
		mu.Lock()
		d := time.Duration(lo+rnd.IntN(hi-lo)) * time.Millisecond
		mu.Unlock()
		time.Sleep(d)
	}
	b := graph.New(s)
	b.AddNode("plan", func(ctx context.Context, st state) ([]graph.Write, error) {
		pause(2, 10)
		return nil, nil
	})
	graph.AddWorker(b, "work", func(ctx context.Context, i int) ([]graph.Write, error) {
		pause(20, 80)
		return []graph.Write{items.Set([]int{i * i})}, nil
	})
	b.AddNode("gather", func(ctx context.Context, st state) ([]graph.Write, error) {
		sum := 0
		for _, v := range st.Items {
			sum += v
		}
		return []graph.Write{total.Set(sum)}, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddConditionalEdges("plan", func(state) []graph.Route {
		rs := make([]graph.Route, workers)
		for i := range rs {
			rs[i] = graph.Send("work", i)
		}
		return rs
	})
	b.AddEdge("work", "gather")
	prev := "gather"
	for i := range chain {
		name := "s" + strconv.Itoa(i)
		b.AddNode(name, func(ctx context.Context, st state) ([]graph.Write, error) {
			pause(10, 40)
			return []graph.Write{steps.Set([]string{name})}, nil
		})
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.End)
	return b.Compile(graph.Options{Saver: saver})
}

func wantSteps() []string {
	var out []string
	for i := range chain {
		out = append(out, "s"+strconv.Itoa(i))
	}
	return out
}

func wantTotal() int {
	t := 0
	for i := range workers {
		t += i * i
	}
	return t
}

// TestMain turns the test binary into the child process when asked.
func TestMain(m *testing.M) {
	if os.Getenv("CRASHTEST_CHILD") == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

func openStore(ctx context.Context, kind, dsn string) (graph.Saver, func(), error) {
	switch kind {
	case "sqlite":
		s, err := sqlite.Open(ctx, sqlite.Options{Path: dsn})
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	case "postgres":
		s, err := postgres.Open(ctx, postgres.Options{URL: dsn})
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q", kind)
}

// child runs every thread to the end, logging task starts and stored writes.
func child() int {
	ctx := context.Background()
	store, closeStore, err := openStore(ctx, os.Getenv("CRASHTEST_STORE"), os.Getenv("CRASHTEST_DSN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open store:", err)
		return 3
	}
	defer closeStore()
	logf, err := os.OpenFile(os.Getenv("CRASHTEST_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	var logMu sync.Mutex
	write := func(line string) {
		logMu.Lock()
		_, _ = logf.WriteString(line + "\n") // one write(2) per line; survives SIGKILL
		logMu.Unlock()
	}
	seed, _ := strconv.ParseUint(os.Getenv("CRASHTEST_SEED"), 10, 64)
	var rmu sync.Mutex
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g, err := build(store, rnd, &rmu)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	events := func(e graph.Event) {
		key := fmt.Sprintf("%s/%d/%d", e.ThreadID, e.CheckpointID, e.Task)
		switch e.Kind {
		case graph.EventNodeStart:
			write("start " + key + " " + e.Node)
		case graph.EventWritesSaved:
			write("saved " + key + " " + e.Node)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	sem := make(chan struct{}, 3)
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			id := "thread-" + strconv.Itoa(i)
			snap, err := g.State(ctx, id, 0)
			cfg := graph.Config{ThreadID: id, Events: events}
			switch {
			case errors.Is(err, graph.ErrNotFound):
				cfg.Input = []graph.Write{{Channel: "total", Value: 0}}
			case err != nil:
				errs <- err
				return
			case len(snap.Next) == 0:
				return // finished in an earlier life
			}
			_, err = g.Invoke(ctx, cfg)
			// A commit sent by the process killed before this one can land
			// after this one read the thread: the saver refuses the stale
			// write (ErrConflict), and the thread goes on from its new head,
			// as a restarted service would.
			for try := 0; errors.Is(err, graph.ErrConflict) && try < 3; try++ {
				write("conflict " + id)
				cfg.Input = nil
				if snap, serr := g.State(ctx, id, 0); serr == nil && len(snap.Next) == 0 {
					return
				}
				_, err = g.Invoke(ctx, cfg)
			}
			if err != nil {
				errs <- fmt.Errorf("%s: %w", id, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	code := 0
	for err := range errs {
		fmt.Fprintln(os.Stderr, "child:", err)
		code = 1
	}
	return code
}

func TestCrashSQLite(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "crash.db")
	crashLoop(t, "sqlite", dsn)
}

func TestCrashPostgres(t *testing.T) {
	crashLoop(t, "postgres", pgtest.Schema(t))
}

func crashLoop(t *testing.T, kind, dsn string) {
	logPath := filepath.Join(t.TempDir(), "events.log")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 1))
	kills, lives := 0, 0
	for life := 0; ; life++ {
		if life > 80 {
			t.Fatal("the child never finished in 80 lives")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			"CRASHTEST_CHILD=1", "CRASHTEST_STORE="+kind, "CRASHTEST_DSN="+dsn,
			"CRASHTEST_LOG="+logPath, "CRASHTEST_SEED="+strconv.FormatUint(seed+uint64(life), 10))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lives++
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// the first lives are killed at random moments; later ones may finish
		var timer <-chan time.Time
		if life < 20 {
			timer = time.After(time.Duration(30+rnd.IntN(250)) * time.Millisecond)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("child failed: %v\n%s", err, stderr.String())
			}
			verify(t, kind, dsn, logPath, kills, lives)
			return
		case <-timer:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
		}
	}
}

func verify(t *testing.T, kind, dsn, logPath string, kills, lives int) {
	t.Helper()
	ctx := context.Background()
	store, closeStore, err := openStore(ctx, kind, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	var mu sync.Mutex
	g, err := build(store, rand.New(rand.NewPCG(1, 2)), &mu)
	if err != nil {
		t.Fatal(err)
	}
	for i := range threads {
		id := "thread-" + strconv.Itoa(i)
		snap, err := g.State(ctx, id, 0)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		st := snap.State
		if len(snap.Next) != 0 || st.Total != wantTotal() || len(st.Items) != workers || !slices.Equal(st.Steps, wantSteps()) {
			t.Errorf("%s ended wrong: next %v state %+v", id, snap.Next, st)
		}
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := map[string]bool{}
	starts, reruns, repeatsAfterSave := 0, 0, 0
	startCount := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue // a line cut by SIGKILL
		}
		key := fields[1]
		switch fields[0] {
		case "start":
			starts++
			startCount[key]++
			if startCount[key] > 1 {
				reruns++
			}
			if saved[key] {
				repeatsAfterSave++
				t.Errorf("task %s ran again after its writes were stored", key)
			}
		case "saved":
			saved[key] = true
		}
	}
	t.Logf("%s: %d lives, %d SIGKILLs, %d task starts, %d re-runs of unfinished tasks, %d re-runs of stored tasks",
		kind, lives, kills, starts, reruns, repeatsAfterSave)
	if kills < 3 {
		t.Errorf("only %d kills landed; the test proved too little", kills)
	}
}
