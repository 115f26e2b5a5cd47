package eventlog

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
)

// Reached returns the sequence of the last message the stream ever took:
// a purge (docs/archives.md) takes messages away but never this back, so
// a log reached a sequence its last task event may now be short of.
func (l *Log) Reached(ctx context.Context) (uint64, error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, errs.Wrap(errs.Unavailable, err, "read the stream's state")
	}
	return info.State.LastSeq, nil
}
