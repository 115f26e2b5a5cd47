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
// checked against. It reads by sequence alone, one lookup whatever the
// stream holds.
func (l *Log) EventAt(ctx context.Context, taskID string, seq uint64) (*stewardv1.EventRecord, error) {
	raw, err := l.at(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, errs.New(errs.NotFound, "the log has no event at %d", seq)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "read event %d", seq)
	}
	ev, err := l.decode(raw.subject, raw.data)
	if err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "read event %d", seq)
	}
	if ev.TaskId != taskID {
		return nil, errs.New(errs.NotFound, "task %s has no event at %d (task %s has)", taskID, seq, ev.TaskId)
	}
	return &stewardv1.EventRecord{Sequence: seq, Event: ev}, nil
}
