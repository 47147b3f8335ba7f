package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"deepresearch/research"
)

// BenchRuns measures one run's life on a store from open: CreateRun,
// AcquireRun, Heartbeat, FinishRun (four calls an op), one run after
// another.
func BenchRuns(b *testing.B, open func(tb testing.TB) research.Store) {
	s := open(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("b%d", i)
		now := t0.Add(time.Duration(i) * time.Second)
		r := research.Run{ID: id, ThreadID: "th-" + id, Requester: "U1", Question: "q", CreatedAt: now}
		if err := s.CreateRun(ctx, r, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AcquireRun(ctx, id, "A", now, time.Minute); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Heartbeat(ctx, id, "A", now, time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := s.FinishRun(ctx, id, "A", research.StateDone, "", now); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
