package graph

import (
	"encoding/json"
	"fmt"
)

// CheckBatch checks what can be checked of a batch without looking at the
// store: no blob over maxBytes (ErrTooLarge), checkpoint ids > 0 and distinct,
// and each checkpoint after the first the child of the one before it. The SQL
// stores call it too, so that every store rejects the same batches alike.
func CheckBatch(b *Batch, maxBytes int) error {
	for _, c := range b.Checkpoints {
		for _, f := range [][]byte{c.Snapshot, c.Delta, c.Next, c.Meta} {
			if len(f) > maxBytes {
				return fmt.Errorf("checkpoint %d: %d bytes > %d: %w", c.ID, len(f), maxBytes, ErrTooLarge)
			}
		}
	}
	for _, w := range b.Writes {
		if len(w.Value) > maxBytes {
			return fmt.Errorf("write %s: %d bytes > %d: %w", w.Channel, len(w.Value), maxBytes, ErrTooLarge)
		}
	}
	seen := make(map[int64]bool, len(b.Checkpoints))
	for i, cp := range b.Checkpoints {
		if cp.ID <= 0 {
			return fmt.Errorf("invalid batch: checkpoint id %d is not positive", cp.ID)
		}
		if seen[cp.ID] {
			return fmt.Errorf("invalid batch: checkpoint id %d appears twice", cp.ID)
		}
		seen[cp.ID] = true
		if i > 0 && cp.ParentID != b.Checkpoints[i-1].ID {
			return fmt.Errorf("invalid batch: checkpoint %d has parent %d, want %d", cp.ID, cp.ParentID, b.Checkpoints[i-1].ID)
		}
	}
	return nil
}

// MetaMatches reports whether the JSON object meta has every pair of want.
// Stores that filter metadata in Go share it.
func MetaMatches(meta []byte, want map[string]string) bool {
	if len(want) == 0 {
		return true
	}
	var m map[string]any
	if json.Unmarshal(meta, &m) != nil {
		return false
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			return false
		}
		switch g := got.(type) {
		case string:
			if g != v {
				return false
			}
		default:
			if fmt.Sprint(g) != v {
				return false
			}
		}
	}
	return true
}
