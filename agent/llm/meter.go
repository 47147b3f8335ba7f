package llm

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// Defaults of NewDefaultMeter: a one-million-token budget with 15% kept
// back for the final answer.
const (
	DefaultBudget          = 1_000_000
	DefaultReserveFraction = 0.15
)

type ctxKey int

const (
	nodeKey ctxKey = iota
	meterKey
	roleKey
)

// WithNode returns a context whose LLM calls are accounted to the graph node
// name (e.g. "planner", "researcher[2]").
func WithNode(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, nodeKey, name)
}

// NodeFrom returns the node set by WithNode, or "".
func NodeFrom(ctx context.Context) string {
	s, _ := ctx.Value(nodeKey).(string)
	return s
}

// WithMeter returns a context whose LLM calls are recorded in (and limited
// by) m. It takes precedence over Options.Meter, so one Client can serve
// many runs, each with its own Meter.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey, m)
}

// MeterFrom returns the Meter set by WithMeter, or nil.
func MeterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey).(*Meter)
	return m
}

// Record is the usage of one LLM call: its tokens include those of every
// request it sent (Requests), WastedTokens of them on requests whose answer
// was not used. Failed marks a call that got no answer (only waste).
type Record struct {
	Time             time.Time
	Role             Role
	Node             string
	Model            string
	PromptTokens     int
	CompletionTokens int
	Cost             float64
	Requests         int
	WastedTokens     int
	Failed           bool
}

// Totals sums records: Calls that were answered, every request sent, and
// the tokens of all of them (WastedTokens on requests not used).
type Totals struct {
	Calls            int
	Requests         int
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	WastedTokens     int
	Cost             float64
}

func (t *Totals) add(r Record) {
	if !r.Failed {
		t.Calls++
	}
	t.Requests += max(r.Requests, 1)
	t.WastedTokens += r.WastedTokens
	t.PromptTokens += r.PromptTokens
	t.CompletionTokens += r.CompletionTokens
	t.TotalTokens += r.PromptTokens + r.CompletionTokens
	t.Cost += r.Cost
}

// Meter accounts the usage of one run and optionally enforces a token
// budget. It is safe for concurrent use.
//
// With a budget B and reserve R, an ordinary call is refused with
// ErrBudgetExceeded when used + in-flight + estimate > B - R; a call marked
// Request.Final (the answer the agent is made to write when the budget
// runs out) may go up to B. The estimate is the prompt size (characters/4)
// plus MaxTokens.
// Concurrent calls hold their estimate until they finish, so parallel
// branches cannot overrun the budget together.
type Meter struct {
	mu       sync.Mutex
	budget   int
	reserve  int
	used     int
	inflight int
	total    Totals
	byNode   map[string]Totals
	byModel  map[string]Totals
	records  []Record
}

// NewMeter returns a meter with a token budget (0 = unlimited) of which
// reserveFraction (0..1) is kept for the final answer.
func NewMeter(budget int, reserveFraction float64) *Meter {
	if budget < 0 {
		budget = 0
	}
	reserveFraction = min(max(reserveFraction, 0), 1)
	return &Meter{
		budget:  budget,
		reserve: int(float64(budget) * reserveFraction),
		byNode:  map[string]Totals{},
		byModel: map[string]Totals{},
	}
}

// NewDefaultMeter returns NewMeter(DefaultBudget, DefaultReserveFraction).
func NewDefaultMeter() *Meter { return NewMeter(DefaultBudget, DefaultReserveFraction) }

// Budget returns the total token budget (0 = unlimited).
func (m *Meter) Budget() int { return m.budget }

// Reserve returns the tokens kept back for the final answer.
func (m *Meter) Reserve() int { return m.reserve }

// Used returns the tokens spent so far.
func (m *Meter) Used() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Remaining returns the tokens left for ordinary calls (budget minus reserve
// minus used, never negative). With no budget it returns -1.
func (m *Meter) Remaining() int {
	if m.budget == 0 {
		return -1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.budget-m.reserve-m.used, 0)
}

// RemainingFinal returns the tokens left for the final answer (budget minus
// used). With no budget it returns -1.
func (m *Meter) RemainingFinal() int {
	if m.budget == 0 {
		return -1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.budget-m.used, 0)
}

// MustFinalize reports whether the ordinary budget is spent: the agent
// should stop researching and write its final answer from the reserve.
func (m *Meter) MustFinalize() bool {
	return m.budget > 0 && m.Remaining() == 0
}

// Total returns the run's totals.
func (m *Meter) Total() Totals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// Node returns the totals of one node.
func (m *Meter) Node(name string) Totals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byNode[name]
}

// ByNode returns a copy of the totals per node ("" for calls without one).
func (m *Meter) ByNode() map[string]Totals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.byNode)
}

// ByModel returns a copy of the totals per model.
func (m *Meter) ByModel() map[string]Totals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.byModel)
}

// Records returns a copy of every record, in completion order.
func (m *Meter) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.records...)
}

// Add records usage (the Client calls it; callers may add usage from
// elsewhere, e.g. embeddings).
func (m *Meter) Add(r Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLocked(r)
}

func (m *Meter) addLocked(r Record) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	m.used += r.PromptTokens + r.CompletionTokens
	m.total.add(r)
	n := m.byNode[r.Node]
	n.add(r)
	m.byNode[r.Node] = n
	mt := m.byModel[r.Model]
	mt.add(r)
	m.byModel[r.Model] = mt
	m.records = append(m.records, r)
}

// Check reports ErrBudgetExceeded if a call of estimate tokens would not fit.
// final selects the final-answer allowance (the reserve may be spent).
func (m *Meter) Check(estimate int, final bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkLocked(estimate, final)
}

func (m *Meter) checkLocked(estimate int, final bool) error {
	if m.budget == 0 {
		return nil
	}
	limit := m.budget - m.reserve
	kind := "ordinary"
	if final {
		limit = m.budget
		kind = "final-answer"
	}
	if m.used+m.inflight+estimate > limit {
		return fmt.Errorf("%w: %s call needs ~%d tokens but %d of %d are left (used %d, in flight %d, reserve %d)",
			ErrBudgetExceeded, kind, estimate, max(limit-m.used-m.inflight, 0), m.budget, m.used, m.inflight, m.reserve)
	}
	return nil
}

// acquire checks the budget and holds estimate tokens until release.
func (m *Meter) acquire(estimate int, final bool) (release func(*Record), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(estimate, final); err != nil {
		return nil, err
	}
	m.inflight += estimate
	var once sync.Once
	return func(r *Record) {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.inflight -= estimate
			if r != nil {
				m.addLocked(*r)
			}
		})
	}, nil
}
