package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// readBatch is how many events one direct-get request returns.
const readBatch = 256

// Raw is an event exactly as stored, for auditors who check the bytes.
type Raw struct {
	Sequence uint64
	Data     []byte
}

// ReadRaw returns every stored event of taskID, unverified, in order. A
// task with no events yields an empty slice.
func (l *Log) ReadRaw(ctx context.Context, taskID string) ([]Raw, error) {
	if !ValidTaskID(taskID) {
		return nil, errs.Wrap(errs.Invalid, ErrInvalidTaskID, "read")
	}
	var out []Raw
	err := l.scan(ctx, taskID, 1, func(seq uint64, data []byte) error {
		out = append(out, Raw{Sequence: seq, Data: data})
		return nil
	})
	return out, err
}

// Read returns every event of taskID in order, each checked against the
// task's hash chain. A chain break is a Corrupt error wrapping the
// *event.BreakError that names the event.
func (l *Log) Read(ctx context.Context, taskID string) ([]*stewardv1.EventRecord, error) {
	raws, err := l.ReadRaw(ctx, taskID)
	if err != nil {
		return nil, err
	}
	chain := event.Chain{TaskID: taskID}
	out := make([]*stewardv1.EventRecord, 0, len(raws))
	for _, r := range raws {
		ev, err := chain.Next(r.Data)
		if err != nil {
			return nil, errs.Wrap(errs.Corrupt, err, "task %s", taskID)
		}
		out = append(out, &stewardv1.EventRecord{Sequence: r.Sequence, Event: ev})
	}
	return out, nil
}

// scan calls fn for each stored event of taskID from stream sequence from
// on, in order, until fn returns an error.
func (l *Log) scan(ctx context.Context, taskID string, from uint64, fn func(seq uint64, data []byte) error) error {
	subject := l.Subject(taskID)
	for {
		msgs, err := jetstreamext.GetBatch(ctx, l.js, l.cfg.Stream, readBatch,
			jetstreamext.GetBatchSeq(from), jetstreamext.GetBatchSubject(subject))
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "read task %s", taskID)
		}
		n := 0
		for msg, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				return nil
			}
			if err != nil {
				return errs.Wrap(errs.Unavailable, err, "read task %s", taskID)
			}
			n++
			from = msg.Sequence + 1
			if err := fn(msg.Sequence, msg.Data); err != nil {
				return err
			}
		}
		if n < readBatch {
			return nil
		}
	}
}

// LastSequence returns the stream sequence of taskID's last event, or 0
// when the task has none.
func (l *Log) LastSequence(ctx context.Context, taskID string) (uint64, error) {
	if !ValidTaskID(taskID) {
		return 0, errs.Wrap(errs.Invalid, ErrInvalidTaskID, "read")
	}
	msg, err := l.stream.GetLastMsgForSubject(ctx, l.Subject(taskID))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, errs.Wrap(errs.Unavailable, err, "read task %s", taskID)
	}
	return msg.Sequence, nil
}

// LastStreamSequence returns the sequence of the last event in the whole
// log, or 0 when it is empty.
func (l *Log) LastStreamSequence(ctx context.Context) (uint64, error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, errs.Wrap(errs.Unavailable, err, "read the event stream's state")
	}
	return info.State.LastSeq, nil
}

// decode opens an event read from subject and checks that it belongs
// there: an event sealed for one task and stored under another's subject is
// refused.
func (l *Log) decode(subject string, data []byte) (*stewardv1.Event, error) {
	ev, err := event.Open(data)
	if err != nil {
		return nil, err
	}
	if subject != l.Subject(ev.TaskId) {
		return nil, fmt.Errorf("event %s of task %s was stored under %s", ev.EventId, ev.TaskId, subject)
	}
	return ev, nil
}
