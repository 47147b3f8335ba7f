//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
)

// addressSlack is address space granted to the worker beyond twice its memory budget: room for
// the Go runtime to map another heap arena and its metadata while it collects garbage.
const addressSlack = 64 << 20

// restrictProcess limits the calling (worker) process: no core files, no writes to regular files,
// and, when memoryBytes > 0, an address space of what is in use now plus 2×memoryBytes+addressSlack.
// The Go collector is told to keep the heap under memoryBytes, and the returned heap limit is what
// the evaluator's watchdog enforces; the rlimit is the backstop for allocations too large or too
// fast for the watchdog, which end the process with a Go "out of memory" fatal error.
func restrictProcess(memoryBytes int64) (heapLimit uint64, err error) {
	for _, res := range []int{syscall.RLIMIT_CORE, syscall.RLIMIT_FSIZE} {
		if err := syscall.Setrlimit(res, &syscall.Rlimit{}); err != nil {
			return 0, fmt.Errorf("setrlimit(%d, 0): %w", res, err)
		}
	}
	if memoryBytes <= 0 {
		return 0, nil
	}
	inUse, err := addressSpaceInUse()
	if err != nil {
		return 0, err
	}
	limit := inUse + 2*uint64(memoryBytes) + addressSlack
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &cur); err != nil {
		return 0, fmt.Errorf("getrlimit(RLIMIT_AS): %w", err)
	}
	limit = min(limit, cur.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return 0, fmt.Errorf("setrlimit(RLIMIT_AS, %d): %w", limit, err)
	}
	debug.SetMemoryLimit(memoryBytes)
	return uint64(memoryBytes), nil
}

// addressSpaceInUse returns the virtual size of this process in bytes (the first field of
// /proc/self/statm, in pages).
func addressSpaceInUse() (uint64, error) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("reading address space size: %w", err)
	}
	field, _, _ := bytes.Cut(bytes.TrimSpace(data), []byte(" "))
	pages, err := strconv.ParseUint(string(field), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc/self/statm: %w", err)
	}
	return pages * uint64(os.Getpagesize()), nil
}
