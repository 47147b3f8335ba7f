package bot

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestEditOrderDropsOlderPictures(t *testing.T) {
	var o editOrder
	ctx := context.Background()
	var mu sync.Mutex
	var shown []string
	edit := func(name string, hold <-chan struct{}) func(context.Context) error {
		return func(context.Context) error {
			if hold != nil {
				<-hold
			}
			mu.Lock()
			shown = append(shown, name)
			mu.Unlock()
			return nil
		}
	}
	// Ticket 1 is in flight (held); tickets 2 and 3 queue behind it. Once 1
	// is shown, whichever of 2 and 3 gets the lock first decides: 3 first
	// means 2 is dropped; 2 first means both are shown, in order.
	hold := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.apply(ctx, "C1/1", edit("one", hold)) })
	waitIssued(t, &o, "C1/1", 1)
	wg.Go(func() { _ = o.apply(ctx, "C1/1", edit("two", nil)) })
	waitIssued(t, &o, "C1/1", 2)
	wg.Go(func() { _ = o.apply(ctx, "C1/1", edit("three", nil)) })
	waitIssued(t, &o, "C1/1", 3)
	close(hold)
	wg.Wait()
	if shown[0] != "one" || shown[len(shown)-1] != "three" {
		t.Fatalf("shown %v: want one first and three last", shown)
	}
	if len(shown) == 3 && shown[1] != "two" {
		t.Fatalf("shown %v", shown)
	}
	if len(o.msgs) != 0 {
		t.Errorf("%d messages still tracked after their edits", len(o.msgs))
	}

	// A picture older than the one shown is dropped, not shown over it.
	o.msgs["C1/3"] = &msgEdits{issued: 4, applied: 6, users: 1}
	if err := o.apply(ctx, "C1/3", edit("stale", nil)); err != nil || shown[len(shown)-1] == "stale" {
		t.Fatalf("stale picture shown (err %v): %v", err, shown)
	}

	// Another message is independent; a failed edit does not count as shown.
	if err := o.apply(ctx, "C1/2", func(context.Context) error { return context.Canceled }); err == nil {
		t.Fatal("want the edit's error")
	}
}

func waitIssued(t *testing.T, o *editOrder, key string, n uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		o.mu.Lock()
		m := o.msgs[key]
		ok := m != nil && m.issued >= n
		o.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("ticket %d never issued", n)
}
