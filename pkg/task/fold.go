// Package task is the one fold that turns a task's events into a task. The
// control plane uses it to check a command before appending, the state plane
// to project views, and an auditor's offline replay to rebuild what the task
// was at every step; all three get the same answer because they run this
// code. The fold enforces the task state machine: an event that is not a
// legal next step is a FailedPrecondition error and changes nothing.
//
// The functions here are pure; a *stewardv1.Task passed in must not be
// shared with another goroutine while it is being folded into.
package task

import (
	"bytes"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Apply folds ev, stored at stream sequence seq, into t. A new task starts
// as a zero &stewardv1.Task{}. A sealed event (one read from the log, with
// a hash) must also link to t's head: prev_hash equal to t.LastHash. An
// unsealed event is a proposal being checked before it is appended. On
// error t is unchanged.
func Apply(t *stewardv1.Task, ev *stewardv1.Event, seq uint64) error {
	if len(ev.Hash) > 0 && !bytes.Equal(ev.PrevHash, t.LastHash) {
		return errs.New(errs.FailedPrecondition, "event %s does not link to task %s's previous event", ev.EventId, ev.TaskId)
	}
	if err := belongs(t, ev); err != nil {
		return err
	}
	kept := keepParts(t) // race-detector builds: the parts must come out unchanged
	if commit, ok, err := step(t, ev); ok {
		if err != nil {
			return err
		}
		commit()
	} else if err := lifecycleStep(t, ev); err != nil {
		return err
	}
	heard(t, ev)
	deriveMilestones(t, ev) // what the event may have moved (milestone_status.go)
	noteFallback(t, ev)     // what ran under a fallback (fallback.go)
	if progress(ev) {
		// Any progress clears a stall mark.
		t.StalledSince, t.StalledReason = nil, ""
	}
	if ev.GetFindingRecorded() == nil {
		// A finding is a note about the task, not a change of it: what the
		// stall watchdog and the receipt measure from stays put.
		t.UpdatedAt = ev.Time
	}
	if ev.GetTaskCreated() != nil {
		t.CreatedSequence = seq // which tool versions a proposal may take (toolreg.Registry.AsOf)
	}
	t.LastSequence = seq
	t.LastHash = ev.Hash
	t.EventCount++
	checkParts(kept, ev)
	return nil
}

// progress reports whether ev is progress, which clears a stall mark: any
// event but the mark itself and an auditor's finding, which is a note
// about the task, not work on it.
func progress(ev *stewardv1.Event) bool {
	return ev.GetTaskStalled() == nil && ev.GetFindingRecorded() == nil
}

// lifecycleStep applies a task lifecycle event.
func lifecycleStep(t *stewardv1.Task, ev *stewardv1.Event) error {
	next, reason, err := transition(t, ev)
	if err != nil {
		return err
	}
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_TaskCreated:
		if fork := p.TaskCreated.GetFork(); fork != nil {
			forkFrom(t, fork, ev.TaskId)
		}
		t.Contract = proto.CloneOf(p.TaskCreated.Contract)
		if t.Contract == nil {
			t.Contract = &stewardv1.TaskContract{}
		}
		t.Contract.TaskId = ev.TaskId
		t.RequestId = p.TaskCreated.RequestId
		t.Tenant = p.TaskCreated.Tenant
		t.ScheduleRun = p.TaskCreated.ScheduleRun
		t.RolloutAssignments = p.TaskCreated.RolloutAssignments
		t.CreatedAt = ev.Time
		t.CreatedBy = ev.Actor.GetPrincipal()
	case *stewardv1.Event_TaskPaused:
		if t.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED { // not a pause taken over
			t.PausedFrom = t.Status
		}
		t.PausedBy = ev.Actor.GetPrincipal()
	case *stewardv1.Event_TaskResumed, *stewardv1.Event_TaskCancelled, *stewardv1.Event_TaskFailed:
		t.PausedFrom, t.PausedBy = stewardv1.TaskStatus_TASK_STATUS_UNSPECIFIED, ""
	case *stewardv1.Event_TaskNeedsInput:
		t.OpenInput = askedInput(ev, p.TaskNeedsInput)
	case *stewardv1.Event_TaskCompensating:
		t.FinalStatus = p.TaskCompensating.FinalStatus
		t.Compensations = append([]string(nil), p.TaskCompensating.ActionIds...)
	case *stewardv1.Event_TaskStalled:
		t.StalledSince, t.StalledReason = p.TaskStalled.QuietSince, p.TaskStalled.Reason
		if t.StalledSince == nil {
			t.StalledSince = ev.Time
		}
		return nil // a mark, not a change of status
	}
	if t.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT && Active(next) {
		grantActions(t) // a person lets it go on: at its cap, with more
		grantMilestone(t)
	}
	t.Status = next
	t.StatusReason = reason
	t.SuspendedFor = ev.GetTaskSuspended().GetCause() // unset by any other step
	keepInput(t)
	if ev.GetTaskResumed() != nil || ev.GetInputProvided() != nil {
		// An answer is a resume with words.
		markStale(t)    // a permit issued before the resume is checked again
		followLedger(t) // what it resumes to may have moved on
	}
	return nil
}

// Check reports whether ev would be a legal next step for t, without
// changing t: the dry run every write makes before it appends.
func Check(t *stewardv1.Task, ev *stewardv1.Event) error {
	if err := belongs(t, ev); err != nil {
		return err
	}
	if _, ok, err := step(t, ev); ok {
		return err
	}
	_, _, err := transition(t, ev)
	return err
}

// steps are the parts of the fold that check an event and return the
// change to make, each for its own kind of event.
var steps = []func(*stewardv1.Task, *stewardv1.Event) (func(), bool, error){
	planApprovalStep, // before actionStep: it takes the approvals of plans
	actionStep, budgetStep, credentialStep, acceptanceStep, deadlineStep, findingStep, planStep, decisionStep, livenessStep, inputStep,
	milestoneStep, revisionStep, fallbackStep,
}

// step runs the step that ev is for; ok is false for a lifecycle event.
func step(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	for _, s := range steps {
		if commit, ok, err := s(t, ev); ok {
			return commit, ok, err
		}
	}
	return nil, false, nil
}

// belongs checks that ev is about t: the first event creates the task, and
// every later one names it.
func belongs(t *stewardv1.Task, ev *stewardv1.Event) error {
	// Each plane emits only the events it owns (event.Owner), and says so.
	switch plane, owner := ev.GetActor().GetPlane(), event.Owner(ev.Type); {
	case plane == "":
		return errs.New(errs.FailedPrecondition, "task %s: a %s event names no plane; it is the %s plane's to record", ev.TaskId, ev.Type, owner)
	case plane != owner:
		return errs.New(errs.FailedPrecondition, "task %s: a %s event is the %s plane's to record, not the %s plane's", ev.TaskId, ev.Type, owner, plane)
	}
	if t.EventCount == 0 {
		if ev.GetTaskCreated() == nil {
			return errs.New(errs.FailedPrecondition, "task %s: first event is %s, not %s", ev.TaskId, ev.Type, "task.created")
		}
	} else if ev.TaskId != t.Contract.GetTaskId() {
		return errs.New(errs.FailedPrecondition, "event for task %s folded into task %s", ev.TaskId, t.Contract.GetTaskId())
	}
	return nil
}

// Fold folds records, in order, into a new task.
func Fold(records []*stewardv1.EventRecord) (*stewardv1.Task, error) {
	t := &stewardv1.Task{}
	for _, r := range records {
		if err := Apply(t, r.Event, r.Sequence); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// transition returns the status ev moves t to, and why, or the reason it
// may not happen.
func transition(t *stewardv1.Task, ev *stewardv1.Event) (stewardv1.TaskStatus, string, error) {
	from := t.Status
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_TaskCreated:
		if t.EventCount != 0 {
			return 0, "", errs.New(errs.FailedPrecondition, "task %s already exists", ev.TaskId)
		}
		return stewardv1.TaskStatus_TASK_STATUS_PENDING, "created", nil
	case *stewardv1.Event_TaskStarted:
		if from != stewardv1.TaskStatus_TASK_STATUS_PENDING {
			return 0, "", illegal(t, "start")
		}
		return stewardv1.TaskStatus_TASK_STATUS_RUNNING, "started", nil
	case *stewardv1.Event_TaskPaused:
		// Paused again: a person takes over the pause (control says who
		// may); the task resumes to what it was before the first.
		if !Pausable(from) && from != stewardv1.TaskStatus_TASK_STATUS_PAUSED {
			return 0, "", illegal(t, "pause")
		}
		return stewardv1.TaskStatus_TASK_STATUS_PAUSED, orDefault(p.TaskPaused.Reason, "paused"), nil
	case *stewardv1.Event_TaskResumed:
		switch from {
		case stewardv1.TaskStatus_TASK_STATUS_PAUSED:
			return t.PausedFrom, orDefault(p.TaskResumed.Reason, "resumed"), nil
		case stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT, stewardv1.TaskStatus_TASK_STATUS_SUSPENDED:
			return stewardv1.TaskStatus_TASK_STATUS_RUNNING, orDefault(p.TaskResumed.Reason, "resumed"), nil
		}
		return 0, "", illegal(t, "resume")
	case *stewardv1.Event_TaskCancelled:
		if Terminal(from) {
			return 0, "", illegal(t, "cancel")
		}
		return stewardv1.TaskStatus_TASK_STATUS_CANCELLED, orDefault(p.TaskCancelled.Reason, "cancelled"), nil
	case *stewardv1.Event_TaskFailed:
		if Terminal(from) {
			return 0, "", illegal(t, "fail")
		}
		return stewardv1.TaskStatus_TASK_STATUS_FAILED, orDefault(p.TaskFailed.Reason, "failed"), nil
	case *stewardv1.Event_TaskCompensating:
		return startCompensating(t, p.TaskCompensating)
	case *stewardv1.Event_TaskNeedsInput:
		if !Active(from) {
			return 0, "", illegal(t, "stop for input")
		}
		if err := checkAsked(t, p.TaskNeedsInput); err != nil {
			return 0, "", err
		}
		return stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT, needsInputReason(ev.Actor.GetPrincipal(), p.TaskNeedsInput), nil
	case *stewardv1.Event_InputProvided:
		if err := checkAnswer(t, p.InputProvided); err != nil {
			return 0, "", err
		}
		return stewardv1.TaskStatus_TASK_STATUS_RUNNING, answeredReason(ev), nil
	case *stewardv1.Event_TaskSuspended:
		if !Active(from) && from != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT {
			return 0, "", illegal(t, "suspend")
		}
		if err := checkInputSuspension(t, p.TaskSuspended); err != nil {
			return 0, "", err
		}
		return stewardv1.TaskStatus_TASK_STATUS_SUSPENDED, orDefault(p.TaskSuspended.Reason, "suspended"), nil
	case *stewardv1.Event_TaskStalled:
		// A pending task is marked too: its start, like a working task's
		// next step, should come without anyone asking.
		if !Working(from) && from != stewardv1.TaskStatus_TASK_STATUS_PENDING {
			return 0, "", illegal(t, "mark stalled")
		}
		return from, "", nil
	default:
		return 0, "", errs.New(errs.FailedPrecondition, "event %s has unknown type %s", ev.EventId, errs.Quote(ev.Type))
	}
}

// startCompensating checks that t may compensate the actions c names and
// end as c says.
func startCompensating(t *stewardv1.Task, c *stewardv1.TaskCompensating) (stewardv1.TaskStatus, string, error) {
	from := t.Status
	switch {
	case Terminal(from) || from == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING:
		return 0, "", illegal(t, "compensate")
	case c.FinalStatus != stewardv1.TaskStatus_TASK_STATUS_FAILED && c.FinalStatus != stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
		return 0, "", errs.New(errs.FailedPrecondition, "compensation must end the task as failed or cancelled, not %s", StatusName(c.FinalStatus))
	}
	for _, id := range c.ActionIds {
		switch a := FindAction(t, id); {
		case a == nil || a.Status != succeeded:
			return 0, "", errs.New(errs.FailedPrecondition, "task %s: action %s cannot be compensated: it did not succeed", t.Contract.GetTaskId(), id)
		case a.Carried:
			return 0, "", errs.New(errs.FailedPrecondition, "task %s: action %s cannot be compensated: it is its parent's, carried into the fork", t.Contract.GetTaskId(), id)
		}
	}
	return stewardv1.TaskStatus_TASK_STATUS_COMPENSATING, orDefault(c.Reason, "compensating"), nil
}

// Active reports whether a task in s is live: it may take new actions.
// Waiting for approval of one action, or settling the unknown outcome of
// one, does not stop a task's other work.
func Active(s stewardv1.TaskStatus) bool {
	switch s {
	case stewardv1.TaskStatus_TASK_STATUS_RUNNING,
		stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL,
		stewardv1.TaskStatus_TASK_STATUS_RECONCILING:
		return true
	}
	return false
}

// Working reports whether a task in s may have calls going out: an active
// task, or one compensating (whose compensations are calls).
func Working(s stewardv1.TaskStatus) bool {
	return Active(s) || s == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING
}

// Terminal reports whether s is an end state no event can leave.
func Terminal(s stewardv1.TaskStatus) bool {
	switch s {
	case stewardv1.TaskStatus_TASK_STATUS_ACCEPTED,
		stewardv1.TaskStatus_TASK_STATUS_FAILED,
		stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
		return true
	}
	return false
}

// Pausable reports whether a task in s may be paused. A task that is
// settling an unknown outcome or compensating may not: stopping half-way
// through would leave side effects unaccounted for.
func Pausable(s stewardv1.TaskStatus) bool {
	switch s {
	case stewardv1.TaskStatus_TASK_STATUS_PENDING,
		stewardv1.TaskStatus_TASK_STATUS_RUNNING,
		stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL,
		stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT:
		return true
	}
	return false
}

// StatusName returns s in words, e.g. "waiting for approval".
func StatusName(s stewardv1.TaskStatus) string { return enumWords(s.String(), "TASK_STATUS_") }

func enumWords(name, prefix string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, prefix)), "_", " ")
}

func illegal(t *stewardv1.Task, verb string) error {
	return errs.New(errs.FailedPrecondition, "cannot %s task %s: it is %s", verb, t.Contract.GetTaskId(), StatusName(t.Status))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
