package errs

import (
	"errors"
	"fmt"
	"time"
)

// notYet says that an event (or timer) came too early: what it asks for
// cannot be decided until after a time, such as another worker's lease
// running out. It is not a failure, and consumers do not log it as one.
type notYet struct {
	after time.Duration
	why   string
}

func (e *notYet) Error() string { return fmt.Sprintf("not yet (again in %s): %s", e.after, e.why) }

// Later returns the answer "deliver this again after d", saying why.
func Later(d time.Duration, format string, args ...any) error {
	return &notYet{after: max(d, time.Millisecond), why: fmt.Sprintf(format, args...)}
}

// LaterBy reports whether err is a Later, and after how long.
func LaterBy(err error) (time.Duration, bool) {
	var ny *notYet
	if errors.As(err, &ny) {
		return ny.after, true
	}
	return 0, false
}
