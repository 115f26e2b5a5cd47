package eventlog

import (
	"time"

	"github.com/steward-run/steward/pkg/errs"
)

// Permanent reports whether a reaction's error will not go away by
// retrying: redelivering the event could only fail the same way.
func Permanent(err error) bool {
	switch errs.CodeOf(err) {
	case errs.Invalid, errs.NotFound, errs.FailedPrecondition, errs.Corrupt, errs.AlreadyExists, errs.TooLarge:
		return true
	}
	return false
}

// backoff grows the redelivery delay exponentially from 100ms to 30s.
func backoff(delivered uint64) time.Duration {
	d := 100 * time.Millisecond
	for i := uint64(1); i < delivered && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}
