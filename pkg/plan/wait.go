package plan

import (
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// checkWait checks a wait: a valid time, or a positive duration within
// the limit. A time already past is allowed: the wait ends at once.
func checkWait(field string, w *stewardv1.WaitStep, l Limits) error {
	switch k := w.GetWait().(type) {
	case *stewardv1.WaitStep_Until:
		if err := k.Until.CheckValid(); err != nil {
			return errs.Field(field+".until", "%v", err)
		}
	case *stewardv1.WaitStep_Duration:
		if err := k.Duration.CheckValid(); err != nil {
			return errs.Field(field+".duration", "%v", err)
		}
		switch d := k.Duration.AsDuration(); {
		case d <= 0:
			return errs.Field(field+".duration", "must be positive")
		case d > l.MaxWait:
			return errs.Field(field+".duration", "%s is longer than %s, the limit", d, l.MaxWait)
		}
	default:
		return errs.Field(field, "needs until or duration")
	}
	return nil
}
