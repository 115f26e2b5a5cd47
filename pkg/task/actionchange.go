package task

import (
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// actionChange is what an event does to the action it names: the statuses
// it may follow, the status it leaves (none: unchanged), what it checks
// beyond that, and what it changes. apply may set to itself, as the vote
// that decides an approval does.
type actionChange struct {
	id    string
	from  []stewardv1.ActionStatus
	to    stewardv1.ActionStatus
	check func(*stewardv1.Action) error
	apply func(*stewardv1.Action)
}

// step checks tr against t and returns the change to make.
func (tr *actionChange) step(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), err error) {
	a := FindAction(t, tr.id)
	if a == nil {
		return nil, errs.New(errs.FailedPrecondition, "%s: task %s has no action %s", ev.Type, t.Contract.GetTaskId(), tr.id)
	}
	if !contains(tr.from, a.Status) {
		return nil, errs.New(errs.FailedPrecondition, "%s: action %s is %s", ev.Type, tr.id, ActionStatusName(a.Status))
	}
	if tr.check != nil {
		if err := tr.check(a); err != nil {
			return nil, errs.New(errs.FailedPrecondition, "%s: action %s: %v", ev.Type, tr.id, err)
		}
	}
	return func() {
		// Replace the entry rather than mutate it: views handed out
		// earlier may share it. The new entry shares a's sub-messages,
		// which apply replaces rather than changes (checkShared).
		kept := keepShared(a)
		next := shallowAction(a)
		if tr.apply != nil {
			tr.apply(next)
		}
		checkShared(a, kept, ev)
		if tr.to != stewardv1.ActionStatus_ACTION_STATUS_UNSPECIFIED {
			next.Status = tr.to
		}
		next.UpdatedAt = ev.Time
		for i := range t.Actions {
			if t.Actions[i].ActionId == tr.id {
				t.Actions[i] = next
			}
		}
		followLedger(t)
	}, nil
}
