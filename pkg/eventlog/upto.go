package eventlog

import (
	"bytes"
	"context"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ReadUpTo is ReadAfter for a reader that holds the event at sequence
// rec.Sequence (a reaction's own, Handled) and a fold of the task up to
// head, and needs the task up to rec: it reads only the events between,
// and ends with rec, which it does not read again. A chain has no event
// between rec and the one it names as its predecessor (prev_hash), so the
// read stops there, and reads nothing when that is head. Linking the
// events to head is the caller's part, as for ReadAfter: a fold that
// finds them unlinked reads the task afresh.
func (l *Log) ReadUpTo(ctx context.Context, taskID string, head Head, rec *stewardv1.EventRecord) ([]*stewardv1.EventRecord, error) {
	if !ValidTaskID(taskID) {
		return nil, errs.Wrap(errs.Invalid, ErrInvalidTaskID, "read")
	}
	if prev := rec.GetEvent().GetPrevHash(); len(prev) > 0 && bytes.Equal(head.Hash, prev) {
		return []*stewardv1.EventRecord{rec}, nil
	}
	var out []*stewardv1.EventRecord
	err := l.walkBack(ctx, l.Subject(taskID), head.Sequence+1, rec, func(r *stewardv1.EventRecord) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(out, rec), nil
}
