package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
)

// mention is one question sent to the bot.
type mention struct {
	User, Channel, Text string
	TS                  string // the user's message, the thread root
}

// Outcome kinds, as a user sees them in the thread.
const (
	outReport   = "report"   // the run is done and its report file is in the thread
	outFailed   = "failed"   // the run failed and the status message says so
	outRejected = "rejected" // no run; the bot replied why (in the thread or to the user alone)
	outIgnored  = "ignored"  // no run and no reply: the user was told earlier that repeats go unanswered for a while
	outPending  = ""         // nothing final yet
)

// verdict is what became of one mention.
type verdict struct {
	Kind       string
	Files      int    // completed report files in the thread
	Runs       int    // runs recorded for the thread
	State      string // the latest run's state
	Reply      string // the bot's last words in the thread
	Duplicates int    // files or runs beyond the first
}

// send delivers mentions and waits for each to be acknowledged.
func (w *world) send(ctx context.Context, ms []mention) []mention {
	w.t.Helper()
	out := make([]mention, len(ms))
	for i, m := range ms {
		sent, err := w.slack.SendAppMention(ctx, slackfake.AppMention{User: m.User, Channel: m.Channel, Text: m.Text})
		if err != nil {
			w.t.Fatalf("mention %d: %v", i, err)
		}
		m.TS = sent.TS
		out[i] = m
	}
	return out
}

// botText is every version of the bot's messages in a thread, newest
// version of each message first, oldest message first.
func latestText(m slackfake.Message) string { return m.Text + "\n" + string(m.Blocks) }

// judge classifies one mention from Slack's and the store's view.
func (w *world) judge(ctx context.Context, m mention, runsByThread map[string][]research.Run) verdict {
	var v verdict
	for _, f := range w.slack.Files() {
		if f.Completed && len(f.Channels) > 0 && f.Channels[0] == m.Channel && f.ThreadTS == m.TS {
			v.Files++
		}
	}
	threadID := slackstate.ThreadKey{Team: w.slack.TeamID(), Channel: m.Channel, ThreadTS: m.TS}.ThreadID()
	runs := runsByThread[threadID]
	v.Runs = len(runs)
	var botMsgs []slackfake.Message
	for _, msg := range w.slack.Thread(m.Channel, m.TS) {
		if msg.IsBot() {
			botMsgs = append(botMsgs, msg)
		}
	}
	if n := len(botMsgs); n > 0 {
		v.Reply = latestText(botMsgs[n-1])
	}
	v.Duplicates = max(v.Files-1, 0) + max(v.Runs-1, 0)
	if v.Runs == 0 {
		if len(botMsgs) > 0 {
			v.Kind = outRejected
			return v
		}
		// A flood's repeated refusals go to the user alone, and after a
		// few of them the bot says it will not answer repeats for a while.
		told := false
		for _, e := range w.slack.Ephemerals() {
			if e.User != m.User || e.Channel != m.Channel {
				continue
			}
			if e.ThreadTS == m.TS {
				v.Kind, v.Reply = outRejected, e.Text
				return v
			}
			told = told || strings.Contains(e.Text, "won't answer the same request again")
		}
		if told {
			v.Kind = outIgnored
		}
		return v
	}
	latest := runs[len(runs)-1]
	v.State = string(latest.State)
	status := ""
	statusTS, _ := w.records.StatusMessage(ctx, latest.ID)
	for _, msg := range botMsgs {
		if msg.TS == statusTS && statusTS != "" {
			status = latestText(msg)
		}
	}
	switch latest.State {
	case research.StateDone:
		if v.Files >= 1 && strings.Contains(status, "Done") {
			v.Kind = outReport
		}
	case research.StateFailed:
		// The status message, or a message of its own, says it failed.
		for _, msg := range botMsgs {
			t := latestText(msg)
			if strings.Contains(t, "Something went wrong") || strings.Contains(t, "Failed") {
				v.Kind = outFailed
				v.Reply = t
			}
		}
	}
	return v
}

// runsByThread lists the store's runs grouped by graph thread.
func (w *world) runsByThread(ctx context.Context) (map[string][]research.Run, error) {
	runs, err := w.store.ListRuns(ctx, research.RunFilter{})
	if err != nil {
		return nil, err
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].CreatedAt.Before(runs[j].CreatedAt) })
	out := map[string][]research.Run{}
	for _, r := range runs {
		out[r.ThreadID] = append(out[r.ThreadID], r)
	}
	return out, nil
}

// settle waits until every mention has a final outcome and no run is
// active, then returns the verdicts. On timeout it reports the stragglers.
func (w *world) settle(ctx context.Context, ms []mention, timeout time.Duration) []verdict {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	var vs []verdict
	for {
		byThread, err := w.runsByThread(ctx)
		if err == nil {
			vs = make([]verdict, len(ms))
			pending := 0
			for i, m := range ms {
				vs[i] = w.judge(ctx, m, byThread)
				if vs[i].Kind == outPending {
					pending++
				}
			}
			active := 0
			for _, rs := range byThread {
				for _, r := range rs {
					if r.State.Active() {
						active++
					}
				}
			}
			if pending == 0 && active == 0 {
				return vs
			}
			if time.Now().After(deadline) {
				for i, v := range vs {
					if v.Kind == outPending {
						w.t.Errorf("mention %d (%s %s) has no final outcome: state=%q files=%d runs=%d last reply %.300q", i, ms[i].Channel, ms[i].TS, v.State, v.Files, v.Runs, v.Reply)
					}
				}
				w.t.Fatalf("%d of %d mentions unsettled, %d runs active after %v; errors logged: %q", pending, len(ms), active, timeout, first(w.logs.Errors(), 5))
			}
		} else if time.Now().After(deadline) {
			w.t.Fatalf("list runs: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func first(xs []string, n int) []string {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

// tally counts verdicts by kind and checks that nothing was lost or
// duplicated; it returns "report=… failed=… rejected=… dup=… lost=…".
func tally(t testing.TB, vs []verdict) (counts map[string]int, summary string) {
	t.Helper()
	counts = map[string]int{}
	for i, v := range vs {
		counts[v.Kind]++
		counts["dup"] += v.Duplicates
		if v.Duplicates > 0 {
			t.Errorf("mention %d: %d duplicates (files %d, runs %d)", i, v.Duplicates, v.Files, v.Runs)
		}
		if v.Kind == outPending {
			counts["lost"]++
		}
	}
	summary = fmt.Sprintf("report=%d failed=%d rejected=%d dup=%d lost=%d", counts[outReport], counts[outFailed], counts[outRejected], counts["dup"], counts["lost"])
	if counts[outIgnored] > 0 {
		summary += fmt.Sprintf(" ignored_after_notice=%d", counts[outIgnored])
	}
	return counts, summary
}

// questions returns n mentions spread over channels (one per `per` runs).
func questions(n, per int, user func(i int) string) []mention {
	ms := make([]mention, n)
	for i := range ms {
		ms[i] = mention{User: user(i), Channel: fmt.Sprintf("C%03d", i/per), Text: fmt.Sprintf("What does the EU AI Act require? (q%d)", i)}
	}
	return ms
}

// checkNoPings fails when anything the bot sent would notify people.
func (w *world) checkNoPings() {
	w.t.Helper()
	if p := w.slack.Pings(); len(p) > 0 {
		w.t.Errorf("the bot pinged %d times, first: %+v", len(p), p[0])
	}
}
