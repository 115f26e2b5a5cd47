package limits

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
)

// Duration checks an optional duration field against its documented range
// [least, most]: unset or zero means "the default" and passes; anything
// else must be a valid duration within the range. A nanosecond timer would
// fire before anyone could act on it, and one of ten thousand years is a
// typo that would hold a task for ever, so both are refused as
// errs.Invalid naming field.
func Duration(field string, d *durationpb.Duration, least, most time.Duration) error {
	if d == nil {
		return nil
	}
	if err := d.CheckValid(); err != nil {
		return errs.Field(field, "is not a valid duration: %v", err)
	}
	switch v := d.AsDuration(); {
	case v == 0:
		return nil
	case v < 0:
		return errs.Field(field, "must not be negative")
	case v < least || v > most:
		return errs.Field(field, "%s is outside %s–%s (zero means the default)", v, least, most)
	}
	return nil
}
