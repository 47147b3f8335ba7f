package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// mode is one way of running programs: in-process or in a child worker process.
type mode struct {
	name  string
	child bool
}

var modes = []mode{{"inprocess", false}, {"child", true}}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newRunner builds a Runner for m. In child mode the worker is this test binary (see TestMain).
func newRunner(t *testing.T, m mode, opts Options) *Runner {
	t.Helper()
	if m.child {
		opts.Exec = os.Args[0]
		if opts.Env == nil {
			opts.Env = []string{workerEnv + "=1"}
		}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	r, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestRunResults(t *testing.T) {
	tests := []struct {
		name       string
		code       string
		wantOutput string
		wantValue  string
	}{
		{name: "arithmetic", code: "1 + 2 * 3", wantValue: "7"},
		{name: "console.log formats its arguments",
			code:       `console.log("a", 1, true, null, undefined); console.log([1, 2], {x: 1}); console.error("e")`,
			wantOutput: "a 1 true null undefined\n[1,2] {\"x\":1}\ne\n"},
		{name: "growth rate",
			code:       "const before = 120, after = 150;\nconsole.log(((after - before) / before * 100).toFixed(1) + '%')",
			wantOutput: "25.0%\n"},
		{name: "sum over a table",
			code:      `const rows = [{n: "x", v: 1.5}, {n: "y", v: 2.25}]; rows.reduce((s, r) => s + r.v, 0)`,
			wantValue: "3.75"},
		{name: "date arithmetic",
			code:      "const d = new Date(Date.UTC(2026, 0, 31)); d.setUTCMonth(d.getUTCMonth() + 1); d",
			wantValue: "2026-03-03T00:00:00.000Z"},
		{name: "days between dates", code: "(Date.UTC(2026, 11, 25) - Date.UTC(2026, 0, 1)) / 864e5", wantValue: "358"},
		{name: "unit conversion with Math", code: "Math.round(100 * 1.609344 * 100) / 100 + ' km'", wantValue: "160.93 km"},
		{name: "non-ASCII output", code: `console.log("売上", 42)`, wantOutput: "売上 42\n"},
		{name: "non-finite numbers stay visible", code: "[1 / 0, NaN, 2]", wantValue: `["Infinity","NaN",2]`},
		{name: "map", code: `new Map([["a", 1]])`, wantValue: `Map(1) [["a",1]]`},
		{name: "JSON round trip", code: `JSON.parse('{"a":[1,2]}').a.length`, wantValue: "2"},
		{name: "caught exception is fine", code: "try { null.x } catch (e) { console.log(e instanceof TypeError) }", wantOutput: "true\n"},
		{name: "no completion value", code: "let x = 1;"},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := newRunner(t, m, Options{Timeout: 10 * time.Second})
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					res, err := r.Run(t.Context(), tc.code)
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					if res.Output != tc.wantOutput {
						t.Errorf("Output = %q, want %q", res.Output, tc.wantOutput)
					}
					if res.Value != tc.wantValue {
						t.Errorf("Value = %q, want %q", res.Value, tc.wantValue)
					}
				})
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	const maxOutput = 1000
	tests := []struct {
		name  string
		code  string
		want  error
		check func(t *testing.T, res Result, err error)
	}{
		{name: "syntax error has message and line", code: "let x = 1;\nlet y = ;", want: ErrSyntax,
			check: func(t *testing.T, _ Result, err error) {
				var se *ScriptError
				if !errors.As(err, &se) {
					t.Fatalf("error %T is not a *ScriptError", err)
				}
				if se.Line != 2 || se.Message == "" {
					t.Errorf("ScriptError = %+v, want line 2 and a message", se)
				}
			}},
		{name: "thrown error has message and line", code: "const a = 1;\n\nthrow new Error('boom')", want: ErrException,
			check: func(t *testing.T, _ Result, err error) {
				var se *ScriptError
				if !errors.As(err, &se) {
					t.Fatalf("error %T is not a *ScriptError", err)
				}
				if se.Line != 3 || se.Message != "Error: boom" {
					t.Errorf("ScriptError = %+v, want line 3 and message %q", se, "Error: boom")
				}
			}},
		{name: "compile-time error has a line", code: "let a = 1;\nlet a = 2;", want: ErrSyntax,
			check: func(t *testing.T, _ Result, err error) {
				var se *ScriptError
				if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(se.Message, "already been declared") {
					t.Errorf("error = %#v, want a ScriptError at line 2 about a redeclaration", err)
				}
			}},
		{name: "reference error", code: "undefinedThing + 1", want: ErrException,
			check: wantMessage("ReferenceError")},
		{name: "output before an exception is kept", code: "console.log('before'); throw 42", want: ErrException,
			check: func(t *testing.T, res Result, err error) {
				if res.Output != "before\n" {
					t.Errorf("Output = %q, want %q", res.Output, "before\n")
				}
				wantMessage("42")(t, res, err)
			}},
		{name: "runaway recursion", code: "function f() { return f() } f()", want: ErrException,
			check: wantMessage("call stack")},
		{name: "infinite loop", code: "while (true) {}", want: ErrTimeout},
		{name: "try/catch cannot swallow the time limit", code: "for (;;) { try { while (true) {} } catch (e) {} }", want: ErrTimeout},
		{name: "output cap", code: "while (true) console.log('x'.repeat(100))", want: ErrOutputTooLarge,
			check: func(t *testing.T, res Result, _ error) {
				if len(res.Output) == 0 || len(res.Output) > maxOutput {
					t.Errorf("len(Output) = %d, want 1..%d", len(res.Output), maxOutput)
				}
			}},
		{name: "output cap keeps whole characters", code: "while (true) console.log('売'.repeat(33))", want: ErrOutputTooLarge,
			check: func(t *testing.T, res Result, _ error) {
				if !utf8.ValidString(res.Output) || len(res.Output) > maxOutput {
					t.Errorf("Output (%d bytes) is not valid UTF-8 within the cap", len(res.Output))
				}
			}},
		{name: "one huge line", code: "console.log('x'.repeat(5000)); 1", want: ErrOutputTooLarge},
		{name: "value cap", code: "'y'.repeat(5000)", want: ErrOutputTooLarge},
		{name: "empty program", code: "  \n ", want: ErrInvalidCode},
		{name: "program too large", code: "1;" + strings.Repeat(" ", 5000), want: ErrInvalidCode},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := newRunner(t, m, Options{Timeout: time.Second, MaxOutput: maxOutput, MaxCodeSize: 4096})
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					res, err := r.Run(t.Context(), tc.code)
					if !errors.Is(err, tc.want) {
						t.Fatalf("Run error = %v, want %v", err, tc.want)
					}
					if tc.check != nil {
						tc.check(t, res, err)
					}
				})
			}
		})
	}
}

func wantMessage(sub string) func(t *testing.T, res Result, err error) {
	return func(t *testing.T, _ Result, err error) {
		t.Helper()
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("error %q does not mention %q", err, sub)
		}
	}
}

func TestNoHostAccess(t *testing.T) {
	globals := []string{"require", "process", "fetch", "XMLHttpRequest", "WebSocket", "setTimeout",
		"setInterval", "module", "exports", "Deno", "Bun", "WebAssembly", "importScripts", "os", "fs"}
	var checks []string
	for _, g := range globals {
		checks = append(checks, "typeof "+g)
	}
	code := "[" + strings.Join(checks, ", ") + "].join(',')"
	want := strings.TrimSuffix(strings.Repeat("undefined,", len(globals)), ",")

	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := newRunner(t, m, Options{Timeout: 10 * time.Second})
			res, err := r.Run(t.Context(), code)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Value != want {
				t.Errorf("typeof of host globals = %q, want all undefined", res.Value)
			}
			// Modules cannot be loaded either, statically or dynamically.
			for _, code := range []string{`import fs from "fs"`, `import("fs")`, `require("fs")`} {
				_, err := r.Run(t.Context(), code)
				if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrException) {
					t.Errorf("Run(%q) error = %v, want a syntax error or an exception", code, err)
				}
			}
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	r := newRunner(t, mode{"child", true}, Options{Timeout: 30 * time.Second, MemoryBytes: 64 << 20})
	hogs := []struct{ name, code string }{
		{"growing array", "let a = []; while (true) a.push(new Array(1e6).fill(1))"},
		{"one huge allocation", "const a = new Float64Array(2e9); a.length"},
		{"growing string", "let s = 'x'; while (true) s = s + s; s.length"},
	}
	for _, h := range hogs {
		t.Run(h.name, func(t *testing.T) {
			_, err := r.Run(t.Context(), h.code)
			if !errors.Is(err, ErrMemory) && !errors.Is(err, ErrTimeout) {
				t.Fatalf("Run error = %v, want ErrMemory or ErrTimeout", err)
			}
			t.Logf("refused with: %v", err)
		})
	}
	// The parent and the Runner survive.
	res, err := r.Run(t.Context(), "6 * 7")
	if err != nil || res.Value != "42" {
		t.Fatalf("Run after the hogs = %+v, %v; want 42", res, err)
	}
}

func TestContextCancel(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := newRunner(t, m, Options{Timeout: time.Minute, KillGrace: time.Second})

			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := r.Run(ctx, "1"); !errors.Is(err, context.Canceled) {
				t.Errorf("Run with a canceled context: error = %v, want context.Canceled", err)
			}

			ctx, cancel = context.WithCancel(t.Context())
			defer cancel()
			time.AfterFunc(200*time.Millisecond, cancel)
			if _, err := r.Run(ctx, "while (true) {}"); !errors.Is(err, context.Canceled) {
				t.Errorf("Run canceled while running: error = %v, want context.Canceled", err)
			}
		})
	}
}

func TestConcurrentRuns(t *testing.T) {
	const n = 8
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := newRunner(t, m, Options{Timeout: 20 * time.Second, MaxConcurrent: 3})
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					limit := 1000 + i
					code := fmt.Sprintf("let s = 0; for (let i = 1; i <= %d; i++) s += i; console.log('run', %d); s", limit, i)
					res, err := r.Run(t.Context(), code)
					switch {
					case err != nil:
						errs <- fmt.Errorf("run %d: %w", i, err)
					case res.Value != fmt.Sprint(limit*(limit+1)/2) || res.Output != fmt.Sprintf("run %d\n", i):
						errs <- fmt.Errorf("run %d: got %+v", i, res)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

func TestWorkerProcess(t *testing.T) {
	child := mode{"child", true}

	t.Run("environment, directory and stdin", func(t *testing.T) {
		r := newRunner(t, child, Options{Env: []string{workerEnv + "=probe"}})
		res, err := r.Run(t.Context(), "1")
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		facts := map[string]string{}
		for _, line := range strings.Split(res.Output, "\n") {
			k, v, _ := strings.Cut(line, "=")
			facts[k] = v
		}
		if got, want := facts["env"], workerEnv+"=probe"; got != want {
			t.Errorf("worker environment = %q, want only %q", got, want)
		}
		if facts["entries"] != "0" || !filepath.IsAbs(facts["wd"]) {
			t.Errorf("worker directory %q with %s entries, want a fresh empty one", facts["wd"], facts["entries"])
		}
		if _, err := os.Stat(facts["wd"]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("worker directory %q still there after the run (stat: %v)", facts["wd"], err)
		}
		if facts["stdin_ok"] != "true" {
			t.Errorf("worker stdin: request not followed by EOF")
		}
		if facts["args"] != WorkerCommand {
			t.Errorf("worker args = %q, want %q", facts["args"], WorkerCommand)
		}
	})

	failures := []struct {
		env  string
		want error
		sub  string
	}{
		{env: "crash", want: ErrInternal, sub: "exploded on purpose"},
		{env: "hang", want: ErrTimeout},
		{env: "flood", want: ErrOutputTooLarge},
	}
	for _, f := range failures {
		t.Run(f.env, func(t *testing.T) {
			r := newRunner(t, child, Options{Env: []string{workerEnv + "=" + f.env},
				Timeout: 100 * time.Millisecond, KillGrace: 500 * time.Millisecond})
			_, err := r.Run(t.Context(), "1")
			if !errors.Is(err, f.want) {
				t.Fatalf("Run error = %v, want %v", err, f.want)
			}
			if !strings.Contains(err.Error(), f.sub) {
				t.Errorf("error %q does not mention %q", err, f.sub)
			}
		})
	}
}

func TestServeWorker(t *testing.T) {
	noLimits := func(int64) (uint64, error) { return 0, nil }
	tests := []struct {
		name     string
		request  string
		wantCode int
		wantKind string
		wantOut  string
	}{
		{name: "ok", request: `{"code":"console.log(2+2)","timeout_ms":5000,"max_output":100}`, wantCode: exitOK, wantOut: "4\n"},
		{name: "program error is still a response", request: `{"code":"throw 1","timeout_ms":5000,"max_output":100}`,
			wantCode: exitOK, wantKind: "exception"},
		{name: "malformed", request: `{"code":`, wantCode: exitBadRequest, wantKind: "internal"},
		{name: "missing limits", request: `{"code":"1"}`, wantCode: exitBadRequest, wantKind: "internal"},
		{name: "too large", request: strings.Repeat(" ", maxRequestBytes+1), wantCode: exitBadRequest, wantKind: "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := serveWorker(t.Context(), strings.NewReader(tc.request), &out, noLimits)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			var resp workerResponse
			if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
				t.Fatalf("response %q: %v", out.String(), err)
			}
			gotKind := ""
			if resp.Error != nil {
				gotKind = resp.Error.Kind
			}
			if gotKind != tc.wantKind || resp.Output != tc.wantOut {
				t.Errorf("response = %+v (error %+v), want kind %q output %q", resp, resp.Error, tc.wantKind, tc.wantOut)
			}
		})
	}
	t.Run("write failure", func(t *testing.T) {
		code := serveWorker(t.Context(), strings.NewReader(`{"code":"1","timeout_ms":5000,"max_output":100}`), failWriter{}, noLimits)
		if code != exitWriteFail {
			t.Errorf("exit code = %d, want %d", code, exitWriteFail)
		}
	})
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWireErrors(t *testing.T) {
	tests := []error{
		&ScriptError{Kind: ErrSyntax, Message: "Unexpected token", Line: 2, Column: 9},
		&ScriptError{Kind: ErrException, Message: "Error: boom", Line: 1, Column: 1},
		fmt.Errorf("%w: slow", ErrTimeout),
		fmt.Errorf("%w: big", ErrMemory),
		fmt.Errorf("%w: loud", ErrOutputTooLarge),
		fmt.Errorf("%w: empty", ErrInvalidCode),
		fmt.Errorf("sandbox: run stopped: %w", context.Canceled),
		fmt.Errorf("sandbox: run stopped: %w", context.DeadlineExceeded),
		fmt.Errorf("%w: odd", ErrInternal),
	}
	sentinels := []error{ErrSyntax, ErrException, ErrTimeout, ErrMemory, ErrOutputTooLarge, ErrInvalidCode,
		context.Canceled, context.DeadlineExceeded, ErrInternal}
	for _, err := range tests {
		t.Run(err.Error(), func(t *testing.T) {
			got := fromWire(toWire(err))
			for _, s := range sentinels {
				if errors.Is(err, s) != errors.Is(got, s) {
					t.Errorf("errors.Is(%v, %v) = %v after the round trip, %v before", got, s, errors.Is(got, s), errors.Is(err, s))
				}
			}
			var before, after *ScriptError
			if errors.As(err, &before) {
				if !errors.As(got, &after) || *after != *before {
					t.Errorf("ScriptError after the round trip = %+v, want %+v", after, before)
				}
			}
		})
	}
	if err := fromWire(toWire(errors.New("unclassified"))); !errors.Is(err, ErrInternal) {
		t.Errorf("unclassified error after the round trip: %v, want ErrInternal", err)
	}
	if fromWire(nil) != nil || toWire(nil) != nil {
		t.Error("nil error did not stay nil")
	}
	if err := fromWire(&wireError{Kind: "martian"}); !errors.Is(err, ErrInternal) {
		t.Errorf("unknown kind: %v, want ErrInternal", err)
	}
}

func TestNewOptions(t *testing.T) {
	if _, err := New(Options{Timeout: -time.Second}); err == nil {
		t.Error("New accepted a negative timeout")
	}
	if _, err := New(Options{Exec: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("New accepted a missing worker binary")
	}
	if _, err := New(Options{Exec: t.TempDir()}); err == nil {
		t.Error("New accepted a directory as worker binary")
	}
	r, err := New(Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if r.ChildMode() {
		t.Error("a Runner without Exec is in child mode")
	}
	if r.opts.Timeout != DefaultTimeout || r.opts.MemoryBytes != DefaultMemoryBytes || r.opts.MaxOutput != DefaultMaxOutput {
		t.Errorf("defaults not applied: %+v", r.opts)
	}
}

func TestTruncateUTF8(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"売上", 3, "売"},
		{"売上", 4, "売"},
		{"売上", 5, "売"},
		{"売上", 6, "売上"},
		{"a売", 2, "a"},
	}
	for _, tc := range tests {
		if got := truncateUTF8(tc.s, tc.n); got != tc.want {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
