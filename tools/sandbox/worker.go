package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Worker exit codes. A Go runtime fatal error (such as running out of address space) exits with 2.
const (
	exitOK         = 0 // a response was written, whatever the program did
	exitBadRequest = 3 // the request could not be read or was invalid
	exitWriteFail  = 4 // the response could not be written
)

// maxRequestBytes bounds what the worker reads from stdin.
const maxRequestBytes = 4 << 20

// workerRequest is what the parent writes to the worker's stdin (one JSON object, then EOF).
type workerRequest struct {
	Code        string `json:"code"`
	TimeoutMS   int64  `json:"timeout_ms"`
	MaxOutput   int    `json:"max_output"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
}

// workerResponse is what the worker writes to stdout (one JSON object).
type workerResponse struct {
	Output     string     `json:"output"`
	Value      string     `json:"value,omitempty"`
	DurationUS int64      `json:"duration_us"`
	Error      *wireError `json:"error,omitempty"`
}

// wireError carries an error across the process boundary.
type wireError struct {
	Kind    string `json:"kind"` // one of the wireKinds keys
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
}

// wireKinds maps the kinds of wireError to sentinels, in the order toWire tries them.
var wireKinds = []struct {
	kind     string
	sentinel error
}{
	{"syntax", ErrSyntax},
	{"exception", ErrException},
	{"timeout", ErrTimeout},
	{"memory", ErrMemory},
	{"output", ErrOutputTooLarge},
	{"invalid", ErrInvalidCode},
	{"canceled", context.Canceled},
	{"deadline", context.DeadlineExceeded},
	{"internal", ErrInternal},
}

// WorkerMain is the body of the worker process. It reads one JSON request from r, limits this
// process (address space, no core files, no file writes), runs the program and writes one JSON
// response to w. It returns the process exit code: 0 when a response was written, whether or not
// the program succeeded. Call it from the binary given as Options.Exec when that binary is
// started with WorkerCommand:
//
//	if len(os.Args) > 1 && os.Args[1] == sandbox.WorkerCommand {
//		os.Exit(sandbox.WorkerMain(ctx, os.Stdin, os.Stdout))
//	}
//
// It must be called before the process does anything else of size, since the memory limit is set
// relative to the address space already in use.
func WorkerMain(ctx context.Context, r io.Reader, w io.Writer) int {
	return serveWorker(ctx, r, w, restrictProcess)
}

// serveWorker is WorkerMain with the process restriction passed in, so that tests can run the
// protocol without limiting the test process itself.
func serveWorker(ctx context.Context, r io.Reader, w io.Writer, restrict func(memoryBytes int64) (heapLimit uint64, err error)) int {
	req, err := readRequest(r)
	if err != nil {
		return respond(w, workerResponse{Error: toWire(err)}, exitBadRequest)
	}
	heapLimit, err := restrict(req.MemoryBytes)
	if err != nil {
		return respond(w, workerResponse{Error: toWire(fmt.Errorf("%w: limiting the worker: %w", ErrInternal, err))}, exitBadRequest)
	}
	res, err := evaluate(ctx, req.Code, evalConfig{
		timeout:   time.Duration(req.TimeoutMS) * time.Millisecond,
		maxOutput: req.MaxOutput,
		heapLimit: heapLimit,
	})
	return respond(w, workerResponse{
		Output:     res.Output,
		Value:      res.Value,
		DurationUS: res.Duration.Microseconds(),
		Error:      toWire(err),
	}, exitOK)
}

func readRequest(r io.Reader) (workerRequest, error) {
	var req workerRequest
	data, err := io.ReadAll(io.LimitReader(r, maxRequestBytes+1))
	if err != nil {
		return req, fmt.Errorf("%w: reading request: %w", ErrInternal, err)
	}
	if len(data) > maxRequestBytes {
		return req, fmt.Errorf("%w: request longer than %d bytes", ErrInvalidCode, maxRequestBytes)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return req, fmt.Errorf("%w: malformed request: %w", ErrInternal, err)
	}
	if req.TimeoutMS <= 0 || req.MaxOutput <= 0 || req.MemoryBytes < 0 {
		return req, fmt.Errorf("%w: request needs positive timeout_ms and max_output", ErrInternal)
	}
	return req, nil
}

func respond(w io.Writer, resp workerResponse, code int) int {
	if err := json.NewEncoder(w).Encode(resp); err != nil {
		return exitWriteFail
	}
	return code
}

// toWire flattens err for the response; nil stays nil.
func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	var se *ScriptError
	if errors.As(err, &se) {
		kind := "exception"
		if se.Kind == ErrSyntax {
			kind = "syntax"
		}
		return &wireError{Kind: kind, Message: se.Message, Line: se.Line, Column: se.Column}
	}
	for _, k := range wireKinds[2:] { // syntax and exception are always *ScriptError
		if errors.Is(err, k.sentinel) {
			return &wireError{Kind: k.kind, Message: err.Error()}
		}
	}
	return &wireError{Kind: "internal", Message: err.Error()}
}

// remoteError is an error reported by the worker: its message, matching its sentinel.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

// fromWire rebuilds the error a worker reported.
func fromWire(w *wireError) error {
	if w == nil {
		return nil
	}
	for _, k := range wireKinds {
		if k.kind != w.Kind {
			continue
		}
		if k.sentinel == ErrSyntax || k.sentinel == ErrException {
			return &ScriptError{Kind: k.sentinel, Message: w.Message, Line: w.Line, Column: w.Column}
		}
		return &remoteError{sentinel: k.sentinel, msg: w.Message}
	}
	return fmt.Errorf("%w: worker reported unknown error kind %q: %s", ErrInternal, w.Kind, w.Message)
}
