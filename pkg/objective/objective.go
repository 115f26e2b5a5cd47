// Package objective is the fold of an objective's events into an
// Objective, as pkg/task is a task's: the control plane checks a command
// against it before appending, the state plane projects views with it.
// An objective lives on its own chain (steward.objective.<id>): opened by
// ObjectiveCreated, named by the tasks that reserve budget out of it
// (ObjectiveTaskAdded), ended by ObjectiveClosed. The fold enforces that
// order and that the reservations stay within the objective's budget: a
// reservation past it is refused, so two tasks racing for the last of
// the budget cannot both be recorded.
//
// The functions here are pure; an *stewardv1.Objective passed in must not
// be shared with another goroutine while it is being folded into.
package objective

import (
	"bytes"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Apply folds ev, stored at stream sequence seq, into o; a new objective
// starts as a zero &stewardv1.Objective{}. A sealed event must link to
// o's head. On error o is unchanged.
func Apply(o *stewardv1.Objective, ev *stewardv1.Event, seq uint64) error {
	if len(ev.Hash) > 0 && !bytes.Equal(ev.PrevHash, o.LastHash) {
		return errs.New(errs.FailedPrecondition, "event %s does not link to objective %s's previous event", ev.EventId, ev.TaskId)
	}
	if err := belongs(o, ev); err != nil {
		return err
	}
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ObjectiveCreated:
		created := proto.CloneOf(p.ObjectiveCreated.GetObjective())
		if created.GetObjectiveId() != ev.TaskId {
			return errs.New(errs.FailedPrecondition, "objective %s: created as %s", ev.TaskId, errs.Quote(created.GetObjectiveId()))
		}
		proto.Reset(o)
		proto.Merge(o, created)
		o.Status = stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN
		o.CreatedBy, o.CreatedAt = ev.GetActor().GetPrincipal(), ev.Time
	case *stewardv1.Event_ObjectiveTaskAdded:
		if err := checkAdd(o, p.ObjectiveTaskAdded); err != nil {
			return err
		}
		o.ReservedTokens += p.ObjectiveTaskAdded.Tokens
		o.ReservedCostMicros += p.ObjectiveTaskAdded.CostMicros
		o.TasksAdded++
	case *stewardv1.Event_ObjectiveClosed:
		if err := checkClose(o, p.ObjectiveClosed); err != nil {
			return err
		}
		o.Status, o.CloseReason = p.ObjectiveClosed.Status, p.ObjectiveClosed.Reason
		o.ClosedBy, o.ClosedAt = ev.GetActor().GetPrincipal(), ev.Time
	default:
		return errs.New(errs.FailedPrecondition, "objective %s: a %s event is not an objective's", ev.TaskId, ev.Type)
	}
	o.LastSequence, o.LastHash = seq, ev.Hash
	return nil
}

// belongs checks that ev is the owning plane's and o's: the first event
// opens the objective, every later one names it.
func belongs(o *stewardv1.Objective, ev *stewardv1.Event) error {
	switch plane, owner := ev.GetActor().GetPlane(), event.Owner(ev.Type); {
	case owner == "" || plane != owner:
		return errs.New(errs.FailedPrecondition, "objective %s: a %s event is the %s plane's to record, not the %s plane's", ev.TaskId, ev.Type, owner, plane)
	}
	opening := ev.GetObjectiveCreated() != nil
	switch {
	case o.ObjectiveId == "" && !opening:
		return errs.New(errs.FailedPrecondition, "objective %s: first event is %s, not %s", ev.TaskId, ev.Type, event.TypeObjectiveCreated)
	case o.ObjectiveId != "" && opening:
		return errs.New(errs.FailedPrecondition, "objective %s is created already", ev.TaskId)
	case o.ObjectiveId != "" && ev.TaskId != o.ObjectiveId:
		return errs.New(errs.FailedPrecondition, "event for objective %s folded into objective %s", ev.TaskId, o.ObjectiveId)
	}
	return nil
}

// checkAdd refuses a reservation on an objective that is not open, one
// negative, or one past what is left of its budget.
func checkAdd(o *stewardv1.Objective, a *stewardv1.ObjectiveTaskAdded) error {
	switch {
	case o.Status != stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN:
		return errs.New(errs.FailedPrecondition, "objective %s is %s: no task joins it", o.ObjectiveId, StatusName(o.Status))
	case a.Tokens < 0 || a.CostMicros < 0:
		return errs.Field("contract.budget", "a reservation must not be negative")
	}
	if left := Left(o.Budget.GetMaxTokens(), o.ReservedTokens); a.Tokens > left {
		return errs.Field("contract.budget.max_tokens", "%d is more than the %d tokens objective %s has left (%d of %d reserved)", a.Tokens, left, o.ObjectiveId, o.ReservedTokens, o.Budget.GetMaxTokens())
	}
	if left := Left(o.Budget.GetMaxCostMicros(), o.ReservedCostMicros); a.CostMicros > left {
		return errs.Field("contract.budget.max_cost_micros", "%d is more than the %d cost micro-units objective %s has left (%d of %d reserved)", a.CostMicros, left, o.ObjectiveId, o.ReservedCostMicros, o.Budget.GetMaxCostMicros())
	}
	return nil
}

// Left is what a limit has left after reserved: all there is when the
// limit is zero (none).
func Left(limit, reserved int64) int64 {
	if limit == 0 {
		return math.MaxInt64 - reserved
	}
	return max(limit-reserved, 0)
}

// checkClose refuses a close of an objective that is not open, or to a
// status that is not an end.
func checkClose(o *stewardv1.Objective, c *stewardv1.ObjectiveClosed) error {
	switch {
	case o.Status != stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN:
		return errs.New(errs.FailedPrecondition, "objective %s is %s already", o.ObjectiveId, StatusName(o.Status))
	case !Closed(c.Status):
		return errs.Field("status", "an objective closes done or abandoned")
	}
	return nil
}

// Closed reports whether s is an end: done or abandoned.
func Closed(s stewardv1.ObjectiveStatus) bool {
	return s == stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE || s == stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_ABANDONED
}

// StatusName is s in words: "open", "done", "abandoned".
func StatusName(s stewardv1.ObjectiveStatus) string {
	switch s {
	case stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN:
		return "open"
	case stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE:
		return "done"
	case stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_ABANDONED:
		return "abandoned"
	}
	return "unknown"
}

// Fold folds records, in order, into a new objective; nil for none.
func Fold(records []*stewardv1.EventRecord) (*stewardv1.Objective, error) {
	if len(records) == 0 {
		return nil, nil
	}
	o := &stewardv1.Objective{}
	for _, r := range records {
		if err := Apply(o, r.Event, r.Sequence); err != nil {
			return nil, err
		}
	}
	return o, nil
}
