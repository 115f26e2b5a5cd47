// Package audit replays a task's stored events the way an auditor does:
// every event's bytes are checked against its hash, every link against the
// event before, and every step through the same fold the planes use; with
// WithCredentials, every credential the task was issued is verified too,
// down its delegation chain, and with WithDecisions every permit's and
// approval decision's signature. It works the same on events read over RPC
// and on an exported file, with no server involved.
package audit

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Step is one verified event and the task as folded after it.
type Step struct {
	Index int
	Event *stewardv1.Event
	Task  *stewardv1.Task
	Data  []byte
}

// Report is the outcome of a replay.
type Report struct {
	// Events is how many events verified before the first break.
	Events int
	// Head is the hash of the last verified event.
	Head []byte
	// Task is the task as folded from the verified events.
	Task *stewardv1.Task
	// Break names the first event that does not hold; nil when all do.
	Break *event.BreakError
	// Credentials are the credentials verified (WithCredentials).
	Credentials []CredentialCheck
	// Decisions counts the permit and approval signatures verified
	// (WithDecisions); zero without trusted keys.
	Decisions DecisionChecks
}

// OK reports whether every event verified.
func (r *Report) OK() bool { return r.Break == nil }

// Replayer checks events one at a time, from a task's first. It is not
// safe for concurrent use.
type Replayer struct {
	chain event.Chain
	task  stewardv1.Task
	brk   *event.BreakError

	credentials bool
	trusted     []ed25519.PublicKey
	checked     []CredentialCheck

	decisionKeys []ed25519.PublicKey
	decisions    DecisionChecks
}

// NewReplayer returns a replayer for the events of taskID; with "" the
// first event names the task.
func NewReplayer(taskID string, opts ...Option) *Replayer {
	r := &Replayer{chain: event.Chain{TaskID: taskID}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Next verifies data as the next stored event (at stream sequence seq, 0
// when unknown) and folds it. After the first break every call fails.
func (r *Replayer) Next(data []byte, seq uint64) (*Step, error) {
	index := r.chain.Len()
	ev, err := r.next(data, seq)
	if err != nil {
		return nil, err
	}
	return &Step{Index: index, Event: ev, Task: proto.CloneOf(&r.task), Data: data}, nil
}

// Check is Next without the step: it verifies and folds data exactly as
// Next does, but does not copy the task folded so far, which costs as
// much as the task is large, for every event.
func (r *Replayer) Check(data []byte, seq uint64) error {
	_, err := r.next(data, seq)
	return err
}

// next verifies and folds data and returns its event.
func (r *Replayer) next(data []byte, seq uint64) (*stewardv1.Event, error) {
	if r.brk != nil {
		return nil, r.brk
	}
	opened, err := event.Open(data)
	return r.fold(opened, err, seq)
}

// fold is next for an event already opened: opened and openErr are what
// event.Open returned for its bytes.
func (r *Replayer) fold(opened *stewardv1.Event, openErr error, seq uint64) (*stewardv1.Event, error) {
	if r.brk != nil {
		return nil, r.brk
	}
	index := r.chain.Len()
	// The chain takes the event before the checks below; one they refuse
	// is not verified, so the chain goes back to the event before it, and
	// the report's count and head name the last event that did verify.
	linked := r.chain
	ev, err := r.chain.Link(opened, openErr)
	if err != nil {
		var brk *event.BreakError
		if !errors.As(err, &brk) {
			brk = &event.BreakError{Index: index, Reason: err.Error()}
		}
		r.brk = brk
		return nil, brk
	}
	refuse := func(reason string) (*stewardv1.Event, error) {
		r.chain = linked
		r.brk = &event.BreakError{Index: index, EventID: ev.EventId, Reason: reason}
		return nil, r.brk
	}
	if r.credentials && ev.GetCredentialIssued() != nil && r.task.Contract != nil {
		check, err := r.checkCredential(index, ev)
		if err != nil {
			return refuse(err.Error())
		}
		r.checked = append(r.checked, *check)
	}
	if len(r.decisionKeys) > 0 {
		if err := r.checkDecision(ev); err != nil {
			return refuse(err.Error())
		}
	}
	if err := task.Apply(&r.task, ev, seq); err != nil {
		return refuse(fmt.Sprintf("not a legal step: %v", err))
	}
	return ev, nil
}

// Report summarises what has been replayed so far.
func (r *Replayer) Report() *Report {
	rep := r.final()
	rep.Task = proto.CloneOf(rep.Task)
	return rep
}

// final is Report for a replayer that is done with: its task goes into
// the report as it is, not copied.
func (r *Replayer) final() *Report {
	return &Report{Events: r.chain.Len(), Head: r.chain.Head(), Task: &r.task, Break: r.brk, Credentials: append([]CredentialCheck(nil), r.checked...), Decisions: r.decisions}
}

// Verify replays every stored event of taskID ("" when unknown) in order
// and reports. It checks exactly what Next checks, event by event, but
// opens (decodes and hashes) the events of a long history on another
// goroutine, ahead of the links and the fold.
func Verify(taskID string, events [][]byte, opts ...Option) *Report {
	r := NewReplayer(taskID, opts...)
	if len(events) < openBatch {
		for _, d := range events {
			if err := r.Check(d, 0); err != nil {
				break
			}
		}
		return r.final()
	}
	done := make(chan struct{})
	defer close(done)
	for batch := range openAhead(events, done) {
		for _, o := range batch {
			if _, err := r.fold(o.ev, o.err, 0); err != nil {
				return r.final()
			}
		}
	}
	return r.final()
}

// openBatch is how many events openAhead opens before handing them on.
const openBatch = 256

// opened is what event.Open returned for one event.
type opened struct {
	ev  *stewardv1.Event
	err error
}

// openAhead opens events in order, in batches, on a goroutine of its own,
// until it has opened them all or done is closed.
func openAhead(events [][]byte, done <-chan struct{}) <-chan []opened {
	out := make(chan []opened, 4)
	go func() {
		defer close(out)
		for len(events) > 0 {
			n := min(openBatch, len(events))
			batch := make([]opened, n)
			for i, d := range events[:n] {
				batch[i].ev, batch[i].err = event.Open(d)
			}
			events = events[n:]
			select {
			case out <- batch:
			case <-done:
				return
			}
		}
	}()
	return out
}
