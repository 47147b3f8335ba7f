package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"deepresearch/jobs"
)

// jobsT0 is the suite's clock origin; every time is an offset from it.
var jobsT0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func jobAt(d time.Duration) time.Time { return jobsT0.Add(d) }

const jobLease = 30 * time.Second

// Jobs checks q, a fresh empty jobs.Queue from open for every subtest,
// against the rules of jobs.Queue.
func Jobs(t *testing.T, open func(t testing.TB) jobs.Queue) {
	tests := []struct {
		name string
		fn   func(t *testing.T, q jobs.Queue)
	}{
		{"PutStoresOnce", jobsPut},
		{"PutRejectsInvalid", jobsPutInvalid},
		{"ClaimKey", jobsClaimKey},
		{"LeaseExpiryTakeover", jobsTakeover},
		{"ClaimOldestFirst", jobsClaimOrder},
		{"AttemptBound", jobsAttemptBound},
		{"Extend", jobsExtend},
		{"ReleaseGivesPickupBack", jobsRelease},
		{"ParkUnpark", jobsPark},
		{"Finish", jobsFinish},
		{"Cancel", jobsCancel},
		{"FailExpired", jobsFailExpired},
		{"PruneKeepsUnfinished", jobsPrune},
		{"Instances", jobsInstances},
		{"ConcurrentClaimers", jobsConcurrentClaim},
		{"ConcurrentClaimKey", jobsConcurrentClaimKey},
		{"ConcurrentPutAndUnpark", jobsConcurrentPutUnpark},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
}

func jobsMustPut(t *testing.T, q jobs.Queue, js ...jobs.Job) {
	t.Helper()
	stored, err := q.Put(context.Background(), js)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	for i, ok := range stored {
		if !ok {
			t.Fatalf("Put: job %s/%s not stored", js[i].Kind, js[i].Key)
		}
	}
}

func jobsMustGet(t *testing.T, q jobs.Queue, kind jobs.Kind, key string) jobs.Job {
	t.Helper()
	j, err := q.Get(context.Background(), kind, key)
	if err != nil {
		t.Fatalf("Get %s/%s: %v", kind, key, err)
	}
	return j
}

func jobReady(key string, created time.Duration) jobs.Job {
	return jobs.Job{Kind: jobs.KindRun, Key: key, Payload: []byte("p-" + key), CreatedAt: jobAt(created)}
}

func jobsWantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func jobKeys(js []jobs.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.Key
	}
	return out
}

func jobsPut(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	in := []jobs.Job{
		{Kind: jobs.KindEnvelope, Key: "ev:1", Payload: []byte("one"), State: jobs.Held, Owner: "a", LeaseUntil: jobAt(jobLease), CreatedAt: jobAt(0)},
		{Kind: jobs.KindEnvelope, Key: "ev:2", Payload: []byte("two"), State: jobs.Held, Owner: "a", LeaseUntil: jobAt(jobLease), CreatedAt: jobAt(0)},
		{Kind: jobs.KindEnvelope, Key: "ev:1", Payload: []byte("again"), State: jobs.Held, Owner: "a", LeaseUntil: jobAt(jobLease), CreatedAt: jobAt(0)},
		{Kind: jobs.KindRun, Key: "ev:1", CreatedAt: jobAt(time.Millisecond)}, // same key, other kind
		{Kind: jobs.KindFiring, Key: "f", State: jobs.Parked, CreatedAt: jobAt(0)},
		{Kind: jobs.KindEnvelope, Key: "ev:seen", State: jobs.Done, CreatedAt: jobAt(0)},
	}
	stored, err := q.Put(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, false, true, true, true}; fmt.Sprint(stored) != fmt.Sprint(want) {
		t.Fatalf("first Put stored %v, want %v", stored, want)
	}
	stored, err = q.Put(ctx, in[:2])
	if err != nil {
		t.Fatal(err)
	}
	if stored[0] || stored[1] {
		t.Fatalf("second Put stored %v, want none", stored)
	}
	if s, err := q.Put(ctx, nil); err != nil || len(s) != 0 {
		t.Fatalf("Put(nil) = %v, %v", s, err)
	}

	e := jobsMustGet(t, q, jobs.KindEnvelope, "ev:1")
	want := jobs.Job{Kind: jobs.KindEnvelope, Key: "ev:1", Payload: []byte("one"), State: jobs.Held, Owner: "a",
		LeaseUntil: jobAt(jobLease), Attempts: 1, CreatedAt: jobAt(0), UpdatedAt: jobAt(0)}
	if !jobsEqual(e, want) {
		t.Fatalf("Get ev:1 = %+v, want %+v", e, want)
	}
	r := jobsMustGet(t, q, jobs.KindRun, "ev:1")
	if r.State != jobs.Ready || r.Attempts != 0 || r.Owner != "" || !r.LeaseUntil.IsZero() || r.Payload != nil {
		t.Fatalf("jobReady run = %+v", r)
	}
	if r.CreatedAt.Location() != time.UTC || !r.CreatedAt.Equal(jobAt(time.Millisecond)) {
		t.Fatalf("CreatedAt = %v, want %v in UTC", r.CreatedAt, jobAt(time.Millisecond))
	}
	if f := jobsMustGet(t, q, jobs.KindFiring, "f"); f.State != jobs.Parked {
		t.Fatalf("parked put: %+v", f)
	}
	if d := jobsMustGet(t, q, jobs.KindEnvelope, "ev:seen"); d.State != jobs.Done || !d.FinishedAt.Equal(jobAt(0)) {
		t.Fatalf("done put: %+v", d)
	}
	_, err = q.Get(ctx, jobs.KindFiring, "ev:1")
	jobsWantErr(t, "Get of a missing job", err, jobs.ErrNotFound)
}

func jobsEqual(a, b jobs.Job) bool {
	return a.Kind == b.Kind && a.Key == b.Key && bytes.Equal(a.Payload, b.Payload) && a.State == b.State &&
		a.Owner == b.Owner && a.LeaseUntil.Equal(b.LeaseUntil) && a.Attempts == b.Attempts &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) && a.FinishedAt.Equal(b.FinishedAt) && a.Error == b.Error
}

func jobsPutInvalid(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	for _, j := range []jobs.Job{
		{Kind: "", Key: "k", CreatedAt: jobAt(0)},
		{Kind: jobs.KindRun, Key: "", CreatedAt: jobAt(0)},
		{Kind: jobs.KindRun, Key: "k"}, // no CreatedAt
		{Kind: jobs.KindRun, Key: "k", State: jobs.Held, CreatedAt: jobAt(0)},
		{Kind: jobs.KindRun, Key: "k", State: jobs.Failed, CreatedAt: jobAt(0)},
		{Kind: jobs.KindRun, Key: "k", State: "bogus", CreatedAt: jobAt(0)},
	} {
		_, err := q.Put(ctx, []jobs.Job{jobReady("ok", 0), j})
		jobsWantErr(t, fmt.Sprintf("Put %+v", j), err, jobs.ErrInvalid)
	}
	// A rejected batch stores nothing.
	_, err := q.Get(ctx, jobs.KindRun, "ok")
	jobsWantErr(t, "Get after rejected Put", err, jobs.ErrNotFound)
}

func jobsClaimKey(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("r", 0))
	j, err := q.ClaimKey(ctx, jobs.KindRun, "r", "a", jobAt(time.Second), jobLease, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := jobs.Job{Kind: jobs.KindRun, Key: "r", Payload: []byte("p-r"), State: jobs.Held, Owner: "a",
		LeaseUntil: jobAt(time.Second + jobLease), Attempts: 1, CreatedAt: jobAt(0), UpdatedAt: jobAt(time.Second)}
	if !jobsEqual(j, want) {
		t.Fatalf("ClaimKey = %+v, want %+v", j, want)
	}
	if g := jobsMustGet(t, q, jobs.KindRun, "r"); !jobsEqual(g, want) {
		t.Fatalf("Get after ClaimKey = %+v, want %+v", g, want)
	}
	_, err = q.ClaimKey(ctx, jobs.KindRun, "r", "b", jobAt(2*time.Second), jobLease, 0)
	jobsWantErr(t, "ClaimKey of a held job", err, jobs.ErrNotClaimable)
	_, err = q.ClaimKey(ctx, jobs.KindRun, "r", "a", jobAt(2*time.Second), jobLease, 0)
	jobsWantErr(t, "ClaimKey by the holder itself", err, jobs.ErrNotClaimable)
	_, err = q.ClaimKey(ctx, jobs.KindRun, "missing", "b", jobAt(2*time.Second), jobLease, 0)
	jobsWantErr(t, "ClaimKey of a missing job", err, jobs.ErrNotFound)
	_, err = q.ClaimKey(ctx, jobs.KindFiring, "r", "b", jobAt(2*time.Second), jobLease, 0)
	jobsWantErr(t, "ClaimKey of another kind", err, jobs.ErrNotFound)
}

func jobsTakeover(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("r", 0), jobReady("s", time.Millisecond))
	if _, err := q.Claim(ctx, jobs.KindRun, "dead", jobAt(0), jobLease, 0, 0); err != nil {
		t.Fatal(err)
	}
	// At the jobLease's end exactly the jobLease still holds; a nanosecond later
	// it has expired.
	if got, err := q.Claim(ctx, jobs.KindRun, "b", jobAt(jobLease), jobLease, 0, 0); err != nil || len(got) != 0 {
		t.Fatalf("Claim at jobLease end = %v, %v; want nothing", jobKeys(got), err)
	}
	_, err := q.ClaimKey(ctx, jobs.KindRun, "r", "b", jobAt(jobLease), jobLease, 0)
	jobsWantErr(t, "ClaimKey at jobLease end", err, jobs.ErrNotClaimable)
	later := jobAt(jobLease + time.Nanosecond)
	j, err := q.ClaimKey(ctx, jobs.KindRun, "r", "b", later, jobLease, 0)
	if err != nil {
		t.Fatalf("ClaimKey after expiry: %v", err)
	}
	if j.Owner != "b" || j.Attempts != 2 || !j.LeaseUntil.Equal(later.Add(jobLease)) {
		t.Fatalf("taken over: %+v", j)
	}
	got, err := q.Claim(ctx, jobs.KindRun, "c", later, jobLease, 0, 0)
	if err != nil || fmt.Sprint(jobKeys(got)) != "[s]" || got[0].Attempts != 2 || got[0].Owner != "c" {
		t.Fatalf("Claim after expiry = %+v, %v; want s with 2 attempts", got, err)
	}
	// The dead owner has lost both.
	_, err = q.Extend(ctx, jobs.KindRun, "r", "dead", later, jobLease)
	jobsWantErr(t, "Extend by the old owner", err, jobs.ErrLeaseLost)
	jobsWantErr(t, "Finish by the old owner", q.Finish(ctx, jobs.KindRun, "s", "dead", jobs.Done, "", nil, later), jobs.ErrLeaseLost)
	jobsWantErr(t, "Release by the old owner", q.Release(ctx, jobs.KindRun, "s", "dead", later), jobs.ErrLeaseLost)
	jobsWantErr(t, "Park by the old owner", q.Park(ctx, jobs.KindRun, "s", "dead", nil, later), jobs.ErrLeaseLost)
}

func jobsClaimOrder(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q,
		jobReady("e", 5*time.Millisecond), jobReady("b", 2*time.Millisecond), jobReady("a2", time.Millisecond),
		jobReady("a1", time.Millisecond), jobReady("d", 4*time.Millisecond), jobReady("c", 3*time.Millisecond),
		jobs.Job{Kind: jobs.KindFiring, Key: "other-kind", CreatedAt: jobAt(0)},
		jobs.Job{Kind: jobs.KindRun, Key: "parked", State: jobs.Parked, CreatedAt: jobAt(0)},
		jobs.Job{Kind: jobs.KindRun, Key: "done", State: jobs.Done, CreatedAt: jobAt(0)},
		jobs.Job{Kind: jobs.KindRun, Key: "held", State: jobs.Held, Owner: "x", LeaseUntil: jobAt(time.Hour), CreatedAt: jobAt(0)},
	)
	now := jobAt(time.Second)
	got, err := q.Claim(ctx, jobs.KindRun, "a", now, jobLease, 2, 0)
	if err != nil || fmt.Sprint(jobKeys(got)) != "[a1 a2]" {
		t.Fatalf("Claim limit 2 = %v, %v; want [a1 a2]", jobKeys(got), err)
	}
	for _, j := range got {
		if j.State != jobs.Held || j.Owner != "a" || j.Attempts != 1 || !j.LeaseUntil.Equal(now.Add(jobLease)) || string(j.Payload) != "p-"+j.Key {
			t.Fatalf("claimed %+v", j)
		}
	}
	got, err = q.Claim(ctx, jobs.KindRun, "b", now, jobLease, 0, 0)
	if err != nil || fmt.Sprint(jobKeys(got)) != "[b c d e]" {
		t.Fatalf("Claim all = %v, %v; want [b c d e]", jobKeys(got), err)
	}
	got, err = q.Claim(ctx, jobs.KindRun, "c", now, jobLease, 0, 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("Claim of an empty queue = %v, %v", jobKeys(got), err)
	}
}

func jobsAttemptBound(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("r", 0), jobReady("s", time.Millisecond))
	const maxAttempts = 3
	now := jobAt(0)
	for i := 1; i <= maxAttempts; i++ {
		got, err := q.Claim(ctx, jobs.KindRun, fmt.Sprint("w", i), now, jobLease, 1, maxAttempts)
		if err != nil || len(got) != 1 || got[0].Key != "r" || got[0].Attempts != i {
			t.Fatalf("pickup %d = %+v, %v", i, got, err)
		}
		now = now.Add(jobLease + time.Second) // each holder dies
	}
	// r has had its max pickups: Claim passes over it, ClaimKey refuses.
	got, err := q.Claim(ctx, jobs.KindRun, "w", now, jobLease, 1, maxAttempts)
	if err != nil || fmt.Sprint(jobKeys(got)) != "[s]" {
		t.Fatalf("Claim past the bound = %v, %v; want [s]", jobKeys(got), err)
	}
	_, err = q.ClaimKey(ctx, jobs.KindRun, "r", "w", now, jobLease, maxAttempts)
	jobsWantErr(t, "ClaimKey past the bound", err, jobs.ErrNotClaimable)
	// Without a bound it can still be claimed.
	if j, err := q.ClaimKey(ctx, jobs.KindRun, "r", "w", now, jobLease, 0); err != nil || j.Attempts != maxAttempts+1 {
		t.Fatalf("ClaimKey without bound = %+v, %v", j, err)
	}
}

func jobsExtend(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("r", 0))
	if _, err := q.ClaimKey(ctx, jobs.KindRun, "r", "a", jobAt(0), jobLease, 0); err != nil {
		t.Fatal(err)
	}
	// Heartbeats keep the jobLease past its first end.
	now := jobAt(0)
	for range 5 {
		now = now.Add(jobLease / 2)
		j, err := q.Extend(ctx, jobs.KindRun, "r", "a", now, jobLease)
		if err != nil {
			t.Fatal(err)
		}
		if !j.LeaseUntil.Equal(now.Add(jobLease)) || j.Owner != "a" || j.Attempts != 1 || !j.UpdatedAt.Equal(now) {
			t.Fatalf("Extend = %+v", j)
		}
		if got, err := q.Claim(ctx, jobs.KindRun, "b", now.Add(jobLease/2), jobLease, 0, 0); err != nil || len(got) != 0 {
			t.Fatalf("Claim of a job kept by heartbeats = %v, %v", jobKeys(got), err)
		}
	}
	_, err := q.Extend(ctx, jobs.KindRun, "r", "b", now, jobLease)
	jobsWantErr(t, "Extend by another owner", err, jobs.ErrLeaseLost)
	_, err = q.Extend(ctx, jobs.KindRun, "missing", "a", now, jobLease)
	jobsWantErr(t, "Extend of a missing job", err, jobs.ErrNotFound)
	// An expired jobLease not yet taken over may still be extended.
	late := now.Add(2 * jobLease)
	if _, err := q.Extend(ctx, jobs.KindRun, "r", "a", late, jobLease); err != nil {
		t.Fatalf("Extend of an expired jobLease nobody took: %v", err)
	}
}

func jobsRelease(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("r", 0))
	now := jobAt(0)
	claim := func(owner string) jobs.Job {
		t.Helper()
		j, err := q.ClaimKey(ctx, jobs.KindRun, "r", owner, now, jobLease, 5)
		if err != nil {
			t.Fatalf("ClaimKey by %s: %v", owner, err)
		}
		return j
	}
	claim("a")
	if err := q.Release(ctx, jobs.KindRun, "r", "a", now); err != nil {
		t.Fatal(err)
	}
	j := jobsMustGet(t, q, jobs.KindRun, "r")
	if j.State != jobs.Ready || j.Owner != "" || !j.LeaseUntil.IsZero() || j.Attempts != 1 {
		t.Fatalf("after first release: %+v (attempts never below 1)", j)
	}
	// Another process takes it at once, without waiting for a jobLease.
	if j := claim("b"); j.Attempts != 2 {
		t.Fatalf("pickup after release: attempts %d, want 2", j.Attempts)
	}
	// A crash (jobLease expiry) counts; a graceful release gives it back.
	now = now.Add(jobLease + time.Second)
	claim("c") // 3
	if err := q.Release(ctx, jobs.KindRun, "r", "c", now); err != nil {
		t.Fatal(err)
	}
	if j := jobsMustGet(t, q, jobs.KindRun, "r"); j.Attempts != 2 {
		t.Fatalf("after release: attempts %d, want 2", j.Attempts)
	}
	// Many rolling restarts never exhaust the bound of 5.
	for i := range 10 {
		owner := fmt.Sprint("roll", i)
		claim(owner)
		if err := q.Release(ctx, jobs.KindRun, "r", owner, now); err != nil {
			t.Fatal(err)
		}
	}
	if j := claim("last"); j.Attempts != 3 {
		t.Fatalf("after rolling restarts: attempts %d, want 3", j.Attempts)
	}
	jobsWantErr(t, "Release by a non-holder", q.Release(ctx, jobs.KindRun, "r", "a", now), jobs.ErrLeaseLost)
	jobsWantErr(t, "Release of a missing job", q.Release(ctx, jobs.KindRun, "x", "a", now), jobs.ErrNotFound)
}

func jobsPark(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("r", 0))
	if _, err := q.ClaimKey(ctx, jobs.KindRun, "r", "a", jobAt(0), jobLease, 0); err != nil {
		t.Fatal(err)
	}
	jobsWantErr(t, "Park by a non-holder", q.Park(ctx, jobs.KindRun, "r", "b", nil, jobAt(time.Second)), jobs.ErrLeaseLost)
	if err := q.Park(ctx, jobs.KindRun, "r", "a", []byte("interrupt"), jobAt(time.Second)); err != nil {
		t.Fatal(err)
	}
	j := jobsMustGet(t, q, jobs.KindRun, "r")
	if j.State != jobs.Parked || j.Owner != "" || !j.LeaseUntil.IsZero() || string(j.Payload) != "interrupt" || j.Attempts != 1 {
		t.Fatalf("parked: %+v", j)
	}
	// A parked job is never claimed, however late.
	if got, err := q.Claim(ctx, jobs.KindRun, "b", jobAt(24*time.Hour), jobLease, 0, 0); err != nil || len(got) != 0 {
		t.Fatalf("Claim of a parked job = %v, %v", jobKeys(got), err)
	}
	_, err := q.ClaimKey(ctx, jobs.KindRun, "r", "b", jobAt(24*time.Hour), jobLease, 0)
	jobsWantErr(t, "ClaimKey of a parked job", err, jobs.ErrNotClaimable)
	_, err = q.Extend(ctx, jobs.KindRun, "r", "a", jobAt(2*time.Second), jobLease)
	jobsWantErr(t, "Extend of a parked job", err, jobs.ErrLeaseLost)

	j, err = q.Unpark(ctx, jobs.KindRun, "r", []byte("decision"), jobAt(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if j.State != jobs.Ready || j.Attempts != 0 || string(j.Payload) != "decision" || !j.UpdatedAt.Equal(jobAt(time.Hour)) {
		t.Fatalf("Unpark = %+v", j)
	}
	_, err = q.Unpark(ctx, jobs.KindRun, "r", []byte("second"), jobAt(time.Hour))
	jobsWantErr(t, "second Unpark", err, jobs.ErrNotParked)
	_, err = q.Unpark(ctx, jobs.KindRun, "missing", nil, jobAt(time.Hour))
	jobsWantErr(t, "Unpark of a missing job", err, jobs.ErrNotFound)
	if g := jobsMustGet(t, q, jobs.KindRun, "r"); string(g.Payload) != "decision" {
		t.Fatalf("payload after refused Unpark = %q", g.Payload)
	}
	j, err = q.ClaimKey(ctx, jobs.KindRun, "r", "b", jobAt(time.Hour), jobLease, 5)
	if err != nil || j.Attempts != 1 {
		t.Fatalf("claim after Unpark = %+v, %v; want attempts 1", j, err)
	}
	// A nil payload keeps the stored one.
	if err := q.Park(ctx, jobs.KindRun, "r", "b", nil, jobAt(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if j, err := q.Unpark(ctx, jobs.KindRun, "r", nil, jobAt(time.Hour)); err != nil || string(j.Payload) != "decision" {
		t.Fatalf("Unpark with nil payload = %+v, %v", j, err)
	}
}

func jobsFinish(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("ok", 0), jobReady("bad", 0), jobReady("drop", 0))
	if _, err := q.Claim(ctx, jobs.KindRun, "a", jobAt(0), jobLease, 0, 0); err != nil {
		t.Fatal(err)
	}
	now := jobAt(time.Minute)
	jobsWantErr(t, "Finish in state jobReady", q.Finish(ctx, jobs.KindRun, "ok", "a", jobs.Ready, "", nil, now), jobs.ErrInvalid)
	jobsWantErr(t, "Finish by a non-holder", q.Finish(ctx, jobs.KindRun, "ok", "b", jobs.Done, "", nil, now), jobs.ErrLeaseLost)
	jobsWantErr(t, "Finish of a missing job", q.Finish(ctx, jobs.KindRun, "x", "a", jobs.Done, "", nil, now), jobs.ErrNotFound)
	if err := q.Finish(ctx, jobs.KindRun, "ok", "a", jobs.Done, "ignored", nil, now); err != nil {
		t.Fatal(err)
	}
	if err := q.Finish(ctx, jobs.KindRun, "bad", "a", jobs.Failed, "boom", []byte("partial"), now); err != nil {
		t.Fatal(err)
	}
	if err := q.Finish(ctx, jobs.KindRun, "drop", "a", jobs.Done, "", []byte{}, now); err != nil {
		t.Fatal(err)
	}
	ok := jobsMustGet(t, q, jobs.KindRun, "ok")
	want := jobs.Job{Kind: jobs.KindRun, Key: "ok", Payload: []byte("p-ok"), State: jobs.Done, Attempts: 1,
		CreatedAt: jobAt(0), UpdatedAt: now, FinishedAt: now}
	if !jobsEqual(ok, want) {
		t.Fatalf("done: %+v, want %+v", ok, want)
	}
	if bad := jobsMustGet(t, q, jobs.KindRun, "bad"); bad.State != jobs.Failed || bad.Error != "boom" || string(bad.Payload) != "partial" || !bad.FinishedAt.Equal(now) {
		t.Fatalf("failed: %+v", bad)
	}
	if d := jobsMustGet(t, q, jobs.KindRun, "drop"); len(d.Payload) != 0 {
		t.Fatalf("payload not dropped: %q", d.Payload)
	}
	jobsWantErr(t, "second Finish", q.Finish(ctx, jobs.KindRun, "ok", "a", jobs.Done, "", nil, now), jobs.ErrLeaseLost)
	_, err := q.ClaimKey(ctx, jobs.KindRun, "ok", "b", now.Add(time.Hour), jobLease, 0)
	jobsWantErr(t, "ClaimKey of a done job", err, jobs.ErrNotClaimable)
	if got, err := q.Claim(ctx, jobs.KindRun, "b", now.Add(time.Hour), jobLease, 0, 0); err != nil || len(got) != 0 {
		t.Fatalf("Claim of finished jobs = %v, %v", jobKeys(got), err)
	}
}

func jobsCancel(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("queued", 0), jobReady("held", 0),
		jobs.Job{Kind: jobs.KindRun, Key: "waiting", State: jobs.Parked, CreatedAt: jobAt(0)})
	if _, err := q.ClaimKey(ctx, jobs.KindRun, "held", "a", jobAt(0), jobLease, 0); err != nil {
		t.Fatal(err)
	}
	now := jobAt(time.Second)
	for _, key := range []string{"queued", "waiting"} {
		if err := q.Cancel(ctx, jobs.KindRun, key, "cancelled by u1", now); err != nil {
			t.Fatalf("Cancel %s: %v", key, err)
		}
		if j := jobsMustGet(t, q, jobs.KindRun, key); j.State != jobs.Failed || j.Error != "cancelled by u1" || !j.FinishedAt.Equal(now) {
			t.Fatalf("cancelled %s: %+v", key, j)
		}
	}
	jobsWantErr(t, "Cancel of a held job", q.Cancel(ctx, jobs.KindRun, "held", "x", now), jobs.ErrNotClaimable)
	jobsWantErr(t, "Cancel of a finished job", q.Cancel(ctx, jobs.KindRun, "queued", "x", now), jobs.ErrNotClaimable)
	jobsWantErr(t, "Cancel of a missing job", q.Cancel(ctx, jobs.KindRun, "missing", "x", now), jobs.ErrNotFound)
	if j := jobsMustGet(t, q, jobs.KindRun, "held"); j.State != jobs.Held {
		t.Fatalf("held job after refused Cancel: %+v", j)
	}
}

func jobsFailExpired(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	f := func(key string) jobs.Job {
		return jobs.Job{Kind: jobs.KindFiring, Key: key, CreatedAt: jobAt(0)}
	}
	jobsMustPut(t, q, f("spent"), f("young"), f("alive"), jobReady("run", 0))
	now := jobAt(0)
	// spent: three pickups, all holders dead. young: one. alive: three, the
	// last still under jobLease. run: another kind, three pickups.
	for i := range 3 {
		for _, k := range []struct {
			kind jobs.Kind
			key  string
		}{{jobs.KindFiring, "spent"}, {jobs.KindFiring, "alive"}, {jobs.KindRun, "run"}} {
			if _, err := q.ClaimKey(ctx, k.kind, k.key, fmt.Sprint("w", i), now, jobLease, 0); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			if _, err := q.ClaimKey(ctx, jobs.KindFiring, "young", "w", now, jobLease, 0); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(jobLease + time.Second)
	}
	if _, err := q.Extend(ctx, jobs.KindFiring, "alive", "w2", now, jobLease); err != nil {
		t.Fatal(err)
	}
	_, err := q.FailExpired(ctx, jobs.KindFiring, now, 0, "x")
	jobsWantErr(t, "FailExpired without a bound", err, jobs.ErrInvalid)
	n, err := q.FailExpired(ctx, jobs.KindFiring, now, 3, "jobLease expired after 3 attempts")
	if err != nil || n != 1 {
		t.Fatalf("FailExpired = %d, %v; want 1", n, err)
	}
	if j := jobsMustGet(t, q, jobs.KindFiring, "spent"); j.State != jobs.Failed || j.Error != "jobLease expired after 3 attempts" || j.Owner != "" || !j.FinishedAt.Equal(now) {
		t.Fatalf("spent: %+v", j)
	}
	for _, k := range []struct {
		kind jobs.Kind
		key  string
	}{{jobs.KindFiring, "young"}, {jobs.KindFiring, "alive"}, {jobs.KindRun, "run"}} {
		if j := jobsMustGet(t, q, k.kind, k.key); j.State != jobs.Held {
			t.Fatalf("%s/%s failed too: %+v", k.kind, k.key, j)
		}
	}
	if n, err := q.FailExpired(ctx, jobs.KindFiring, now, 3, "x"); err != nil || n != 0 {
		t.Fatalf("second FailExpired = %d, %v; want 0", n, err)
	}
}

func jobsPrune(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("old-done", 0), jobReady("new-done", 0), jobReady("old-jobReady", 0), jobReady("old-held", 0),
		jobs.Job{Kind: jobs.KindRun, Key: "old-parked", State: jobs.Parked, CreatedAt: jobAt(0)},
		jobs.Job{Kind: jobs.KindEnvelope, Key: "ev:old", State: jobs.Done, CreatedAt: jobAt(0)})
	for _, k := range []string{"old-done", "new-done", "old-held"} {
		if _, err := q.ClaimKey(ctx, jobs.KindRun, k, "a", jobAt(0), jobLease, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Finish(ctx, jobs.KindRun, "old-done", "a", jobs.Failed, "x", nil, jobAt(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := q.Finish(ctx, jobs.KindRun, "new-done", "a", jobs.Done, "", nil, jobAt(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for id, seen := range map[string]time.Duration{"gone": time.Hour, "here": 3 * time.Hour} {
		if err := q.TouchInstance(ctx, id, jobAt(seen)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := q.Prune(ctx, jobAt(2*time.Hour))
	if err != nil || n != 3 { // old-done, ev:old, instance gone
		t.Fatalf("Prune = %d, %v; want 3", n, err)
	}
	for _, k := range []string{"new-done", "old-jobReady", "old-held", "old-parked"} {
		jobsMustGet(t, q, jobs.KindRun, k)
	}
	for _, k := range []struct {
		kind jobs.Kind
		key  string
	}{{jobs.KindRun, "old-done"}, {jobs.KindEnvelope, "ev:old"}} {
		_, err := q.Get(ctx, k.kind, k.key)
		jobsWantErr(t, "Get of pruned "+k.key, err, jobs.ErrNotFound)
	}
	// A pruned key may be put again.
	jobsMustPut(t, q, jobs.Job{Kind: jobs.KindEnvelope, Key: "ev:old", CreatedAt: jobAt(3 * time.Hour)})
	if n, err := q.LiveInstances(ctx, jobAt(0)); err != nil || n != 1 {
		t.Fatalf("LiveInstances after Prune = %d, %v; want 1", n, err)
	}
}

func jobsInstances(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	live := func(since time.Duration) int {
		t.Helper()
		n, err := q.LiveInstances(ctx, jobAt(since))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := live(0); n != 0 {
		t.Fatalf("LiveInstances of none = %d", n)
	}
	for _, in := range []struct {
		id   string
		seen time.Duration
	}{{"a", 0}, {"b", 10 * time.Second}, {"c", 20 * time.Second}, {"a", 30 * time.Second}} {
		if err := q.TouchInstance(ctx, in.id, jobAt(in.seen)); err != nil {
			t.Fatal(err)
		}
	}
	if n := live(10 * time.Second); n != 3 {
		t.Fatalf("live since 10s = %d, want 3 (the bound is inclusive)", n)
	}
	if n := live(15 * time.Second); n != 2 {
		t.Fatalf("live since 15s = %d, want 2", n)
	}
	if err := q.LeaveInstance(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := q.LeaveInstance(ctx, "never"); err != nil {
		t.Fatalf("LeaveInstance of an unknown id: %v", err)
	}
	if n := live(0); n != 2 {
		t.Fatalf("live after leave = %d, want 2", n)
	}
}

func jobsConcurrentClaim(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	const n, workers = 120, 6
	var all []jobs.Job
	for i := range n {
		all = append(all, jobs.Job{Kind: jobs.KindEnvelope, Key: fmt.Sprintf("ev:%03d", i), CreatedAt: jobAt(time.Duration(i) * time.Millisecond)})
	}
	jobsMustPut(t, q, all...)
	var mu sync.Mutex
	claimedBy := map[string][]string{}
	owner := func(w int) string { return fmt.Sprint("worker", w) }
	claimAll(t, workers, func(w int) ([]jobs.Job, error) {
		return q.Claim(ctx, jobs.KindEnvelope, owner(w), jobAt(time.Second), jobLease, 3, 0)
	}, func(w int, got []jobs.Job) error {
		for _, j := range got {
			if j.Owner != owner(w) {
				return fmt.Errorf("%s got a job owned by %s", owner(w), j.Owner)
			}
			mu.Lock()
			claimedBy[j.Key] = append(claimedBy[j.Key], owner(w))
			mu.Unlock()
			if err := q.Finish(ctx, jobs.KindEnvelope, j.Key, owner(w), jobs.Done, "", []byte{}, jobAt(2*time.Second)); err != nil {
				return err
			}
		}
		return nil
	})
	if len(claimedBy) != n {
		t.Fatalf("%d jobs claimed, want %d", len(claimedBy), n)
	}
	for k, owners := range claimedBy {
		if len(owners) != 1 {
			t.Fatalf("%s claimed by %v, want exactly one owner", k, owners)
		}
		if j := jobsMustGet(t, q, jobs.KindEnvelope, k); j.State != jobs.Done || j.Attempts != 1 {
			t.Fatalf("%s: %+v", k, j)
		}
	}
}

func jobsConcurrentClaimKey(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobReady("r", 0))
	const workers = 8
	var wg sync.WaitGroup
	wins := make(chan string, workers)
	errs := make(chan error, workers)
	for w := range workers {
		owner := fmt.Sprint("w", w)
		wg.Go(func() {
			_, err := q.ClaimKey(ctx, jobs.KindRun, "r", owner, jobAt(0), jobLease, 0)
			switch {
			case err == nil:
				wins <- owner
			case !errors.Is(err, jobs.ErrNotClaimable):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(wins)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var winners []string
	for w := range wins {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("winners %v, want exactly one", winners)
	}
	if j := jobsMustGet(t, q, jobs.KindRun, "r"); j.Owner != winners[0] || j.Attempts != 1 {
		t.Fatalf("stored %+v, winner %s", j, winners[0])
	}
}

func jobsConcurrentPutUnpark(t *testing.T, q jobs.Queue) {
	ctx := context.Background()
	jobsMustPut(t, q, jobs.Job{Kind: jobs.KindRun, Key: "waiting", State: jobs.Parked, CreatedAt: jobAt(0)})
	const workers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	puts, unparks := 0, 0
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Go(func() {
			stored, err := q.Put(ctx, []jobs.Job{{Kind: jobs.KindEnvelope, Key: "ev:dup", Payload: []byte(fmt.Sprint(w)), CreatedAt: jobAt(0)}})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			if stored[0] {
				puts++
			}
			mu.Unlock()
		})
		wg.Go(func() {
			_, err := q.Unpark(ctx, jobs.KindRun, "waiting", []byte(fmt.Sprint(w)), jobAt(time.Second))
			switch {
			case err == nil:
				mu.Lock()
				unparks++
				mu.Unlock()
			case !errors.Is(err, jobs.ErrNotParked):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if puts != 1 || unparks != 1 {
		t.Fatalf("%d puts and %d unparks won, want one each", puts, unparks)
	}
}

// BenchJobs measures put+claim+finish of one job at a time, and claim+finish
// with 4 concurrent claimers draining a full queue.
func BenchJobs(b *testing.B, open func(t testing.TB) jobs.Queue) {
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		q := open(b)
		now := jobAt(0)
		b.ResetTimer()
		for i := range b.N {
			key := fmt.Sprint("k", i)
			if _, err := q.Put(ctx, []jobs.Job{{Kind: jobs.KindRun, Key: key, Payload: []byte("payload"), CreatedAt: now}}); err != nil {
				b.Fatal(err)
			}
			got, err := q.Claim(ctx, jobs.KindRun, "w", now, jobLease, 1, 5)
			if err != nil || len(got) != 1 {
				b.Fatalf("Claim = %d jobs, %v", len(got), err)
			}
			if err := q.Finish(ctx, jobs.KindRun, got[0].Key, "w", jobs.Done, "", nil, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("claimers=4", func(b *testing.B) {
		q := open(b)
		now := jobAt(0)
		const batch = 500
		for i := 0; i < b.N; i += batch {
			var js []jobs.Job
			for k := i; k < min(i+batch, b.N); k++ {
				js = append(js, jobs.Job{Kind: jobs.KindRun, Key: fmt.Sprint("k", k), Payload: []byte("payload"), CreatedAt: now.Add(time.Duration(k))})
			}
			if _, err := q.Put(ctx, js); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		var mu sync.Mutex
		done := 0
		claimAll(b, 4, func(w int) ([]jobs.Job, error) {
			return q.Claim(ctx, jobs.KindRun, fmt.Sprint("w", w), now, jobLease, 1, 5)
		}, func(w int, got []jobs.Job) error {
			if err := q.Finish(ctx, jobs.KindRun, got[0].Key, fmt.Sprint("w", w), jobs.Done, "", nil, now); err != nil {
				return err
			}
			mu.Lock()
			done++
			mu.Unlock()
			return nil
		})
		if done != b.N {
			b.Fatalf("finished %d of %d", done, b.N)
		}
	})
}

// JobsTwoHandles checks that claims through two handles on one database
// (two pools, two processes' worth of connections) take every job exactly
// once, and that a lease taken through one is honoured by the other.
func JobsTwoHandles(t *testing.T, a, b jobs.Queue) {
	ctx := context.Background()
	const n = 100
	var all []jobs.Job
	for i := range n {
		all = append(all, jobs.Job{Kind: jobs.KindFiring, Key: fmt.Sprintf("f%03d", i), CreatedAt: jobAt(time.Duration(i))})
	}
	stored, err := a.Put(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Put(ctx, all[:10])
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if !stored[i] || again[i] {
			t.Fatalf("Put through a stored %v, then through b %v", stored[i], again[i])
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	claimAll(t, 8, func(w int) ([]jobs.Job, error) {
		q := a
		if w%2 == 1 {
			q = b
		}
		return q.Claim(ctx, jobs.KindFiring, fmt.Sprint("w", w), jobAt(time.Second), jobLease, 2, 3)
	}, func(_ int, got []jobs.Job) error {
		mu.Lock()
		defer mu.Unlock()
		for _, j := range got {
			seen[j.Key]++
		}
		return nil
	})
	if len(seen) != n {
		t.Fatalf("%d jobs claimed, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("%s claimed %d times", k, c)
		}
	}
	// Leases hold across handles until they expire.
	if got, err := b.Claim(ctx, jobs.KindFiring, "late", jobAt(time.Second+jobLease), jobLease, 0, 3); err != nil || len(got) != 0 {
		t.Fatalf("Claim under live leases = %d jobs, %v", len(got), err)
	}
	if got, err := b.Claim(ctx, jobs.KindFiring, "late", jobAt(2*time.Second+jobLease), jobLease, 0, 3); err != nil || len(got) != n {
		t.Fatalf("Claim after expiry = %d jobs, %v; want %d", len(got), err, n)
	}
}

// claimAll has workers claim at once, each through claim until it gets
// nothing, handing every batch to took; the first error fails t.
func claimAll(t testing.TB, workers int, claim func(w int) ([]jobs.Job, error), took func(w int, got []jobs.Job) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for {
				got, err := claim(w)
				if err == nil && len(got) == 0 {
					return
				}
				if err == nil {
					err = took(w, got)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
