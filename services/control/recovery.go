package control

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/toolreg"
)

// recovery is the control plane's answer to what did not go as planned:
// an action that failed for good (retried, stopped as a loop, or
// escalated: this file and loopguard.go), a task that compensates
// (compensate.go), and a task the watchdog marked stalled (redrive.go). It
// holds only what those need — the log, the stores a proposal reads, and
// of the plane its writes and its proposal path (recoveryPlane) and the
// reactions a stall runs again — so that the plane's other jobs stay out
// of its reach. Its methods are safe for concurrent use.
type recovery struct {
	log      *eventlog.Log
	tasks    *taskstore.Store
	logger   *slog.Logger
	tools    *toolreg.Registry
	requests *action.Store
	results  *action.Store
	plane    recoveryPlane
	// start and drivePlan are the plane's reactions that start a pending
	// task and move a plan, which a stall mark runs again.
	start, drivePlan eventlog.Handler
}

// recoveryPlane is what recovery needs of the control plane: to append to
// a task as the plane does, and to propose an action as every proposal is
// (draft.go), with its secrets opened again (secrets.go).
type recoveryPlane interface {
	write(ctx context.Context, taskID string, build taskstore.Build) error
	event(meta event.Meta, payload event.Payload) (*stewardv1.Event, error)
	actor(principal string) *stewardv1.Actor
	prepare(ctx context.Context, t *stewardv1.Task, pr proposal) (*draft, error)
	record(ctx context.Context, taskID string, d *draft, causationID string, admit admission) (*stewardv1.Task, *stewardv1.Action, bool, error)
	reveal(taskID string, params []byte, sealed []*stewardv1.SealedSecret) ([]byte, error)
}

// The bounds of contract.recovery_policy.max_attempts: how many proposals
// of one action RECOVERY_MODE_RETRY makes in all, the first included.
const (
	// DefaultRecoveryAttempts is the number when the contract sets none:
	// the first proposal and two retries.
	DefaultRecoveryAttempts = task.DefaultRecoveryAttempts
	// MaxRecoveryAttempts is the most a contract may set. Each attempt
	// may itself be retried by the execution plane (the tool's retry
	// policy) and may need an approval: more than this is a loop, not a
	// recovery.
	MaxRecoveryAttempts = 10
)

// recoveryPrefix starts the proposal id of every retry Steward proposes
// under RECOVERY_MODE_RETRY. With the id of the failed action it makes the
// retry's action id deterministic, so that a redelivered failure proposes
// it once; clients may not use the prefix (validateProposal).
const recoveryPrefix = "recovery-"

// recoverFrom is the control plane's answer to an action that failed for
// good — an outcome FAILED, which comes after the execution plane's own
// retries are spent, or a settlement FAILED. In an active task, in this
// order, and at most one of them:
//
//  1. Under RECOVERY_MODE_RETRY, a failure worth retrying (retryDue) is
//     proposed again (retry). The loop guard waits: a run of identical
//     failures the contract asked to retry is not a loop until the
//     retries are spent.
//  2. The loop guard (guardLoop): the same failure max_same_failures
//     times in a row stops the task, waiting for input.
//  3. Under RECOVERY_MODE_ESCALATE, the failure stops the task, waiting
//     for input (escalate).
//
// A task that is not active when the failure is read (paused, waiting,
// suspended, compensating, ended) gets none of them: a retry due then is
// proposed when the task runs again (retryPending); nothing is proposed
// into an ended task, and a failure is not escalated into a task already
// stopped for a person, who sees it in the ledger.
//
// Idempotent: the retry's action id, and the stops' event ids, derive from
// the failed action.
func (r *recovery) recoverFrom(ctx context.Context, rec *stewardv1.EventRecord) error {
	var actionID string
	switch pl := rec.Event.Payload.(type) {
	case *stewardv1.Event_ActionOutcomeRecorded:
		if pl.ActionOutcomeRecorded.GetOutcome().GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_FAILED {
			return nil // only a failure needs recovering from; no need to read the task
		}
		actionID = pl.ActionOutcomeRecorded.ActionId
	case *stewardv1.Event_ActionSettled:
		if pl.ActionSettled.State != stewardv1.SettleState_SETTLE_STATE_FAILED {
			return nil
		}
		actionID = pl.ActionSettled.ActionId
	default:
		return nil
	}
	taskID := rec.Event.TaskId
	var retryNow bool
	err := r.plane.write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		retryNow = false
		a := task.FindAction(t, actionID)
		if !task.Active(t.Status) || a == nil || a.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED {
			return nil, nil
		}
		if r.retryDue(t, a) {
			retryNow = true // proposed below: its request is read and stored first
			return nil, nil
		}
		if ev, err := r.guardLoop(rec, t, a); ev != nil || err != nil {
			return ev, err
		}
		if t.Contract.GetRecoveryPolicy().GetMode() == stewardv1.RecoveryMode_RECOVERY_MODE_ESCALATE {
			return r.escalate(rec, a)
		}
		return nil, nil
	})
	if err != nil || !retryNow {
		return err
	}
	t, _, err := r.tasks.LoadSince(ctx, taskID, rec.Sequence)
	if err != nil {
		return err
	}
	return r.retry(ctx, rec, t, task.FindAction(t, actionID))
}

// retryPending proposes the retries a task in RECOVERY_MODE_RETRY still
// owes when it runs again (a resume, an answer, a plan version allowed to
// run): those of failures that ended while it was stopped, or while its
// plan was denied, or whose retry its action cap refused. It is
// idempotent as retry is.
func (r *recovery) retryPending(ctx context.Context, rec *stewardv1.EventRecord) error {
	var retries bool
	err := r.tasks.Peek(ctx, rec.Event.TaskId, rec.Sequence, func(t *stewardv1.Task) {
		retries = t.Contract.GetRecoveryPolicy().GetMode() == stewardv1.RecoveryMode_RECOVERY_MODE_RETRY
	})
	if err != nil || !retries || !r.takesActions() {
		return err
	}
	t, _, err := r.tasks.LoadSince(ctx, rec.Event.TaskId, rec.Sequence)
	if err != nil || !task.Active(t.Status) {
		return err
	}
	for _, a := range t.Actions {
		if r.retryDue(t, a) {
			if err := r.retry(ctx, rec, t, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// takesActions reports whether the plane can propose actions: it has a
// tool registry and a request store.
func (r *recovery) takesActions() bool { return r.tools != nil && r.requests != nil }

// retryDue reports whether a, an action of t, is a failure that
// RECOVERY_MODE_RETRY proposes again now, and has not yet
// (task.RetryOwed), on a plane that takes actions.
func (r *recovery) retryDue(t *stewardv1.Task, a *stewardv1.Action) bool {
	return r.takesActions() && task.RetryOwed(t, a)
}

// retryID is the action id of the retry of a, a failed action of t.
func retryID(t *stewardv1.Task, a *stewardv1.Action) string {
	return action.ID(t.Contract.GetTaskId(), recoveryPrefix+a.ActionId)
}

// retry proposes failed action a of t again, unchanged: the same tool
// version, target, parameters (the same request, so the same request
// hash), retry policy, rationale and proposer, as policy saw them the
// first time; a new action id, so a new op_key and action hash, since the
// first call is over. It is governed like any proposal — its own policy
// snapshot, an approval if policy asks, a permit — and counts against the
// action cap: at the cap the proposal stops the task instead (capStop).
// The event that records it is Steward's (its actor), and the action says
// what it retries (retry_of) and which attempt it is (recovery_attempt).
//
// A retry that can no longer be proposed — its tool version unusable, say
// — is logged and dropped: the failure stands in the ledger and the agent
// decides, as it does once the attempts are spent.
func (r *recovery) retry(ctx context.Context, rec *stewardv1.EventRecord, t *stewardv1.Task, a *stewardv1.Action) error {
	taskID := t.Contract.GetTaskId()
	params, err := r.paramsOf(ctx, a)
	if err == nil {
		// The same request again: its secrets are concealed again into
		// the same commitments, which the hash check below confirms.
		params, err = r.plane.reveal(taskID, params, a.SealedSecrets)
	}
	if err != nil {
		return err
	}
	d, err := r.plane.prepare(ctx, t, proposal{
		taskID: taskID, proposalID: recoveryPrefix + a.ActionId,
		tool: a.Tool, toolVersion: a.ToolVersion, target: a.Target,
		params: params, retry: a.RetryPolicy, principal: a.ProposedBy, milestone: a.MilestoneId, decision: a.DecisionId,
		held: a.SealedSecrets,
	})
	if err == nil && d.action.RequestHash != a.RequestHash {
		err = errs.New(errs.FailedPrecondition, "the request of action %s does not come out the same again (hash %s, was %s)", a.ActionId, d.action.RequestHash, a.RequestHash)
	}
	if err == nil {
		d.action.RetryOf, d.action.RecoveryAttempt = a.ActionId, task.RecoveryAttempt(a)+1
		d.action.PlanStepId = a.PlanStepId // the plan driver follows a step's action to its retry
		d.action.Rationale = proto.CloneOf(a.Rationale)
		_, _, _, err = r.plane.record(ctx, taskID, d, rec.Event.EventId, func(t *stewardv1.Task) (bool, error) {
			// Only while the task runs: a stop since it was read leaves
			// the retry to the resume (retryPending).
			return task.Active(t.Status), nil
		})
	}
	if err != nil && eventlog.Permanent(err) {
		// A redelivery would meet the same refusal; the action cap's
		// refusal has stopped the task already.
		r.logger.WarnContext(ctx, "failed action not retried", "task", taskID, "action", a.ActionId, "attempt", task.RecoveryAttempt(a)+1, "err", err)
		return r.failPlanStep(ctx, rec, taskID, a, err)
	}
	return err
}

// failPlanStep fails the running plan step whose action a was failed for
// good because its retry could not be proposed (why): the plan driver
// waits for a retry that will not come. The event is the driver's own
// end of the step's attempt (same id), so only one of them is appended.
func (r *recovery) failPlanStep(ctx context.Context, rec *stewardv1.EventRecord, taskID string, a *stewardv1.Action, why error) error {
	if a.PlanStepId == "" {
		return nil
	}
	return r.plane.write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		st := task.FindStep(t, a.PlanStepId)
		if !task.PlanMayRun(t) || st == nil || st.Status != stewardv1.StepStatus_STEP_STATUS_RUNNING || !task.StepRuns(t, st, a) {
			return nil, nil
		}
		v, attempt := t.Plan.Version, strconv.FormatUint(uint64(st.Attempts), 10)
		return r.plane.event(event.Meta{
			ID:            event.ID(taskID, event.TypePlanStepEnded, st.StepId, strconv.FormatUint(uint64(v), 10), attempt),
			TaskID:        taskID,
			Actor:         r.plane.actor(stewardPrincipal),
			CausationID:   rec.Event.EventId,
			CorrelationID: rec.Event.CorrelationId,
		}, &stewardv1.PlanStepEnded{Version: v, StepId: st.StepId, Status: stewardv1.StepStatus_STEP_STATUS_FAILED,
			Reason: task.Clip(fmt.Sprintf("action %s failed and its retry could not be proposed: %v", a.ActionId, why))})
	})
}

// paramsOf reads the parameters a was proposed with from its canonical
// request.
func (r *recovery) paramsOf(ctx context.Context, a *stewardv1.Action) (json.RawMessage, error) {
	canonical, err := r.requests.Request(ctx, a.Request, a.RequestRef, a.RequestHash)
	if err != nil {
		return nil, err
	}
	var req struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(canonical, &req); err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "request of action %s", a.ActionId)
	}
	if len(req.Params) == 0 {
		req.Params = json.RawMessage("{}")
	}
	return req.Params, nil
}

// escalate is the stop of a task under RECOVERY_MODE_ESCALATE when its
// action a failed for good: the task waits for input
// (NEEDS_INPUT_CAUSE_ESCALATED, naming a), with a reason that says what
// failed and how, until a person resumes it (ResumeTask) — the agent then
// decides what next — or ends it (FailTask, CancelTask). The event's id
// derives from the action.
func (r *recovery) escalate(rec *stewardv1.EventRecord, a *stewardv1.Action) (*stewardv1.Event, error) {
	taskID := rec.Event.TaskId
	where := strings.TrimSpace(a.Tool + " " + a.Target)
	class := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(a.Outcome.GetFailureClass().String(), "FAILURE_CLASS_")), "_", " ")
	return r.plane.event(event.Meta{
		ID:            event.ID(taskID, event.TypeTaskNeedsInput, "escalated", a.ActionId),
		TaskID:        taskID,
		Actor:         r.plane.actor(stewardPrincipal),
		CausationID:   rec.Event.EventId,
		CorrelationID: rec.Event.CorrelationId,
	}, &stewardv1.TaskNeedsInput{
		Reason: fmt.Sprintf("escalated: action %s on %s failed (%s): %s; resume the task to go on, or fail it",
			a.ActionId, where, class, task.Clip(a.Outcome.GetReason())),
		Cause:    stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ESCALATED,
		ActionId: a.ActionId,
	})
}
