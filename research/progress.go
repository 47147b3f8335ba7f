package research

import (
	"fmt"
	"strings"

	"deepresearch/agent"
)

// tracker folds the agent's progress events into the bot's snapshots. The
// agent serialises its calls to events, so it needs no lock.
type tracker struct {
	sink ProgressSink
	p    Progress
	subs []subtask
	read map[string]bool // URLs of the sources read
}

type subtask struct {
	round, index int
	keyed        bool // matched to a started subtask
	title        string
	state        SubtaskState
	searches     int
	sources      []Source
	seen         map[string]bool // URLs in sources
	// finished counts its researchers that finished (a team has several):
	// it is done when the last one has, failed when none found anything.
	finished int
	found    bool
}

// addSource records a page the subtask read, once.
func (s *subtask) addSource(url, title string) {
	if url == "" || s.seen[url] {
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[url] = true
	if title == "" {
		title = url
	}
	s.sources = append(s.sources, Source{URL: url, Title: title})
}

func newTracker(sink ProgressSink) *tracker {
	return &tracker{sink: sink, read: map[string]bool{}}
}

// seed starts from what the thread already has (a resumed or continued turn).
func (t *tracker) seed(cur *agent.Result) {
	if cur.Plan != nil {
		t.setPlan(cur.Plan)
	}
	for _, s := range cur.Sources {
		if s.Retrieved {
			t.read[s.URL] = true
		}
	}
	t.p.SourcesRead = len(t.read)
	// The researchers that finished before the pause keep their picture:
	// done (or failed), their searches and the pages they read.
	for _, r := range cur.Subtasks {
		s := t.find(&agent.SubtaskRef{Round: r.Round, Index: r.Index, Title: r.Title})
		s.found = s.found || r.Completed || r.Findings > 0
		s.finished++
		s.state = SubtaskDone
		if !s.found {
			s.state = SubtaskFailed
		}
		s.searches = max(s.searches, r.Searches)
		for _, src := range r.Read {
			s.addSource(src.URL, src.Title)
		}
	}
}

func (t *tracker) setPlan(p *agent.Plan) {
	t.p.Theme = p.Theme
	t.p.Plan = nil
	for _, st := range p.Subtasks {
		t.p.Plan = append(t.p.Plan, st.Title)
	}
	if len(t.p.Plan) == 0 {
		t.p.Plan = append(t.p.Plan, p.InvestigationPoints...)
	}
	// the plan's subtasks are pending until a researcher picks them up
	kept := t.subs[:0]
	for _, s := range t.subs {
		if s.keyed {
			kept = append(kept, s)
		}
	}
	t.subs = kept
	for _, st := range p.Subtasks {
		t.subs = append(t.subs, subtask{title: st.Title, state: SubtaskPending})
	}
}

// find returns the subtask of ref, matching a pending plan entry by title
// the first time, or adding it.
func (t *tracker) find(ref *agent.SubtaskRef) *subtask {
	for i := range t.subs {
		if s := &t.subs[i]; s.keyed && s.round == ref.Round && s.index == ref.Index {
			return s
		}
	}
	for i := range t.subs {
		if s := &t.subs[i]; !s.keyed && s.title == ref.Title {
			s.keyed, s.round, s.index = true, ref.Round, ref.Index
			return s
		}
	}
	t.subs = append(t.subs, subtask{keyed: true, round: ref.Round, index: ref.Index, title: ref.Title, state: SubtaskPending})
	return &t.subs[len(t.subs)-1]
}

func (t *tracker) event(ev agent.Event) {
	switch ev.Kind {
	case agent.EventPhase:
		t.p.Phase = string(ev.Phase)
		t.p.Note = ""
	case agent.EventPlanMade:
		if ev.Plan != nil {
			t.setPlan(ev.Plan)
			t.p.Note = "planned: " + ev.Plan.Theme
		}
	case agent.EventSubtaskStarted:
		if ev.Subtask != nil {
			s := t.find(ev.Subtask)
			s.state = SubtaskRunning
			t.p.Note = "researching: " + ev.Subtask.Title
		}
	case agent.EventSubtaskFinished:
		if ev.Subtask != nil {
			s := t.find(ev.Subtask)
			s.found = s.found || ev.Subtask.Completed || ev.Subtask.Findings > 0
			s.finished++
			switch {
			case s.finished < ev.Subtask.Team:
				// other members of its team are still at work
			case s.found:
				s.state = SubtaskDone
			default:
				s.state = SubtaskFailed
			}
			t.p.Note = fmt.Sprintf("finished: %s (%d findings)", ev.Subtask.Title, ev.Subtask.Findings)
		}
	case agent.EventSearched:
		if ev.Subtask != nil {
			t.find(ev.Subtask).searches++
		}
		t.p.Note = fmt.Sprintf("searched “%s”: %d results", ev.Query, ev.Results)
	case agent.EventSourceFound:
		return // frequent and shown by the searched event
	case agent.EventSourceRead:
		if ev.URL != "" {
			t.read[ev.URL] = true
			if ev.Subtask != nil {
				t.find(ev.Subtask).addSource(ev.URL, ev.Title)
			}
		}
		t.p.SourcesRead = len(t.read)
		title := ev.Title
		if title == "" {
			title = ev.URL
		}
		t.p.Note = "read: " + title
	case agent.EventTokens:
		if tk := ev.Tokens; tk != nil {
			if tk.Used > t.p.Tokens {
				t.p.Tokens = tk.Used
			} else if tk.Used == 0 {
				t.p.Tokens += tk.Call
			}
		}
	case agent.EventDraft, agent.EventBudget, agent.EventWarning, agent.EventWaiting, agent.EventRouted:
		if m := strings.TrimSpace(ev.Message); m != "" {
			t.p.Note = m
		}
	case agent.EventReviewed:
		if rv := ev.Review; rv != nil {
			verdict := "needs work"
			if rv.Approved {
				verdict = "passed"
			}
			t.p.Note = fmt.Sprintf("review %d: %.2f, %s", rv.Round, rv.Overall, verdict)
		}
	default:
		return
	}
	t.publish()
}

// publish sends a copy of the current picture.
func (t *tracker) publish() {
	if t.sink == nil {
		return
	}
	p := t.p
	p.Plan = append([]string(nil), t.p.Plan...)
	p.Subtasks = make([]Subtask, 0, len(t.subs))
	for _, s := range t.subs {
		p.Subtasks = append(p.Subtasks, Subtask{Title: s.title, State: s.state, Searches: s.searches,
			Sources: append([]Source(nil), s.sources...)})
	}
	t.sink(p)
}
