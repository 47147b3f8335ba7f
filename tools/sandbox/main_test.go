package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// workerEnv is how a test Runner asks the test binary to act as a worker; see TestMain.
const workerEnv = "SANDBOX_WORKER"

// TestMain lets the test binary itself serve as the worker binary. SANDBOX_WORKER selects:
//
//	1      the real worker (WorkerMain)
//	probe  report the process's environment, working directory and stdin in the response output
//	crash  write to stderr and exit 7 without a response
//	hang   never answer
//	flood  write far more than any response may be
func TestMain(m *testing.M) {
	switch os.Getenv(workerEnv) {
	case "":
		os.Exit(m.Run())
	case "1":
		os.Exit(WorkerMain(context.Background(), os.Stdin, os.Stdout))
	case "probe":
		os.Exit(probeWorker())
	case "crash":
		io.WriteString(os.Stderr, "worker exploded on purpose\n")
		os.Exit(7)
	case "hang":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "flood":
		chunk := strings.Repeat("z", 1<<16)
		for {
			if _, err := io.WriteString(os.Stdout, chunk); err != nil {
				os.Exit(1)
			}
		}
	default:
		os.Exit(2)
	}
}

// probeWorker answers with what the worker process could see, one fact per line.
func probeWorker() int {
	stdin, err := io.ReadAll(os.Stdin) // returns only once the parent closes stdin
	wd, _ := os.Getwd()
	entries, _ := os.ReadDir(".")
	lines := []string{
		"env=" + strings.Join(os.Environ(), ";"),
		"wd=" + wd,
		"entries=" + strconv.Itoa(len(entries)),
		"stdin_ok=" + strconv.FormatBool(err == nil && json.Valid(stdin)),
		"args=" + strings.Join(os.Args[1:], " "),
	}
	resp := workerResponse{Output: strings.Join(lines, "\n")}
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil {
		return 1
	}
	return 0
}
