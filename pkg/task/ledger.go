package task

import (
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// followLedger keeps what the task says about itself in step with its
// action ledger, after every ledger step:
//
//   - its status: reconciling while any outcome is unknown, else waiting
//     for approval while any approval is open, else running. A paused task
//     keeps its pause; what it resumes to follows instead. Other statuses
//     (compensating, waiting for input, suspended, ended) are left alone.
//   - its progress: which actions are done, failed or remaining; with a
//     plan, remaining is the plan's unfinished steps first (followPlan).
//   - while compensating, the actions still to undo (followCompensations).
func followLedger(t *stewardv1.Task) {
	unknownID, awaitingID := followProgress(t)
	if t.Plan != nil {
		followPlan(t)
	}
	if t.Status == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING {
		followCompensations(t)
	}
	if t.Status == stewardv1.TaskStatus_TASK_STATUS_PAUSED {
		followStatus(t, &t.PausedFrom, false, unknownID, awaitingID)
		return
	}
	followStatus(t, &t.Status, true, unknownID, awaitingID)
}

// followProgress brings t's done, failed and remaining lists up to date
// with its actions and names the first action of unknown outcome and the
// first awaiting approval ("" for none).
func followProgress(t *stewardv1.Task) (unknownID, awaitingID string) {
	// Every action event comes here, and most change no list (a claim, a
	// dispatch), so the lists are rebuilt only when they would differ;
	// the fold of a task with many actions (a replay, an audit) would
	// otherwise spend most of its time building them again. The old
	// lists are never changed in place.
	old := t.Progress
	same := old != nil
	var done, failed, remaining int
	for _, a := range t.Actions {
		switch a.Status {
		case unknown:
			if unknownID == "" {
				unknownID = a.ActionId
			}
		case awaitingApproval:
			if awaitingID == "" {
				awaitingID = a.ActionId
			}
		}
		var list []string
		var at *int
		switch {
		case a.Status == withdrawn:
			continue
		case a.Status == succeeded:
			list, at = old.GetDone(), &done
		case ActionEnded(a.Status):
			list, at = old.GetFailed(), &failed
		default:
			list, at = old.GetRemaining(), &remaining
		}
		same = same && *at < len(list) && list[*at] == a.ActionId
		*at++
	}
	if !same || done != len(old.Done) || failed != len(old.Failed) || remaining != len(old.Remaining) {
		progress := &stewardv1.TaskProgress{Done: sized(done), Failed: sized(failed), Remaining: sized(remaining)}
		for _, a := range t.Actions {
			switch {
			case a.Status == withdrawn:
			case a.Status == succeeded:
				progress.Done = append(progress.Done, a.ActionId)
			case ActionEnded(a.Status):
				progress.Failed = append(progress.Failed, a.ActionId)
			default:
				progress.Remaining = append(progress.Remaining, a.ActionId)
			}
		}
		t.Progress = progress
	}
	return unknownID, awaitingID
}

// followStatus moves *s (t's status, or the status a paused t resumes to)
// between running, waiting for approval and reconciling as its actions
// say; reason says whether t's status reason follows.
func followStatus(t *stewardv1.Task, s *stewardv1.TaskStatus, reason bool, unknownID, awaitingID string) {
	switch *s {
	case stewardv1.TaskStatus_TASK_STATUS_RUNNING,
		stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL,
		stewardv1.TaskStatus_TASK_STATUS_RECONCILING:
	default:
		return
	}
	next, why := stewardv1.TaskStatus_TASK_STATUS_RUNNING, "running"
	switch {
	case unknownID != "":
		next, why = stewardv1.TaskStatus_TASK_STATUS_RECONCILING, "settling the unknown outcome of action "+unknownID
	case awaitingID != "":
		next, why = stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL, "waiting for approval of action "+awaitingID
	case *s == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL:
		why = "approvals decided"
	case *s == stewardv1.TaskStatus_TASK_STATUS_RECONCILING:
		why = "unknown outcomes settled"
	}
	if next == *s {
		return
	}
	*s = next
	if reason {
		t.StatusReason = why
	}
}

// ActionEnded reports whether an action in s is finished with: nothing
// more will happen to it.
func ActionEnded(s stewardv1.ActionStatus) bool {
	switch s {
	case succeeded, failed, denied, rejected, withdrawn:
		return true
	}
	return false
}

// followCompensations keeps a compensating task's list of actions to undo:
// one leaves it when its compensation has ended, however it ended; and a
// reversible write of the task's own that succeeds only now — it was in
// flight when the compensation began — joins it at the front, newest
// first, so that nothing the task did is left standing.
func followCompensations(t *stewardv1.Task) {
	undone := map[string]bool{} // action → a compensation of it exists
	ended := map[string]bool{}  // action → its compensation ended
	for _, a := range t.Actions {
		if a.Compensates != "" {
			undone[a.Compensates] = true
			ended[a.Compensates] = ended[a.Compensates] || ActionEnded(a.Status)
		}
	}
	listed := map[string]bool{}
	left := t.Compensations[:0:0]
	for _, id := range t.Compensations {
		listed[id] = true
		if !ended[id] {
			left = append(left, id)
		}
	}
	var late []string
	for _, a := range t.Actions {
		if a.Compensates == "" && !a.Carried && a.Status == succeeded && a.EffectClass == stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE &&
			!listed[a.ActionId] && !undone[a.ActionId] {
			late = append([]string{a.ActionId}, late...)
		}
	}
	t.Compensations = append(late, left...)
}

// sized is an empty list with room for n ids; nil for none, as appending
// nothing would leave it.
func sized(n int) []string {
	if n == 0 {
		return nil
	}
	return make([]string, 0, n)
}
