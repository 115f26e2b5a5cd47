package governance

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// An approver may answer an action's approval with more than yes or no
// (docs/approvals.md): amend it — the action is rejected and one with the
// approver's parameters is proposed in their name, by the control plane
// when it reads the decision — or say that a person executes it, when no
// permit follows and the action waits for that person to settle it. Both
// are votes like the others (Decide); this file checks what each asks
// beyond a vote.

// MaxAmendment bounds amended parameters, as canonical JSON: they travel
// in the decision's event, which every plane folds.
const MaxAmendment = 64 << 10

// amendment is an approver's amended parameters, checked against the
// action's tool: as canonical JSON, and the id of the action the control
// plane proposes with them.
type amendment struct {
	params   []byte
	actionID string
}

// amendmentOf checks req's amended parameters for ap, the approval of an
// action of a task of tenant's: other parameters than the action's, for
// its tool version (still usable, not a model's), by its schema, none of
// them secret. It reads the tool registry, so it runs before the
// conditional write.
func (p *Plane) amendmentOf(ctx context.Context, tenant string, ap *stewardv1.Approval, req *stewardv1.DecideApprovalRequest) (*amendment, error) {
	raw, err := protojson.Marshal(req.AmendedParams)
	if err != nil {
		return nil, errs.Field("amended_params", "%v", err)
	}
	var v any
	if err := jsonUnmarshal(raw, &v); err != nil {
		return nil, errs.Field("amended_params", "%v", err)
	}
	canonical, err := action.CanonicalJSON(v)
	switch {
	case err != nil:
		return nil, errs.Field("amended_params", "%v", err)
	case len(canonical) > MaxAmendment:
		return nil, &errs.Error{Code: errs.TooLarge, Field: "amended_params", Message: "are larger than 64 KiB"}
	case string(canonical) == ap.ParametersJson:
		return nil, errs.Field("amended_params", "are the action's own parameters: approve or reject it")
	}
	entry, err := p.tools.Lookup(ctx, p.log, tenant, ap.Tool, ap.ToolVersion)
	if err != nil {
		return nil, err
	}
	switch {
	case entry.Unusable != nil:
		return nil, errs.New(errs.FailedPrecondition, "tool %s version %s can no longer be proposed (%v): reject the action", ap.Tool, ap.ToolVersion, entry.Unusable)
	case entry.Tool.Contract.GetModel() != nil:
		// A model call's messages are the agent's decision, on its record.
		return nil, errs.Field("decision", "tool %s calls a model, whose messages are the agent's decision: approve or reject the call", ap.Tool)
	}
	if entry.Schema.HasSecrets() {
		// A secret's value would be on the log, in the decision: the
		// agent proposes again instead, and its secrets are sealed.
		return nil, errs.Field("amended_params", "tool %s version %s marks parameters secret, which an amendment would write to the log: reject the action and have it proposed anew", ap.Tool, ap.ToolVersion)
	}
	if err := entry.Schema.Validate(ctx, canonical); err != nil {
		var bad *action.Violation
		if errors.As(err, &bad) {
			return nil, errs.Field("amended_params"+bad.Path, "%s", bad.Reason)
		}
		var e *errs.Error
		if errors.As(err, &e) { // a limit on the work of checking them
			return nil, &errs.Error{Code: e.Code, Field: "amended_params", Message: e.Message}
		}
		return nil, errs.Field("amended_params", "%v", err)
	}
	return &amendment{params: canonical, actionID: action.ID(ap.TaskId, action.AmendmentID(ap.ApprovalId, canonical))}, nil
}

// checkAnswer refuses what an amend or a person-executes answer may not
// be given to: a, an action of t, that went out already (its call may
// have done the work), that a plan step or a compensation proposes with
// parameters Steward sets (an amendment), or an approval the answer would
// not complete, or whose task is not active (person executes). Nil for
// approve and reject.
func checkAnswer(t *stewardv1.Task, a *stewardv1.Action, decision stewardv1.ApprovalDecision) error {
	amend := decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND
	if !amend && decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES {
		return nil
	}
	ap := a.Approval
	switch {
	case !amend && !task.Active(t.Status):
		// An approval's permit waits for a live task (afterDecision);
		// nobody is handed the work of one that is not.
		return errs.New(errs.FailedPrecondition, "task %s is %s: nobody may be handed the work of action %s now; reject it, or resume the task first",
			t.Contract.GetTaskId(), strings.ToLower(strings.TrimPrefix(t.Status.String(), "TASK_STATUS_")), a.ActionId)
	case a.Attempt > 0:
		return errs.New(errs.FailedPrecondition, "action %s went out already (attempt %d), and its call may have done the work: approve or reject it", a.ActionId, a.Attempt)
	case amend && a.PlanStepId != "":
		return errs.Field("decision", "action %s runs step %s of the task's plan, whose parameters the plan sets: reject it, and the plan is revised", a.ActionId, a.PlanStepId)
	case amend && a.Compensates != "":
		return errs.Field("decision", "action %s is a compensation, whose parameters Steward takes from the action it undoes: approve or reject it", a.ActionId)
	case !amend && len(task.Approvers(ap))+1 < task.RequiredApprovals(ap):
		return errs.Field("decision", "a person-executes answer completes an approval, and approval %s needs %d more before it (%s): approve it, and let the last approver answer", ap.ApprovalId, task.RequiredApprovals(ap)-len(task.Approvers(ap))-1, tally(ap))
	}
	return nil
}

// repeated reports whether req, by who, asks what ap's decision already
// is — an amend or a person-executes answer retried after its answer was
// lost — so that the retry is answered with the approval and appends
// nothing: am is the retry's amendment, whose action id names the
// parameters.
func repeated(ap *stewardv1.Approval, who rpc.Identity, req *stewardv1.DecideApprovalRequest, am *amendment) bool {
	if ap.DecidedBy != who.Principal || ap.Decision != req.Decision || ap.ActionHash != req.ActionHash {
		return false
	}
	switch req.Decision {
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND:
		return am != nil && ap.AmendedActionId == am.actionID
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES:
		return true
	}
	return false
}

// checkDecision refuses a request whose fields do not go together; what
// it asks of the approval is checked once the approval is read.
func checkDecision(req *stewardv1.DecideApprovalRequest) error {
	amend := req.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND
	switch {
	case req.ApprovalId == "":
		return errs.Field("approval_id", "is required")
	case req.ActionHash == "" && req.PlanHash == "":
		return errs.Field("action_hash", "is required: the hash of the action you decide on (plan_hash, for the approval of a plan)")
	case req.ActionHash != "" && req.PlanHash != "":
		return errs.Field("plan_hash", "must be empty when action_hash is set: an approval is of an action or of a plan")
	case req.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED || stewardv1.ApprovalDecision_name[int32(req.Decision)] == "":
		return errs.Field("decision", "must be APPROVAL_DECISION_APPROVE, _REJECT, _AMEND or _PERSON_EXECUTES")
	case amend && req.AmendedParams == nil:
		return errs.Field("amended_params", "is required with APPROVAL_DECISION_AMEND: the parameters the action should have instead")
	case !amend && req.AmendedParams != nil:
		return errs.Field("amended_params", "is only for APPROVAL_DECISION_AMEND")
	case len(req.Comment) > 4096:
		return &errs.Error{Code: errs.TooLarge, Field: "comment", Message: "is longer than 4096 bytes"}
	}
	return nil
}
