package governance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/timer"
)

// ApprovalTimerKind is the kind of the plane's approval timers, and
// TimerConsumer the durable consumer that takes them when they fire.
const (
	ApprovalTimerKind = "governance.approval"
	TimerConsumer     = "governance-timers"
)

// The timers of an approval: the escalation only where the contract
// names a backup (escalate.go).
const (
	stageRemind   = "remind"
	stageEscalate = "escalate"
	stageSuspend  = "suspend"
)

// Notifier is told that an approval is still waiting, at its reminder: it
// is how approvers hear about it (mail, chat, a pager). It runs once the
// reminder is on the log, and normally once per approval; it should return
// quickly and may not block the timer that called it for long.
type Notifier func(ctx context.Context, ap *stewardv1.Approval, waited time.Duration)

// logReminder is the default Notifier.
func (ck *clock) logReminder(_ context.Context, ap *stewardv1.Approval, waited time.Duration) {
	ck.logger.Warn("approval still waiting", "approval", ap.ApprovalId, "task", ap.TaskId, "action", ap.ActionId, "plan_version", ap.PlanVersion,
		"roles", ap.RequiredRoles, "waited", waited)
}

// approvalTimer is a timer's payload: which approval, and which stage.
// ActionID is empty for the approval of a plan version.
type approvalTimer struct {
	TaskID     string `json:"task_id"`
	ActionID   string `json:"action_id"`
	ApprovalID string `json:"approval_id"`
	Stage      string `json:"stage"`
}

// armOnRequest reacts to a requested approval by setting its timers.
// Setting them again on redelivery is a no-op.
func (ck *clock) armOnRequest(ctx context.Context, rec *stewardv1.EventRecord, requested *stewardv1.ApprovalRequested) error {
	ap := requested.GetApproval()
	return ck.arm(ctx, rec.Event.TaskId, ap.GetActionId(), ap.GetApprovalId())
}

// armPending sets the timers of approvals that were open at start.
func (ck *clock) armPending(ctx context.Context, pending []*stewardv1.Approval) {
	for _, ap := range pending {
		if err := ck.arm(ctx, ap.TaskId, ap.ActionId, ap.ApprovalId); err != nil {
			if ctx.Err() != nil {
				return
			}
			ck.logger.Warn("could not set an open approval's timers", "approval", ap.ApprovalId, "task", ap.TaskId, "err", err)
		}
	}
}

// arm sets an open approval's reminder and suspension timers, counted from
// when it was requested.
func (ck *clock) arm(ctx context.Context, taskID, actionID, approvalID string) error {
	t, _, err := ck.tasks.Load(ctx, taskID)
	if err != nil {
		return err
	}
	w, ok := openApproval(t, actionID, approvalID)
	if !ok {
		return nil // decided, withdrawn, revised or ended before its timers were set
	}
	requested := w.requested
	waits := task.ApprovalWaitsOf(t.Contract)
	stages := map[string]time.Duration{stageRemind: waits.Remind, stageSuspend: waits.Suspend}
	if waits.Escalate > 0 {
		stages[stageEscalate] = waits.Escalate
	}
	for stage, after := range stages {
		payload, err := json.Marshal(approvalTimer{TaskID: taskID, ActionID: actionID, ApprovalID: approvalID, Stage: stage})
		if err != nil {
			return err
		}
		if err := ck.timers.Set(ctx, ApprovalTimerKind, approvalID+"/"+stage, requested.Add(after), payload); err != nil {
			return fmt.Errorf("set %s timer of approval %s: %w", stage, approvalID, err)
		}
	}
	return nil
}

// waiting is an open approval, with what its timers need to know.
type waiting struct {
	ap        *stewardv1.Approval
	requested time.Time
	// what it is for, in words: "action act-1", "plan version 2".
	what string
	// The event that asked for it, and the correlation of what it is for.
	causeID, correlationID string
}

// openApproval returns approval approvalID — of action actionID, or of
// the plan version in force when actionID is empty — if it still waits
// and its task has not ended.
func openApproval(t *stewardv1.Task, actionID, approvalID string) (waiting, bool) {
	if task.Terminal(t.Status) {
		return waiting{}, false
	}
	if actionID == "" {
		ps := t.Plan
		ap := ps.GetApproval()
		if ps.GetGovernance() != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL || ap.GetApprovalId() != approvalID ||
			ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED {
			return waiting{}, false
		}
		return waiting{
			ap: ap, requested: askedAt(ap, ps.SubmittedAt), what: fmt.Sprintf("plan version %d", ps.Version),
			causeID: planEventID(t.Contract.GetTaskId(), ps.Version, ps.PlanHash, event.TypeApprovalRequired),
		}, true
	}
	a := task.FindAction(t, actionID)
	if a == nil || a.Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL || a.Approval.GetApprovalId() != approvalID {
		return waiting{}, false
	}
	return waiting{
		ap: a.Approval, requested: askedAt(a.Approval, a.UpdatedAt), what: "action " + actionID,
		causeID: event.ID(a.ActionId, event.TypeApprovalRequired), correlationID: a.ProposalId,
	}, true
}

// askedAt is when ap was asked for; before approvals said so, the last
// step of what it is for (the request was it).
func askedAt(ap *stewardv1.Approval, last *timestamppb.Timestamp) time.Time {
	if ts := ap.GetRequestedAt(); ts != nil {
		return ts.AsTime()
	}
	return last.AsTime()
}

// onApprovalTimer handles a fired approval timer. It does something only if
// the approval is still open; its events have ids derived from the
// approval, so a timer delivered twice records nothing twice.
func (ck *clock) onApprovalTimer(ctx context.Context, f timer.Fired) error {
	var at approvalTimer
	if err := json.Unmarshal(f.Payload, &at); err != nil || at.TaskID == "" || at.ApprovalID == "" {
		ck.logger.Error("approval timer with a bad payload; dropping it", "id", f.ID, "err", err)
		return nil
	}
	var err error
	switch at.Stage {
	case stageRemind:
		err = ck.remind(ctx, at)
	case stageEscalate:
		err = ck.escalate(ctx, at)
	case stageSuspend:
		err = ck.suspendWaiting(ctx, at)
	default:
		ck.logger.Error("approval timer of an unknown stage; dropping it", "id", f.ID, "stage", at.Stage)
		return nil
	}
	if err != nil && eventlog.Permanent(err) {
		// The task is gone, corrupt or refuses the step: a retry would
		// fail the same way.
		ck.logger.Warn("approval timer could not act", "stage", at.Stage, "approval", at.ApprovalID, "task", at.TaskID, "err", err)
		return nil
	}
	return err
}

// remind records that the approval is still waiting and tells the
// Notifier.
func (ck *clock) remind(ctx context.Context, at approvalTimer) error {
	id := event.ID(at.ApprovalID, "reminded")
	_, history, err := ck.tasks.Load(ctx, at.TaskID)
	if err != nil {
		return err
	}
	if history.Has(id) {
		return nil // reminded before
	}
	var (
		open   *stewardv1.Approval
		waited time.Duration
	)
	err = ck.tasks.Write(ctx, at.TaskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		open = nil
		w, ok := openApproval(t, at.ActionID, at.ApprovalID)
		if !ok {
			return nil, nil
		}
		open, waited = proto.CloneOf(w.ap), ck.now().Sub(w.requested).Round(time.Second)
		return event.New(ck.timerMeta(id, t, w), &stewardv1.ApprovalReminded{
			ApprovalId: at.ApprovalID, ActionId: at.ActionID, Waited: durationpb.New(waited),
		})
	})
	if err != nil || open == nil {
		return err
	}
	ck.notify(ctx, open, waited)
	return nil
}

// suspendWaiting suspends a task whose approval waited too long: nobody
// is deciding, and the task should not look as if it were going on. A
// person resumes it. A paused task is left alone: someone is holding it
// already.
func (ck *clock) suspendWaiting(ctx context.Context, at approvalTimer) error {
	var reason string
	err := ck.tasks.Write(ctx, at.TaskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		reason = ""
		w, ok := openApproval(t, at.ActionID, at.ApprovalID)
		if !ok || !(task.Active(t.Status) || t.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT) {
			return nil, nil
		}
		after := task.ApprovalWaitsOf(t.Contract).Suspend
		reason = fmt.Sprintf("approval %s for %s waited longer than %s; resume the task to go on", at.ApprovalID, w.what, shortDuration(after))
		return event.New(ck.timerMeta(event.ID(at.ApprovalID, "suspended"), t, w), &stewardv1.TaskSuspended{Reason: reason, Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_APPROVAL_OVERDUE})
	})
	if err != nil || reason == "" {
		return err
	}
	ck.logger.Warn("task suspended: an approval waited too long", "task", at.TaskID, "approval", at.ApprovalID, "action", at.ActionID, "reason", reason)
	return nil
}

// suspendOverdue reacts to a resumed task by suspending it for any
// approval whose suspension came due while it was paused: the timer found
// the task held and left it, and nothing else would bring it back.
func (ck *clock) suspendOverdue(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := ck.tasks.Load(ctx, rec.Event.TaskId)
	if err != nil {
		return err
	}
	after := task.ApprovalWaitsOf(t.Contract).Suspend
	open := []approvalTimer{{ApprovalID: t.Plan.GetApproval().GetApprovalId()}} // the plan's, if any
	for _, a := range t.Actions {
		open = append(open, approvalTimer{ActionID: a.ActionId, ApprovalID: a.Approval.GetApprovalId()})
	}
	for _, at := range open {
		if w, ok := openApproval(t, at.ActionID, at.ApprovalID); !ok || ck.now().Sub(w.requested) < after {
			continue
		}
		at.TaskID, at.Stage = rec.Event.TaskId, stageSuspend
		if err := ck.suspendWaiting(ctx, at); err != nil {
			return err
		}
	}
	return nil
}

// timerMeta is the envelope of an event a timer caused about open
// approval w: its cause is the approval request, and an action's is
// correlated with its proposal like the rest of the action's events.
func (ck *clock) timerMeta(id string, t *stewardv1.Task, w waiting) event.Meta {
	return event.Meta{
		ID:            id,
		TaskID:        t.Contract.GetTaskId(),
		Actor:         &stewardv1.Actor{Principal: "steward", Plane: PlaneName},
		Time:          ck.now(),
		CausationID:   w.causeID,
		CorrelationID: w.correlationID,
	}
}

// shortDuration writes d without trailing zero units: "72h", "1h30m", "2s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
