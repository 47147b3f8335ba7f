package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

const memoChannel = "__memo__"

// memoBase is the first index of memo records (idx = memoBase - n).
const memoBase = -100000

type memoState struct {
	mu     sync.Mutex
	stored map[string]json.RawMessage
	next   int
	save   func(n int, rec []byte) error // nil without a Saver
}

type memoRecord struct {
	Key   string          `json:"k"`
	Value json.RawMessage `json:"v"`
}

// Memo makes a call inside a node durable: fn runs once per key within the
// running task, and its result is stored (as JSON) before Memo returns. When
// the task runs again — after a crash, after a later call of the same node
// failed, or when an interrupt is answered — the stored result is returned
// and fn is not called. Use it for calls that cost money or have effects,
// such as LLM calls, with a key that identifies the request. Errors are not
// stored. Outside a run, or without a Saver, Memo just calls fn.
func Memo[T any](ctx context.Context, key string, fn func() (T, error)) (T, error) {
	tc, _ := ctx.Value(taskCtxKey{}).(*taskCtx)
	if tc == nil || tc.memo == nil {
		return fn()
	}
	m := tc.memo
	m.mu.Lock()
	raw, ok := m.stored[key]
	m.mu.Unlock()
	if ok {
		var v T
		if err := json.Unmarshal(raw, &v); err == nil {
			if tc.emit != nil {
				e := tc.base
				e.Kind, e.Payload = EventMemoHit, key
				tc.emit(e)
			}
			return v, nil
		}
	}
	v, err := fn()
	if err != nil || m.save == nil {
		return v, err
	}
	val, merr := json.Marshal(v)
	if merr != nil {
		return v, fmt.Errorf("graph: memo %q: result is not serialisable: %w", key, merr)
	}
	rec, _ := json.Marshal(memoRecord{Key: key, Value: val})
	m.mu.Lock()
	n := m.next
	m.next++
	m.stored[key] = val
	m.mu.Unlock()
	if err := m.save(n, rec); err != nil {
		return v, fmt.Errorf("graph: store memo %q: %w", key, err)
	}
	return v, nil
}
