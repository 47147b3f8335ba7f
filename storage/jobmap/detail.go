package jobmap

import (
	"encoding/json"
	"fmt"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// A run's detail: the fields of research.Run that no SQL condition, CAS or
// index reads (the question, the options, the interrupt's and the
// decision's content, and any field added later) are one JSON text, the
// column detail of bot_runs (migration 0013), written by RunDetail and read
// by ReadRunDetail on every engine. The rest are columns or the job's:
// the ids, the requester, the
// interrupt's id and the decided interrupt's id (whose presence says
// whether there is an interrupt or a decision), CancelRequestedBy, the
// times, and the lease, state and error (RunLease). A new field of
// research.Run needs no change here: it is detail unless shadowed below.

// hidden shadows a field of the embedded value: encoding/json prefers the
// shallower of two fields of one name, omits it when nil, and reads any
// value into it, so the embedded field is neither written nor read.
type hidden = *json.RawMessage

// runDetail is research.Run less its columns and its job's fields.
type runDetail struct {
	research.Run
	ID, ThreadID, Requester, State                      hidden           `json:",omitempty"`
	Owner, LeaseUntil, Attempt, Error                   hidden           `json:",omitempty"`
	CancelRequestedBy, CreatedAt, UpdatedAt, FinishedAt hidden           `json:",omitempty"`
	Interrupt                                           *interruptDetail `json:",omitempty"`
	Decision                                            *decisionDetail  `json:",omitempty"`
}

// interruptDetail is research.PendingInterrupt less its id (a column).
type interruptDetail struct {
	research.PendingInterrupt
	ID hidden `json:",omitempty"`
}

// decisionDetail is research.Decision less the decided interrupt's id (a
// column).
type decisionDetail struct {
	research.Decision
	InterruptID hidden `json:",omitempty"`
}

// RunDetail returns the detail of r as stored: JSON whose text is storable
// on every engine (dbtext.JSON: no NUL, valid UTF-8). The decision's time
// is kept in UTC, as the engines read every time back.
func RunDetail(r research.Run) ([]byte, error) {
	d := runDetail{Run: r}
	if r.Interrupt != nil {
		d.Interrupt = &interruptDetail{PendingInterrupt: *r.Interrupt}
	}
	if r.Decision != nil {
		d.Decision = &decisionDetail{Decision: *r.Decision}
		d.Decision.At = d.Decision.At.UTC()
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("run %s: detail: %w", r.ID, err)
	}
	return dbtext.JSON(b), nil
}

// ReadRunDetail sets the detail fields of r from b, leaving the others as
// they are. The interrupt is set when intrID is not nil (its id a column),
// the decision when decID is not nil; both are nil otherwise.
func ReadRunDetail(r *research.Run, b []byte, intrID, decID *string) error {
	d := runDetail{Run: *r}
	// Unmarshal fills a pointer it finds set: the decoded run must share
	// none with r.
	d.Run.Interrupt, d.Run.Decision, d.Options.Digest = nil, nil, nil
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("run %s: detail: %w", r.ID, err)
	}
	*r = d.Run
	r.Interrupt, r.Decision = nil, nil
	if intrID != nil {
		r.Interrupt = &research.PendingInterrupt{}
		if d.Interrupt != nil {
			*r.Interrupt = d.Interrupt.PendingInterrupt
		}
		r.Interrupt.ID = *intrID
	}
	if decID != nil {
		r.Decision = &research.Decision{}
		if d.Decision != nil {
			*r.Decision = d.Decision.Decision
		}
		r.Decision.InterruptID = *decID
	}
	return nil
}
