package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"deepresearch/graph"
	"deepresearch/tools/search"
)

// Workspace is what a request brings to search its requester's own
// workspace (what the team already wrote in Slack) as that requester: only
// what they may read is found. Whether the turn may search it is kept with
// the thread's state; the credential is not (see Token), and nothing found
// is stored beyond the run.
type Workspace struct {
	// Token is the short-lived credential that came with the requester's
	// message (Slack's action_token); it is never logged and never stored:
	// the Agent keeps it in memory for the thread's turn (not encoded with
	// the state; a turn continued by another process after a crash goes
	// without the workspace).
	Token string `json:"-"`
	// Private lets the search include private conversations the requester
	// is in. Only a run whose report no one else sees (a direct message
	// with the bot) sets it: a report in a channel must not quote a
	// private channel to the channel's other members.
	Private bool `json:"private,omitempty"`
	// Before, when set, limits the search to what was written before the
	// request (opaque to the agent: the searcher's own mark of the asking
	// message), so the question never finds itself.
	Before string `json:"before,omitempty"`
}

// LogValue keeps the token out of logs.
func (w Workspace) LogValue() slog.Value { return slog.GroupValue(slog.Bool("private", w.Private)) }

// WorkspaceSearcher searches the messages of the requester's workspace
// that the requester can see; results carry the message text as Content
// and the message's permalink as URL, so they are read (and quoted) like
// pages without a fetch. bot.WorkspaceSearch implements it over Slack's
// Real-time Search API.
type WorkspaceSearcher interface {
	SearchWorkspace(ctx context.Context, w Workspace, q search.Query) ([]search.Result, error)
}

// workspaceFor is the workspace access a researcher of subtask st gets:
// the request's, when the agent can search a workspace and the plan asked
// for it or the question is about the team's own matters.
func (a *planning) workspaceFor(s State, st Subtask) *Workspace {
	if a.workspace == nil || s.Req.Workspace == nil {
		return nil
	}
	if !st.Workspace && !looksInternal(s.Question) {
		return nil
	}
	w := *s.Req.Workspace
	w.Token = "" // the researcher takes it from the Agent's memory
	return &w
}

// keepToken holds the workspace credential of the turn a request starts on
// a thread, in memory only; a request without one drops the thread's.
func (a *core) keepToken(threadID string, req *Request) {
	if req.Workspace == nil || req.Workspace.Token == "" {
		a.tokens.Delete(threadID)
		return
	}
	w := *req.Workspace
	a.tokens.Store(threadID, w.Token)
	w.Token = ""
	req.Workspace = &w
}

// token is the workspace credential of the thread's turn ("" if none here).
func (a *core) token(threadID string) string {
	v, _ := a.tokens.Load(threadID)
	tok, _ := v.(string)
	return tok
}

// forgetToken drops the thread's credential once its turn has ended.
func (a *core) forgetToken(threadID string, res *Result, err error) {
	if err == nil && res != nil && (finished(res.Status) || res.Status == StatusCancelled) {
		a.tokens.Delete(threadID)
	}
}

// internalCues are phrases by which a question asks about the team's own
// decisions and discussions rather than the world's.
var internalCues = []string{
	"what did we", "did we ", "we decided", "we agreed", "we discussed", "our team", "our decision",
	"internal", "in slack", "this channel", "this workspace", "our channel",
	"社内", "我々", "私たち", "うちの", "チームで", "決めた", "決まった", "決定した", "話し合った", "議論した", "合意した",
}

// looksInternal reports whether a question is about internal matters.
func looksInternal(question string) bool {
	q := strings.ToLower(question)
	for _, c := range internalCues {
		if strings.Contains(q, c) {
			return true
		}
	}
	return false
}

// search runs a query on the agent's searcher and, when this researcher
// may search the workspace, on the workspace at the same time. The team's
// past reports that the run's audience may see come first, then the
// workspace's hits (the team's own words on its own matters); a workspace
// or a report store that fails only costs its hits.
func (ex *execution) search(ctx context.Context, q search.Query) ([]search.Result, error) {
	found, err := ex.searchWorkspace(ctx, q)
	if past := ex.pastReports(ctx, q); len(past) > 0 {
		return append(past, found...), nil
	}
	return found, err
}

// searchWorkspace searches the web and, when this researcher may, the
// workspace.
func (ex *execution) searchWorkspace(ctx context.Context, q search.Query) ([]search.Result, error) {
	a, access := ex.a, ex.s.Task.Workspace
	if access == nil || a.workspace == nil {
		return a.search.Search(ctx, q)
	}
	w := *access
	if w.Token = a.token(ex.threadID); w.Token == "" {
		// a turn taken over from another process: its credential was
		// never stored
		return a.search.Search(ctx, q)
	}
	var (
		wg        sync.WaitGroup
		own       []search.Result
		ownErr    error
		found     []search.Result
		searchErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		own, ownErr = a.workspace.SearchWorkspace(ctx, w, q)
	}()
	if a.search != nil {
		found, searchErr = a.search.Search(ctx, q)
	}
	wg.Wait()
	if ownErr != nil {
		a.log.Warn("workspace search failed", "query", q.Text, "err", ownErr)
		emit(ctx, Event{Kind: EventWarning, Query: q.Text, Message: "workspace search failed: " + ownErr.Error()})
	}
	if len(own) == 0 {
		return found, searchErr
	}
	own = slices.Clone(own) // the searcher's slice is not ours to change
	for i := range own {
		own[i].Source = workspaceProvider
	}
	return append(own, found...), nil
}

// workspaceProvider is the Source.Provider of what the workspace search
// found: messages that are read in the run and never stored beyond it
// (no research note is saved from them).
const workspaceProvider = "workspace"

// fromWorkspace reports whether any of pages is a workspace message.
func fromWorkspace(pages []Source) bool {
	for _, p := range pages {
		if p.Provider == workspaceProvider {
			return true
		}
	}
	return false
}

// ForgetWorkspace deletes the thread's checkpoints, every namespace, when
// its state holds what a workspace search found or its turn could search
// the workspace: the team's messages are read for a run and must not
// outlive it. The caller calls it once the run has ended (its report
// posted, or the run failed or was cancelled); a later question on the
// thread then starts afresh. It reports whether the thread was forgotten.
func (a *Agent) ForgetWorkspace(ctx context.Context, threadID string) (bool, error) {
	if threadID == "" {
		return false, ErrNoThread
	}
	a.tokens.Delete(threadID)
	ctx, end, err := a.begin(ctx, threadID, false)
	if err != nil {
		return false, err
	}
	defer end()
	snap, err := a.g.State(ctx, threadID, 0)
	switch {
	case errors.Is(err, graph.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("agent: load thread %s: %w", threadID, err)
	}
	if !usedWorkspace(snap.State) {
		return false, nil
	}
	if err := a.g.ForgetThread(ctx, threadID); err != nil {
		return false, fmt.Errorf("agent: forget thread %s: %w", threadID, err)
	}
	a.log.Info("agent: thread forgotten: its run read the workspace", "thread_id", threadID)
	return true, nil
}

// usedWorkspace reports whether a thread's state may hold workspace
// messages: its turn could search them, or its sources include one.
func usedWorkspace(s State) bool {
	if s.Req.Workspace != nil {
		return true
	}
	for _, src := range s.Sources {
		if src.Provider == workspaceProvider {
			return true
		}
	}
	return false
}
