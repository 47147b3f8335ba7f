//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
)

// restrictProcess cannot limit memory outside Linux; a worker asked to do so refuses.
func restrictProcess(memoryBytes int64) (heapLimit uint64, err error) {
	if memoryBytes > 0 {
		return 0, fmt.Errorf("memory limit: %w", errors.ErrUnsupported)
	}
	return 0, nil
}
