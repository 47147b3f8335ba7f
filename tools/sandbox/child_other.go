//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
)

// runChild is unavailable outside Linux; New refuses Options.Exec there.
func (r *Runner) runChild(ctx context.Context, code string) (Result, error) {
	return Result{}, fmt.Errorf("sandbox: child mode: %w", errors.ErrUnsupported)
}
