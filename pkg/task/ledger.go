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
//   - its progress: which actions are done, failed or remaining.
//   - while compensating, the actions still to undo: one leaves the list
//     when its compensation has ended, however it ended.
func followLedger(t *stewardv1.Task) {
	var unknownID, awaitingID string
	progress := &stewardv1.TaskProgress{}
	ended := map[string]bool{} // compensated action → its compensation ended
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
		switch {
		case a.Status == withdrawn:
		case a.Status == succeeded:
			progress.Done = append(progress.Done, a.ActionId)
		case ActionEnded(a.Status):
			progress.Failed = append(progress.Failed, a.ActionId)
		default:
			progress.Remaining = append(progress.Remaining, a.ActionId)
		}
		if a.Compensates != "" && ActionEnded(a.Status) {
			ended[a.Compensates] = true
		}
	}
	t.Progress = progress
	if len(t.Compensations) > 0 && len(ended) > 0 {
		left := t.Compensations[:0:0]
		for _, id := range t.Compensations {
			if !ended[id] {
				left = append(left, id)
			}
		}
		t.Compensations = left
	}

	set := func(s *stewardv1.TaskStatus, reason bool) {
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
	if t.Status == stewardv1.TaskStatus_TASK_STATUS_PAUSED {
		set(&t.PausedFrom, false)
		return
	}
	set(&t.Status, true)
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
