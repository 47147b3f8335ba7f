package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"deepresearch/clock"
)

func TestInstantSleep(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"long wait returns at once", context.Background(), time.Hour, nil},
		{"zero", context.Background(), 0, nil},
		{"canceled", canceled, time.Hour, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := clock.Sleep(tt.ctx, clock.Instant{}, tt.d)
			if !errors.Is(err, tt.want) && err != tt.want {
				t.Errorf("Sleep = %v, want %v", err, tt.want)
			}
			if el := time.Since(start); el > time.Second {
				t.Errorf("Sleep took %v", el)
			}
		})
	}
	if err := (clock.Instant{}).Sleep(context.Background(), time.Hour); err != nil {
		t.Errorf("Instant.Sleep = %v", err)
	}
}

func TestInstantTimer(t *testing.T) {
	var c clock.Clock = clock.Instant{}
	if d := time.Since(c.Now()); d < 0 || d > time.Second {
		t.Errorf("Now is %v away from time.Now", d)
	}
	select {
	case <-c.After(time.Hour):
	default:
		t.Fatal("After has not fired")
	}
	tm := c.NewTimer(time.Hour)
	if !tm.Stop() {
		t.Error("Stop of a fired, unreceived timer = false")
	}
	select {
	case <-tm.C():
		t.Fatal("a stopped timer delivered")
	default:
	}
	if tm.Stop() {
		t.Error("second Stop = true")
	}
	if tm.Reset(time.Hour) {
		t.Error("Reset of a stopped timer = true")
	}
	<-tm.C()
	if tm.Reset(time.Hour) {
		t.Error("Reset after the time was received = true")
	}
	if !tm.Reset(time.Hour) {
		t.Error("Reset of a fired, unreceived timer = false")
	}
	<-tm.C()
	select {
	case <-tm.C():
		t.Fatal("a reset timer delivered twice")
	default:
	}
}
