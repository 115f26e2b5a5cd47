package task

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// deadlineStep checks a deadline extension against t and returns the
// change to make; ok is false for other events. Who may extend is checked
// here, in the fold, so that an auditor's replay checks it too: only the
// contract's accountable owner. The new deadline must be later than the
// one it replaces and than the event itself, so a replay needs no clock.
// An extension changes no status: a task suspended at its deadline stays
// suspended until someone resumes it.
func deadlineStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	p, ok := ev.Payload.(*stewardv1.Event_DeadlineExtended)
	if !ok {
		return nil, false, nil
	}
	if err := checkExtension(t, ev, p.DeadlineExtended); err != nil {
		return nil, true, err
	}
	return func() {
		c := proto.CloneOf(t.Contract)
		c.Deadline = p.DeadlineExtended.Deadline
		t.Contract = c
	}, true, nil
}

// checkExtension says why extension may not move t's deadline, if it may
// not.
func checkExtension(t *stewardv1.Task, ev *stewardv1.Event, x *stewardv1.DeadlineExtended) error {
	c, who := t.Contract, ev.Actor.GetPrincipal()
	cur := c.GetDeadline()
	switch {
	case Terminal(t.Status):
		return illegal(t, "extend the deadline of")
	case who != c.GetAccountableOwnerRef():
		return errs.New(errs.PermissionDenied, "%s may not extend the deadline of task %s: only its accountable owner %s may", who, c.GetTaskId(), c.GetAccountableOwnerRef())
	case cur == nil:
		return errs.New(errs.FailedPrecondition, "task %s has no deadline to extend", c.GetTaskId())
	case x.Deadline == nil || x.Deadline.CheckValid() != nil:
		return errs.Field("deadline", "is required: a valid time")
	case x.Previous == nil || !x.Previous.AsTime().Equal(cur.AsTime()):
		// Built on a view of the task that is out of date.
		return errs.New(errs.FailedPrecondition, "task %s's deadline is %s, not the one the extension replaces", c.GetTaskId(), cur.AsTime().UTC().Format(time.RFC3339))
	case !x.Deadline.AsTime().After(cur.AsTime()):
		return errs.Field("deadline", "%s is not later than the current deadline %s", x.Deadline.AsTime().UTC().Format(time.RFC3339), cur.AsTime().UTC().Format(time.RFC3339))
	case ev.Time != nil && !x.Deadline.AsTime().After(ev.Time.AsTime()):
		return errs.Field("deadline", "%s is not in the future", x.Deadline.AsTime().UTC().Format(time.RFC3339))
	}
	return nil
}

// PastDeadline reports whether t has a deadline that is not after now.
func PastDeadline(t *stewardv1.Task, now time.Time) bool {
	d := t.Contract.GetDeadline()
	return d != nil && !now.Before(d.AsTime())
}
