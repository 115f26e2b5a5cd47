// Package audit replays a task's stored events the way an auditor does:
// every event's bytes are checked against its hash, every link against the
// event before, and every step through the same fold the planes use; with
// WithCredentials, every credential the task was issued is verified too,
// down its delegation chain. It works the same on events read over RPC
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
	if r.brk != nil {
		return nil, r.brk
	}
	index := r.chain.Len()
	ev, err := r.chain.Next(data)
	if err != nil {
		var brk *event.BreakError
		if !errors.As(err, &brk) {
			brk = &event.BreakError{Index: index, Reason: err.Error()}
		}
		r.brk = brk
		return nil, brk
	}
	if r.credentials && ev.GetCredentialIssued() != nil && r.task.Contract != nil {
		check, err := r.checkCredential(index, ev)
		if err != nil {
			r.brk = &event.BreakError{Index: index, EventID: ev.EventId, Reason: err.Error()}
			return nil, r.brk
		}
		r.checked = append(r.checked, *check)
	}
	if err := task.Apply(&r.task, ev, seq); err != nil {
		r.brk = &event.BreakError{Index: index, EventID: ev.EventId, Reason: fmt.Sprintf("not a legal step: %v", err)}
		return nil, r.brk
	}
	return &Step{Index: index, Event: ev, Task: proto.CloneOf(&r.task), Data: data}, nil
}

// Report summarises what has been replayed so far.
func (r *Replayer) Report() *Report {
	return &Report{Events: r.chain.Len(), Head: r.chain.Head(), Task: proto.CloneOf(&r.task), Break: r.brk, Credentials: append([]CredentialCheck(nil), r.checked...)}
}

// Verify replays every stored event of taskID ("" when unknown) in order
// and reports.
func Verify(taskID string, events [][]byte, opts ...Option) *Report {
	r := NewReplayer(taskID, opts...)
	for _, d := range events {
		if _, err := r.Next(d, 0); err != nil {
			break
		}
	}
	return r.Report()
}
