package faults

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// RSS returns this process's resident set size and its peak, in bytes; see
// ProcRSS.
func RSS() (cur, peak int64) { return ProcRSS(os.Getpid()) }

// ProcRSS returns a process's resident set size and its peak (VmRSS, VmHWM
// from /proc/<pid>/status) in bytes; zeros where /proc is missing.
func ProcRSS(pid int) (cur, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			cur = n << 10
		case "VmHWM":
			peak = n << 10
		}
	}
	return cur, peak
}

// CallStamp is one Web API call: its method, the channel it addressed (if
// any) and when it arrived.
type CallStamp struct {
	Method  string
	Channel string
	At      time.Time
}

// Rates summarises Web API calls.
type Rates struct {
	// PerMethod is calls per second of each method over the whole window.
	PerMethod map[string]float64
	// Count is calls of each method.
	Count map[string]int
	// UpdateAvgMax is the highest average chat.update rate of any one
	// channel (updates / seconds between the channel's first and last
	// update, counted only for channels with at least two updates and
	// floored at one second).
	UpdateAvgMax float64
	// UpdatePeak is the most chat.update calls to one channel within any
	// one-second bucket.
	UpdatePeak int
	Window     time.Duration
}

// ComputeRates summarises calls made within [from, to].
func ComputeRates(calls []CallStamp, from, to time.Time) Rates {
	r := Rates{PerMethod: map[string]float64{}, Count: map[string]int{}, Window: to.Sub(from)}
	byChan := map[string][]time.Time{}
	for _, c := range calls {
		if c.At.Before(from) || c.At.After(to) {
			continue
		}
		r.Count[c.Method]++
		if c.Method == "chat.update" && c.Channel != "" {
			byChan[c.Channel] = append(byChan[c.Channel], c.At)
		}
	}
	secs := max(r.Window.Seconds(), 1)
	for m, n := range r.Count {
		r.PerMethod[m] = float64(n) / secs
	}
	for _, ts := range byChan {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		if len(ts) >= 2 {
			span := max(ts[len(ts)-1].Sub(ts[0]).Seconds(), 1)
			r.UpdateAvgMax = max(r.UpdateAvgMax, float64(len(ts)-1)/span)
		}
		buckets := map[int64]int{}
		for _, t := range ts {
			b := t.Unix()
			buckets[b]++
			r.UpdatePeak = max(r.UpdatePeak, buckets[b])
		}
	}
	return r
}

// Compact renders the per-method rates as "method=n(r/s)" pairs, busiest
// first.
func (r Rates) Compact() string {
	ms := make([]string, 0, len(r.Count))
	for m := range r.Count {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		return r.Count[ms[i]] > r.Count[ms[j]] || r.Count[ms[i]] == r.Count[ms[j]] && ms[i] < ms[j]
	})
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d(%.1f/s)", m, r.Count[m], r.PerMethod[m])
	}
	return b.String()
}
