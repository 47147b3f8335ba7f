package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"deepresearch/agent"
	"deepresearch/clock"
	"deepresearch/tools/search"
)

// WorkspaceSearch searches what a team already wrote in Slack, as the
// person whose request a run answers: Slack's Real-time Search API
// (assistant.search.context) with the action_token that came with that
// person's message, so only messages they may read are found. Public
// channels always; private channels the person is in only when the run's
// report is seen by nobody else (agent.Workspace.Private); never direct
// messages. Results are the messages' text and permalinks, for the run to
// read and quote like pages; nothing is stored here.
type WorkspaceSearch struct {
	api     *slack.Client
	log     *slog.Logger
	budget  *updateBudget // the method's calls a minute
	maxWait time.Duration
}

// WorkspaceSearchOptions configure a WorkspaceSearch.
type WorkspaceSearchOptions struct {
	// Client is the process's Slack client (NewClient), the one the Bot
	// uses (Options.Client): the bot token's (the action_token says whom
	// it searches for).
	Client *Client
	Logger *slog.Logger // nil: slog.Default()
	// PerMinute bounds the calls a minute (default 10: the method allows
	// "10+ per minute" per workspace); a query waits at most MaxWait
	// (default 2s) for one, then goes without the workspace's hits instead
	// of meeting a 429.
	PerMinute int
	MaxWait   time.Duration
	Clock     clock.Clock // default clock.Real{}
}

// NewWorkspaceSearch returns a WorkspaceSearch.
func NewWorkspaceSearch(o WorkspaceSearchOptions) (*WorkspaceSearch, error) {
	if o.Client == nil || o.Client.botToken == "" {
		return nil, errors.New("bot: workspace search needs the bot token (SLACK_BOT_TOKEN)")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PerMinute == 0 {
		o.PerMinute = workspaceSearchesPerMinute
	}
	if o.MaxWait == 0 {
		o.MaxWait = 2 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &WorkspaceSearch{api: o.Client.api, log: o.Logger,
		budget: newUpdateBudget(o.PerMinute, o.PerMinute, o.Clock), maxWait: o.MaxWait}, nil
}

// SharedBudget is a per-workspace Slack budget outside the Bot that the live
// replicas split (Options.SharedBudgets).
type SharedBudget interface {
	// SetFraction makes the budget f (0 < f ≤ 1) of the workspace's.
	SetFraction(f float64)
}

// SetFraction implements SharedBudget: the replicas of a deployment share
// the workspace's assistant.search.context calls a minute.
func (w *WorkspaceSearch) SetFraction(f float64) { w.budget.setFraction(f) }

// workspaceSearchesPerMinute is assistant.search.context's rate limit.
const workspaceSearchesPerMinute = 10

// errWorkspaceBudget: this minute's workspace searches are spent.
var errWorkspaceBudget = errors.New("bot: this minute's workspace searches are spent (assistant.search.context allows about 10 a minute); this query goes without the workspace")

// apiBase is a Web API base URL as slack-go wants it (ending in "/").
func apiBase(u string) string {
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// maxWorkspaceResults is the API's largest page.
const maxWorkspaceResults = 20

// SearchWorkspace implements agent.WorkspaceSearcher. One call, no
// retries: the method allows about ten calls a minute per workspace, so a
// refused call costs the run this query's workspace hits, not a wait.
func (w *WorkspaceSearch) SearchWorkspace(ctx context.Context, access agent.Workspace, q search.Query) ([]search.Result, error) {
	if access.Token == "" {
		return nil, errors.New("bot: workspace search without the requester's action_token")
	}
	text := strings.TrimSpace(q.Text)
	if text == "" {
		return nil, search.ErrEmptyQuery
	}
	limit := q.MaxResults
	if limit <= 0 {
		limit = search.DefaultMaxResults
	}
	wctx, cancel := context.WithTimeout(ctx, w.maxWait)
	err := w.budget.wait(wctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errWorkspaceBudget
	}
	types := []string{"public_channel"}
	if access.Private {
		types = append(types, "private_channel")
	}
	resp, err := w.api.SearchAssistantContextContext(ctx, slack.AssistantSearchContextParameters{
		Query: text, ActionToken: access.Token, ChannelTypes: types, ContentTypes: []string{"messages"},
		Limit: min(limit, maxWorkspaceResults), Before: tsSeconds(access.Before),
	})
	if err != nil {
		switch errorCode(err) {
		case "missing_scope", "not_allowed_token_type":
			return nil, fmt.Errorf("assistant.search.context: %w (the app needs the search:read.public and search:read.private scopes of bot/manifest.yaml; reinstall it, or set DEEPRESEARCH_SLACK_SEARCH=false)", err)
		case "invalid_action_token", "missing_action_token":
			return nil, fmt.Errorf("assistant.search.context: %w (the asker's action token has expired; ask again to search the workspace)", err)
		}
		return nil, fmt.Errorf("assistant.search.context: %w", err)
	}
	out := make([]search.Result, 0, len(resp.Results.Messages))
	for _, m := range resp.Results.Messages {
		body := strings.TrimSpace(m.Content)
		if body == "" || m.Permalink == "" || !strings.HasPrefix(m.Permalink, "https://") {
			continue
		}
		out = append(out, search.Result{
			Title:     messageTitle(m),
			URL:       m.Permalink,
			Snippet:   Truncate(body, 200),
			Content:   body,
			Source:    "slack",
			Published: tsTime(m.MessageTS),
		})
	}
	w.log.Debug("bot: workspace search", "results", len(out), "private", access.Private)
	return out, nil
}

// messageTitle names a message as a source: where and by whom, never as a
// mention (the names are plain text).
func messageTitle(m slack.AssistantSearchContextMessage) string {
	where := m.ChannelName
	if where == "" {
		where = m.ChannelID
	}
	title := "Slack message in #" + where
	if m.AuthorName != "" {
		title += " by " + m.AuthorName
	}
	return title
}

// tsTime is the time of a Slack ts ("1700000000.000100"), zero when it is
// not one.
func tsTime(ts string) time.Time {
	if n := tsSeconds(ts); n > 0 {
		return time.Unix(n, 0).UTC()
	}
	return time.Time{}
}

// tsSeconds is the whole seconds of a Slack ts, 0 when it is not one.
func tsSeconds(ts string) int64 {
	sec, _, _ := strings.Cut(ts, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// workspaceTokens keeps the action_token that came with a run's message,
// in this process's memory only, from the run's creation until its
// researcher is started with it: the token is the asker's credential, so it
// is never written to the store (a run picked up by another process after
// a crash goes without the workspace). Tokens not taken within
// tokenKeep are dropped (the run went to another process, or was refused).
type workspaceTokens struct {
	mu sync.Mutex
	m  map[string]heldToken // run id ->
}

type heldToken struct {
	token string
	at    time.Time
}

// tokenKeep bounds how long a token waits for its run: Slack does not say
// how long an action_token lives, but it comes with one message.
const tokenKeep = time.Hour

// put keeps token for run id; "" keeps nothing.
func (w *workspaceTokens) put(id, token string, now time.Time) {
	if token == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]heldToken{}
	}
	for k, v := range w.m {
		if now.Sub(v.at) > tokenKeep {
			delete(w.m, k)
		}
	}
	w.m[id] = heldToken{token: token, at: now}
}

// take returns run id's token ("" if none) and forgets it.
func (w *workspaceTokens) take(id string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.m[id]
	delete(w.m, id)
	return t.token
}

// storablePayload is an envelope's payload as the inbox stores it: an
// Events API payload without the action_token of its event (at the top of
// the event, or in its assistant_thread), which is the asker's credential
// and never written to the store. The handler of this process works on the
// envelope as received; one taken over after a crash goes without the
// token (no workspace search). Other payloads are stored as they are.
func storablePayload(typ string, payload json.RawMessage) json.RawMessage {
	if typ != socketmode.RequestTypeEventsAPI || !bytes.Contains(payload, []byte(`"action_token"`)) {
		return payload
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var outer map[string]any
	if err := dec.Decode(&outer); err != nil {
		return payload // stored as received; the handler refuses it alike
	}
	if ev, ok := outer["event"].(map[string]any); ok {
		delete(ev, "action_token")
		if th, ok := ev["assistant_thread"].(map[string]any); ok {
			delete(th, "action_token")
		}
	}
	out, err := json.Marshal(outer)
	if err != nil {
		return payload
	}
	return out
}
