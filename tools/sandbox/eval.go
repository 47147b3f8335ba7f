package sandbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// programName is the file name goja reports in positions; exceptions are located by it.
const programName = "main.js"

// maxCallStack bounds JavaScript recursion so that it ends in a RangeError, not in a Go stack overflow.
const maxCallStack = 10000

// heapPollInterval is how often the child-mode heap watchdog samples the heap.
const heapPollInterval = 5 * time.Millisecond

// preludeSource installs console and returns the value formatter. It receives the native
// write(line) function, which is reachable only through the closures made here.
const preludeSource = `(function (write) {
	"use strict";
	const stringify = JSON.stringify, from = Array.from, objectToString = Object.prototype.toString;
	const numberIsFinite = Number.isFinite;
	function replacer(key, v) {
		if (typeof v === "number" && !numberIsFinite(v)) return String(v);
		if (typeof v === "bigint") return String(v);
		return v;
	}
	function fmt(v) {
		switch (typeof v) {
		case "string": return v;
		case "undefined": return "undefined";
		case "function": return v.name ? "[Function: " + v.name + "]" : "[Function (anonymous)]";
		case "object": if (v === null) return "null"; break;
		default: return String(v);
		}
		try {
			if (v instanceof Error) return String(v);
			if (v instanceof Date) return isNaN(v.getTime()) ? "Invalid Date" : v.toISOString();
			if (v instanceof Map) return "Map(" + v.size + ") " + stringify(from(v), replacer);
			if (v instanceof Set) return "Set(" + v.size + ") " + stringify(from(v), replacer);
			const s = stringify(v, replacer);
			return s === undefined ? String(v) : s;
		} catch (e) {
			try { return String(v); } catch (e2) { return objectToString.call(v); }
		}
	}
	function line() {
		let s = "";
		for (let i = 0; i < arguments.length; i++) s += (i ? " " : "") + fmt(arguments[i]);
		write(s + "\n");
	}
	const console = { log: line, info: line, warn: line, error: line, debug: line };
	Object.defineProperty(globalThis, "console", { value: console, writable: true, configurable: true, enumerable: false });
	return fmt;
})`

var compilePrelude = sync.OnceValues(func() (*goja.Program, error) {
	return goja.Compile("prelude.js", preludeSource, true)
})

// evalConfig is what one evaluation is allowed.
type evalConfig struct {
	timeout   time.Duration
	maxOutput int
	// heapLimit, when > 0, stops the program once this process's heap objects exceed it. Only
	// meaningful in a worker process that runs nothing else.
	heapLimit uint64
}

// outputBuffer collects console output up to max bytes; at the cap it calls full once.
type outputBuffer struct {
	b      strings.Builder
	max    int
	capped bool
	full   func()
}

func (o *outputBuffer) write(s string) {
	if o.capped {
		return
	}
	if room := o.max - o.b.Len(); len(s) > room {
		o.b.WriteString(truncateUTF8(s, room))
		o.capped = true
		o.full()
		return
	}
	o.b.WriteString(s)
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// evaluate compiles and runs code on a fresh goja runtime on the calling goroutine. The time
// limit, ctx and (optionally) the heap watchdog interrupt the interpreter.
func evaluate(ctx context.Context, code string, cfg evalConfig) (res Result, err error) {
	start := time.Now()
	var out *outputBuffer
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: interpreter panic: %v", ErrInternal, p)
		}
		if out != nil {
			res.Output = out.b.String()
		}
		res.Duration = time.Since(start)
	}()

	prelude, err := compilePrelude()
	if err != nil {
		return res, fmt.Errorf("%w: prelude: %w", ErrInternal, err)
	}
	// Parse separately: goja.Compile flattens parser errors into a string without a position.
	ast, err := parser.ParseFile(nil, programName, code, 0)
	if err != nil {
		return res, syntaxError(err)
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		return res, syntaxError(err)
	}

	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStack)
	out = &outputBuffer{max: cfg.maxOutput, full: func() { vm.Interrupt(ErrOutputTooLarge) }}

	timer := time.AfterFunc(cfg.timeout, func() { vm.Interrupt(ErrTimeout) })
	defer timer.Stop()
	stopCtx := context.AfterFunc(ctx, func() { vm.Interrupt(ctx.Err()) })
	defer stopCtx()
	if cfg.heapLimit > 0 {
		stopWatch := watchHeap(vm, cfg.heapLimit)
		defer stopWatch()
	}

	fmtFn, err := installConsole(vm, prelude, out)
	if err != nil {
		return res, runError(cfg, nil, err)
	}
	v, err := vm.RunProgram(prg)
	if err != nil {
		return res, runError(cfg, fmtFn, err)
	}
	if out.capped {
		return res, outputError(cfg)
	}
	if v == nil || goja.IsUndefined(v) {
		return res, nil
	}
	s, err := fmtFn(goja.Undefined(), v)
	if err != nil {
		return res, runError(cfg, fmtFn, err)
	}
	res.Value = s.String()
	if len(res.Value) > cfg.maxOutput {
		res.Value = truncateUTF8(res.Value, cfg.maxOutput)
		return res, fmt.Errorf("%w: result value is longer than %d bytes", ErrOutputTooLarge, cfg.maxOutput)
	}
	return res, nil
}

// installConsole runs the prelude and returns its formatter.
func installConsole(vm *goja.Runtime, prelude *goja.Program, out *outputBuffer) (goja.Callable, error) {
	v, err := vm.RunProgram(prelude)
	if err != nil {
		return nil, err
	}
	install, ok := goja.AssertFunction(v)
	if !ok {
		return nil, fmt.Errorf("%w: prelude is not a function", ErrInternal)
	}
	f, err := install(goja.Undefined(), vm.ToValue(out.write))
	if err != nil {
		return nil, err
	}
	fmtFn, ok := goja.AssertFunction(f)
	if !ok {
		return nil, fmt.Errorf("%w: prelude returned no formatter", ErrInternal)
	}
	return fmtFn, nil
}

// watchHeap interrupts vm with ErrMemory once heap objects pass limit. It returns a stop function.
func watchHeap(vm *goja.Runtime, limit uint64) (stop func()) {
	done := make(chan struct{})
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(heapPollInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > limit {
				vm.Interrupt(ErrMemory)
				return
			}
		}
	}()
	return func() { close(done) }
}

func outputError(cfg evalConfig) error {
	return fmt.Errorf("%w: console output is longer than %d bytes", ErrOutputTooLarge, cfg.maxOutput)
}

// syntaxError converts a goja compile error into a *ScriptError.
func syntaxError(err error) error {
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		e := list[0]
		return &ScriptError{Kind: ErrSyntax, Message: e.Message, Line: e.Position.Line, Column: e.Position.Column}
	}
	var pe *parser.Error
	if errors.As(err, &pe) {
		return &ScriptError{Kind: ErrSyntax, Message: pe.Message, Line: pe.Position.Line, Column: pe.Position.Column}
	}
	var ce *goja.CompilerSyntaxError
	if errors.As(err, &ce) {
		se := &ScriptError{Kind: ErrSyntax, Message: ce.Message}
		if ce.File != nil {
			p := ce.File.Position(ce.Offset)
			se.Line, se.Column = p.Line, p.Column
		}
		return se
	}
	return &ScriptError{Kind: ErrSyntax, Message: err.Error()}
}

// framePos finds "main.js:LINE:COL" in a goja stack trace.
var framePos = regexp.MustCompile(`main\.js:(\d+):(\d+)`)

// runError converts an error from running the program into the package's errors.
func runError(cfg evalConfig, fmtFn goja.Callable, err error) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		reason, _ := ie.Value().(error)
		switch {
		case reason == nil:
			return fmt.Errorf("%w: interrupted: %v", ErrInternal, ie.Value())
		case errors.Is(reason, ErrTimeout):
			return fmt.Errorf("%w: program ran longer than %s", ErrTimeout, cfg.timeout)
		case errors.Is(reason, ErrOutputTooLarge):
			return outputError(cfg)
		case errors.Is(reason, ErrMemory):
			return fmt.Errorf("%w: program heap passed %d bytes", ErrMemory, cfg.heapLimit)
		default: // context.Canceled or context.DeadlineExceeded
			return fmt.Errorf("sandbox: run stopped: %w", reason)
		}
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &ScriptError{Kind: ErrException, Message: "RangeError: Maximum call stack size exceeded"}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		se := &ScriptError{Kind: ErrException, Message: "uncaught exception"}
		if fmtFn != nil {
			if s, ferr := fmtFn(goja.Undefined(), ex.Value()); ferr == nil {
				se.Message = s.String()
			}
		}
		se.Line, se.Column = exceptionPos(ex)
		return se
	}
	return fmt.Errorf("%w: %w", ErrInternal, err)
}

// exceptionPos returns where in the program ex was thrown (the innermost frame in main.js).
// Formatting the exception may call the program's own toString, which may throw: then it is unknown.
func exceptionPos(ex *goja.Exception) (line, col int) {
	defer func() {
		if recover() != nil {
			line, col = 0, 0
		}
	}()
	if m := framePos.FindStringSubmatch(ex.String()); m != nil {
		line, _ = strconv.Atoi(m[1])
		col, _ = strconv.Atoi(m[2])
	}
	return line, col
}
