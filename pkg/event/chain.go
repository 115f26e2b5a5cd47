package event

import (
	"bytes"
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Chain verifies one task's events in order, from the first. Set TaskID to
// the task the events are read for, so that a foreign chain placed under
// its name is refused from the first event; left empty, the first event
// names the task. A Chain is not safe for concurrent use.
type Chain struct {
	TaskID string
	head   []byte
	n      int
}

// BreakError names the event where a chain stops holding.
type BreakError struct {
	// Index is the zero-based position of the event in the task's history.
	Index   int
	EventID string
	Reason  string
}

func (e *BreakError) Error() string {
	if e.EventID == "" {
		return fmt.Sprintf("event %d: %s", e.Index, e.Reason)
	}
	return fmt.Sprintf("event %d (%s): %s", e.Index, e.EventID, e.Reason)
}

// Next opens data as the chain's next event and checks its link to the one
// before. On failure it returns a *BreakError and leaves the chain as it was.
func (c *Chain) Next(data []byte) (*stewardv1.Event, error) {
	return c.Link(Open(data))
}

// Link is Next for an event already opened: ev and err are what Open
// returned for its bytes, so that opening, the costly half, can run ahead
// of the chain (on another goroutine) while the links are still checked
// one by one, in order.
func (c *Chain) Link(ev *stewardv1.Event, err error) (*stewardv1.Event, error) {
	if err != nil {
		id := ""
		if ev != nil {
			id = ev.GetEventId()
		}
		return nil, &BreakError{Index: c.n, EventID: id, Reason: err.Error()}
	}
	brk := func(reason string) error { return &BreakError{Index: c.n, EventID: ev.EventId, Reason: reason} }
	switch {
	case !bytes.Equal(ev.PrevHash, c.head):
		return nil, brk("prev_hash does not match the previous event's hash")
	case c.TaskID != "" && ev.TaskId != c.TaskID:
		return nil, brk(fmt.Sprintf("belongs to task %q, not %q", ev.TaskId, c.TaskID))
	}
	c.TaskID, c.head = ev.TaskId, ev.Hash
	c.n++
	return ev, nil
}

// Head returns the hash of the last verified event, nil before the first.
func (c *Chain) Head() []byte { return c.head }

// Len returns how many events have been verified.
func (c *Chain) Len() int { return c.n }
