//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stderrKeep is how much of the worker's stderr is kept to explain a crash.
const stderrKeep = 16 << 10

// runChild runs code in a fresh worker process.
func (r *Runner) runChild(ctx context.Context, code string) (Result, error) {
	req, err := json.Marshal(workerRequest{
		Code:        code,
		TimeoutMS:   max(1, r.opts.Timeout.Milliseconds()),
		MaxOutput:   r.opts.MaxOutput,
		MemoryBytes: r.opts.MemoryBytes,
	})
	if err != nil {
		return Result{}, fmt.Errorf("%w: encoding request: %w", ErrInternal, err)
	}
	dir, err := os.MkdirTemp("", "sandbox-")
	if err != nil {
		return Result{}, fmt.Errorf("%w: working directory: %w", ErrInternal, err)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			r.log.WarnContext(ctx, "sandbox: removing worker directory", "dir", dir, "err", err)
		}
	}()

	// hard ends the worker: ctx done, the time limit plus grace, or a flood on stdout.
	hard, stop := context.WithTimeout(ctx, r.opts.Timeout+r.opts.KillGrace)
	defer stop()
	// JSON may escape each output byte into up to 6; the worker itself enforces MaxOutput.
	stdout := &cappedBuffer{max: 2*6*r.opts.MaxOutput + 64<<10, overflow: stop}
	stderr := &cappedBuffer{max: stderrKeep}

	cmd := exec.CommandContext(hard, r.exec, r.opts.Args...)
	cmd.Env = r.opts.Env
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(req) // closed by os/exec after the request is copied
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second

	runErr := cmd.Run()

	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("sandbox: run stopped: %w", err)
	}
	if stdout.Overflowed() {
		return Result{}, fmt.Errorf("%w: worker wrote more than %d bytes", ErrOutputTooLarge, stdout.max)
	}
	// A worker that wrote a whole response is believed, whatever its exit status.
	var resp workerResponse
	if decErr := json.Unmarshal(stdout.Bytes(), &resp); decErr == nil {
		res := Result{Output: resp.Output, Value: resp.Value, Duration: time.Duration(resp.DurationUS) * time.Microsecond}
		if runErr != nil && resp.Error == nil {
			return res, fmt.Errorf("%w: worker %v after a successful response", ErrInternal, runErr)
		}
		return res, fromWire(resp.Error)
	} else if runErr == nil {
		return Result{}, fmt.Errorf("%w: worker response: %w (stderr: %s)", ErrInternal, decErr, firstLines(stderr.String()))
	}
	if hard.Err() != nil {
		return Result{}, fmt.Errorf("%w: worker killed after %s", ErrTimeout, r.opts.Timeout+r.opts.KillGrace)
	}
	return Result{}, r.workerFailure(ctx, runErr, stderr.String())
}

// workerFailure explains a worker that ended without a response.
func (r *Runner) workerFailure(ctx context.Context, runErr error, stderr string) error {
	var exitErr *exec.ExitError
	if !errors.As(runErr, &exitErr) {
		return fmt.Errorf("%w: starting worker: %w", ErrInternal, runErr)
	}
	if looksLikeOOM(stderr) {
		return fmt.Errorf("%w: worker ran out of its address space", ErrMemory)
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		// We did not send it (hard was not done): the kernel's OOM killer is the likely sender.
		return fmt.Errorf("%w: worker killed by SIGKILL", ErrMemory)
	}
	r.log.WarnContext(ctx, "sandbox: worker failed", "status", exitErr.String(), "stderr", firstLines(stderr))
	return fmt.Errorf("%w: worker %s: %s", ErrInternal, exitErr, firstLines(stderr))
}

// looksLikeOOM reports whether a worker's stderr shows it hit its address-space limit: the Go
// runtime failing to map memory or to start a thread. A worker built with -race (the test binary)
// reports a failed heap reservation as "address space collisions", or its sanitizer fails to allocate.
func looksLikeOOM(stderr string) bool {
	for _, s := range []string{
		"out of memory",
		"cannot allocate memory",
		"failed to create new OS thread",
		"too many address space collisions for -race mode",
		"ThreadSanitizer failed to allocate",
		"ThreadSanitizer: out of memory",
	} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// firstLines returns the first few lines of s, for messages and logs.
func firstLines(s string) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", 4)
	if len(lines) > 3 {
		lines = lines[:3]
	}
	return strings.Join(lines, " | ")
}

// cappedBuffer keeps up to max bytes; past that it discards, records the overflow and calls
// overflow once. os/exec writes to it from one goroutine, the caller reads after Wait.
type cappedBuffer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	max      int
	over     bool
	overflow func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		if !b.over {
			b.over = true
			if b.overflow != nil {
				b.overflow()
			}
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

func (b *cappedBuffer) String() string { return string(b.Bytes()) }

func (b *cappedBuffer) Overflowed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}
