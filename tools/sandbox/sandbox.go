// Package sandbox runs short JavaScript programs written by the research agent (the "coding" action:
// growth rates, unit conversions, sums over a table, date arithmetic) and returns what they printed.
//
// Programs run on goja, a pure Go ECMAScript 5.1+/ES2015 interpreter that has no I/O of its own. The
// sandbox adds exactly one host object, console (log, info, warn, error, debug), whose output is
// captured and capped. Everything else is the standard library of the language: Math, Date, JSON,
// RegExp, Map, Set, Array, String, Number, ... There is no require, no process, no fetch or
// XMLHttpRequest, no timers, no file system and no way to start a process.
//
// A program is a script, not a function body: the value of its last expression statement is
// returned as Result.Value, and a top-level return is a syntax error. Date's local-time methods use
// the time zone of the process that runs the program (a worker has an empty environment, so the
// system zone unless Options.Env sets TZ); programs that need a fixed zone should use the UTC methods.
//
// Two modes:
//
//   - Child mode (Options.Exec set, Linux only): each program runs in a fresh process started from
//     Exec with the hidden subcommand WorkerCommand. That process must call WorkerMain with its
//     stdin and stdout. It gets an empty environment, a fresh empty working directory that is
//     removed afterwards, and stdin closed after the request. It limits its own address space
//     (RLIMIT_AS) and stops the program when its heap passes Options.MemoryBytes; the parent kills
//     its whole process group with SIGKILL when it outlives Timeout+KillGrace or ctx is done.
//     Use this mode in production.
//   - In-process mode (Options.Exec empty): the program runs on a goroutine of the caller's process
//     with the time limit and output cap only. There is NO memory limit: a program that allocates
//     without bound can exhaust the host process, and a built-in that does not yield to the
//     interpreter (a catastrophic regular expression, a deeply nested JSON.parse) cannot be
//     interrupted. Meant for development, tests and trusted callers.
//
// Errors are sentinels, matched with errors.Is: ErrTimeout, ErrMemory, ErrOutputTooLarge, ErrSyntax,
// ErrException, ErrInvalidCode and ErrInternal, plus context.Canceled/DeadlineExceeded when ctx ends
// the run. Syntax errors and uncaught exceptions are *ScriptError values carrying the JavaScript
// message and its line and column. Whatever the program printed before it failed is returned in
// Result.Output alongside the error.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// WorkerCommand is the hidden subcommand that Runner passes to Options.Exec by default. A binary
// used as the worker must, when called with it, run os.Exit(sandbox.WorkerMain(ctx, os.Stdin, os.Stdout)).
const WorkerCommand = "sandbox-worker"

// Defaults for zero Options fields.
const (
	DefaultTimeout       = 5 * time.Second
	DefaultMemoryBytes   = 256 << 20
	DefaultMaxOutput     = 64 << 10
	DefaultMaxCodeSize   = 64 << 10
	DefaultKillGrace     = 2 * time.Second
	DefaultMaxConcurrent = 4
)

// Sentinel errors returned (wrapped) by Runner.Run.
var (
	// ErrTimeout: the program ran past Options.Timeout.
	ErrTimeout = errors.New("sandbox: time limit exceeded")
	// ErrMemory: the program used more memory than Options.MemoryBytes (child mode only).
	ErrMemory = errors.New("sandbox: memory limit exceeded")
	// ErrOutputTooLarge: console output or the result value passed Options.MaxOutput.
	ErrOutputTooLarge = errors.New("sandbox: output limit exceeded")
	// ErrSyntax: the program does not parse. The error is a *ScriptError.
	ErrSyntax = errors.New("sandbox: syntax error")
	// ErrException: the program threw an exception it did not catch. The error is a *ScriptError.
	ErrException = errors.New("sandbox: uncaught exception")
	// ErrInvalidCode: the program is empty or longer than Options.MaxCodeSize.
	ErrInvalidCode = errors.New("sandbox: invalid program")
	// ErrInternal: the sandbox itself failed (the worker could not start, crashed, or broke the protocol).
	ErrInternal = errors.New("sandbox: internal error")
)

// ScriptError is a syntax error or an uncaught exception in the program.
type ScriptError struct {
	Kind    error  // ErrSyntax or ErrException
	Message string // the JavaScript message, e.g. "ReferenceError: x is not defined"
	Line    int    // 1-based line in the program; 0 when unknown
	Column  int    // 1-based column; 0 when unknown
}

func (e *ScriptError) Error() string {
	what := "uncaught exception"
	if e.Kind == ErrSyntax {
		what = "syntax error"
	}
	if e.Line > 0 {
		return fmt.Sprintf("sandbox: %s at line %d, column %d: %s", what, e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("sandbox: %s: %s", what, e.Message)
}

// Unwrap returns Kind, so errors.Is(err, ErrSyntax) works.
func (e *ScriptError) Unwrap() error { return e.Kind }

// Options configures a Runner. Zero fields take the Default* values.
type Options struct {
	// Timeout bounds the run time of one program.
	Timeout time.Duration
	// MemoryBytes bounds the memory of one program in child mode; ignored in-process. The program
	// is stopped once its heap passes it; the worker's address space is capped at what the Go
	// runtime already uses plus 2×MemoryBytes+64MiB, for allocations too large to be watched.
	MemoryBytes int64
	// MaxOutput bounds, in bytes, the captured console output and, separately, the result value.
	MaxOutput int
	// MaxCodeSize bounds, in bytes, the program text.
	MaxCodeSize int
	// Exec is the path (or $PATH name) of the worker binary. Empty selects in-process mode.
	Exec string
	// Args are the arguments given to Exec; default []string{WorkerCommand}.
	Args []string
	// Env is the whole environment of the worker process; empty by default.
	Env []string
	// KillGrace is how long past Timeout the worker may take (start-up, shutdown) before it is
	// killed, and how long an in-process run that ignores its interrupt is waited for.
	KillGrace time.Duration
	// MaxConcurrent bounds the programs running at once through this Runner.
	MaxConcurrent int
	// Logger receives diagnostics; default slog.Default().
	Logger *slog.Logger
}

// Result is what a program produced.
type Result struct {
	// Output is everything the program wrote with console.*, one line per call, capped at MaxOutput.
	Output string
	// Value is the completion value of the program (its last expression statement) rendered as
	// text: strings as they are, objects and arrays as JSON. Empty when undefined.
	Value string
	// Duration is how long the program ran (as measured by the evaluator).
	Duration time.Duration
}

// Runner runs programs. It is safe for concurrent use; each Run gets a fresh interpreter.
type Runner struct {
	opts Options
	exec string // resolved absolute path of Options.Exec; "" in-process
	sem  chan struct{}
	log  *slog.Logger
}

// New validates opts, fills in defaults and returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Timeout < 0 || opts.MemoryBytes < 0 || opts.MaxOutput < 0 || opts.MaxCodeSize < 0 ||
		opts.KillGrace < 0 || opts.MaxConcurrent < 0 {
		return nil, errors.New("sandbox: negative limit in Options")
	}
	// Negative limits are refused above, so cmp.Or only fills in zeros.
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	opts.MemoryBytes = cmp.Or(opts.MemoryBytes, DefaultMemoryBytes)
	opts.MaxOutput = cmp.Or(opts.MaxOutput, DefaultMaxOutput)
	opts.MaxCodeSize = cmp.Or(opts.MaxCodeSize, DefaultMaxCodeSize)
	opts.KillGrace = cmp.Or(opts.KillGrace, DefaultKillGrace)
	opts.MaxConcurrent = cmp.Or(opts.MaxConcurrent, DefaultMaxConcurrent)
	if opts.Args == nil {
		opts.Args = []string{WorkerCommand}
	}
	opts.Args = append([]string(nil), opts.Args...)
	opts.Env = append([]string{}, opts.Env...) // never nil: a nil Env would inherit ours
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Runner{opts: opts, sem: make(chan struct{}, opts.MaxConcurrent), log: opts.Logger}
	if opts.Exec != "" {
		if runtime.GOOS != "linux" {
			return nil, fmt.Errorf("sandbox: child mode on %s: %w", runtime.GOOS, errors.ErrUnsupported)
		}
		path, err := resolveExec(opts.Exec)
		if err != nil {
			return nil, fmt.Errorf("sandbox: worker binary %q: %w", opts.Exec, err)
		}
		r.exec = path
	}
	return r, nil
}

// resolveExec makes the worker path absolute, since the worker starts in a temporary directory.
func resolveExec(name string) (string, error) {
	if !strings.ContainsRune(name, os.PathSeparator) {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", err
		}
		name = p
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", errors.New("not an executable file")
	}
	return abs, nil
}

// ChildMode reports whether programs run in a separate, memory-limited process.
func (r *Runner) ChildMode() bool { return r.exec != "" }

// Run runs one program and returns what it printed and its completion value. On failure the
// Result still holds the output produced before the failure.
func (r *Runner) Run(ctx context.Context, code string) (Result, error) {
	if strings.TrimSpace(code) == "" {
		return Result{}, fmt.Errorf("%w: empty program", ErrInvalidCode)
	}
	if len(code) > r.opts.MaxCodeSize {
		return Result{}, fmt.Errorf("%w: program is %d bytes, limit %d", ErrInvalidCode, len(code), r.opts.MaxCodeSize)
	}
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-ctx.Done():
		return Result{}, fmt.Errorf("sandbox: waiting for a slot: %w", ctx.Err())
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}

	start := time.Now()
	var (
		res Result
		err error
	)
	mode := "in-process"
	if r.exec != "" {
		mode = "child"
		res, err = r.runChild(ctx, code)
	} else {
		res, err = r.runInProcess(ctx, code)
	}
	r.log.DebugContext(ctx, "sandbox run", "mode", mode, "code_bytes", len(code),
		"output_bytes", len(res.Output), "elapsed", time.Since(start), "err", err)
	return res, err
}

func (r *Runner) evalConfig() evalConfig {
	return evalConfig{timeout: r.opts.Timeout, maxOutput: r.opts.MaxOutput}
}

// runInProcess evaluates on a goroutine so that a built-in that ignores the interrupt cannot hold
// the caller past Timeout+KillGrace (the goroutine is then abandoned and logged).
func (r *Runner) runInProcess(ctx context.Context, code string) (Result, error) {
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := evaluate(ctx, code, r.evalConfig())
		done <- outcome{res, err}
	}()

	hard := time.NewTimer(r.opts.Timeout + r.opts.KillGrace)
	defer hard.Stop()
	stopped := ctx.Done()
	for {
		select {
		case o := <-done:
			return o.res, o.err
		case <-stopped:
			// The evaluator has been interrupted; give it KillGrace to notice.
			stopped = nil
			hard.Reset(r.opts.KillGrace)
		case <-hard.C:
			r.log.WarnContext(ctx, "sandbox: in-process program did not stop when interrupted; abandoning it")
			if err := ctx.Err(); err != nil {
				return Result{}, fmt.Errorf("sandbox: %w", err)
			}
			return Result{}, fmt.Errorf("%w: program did not stop within %s", ErrTimeout, r.opts.Timeout+r.opts.KillGrace)
		}
	}
}
