package control

import (
	"fmt"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// DefaultMaxSameFailures is how many actions in a row may fail the same
// way on one tool and target before the task stops for help, when the
// contract sets no contract.limits.max_same_failures.
const DefaultMaxSameFailures = 3

func maxSameFailures(t *stewardv1.Task) int {
	if n := t.Contract.GetLimits().GetMaxSameFailures(); n > 0 {
		return int(n)
	}
	return DefaultMaxSameFailures
}

// guardLoop stops an agent going round in circles: when the last
// max-same-failures actions that ended on one tool and target all failed
// with the same failure class and reason, the task is set waiting for
// input (NEEDS_INPUT_CAUSE_SAME_FAILURES, naming the last of them), with a
// reason that says so, instead of burning budget on the next identical
// try. A success there (or a denial, or a rejection) ends the run; a
// withdrawn action is not a try and does not count. Once a person resumes
// the task, one more identical failure stops it again: the last tries
// there are still all the same failure.
//
// It is one step of the recovery reaction (recoverFrom), which runs it on
// the failed action a of the active task t after deciding that a is not
// to be retried: Steward's own retries (RECOVERY_MODE_RETRY) go first,
// and the guard catches the run they end with. It returns nil when there
// is no run. The event's id derives from the run's last failed action.
func (r *recovery) guardLoop(rec *stewardv1.EventRecord, t *stewardv1.Task, a *stewardv1.Action) (*stewardv1.Event, error) {
	run := sameFailures(t, a.Tool, a.Target, maxSameFailures(t))
	if run == nil {
		return nil, nil
	}
	taskID := rec.Event.TaskId
	last := run[len(run)-1]
	where := strings.TrimSpace(a.Tool + " " + a.Target)
	return r.plane.event(event.Meta{
		ID:            event.ID(taskID, event.TypeTaskNeedsInput, last.ActionId),
		TaskID:        taskID,
		Actor:         r.plane.actor(stewardPrincipal),
		CausationID:   rec.Event.EventId,
		CorrelationID: rec.Event.CorrelationId,
	}, &stewardv1.TaskNeedsInput{
		Reason:   fmt.Sprintf("needs help: the same failure %d times in a row on %s: %s", len(run), where, task.Clip(last.Outcome.GetReason())),
		Cause:    stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_SAME_FAILURES,
		ActionId: last.ActionId,
	})
}

// sameFailures returns the last n actions of t that ended on tool and
// target, by outcome time (ties in ledger order), if they all failed with
// the same failure class and reason; otherwise nil.
func sameFailures(t *stewardv1.Task, tool, target string, n int) []*stewardv1.Action {
	var ended []*stewardv1.Action
	for _, a := range t.Actions {
		if a.Tool == tool && a.Target == target && a.Compensates == "" && !a.Carried &&
			task.ActionEnded(a.Status) && a.Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN {
			ended = append(ended, a)
		}
	}
	if len(ended) < n {
		return nil
	}
	slices.SortStableFunc(ended, func(x, y *stewardv1.Action) int {
		return x.Outcome.GetFinishedAt().AsTime().Compare(y.Outcome.GetFinishedAt().AsTime())
	})
	run := ended[len(ended)-n:]
	last := run[len(run)-1].Outcome
	for _, a := range run {
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED ||
			a.Outcome.GetFailureClass() != last.GetFailureClass() || a.Outcome.GetReason() != last.GetReason() {
			return nil
		}
	}
	return run
}
