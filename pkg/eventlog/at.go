package eventlog

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// EventAt returns taskID's event at stream sequence seq, decoded and
// checked against its own hash and subject, or a NotFound error when the
// task has no event there: what a snapshot's claimed chain head is
// checked against.
func (l *Log) EventAt(ctx context.Context, taskID string, seq uint64) (*stewardv1.EventRecord, error) {
	if !ValidTaskID(taskID) {
		return nil, errs.Wrap(errs.Invalid, ErrInvalidTaskID, "read")
	}
	subject := l.Subject(taskID)
	msg, err := l.next(ctx, seq, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && msg.seq != seq {
		return nil, errs.New(errs.NotFound, "task %s has no event at %d", taskID, seq)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "read %s", subject)
	}
	ev, err := l.decode(msg.subject, msg.data)
	if err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "%s: event %d", subject, seq)
	}
	return &stewardv1.EventRecord{Sequence: seq, Event: ev}, nil
}
