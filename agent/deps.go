package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"deepresearch/agent/llm"
	"deepresearch/tools/sandbox"
	"deepresearch/tools/search"
)

// LLM is what the agent needs from a language model client; *llm.Client
// satisfies it.
type LLM interface {
	Chat(ctx context.Context, req llm.Request) (llm.Response, error)
	ChatJSON(ctx context.Context, req llm.Request, schema *llm.Schema, out any) (llm.Response, error)
}

// Searcher finds documents; every search.Provider (Tavily, SearXNG, the
// docs index, Multi) satisfies it.
type Searcher interface {
	Search(ctx context.Context, q search.Query) ([]search.Result, error)
}

// Page is a document as the agent read it.
type Page struct {
	URL      string // as asked
	FinalURL string // after redirects
	Title    string
	Text     string // the main text, exactly as read

	// Canonical is the URL the page declares as its own (rel=canonical),
	// when it declares one.
	Canonical string
}

// Fetcher reads a page (see NewPageFetcher for the production adapter over
// tools/fetch and tools/extract).
type Fetcher interface {
	Fetch(ctx context.Context, url string) (Page, error)
}

// Coder runs a short sandboxed program for the coding action; a
// *sandbox.Runner satisfies it.
type Coder interface {
	Run(ctx context.Context, code string) (sandbox.Result, error)
}

// Note is one research note: the summary of what
// one query found, with its sources.
type Note struct {
	ID        string    `json:"id"` // stable: the same note saved twice is stored once
	ThreadID  string    `json:"thread_id"`
	Turn      int       `json:"turn"`
	Step      int       `json:"step"` // order within the run: round*100 + subtask*10 + try
	Subtask   string    `json:"subtask"`
	Query     string    `json:"query"`
	Summary   string    `json:"summary"`
	Sources   []string  `json:"sources"`
	CreatedAt time.Time `json:"created_at"`
}

// NoteStore keeps research notes for audit and reuse.
type NoteStore interface {
	SaveNote(ctx context.Context, n Note) error
}

// MemNotes is an in-memory NoteStore for `ask` and tests.
type MemNotes struct {
	mu    sync.Mutex
	notes []Note
	ids   map[string]bool
}

// NewMemNotes returns an empty store.
func NewMemNotes() *MemNotes { return &MemNotes{ids: map[string]bool{}} }

// SaveNote stores n once per ID.
func (m *MemNotes) SaveNote(_ context.Context, n Note) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids[n.ID] {
		return nil
	}
	m.ids[n.ID] = true
	m.notes = append(m.notes, n)
	return nil
}

// Notes returns the notes of a thread ("" for all), in step order.
func (m *MemNotes) Notes(threadID string) []Note {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Note
	for _, n := range m.notes {
		if threadID == "" || n.ThreadID == threadID {
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b Note) int { return a.Step - b.Step })
	return out
}
