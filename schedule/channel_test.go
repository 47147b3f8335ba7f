package schedule_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/clock"
	"deepresearch/schedule"
)

// channelPolicy is a ChannelChecker with fixed answers per channel.
type channelPolicy struct {
	mu       sync.Mutex
	problems map[string]string // channel → refusal
	err      error             // a transient failure
	asked    []string
}

func (p *channelPolicy) CheckChannel(_ context.Context, channel, owner string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, channel+"/"+owner)
	if p.err != nil {
		return "", p.err
	}
	return p.problems[channel], nil
}

func TestManagerRefusesChannelsThatAreNotChannels(t *testing.T) {
	for _, ch := range []string{"C1|x> <!channel> <#C1", "D0123", "U0123", "W0123", "c0123", "C", "C 1", "<#C1>", "C1\x00", "Ｃ123", "C1|x"} {
		m, _, _ := newManager(t)
		d := draft()
		d.Channel = ch
		_, err := m.Create(context.Background(), d)
		var ve *schedule.ValidationError
		if !errors.As(err, &ve) || ve.Fields[schedule.FieldChannel] == "" {
			t.Errorf("Create in %q = %v, want a channel error", ch, err)
		}
		if _, err := m.Validate(d); !errors.As(err, &ve) || ve.Fields[schedule.FieldChannel] == "" {
			t.Errorf("Validate %q = %v, want a channel error (shown in the modal by the ack)", ch, err)
		}
		if list, _ := m.Store.ListSchedules(context.Background(), schedule.Filter{}); len(list) != 0 {
			t.Errorf("%q stored: %+v", ch, list)
		}
	}
}

func TestManagerAsksTheChannelChecker(t *testing.T) {
	m, w, _ := newManager(t)
	pol := &channelPolicy{problems: map[string]string{"C2": "I'm not a member of C2."}}
	m.Channels = pol
	ctx := context.Background()
	d := draft()
	d.Channel = "C2"
	_, err := m.Create(ctx, d)
	var ve *schedule.ValidationError
	if !errors.As(err, &ve) || ve.Fields[schedule.FieldChannel] != "I'm not a member of C2." {
		t.Fatalf("Create in C2 = %v", err)
	}
	sc, err := m.Create(ctx, draft())
	if err != nil {
		t.Fatal(err)
	}
	// The channel goes away: Run now and resume are refused, nothing runs.
	pol.mu.Lock()
	pol.problems["C1"] = "C1 is archived."
	pol.mu.Unlock()
	if _, err := m.RunNow(ctx, sc.ID, "UOWNER"); !errors.As(err, &ve) || ve.Fields[schedule.FieldChannel] != "C1 is archived." {
		t.Fatalf("RunNow = %v", err)
	}
	if _, err := m.SetEnabled(ctx, sc.ID, "UOWNER", false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetEnabled(ctx, sc.ID, "UOWNER", true); !errors.As(err, &ve) {
		t.Fatalf("resume = %v", err)
	}
	w.settle(t)
	if n := len(w.res.Reqs()); n != 0 {
		t.Fatalf("%d researches ran", n)
	}
	// A transient failure is an error, not a refusal.
	pol.mu.Lock()
	pol.err = errors.New("slack is down")
	pol.mu.Unlock()
	if _, err := m.Create(ctx, draft()); err == nil || errors.Is(err, schedule.ErrInvalid) {
		t.Fatalf("Create while the checker fails = %v", err)
	}
}

func TestFiringInAGoneChannelFailsWithoutResearch(t *testing.T) {
	res := &fakeResearcher{results: results(1)}
	poster := &fakePoster{}
	w := newWorld(t, clock.NewManual(monday9), res, poster)
	p := w.proc(t, "p1")
	p.sched.Channels = &channelPolicy{problems: map[string]string{"C1": "I can't see C1."}}
	sc := weekly(t, w.st, monday9.Add(-3*24*time.Hour))
	w.tick(t, p)
	if f := firing(t, w.st, "w", monday9); f.State != schedule.FiringFailed || !strings.Contains(f.Error, "I can't see C1.") {
		t.Fatalf("firing = %+v", f)
	}
	if len(res.Reqs()) != 0 || len(poster.Messages()) != 0 {
		t.Fatalf("researched %d times, posted %d messages", len(res.Reqs()), len(poster.Messages()))
	}
	// A hostile id stored before validation existed fails the same way.
	sc.Channel = "C1|x> <!channel> <#C1"
	p.sched.Channels = nil
	if ok, err := p.sched.Fire(context.Background(), sc, monday9.Add(time.Hour), true); err != nil || !ok {
		t.Fatalf("Fire with a hostile id = %v, %v", ok, err)
	}
	if f := firing(t, w.st, "w", monday9.Add(time.Hour)); f.State != schedule.FiringFailed || !strings.Contains(f.Error, schedule.ErrChannelUnavailable.Error()) {
		t.Fatalf("firing = %+v", f)
	}
	if len(res.Reqs()) != 0 {
		t.Fatal("researched")
	}
}
