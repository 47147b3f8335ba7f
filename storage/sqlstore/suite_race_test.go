package sqlstore_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// race runs f(0) to f(n-1) at once and sums what they return.
func race(n int, f func(i int) int) int {
	var wg sync.WaitGroup
	var sum atomic.Int32
	for i := range n {
		wg.Go(func() { sum.Add(int32(f(i))) })
	}
	wg.Wait()
	return int(sum.Load())
}

// won scores a try that answers whether it won: 1 for a win. An error fails t.
func won(t *testing.T) func(ok bool, err error) int {
	return func(ok bool, err error) int {
		if err != nil {
			t.Error(err)
		}
		if ok {
			return 1
		}
		return 0
	}
}

// wonUnless scores a try that wins when it succeeds: 1 for no error, 0 for
// one of lost; any other error fails t.
func wonUnless(t *testing.T, err error, lost ...error) int {
	if err == nil {
		return 1
	}
	for _, l := range lost {
		if errors.Is(err, l) {
			return 0
		}
	}
	t.Error(err)
	return 0
}
