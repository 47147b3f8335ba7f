package schedule_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"deepresearch/research"
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
		if list, _ := m.List(context.Background(), schedule.Filter{}); len(list) != 0 {
			t.Errorf("%q stored: %+v", ch, list)
		}
	}
}

func TestManagerAsksTheChannelChecker(t *testing.T) {
	m, r, _ := newManager(t)
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
	if _, err := m.Update(ctx, sc.ID, "UOWNER", d); !errors.As(err, &ve) {
		t.Fatalf("moving it to C2 = %v", err)
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
	m.Scheduler.Wait()
	if n := len(r.Jobs()); n != 0 {
		t.Fatalf("%d jobs ran", n)
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
	res := &fakeResearcher{results: []research.Result{{Title: "t", Summary: "s"}}}
	poster := &fakePoster{}
	pol := &channelPolicy{problems: map[string]string{"C1": "I can't see C1."}}
	r := &schedule.DigestRunner{Researcher: res, Poster: poster, Channels: pol}
	sc := schedule.Schedule{ID: "s1", Channel: "C1", Owner: "UOWNER", Topic: "news", Spec: "@daily", TZ: "UTC"}
	_, err := r.Run(context.Background(), schedule.Job{Schedule: sc, Due: monday9})
	if !errors.Is(err, schedule.ErrChannelUnavailable) {
		t.Fatalf("Run = %v, want ErrChannelUnavailable", err)
	}
	if len(res.reqs) != 0 || len(poster.messages) != 0 {
		t.Fatalf("researched %d times, posted %d messages", len(res.reqs), len(poster.messages))
	}
	// A hostile id stored before validation existed fails the same way.
	sc.Channel = "C1|x> <!channel> <#C1"
	if _, err := (&schedule.DigestRunner{Researcher: res, Poster: poster}).Run(context.Background(), schedule.Job{Schedule: sc, Due: monday9}); !errors.Is(err, schedule.ErrChannelUnavailable) {
		t.Fatalf("Run with a hostile id = %v", err)
	}
	if len(res.reqs) != 0 {
		t.Fatal("researched")
	}
}
