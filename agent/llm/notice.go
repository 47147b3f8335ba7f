package llm

import (
	"context"
	"sync"
	"time"
)

// NoticeKind says what a Notice reports.
type NoticeKind string

// Notice kinds.
const (
	// NoticeSlow: an attempt has had no answer for Notice.Wait (repeated
	// every Options.SlowAfter while it waits).
	NoticeSlow NoticeKind = "slow"
	// NoticeRetry: an attempt failed with a transient error (Notice.Err);
	// retry number Notice.Retry follows after Notice.Wait.
	NoticeRetry NoticeKind = "retry"
	// NoticeFailed: the call gave up with Notice.Err (after any retries).
	NoticeFailed NoticeKind = "failed"
)

// DefaultSlowAfter is how long an attempt runs without an answer before
// the first NoticeSlow.
const DefaultSlowAfter = 20 * time.Second

// Notice tells the caller, while a call is under way, that it is waiting
// on the model, so that a terminal or a status message can say so instead
// of staying silent for minutes. It carries no prompt content.
type Notice struct {
	Kind    NoticeKind
	Role    Role
	Node    string
	Model   string
	Attempt int           // the attempt concerned, from 1
	Retry   int           // NoticeRetry: the retry about to be made, from 1
	Wait    time.Duration // NoticeRetry: pause before the retry; NoticeSlow: time without an answer
	Err     error         // NoticeRetry, NoticeFailed: the classified error (*Error)
}

type noticeKey struct{}

// WithNotices makes the calls made with ctx tell fn of their waits too,
// beside Options.OnNotice: a research run shows "waiting for the model"
// in its own progress while the client's hook serves the whole process.
func WithNotices(ctx context.Context, fn func(Notice)) context.Context {
	return context.WithValue(ctx, noticeKey{}, fn)
}

// noticesTo joins the client's hook and the call's.
func noticesTo(ctx context.Context, global func(Notice)) func(Notice) {
	local, _ := ctx.Value(noticeKey{}).(func(Notice))
	switch {
	case local == nil:
		return global
	case global == nil:
		return local
	}
	return func(n Notice) { global(n); local(n) }
}

// notifier sends the notices of one call.
type notifier struct {
	fn    func(Notice)
	base  Notice
	every time.Duration
}

func (n notifier) send(k NoticeKind, attempt int, wait time.Duration, err error) {
	if n.fn == nil {
		return
	}
	v := n.base
	v.Kind, v.Attempt, v.Wait, v.Err = k, attempt, wait, err
	if k == NoticeRetry {
		v.Retry = attempt
		v.Attempt = attempt
	}
	n.fn(v)
}

// watch sends NoticeSlow every n.every while an attempt runs; the returned
// stop ends it, and no notice is sent after stop returns.
func (n notifier) watch(attempt int) (stop func()) {
	if n.fn == nil || n.every <= 0 {
		return func() {}
	}
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
		waited  time.Duration
	)
	fire := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		waited += n.every
		n.send(NoticeSlow, attempt, waited, nil)
		t.Reset(n.every)
	}
	mu.Lock()
	t = time.AfterFunc(n.every, fire)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}
