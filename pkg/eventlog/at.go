package eventlog

import (
	"context"
	"errors"
	"strings"

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

// lastTaskWalk bounds how many messages LastTaskSequenceFromEnd reads
// back from the stream's end before it asks the server instead.
const lastTaskWalk = 64

// LastTaskSequenceFromEnd is LastTaskSequence found by reading back from
// the stream's last message, by sequence, to the first task event: a few
// reads whatever the log holds, where the server's lookup over every
// task's subjects grows with the number of tasks. Past lastTaskWalk
// messages of other chains it asks the server.
func (l *Log) LastTaskSequenceFromEnd(ctx context.Context) (uint64, error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, errs.Wrap(errs.Unavailable, err, "read the stream's state")
	}
	prefix := l.cfg.SubjectPrefix + "."
	for seq, n := info.State.LastSeq, 0; seq >= max(info.State.FirstSeq, 1) && n < lastTaskWalk; seq, n = seq-1, n+1 {
		raw, err := l.at(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, errs.Wrap(errs.Unavailable, err, "read event %d", seq)
		}
		if strings.HasPrefix(raw.subject, prefix) {
			return seq, nil
		}
	}
	return l.LastTaskSequence(ctx)
}
