package task

import (
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Two answers to an approval go beyond yes and no (docs/approvals.md):
//
//   - Amend: the action is rejected, naming the action proposed in its
//     place (amended_as), which the control plane proposes with the
//     approver's parameters in the approver's name (amendment_of links it
//     back). It is an action like any other: judged by policy afresh.
//   - A person executes it: the action is approved, but no permit follows
//     and no tool is called; it waits, person executing, until the person
//     who answered settles it (SettleAction), with evidence.
//
// Neither is given to an action that went out already: its call may have
// done the work, and a second way of doing it could do it twice.

// checkDecision checks d, a vote on a's open approval in t, for what its
// decision asks beyond a plain vote.
func checkDecision(t *stewardv1.Task, a *stewardv1.Action, d *stewardv1.ApprovalDecided) error {
	switch d.Decision {
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
		if d.AmendedActionId != "" || d.AmendedParamsJson != "" {
			return fmt.Errorf("only an amendment carries amended parameters")
		}
		return nil
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND:
		switch {
		case d.AmendedActionId == "" || d.AmendedParamsJson == "":
			return fmt.Errorf("an amendment names its parameters and the action it proposes")
		case FindAction(t, d.AmendedActionId) != nil:
			return fmt.Errorf("an amendment proposes action %s, which the task has already", d.AmendedActionId)
		}
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES:
		switch {
		case d.AmendedActionId != "" || d.AmendedParamsJson != "":
			return fmt.Errorf("only an amendment carries amended parameters")
		case len(Approvers(a.Approval))+1 < RequiredApprovals(a.Approval):
			return fmt.Errorf("a person-executes answer must complete the approval (%d of %d approvals before it)", len(Approvers(a.Approval)), RequiredApprovals(a.Approval))
		}
	default:
		return fmt.Errorf("decision %v is not approve, reject, amend or person executes", d.Decision)
	}
	if a.Attempt > 0 {
		return fmt.Errorf("action %s went out already (attempt %d): it is approved or rejected, not %s", a.ActionId, a.Attempt, AnswerName(d.Decision))
	}
	return nil
}

// AnswerName returns d in words, e.g. "person executes".
func AnswerName(d stewardv1.ApprovalDecision) string {
	return enumWords(d.String(), "APPROVAL_DECISION_")
}

// checkAmendment checks a, proposed as an amendment, against t: the
// action it amends was amended into it.
func checkAmendment(t *stewardv1.Task, a *stewardv1.Action) error {
	orig := FindAction(t, a.AmendmentOf)
	if orig == nil || orig.AmendedAs != a.ActionId {
		return fmt.Errorf("action %s is proposed as the amendment of %s, which no approver amended into it", a.ActionId, a.AmendmentOf)
	}
	return nil
}

// Executor returns who settles a, an action a person executes: the
// approver who answered so; "" for any other action.
func Executor(a *stewardv1.Action) string {
	if a.GetApproval().GetDecision() != stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES {
		return ""
	}
	return a.Approval.DecidedBy
}

// checkPersonSettlement checks st, the settlement of a, an action a
// person executes: only that person settles it, and only as done or not.
func checkPersonSettlement(a *stewardv1.Action, st *stewardv1.ActionSettled) error {
	switch {
	case st.SettledBy != Executor(a):
		return fmt.Errorf("action %s is executed by %s, who alone settles it, not %s", a.ActionId, Executor(a), st.SettledBy)
	case st.State == stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED:
		return fmt.Errorf("a person's execution is settled as succeeded or failed")
	}
	return nil
}
