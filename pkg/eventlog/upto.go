package eventlog

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ReadUpTo is ReadAfter for a reader that holds the event at sequence
// rec.Sequence (a reaction's own, Handled) and needs the task up to it: it
// reads only the events between, and ends with rec, which it does not read
// again. Linking them to the events before is the caller's part, as for
// ReadAfter.
func (l *Log) ReadUpTo(ctx context.Context, taskID string, after uint64, rec *stewardv1.EventRecord) ([]*stewardv1.EventRecord, error) {
	if !ValidTaskID(taskID) {
		return nil, errs.Wrap(errs.Invalid, ErrInvalidTaskID, "read")
	}
	var out []*stewardv1.EventRecord
	err := l.walk(ctx, l.Subject(taskID), after+1, rec.Sequence, func(seq uint64, subject string, data []byte) error {
		r, err := l.record(seq, subject, data)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(out, rec), nil
}
