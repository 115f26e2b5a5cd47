package steward

import (
	"context"
	"errors"
	"io"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Watch hands each of the task's events after afterSequence (0: from its
// first) to fn, in order, until fn returns an error (which Watch returns,
// ErrStopWatching as nil) or ctx ends. A broken stream is opened again
// from the last event handed on, so fn sees each event once, none lost.
func (c *Client) Watch(ctx context.Context, taskID string, afterSequence uint64, fn func(*stewardv1.EventRecord) error) error {
	wait := c.retry.First
	for failures := 0; ; {
		stream, err := c.query.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID, AfterSequence: afterSequence}))
		if err == nil {
			for stream.Receive() {
				rec := stream.Msg().GetRecord()
				if rec == nil {
					failures, wait = 0, c.retry.First // live: the first message
					continue
				}
				if err := fn(rec); err != nil {
					_ = stream.Close()
					if errors.Is(err, ErrStopWatching) {
						return nil
					}
					return err
				}
				afterSequence = rec.Sequence
			}
			err = stream.Err()
			_ = stream.Close()
		}
		// A stream cut off mid-way is reported as a protocol error; one the
		// server ended because the watch fell behind, as Aborted.
		if err != nil && !retryable(ctx, err) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return asError(err)
		}
		if failures++; ctx.Err() != nil || failures >= c.retry.Attempts {
			if err == nil {
				err = cmpOr(ctx.Err(), errWatchEnded)
			}
			return asError(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, c.retry.Max)
	}
}

var errWatchEnded = errors.New("steward: the watch kept ending")

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// ErrStopWatching, returned by Watch's fn, ends the watch without error.
var ErrStopWatching = errors.New("stop watching")
