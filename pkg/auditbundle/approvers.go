package auditbundle

import (
	"fmt"
	"slices"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// checkApprovers checks, from the events alone, that every approval
// that let an action go on was given by people governance would have let
// approve (docs/approvals.md): enough distinct approvers, none of whom
// proposed the action or one it amends, retries, edits or compensates;
// under separation of duties none of the requester, the creator, the
// credential's principal or a delegate; and, when the contract names an
// authorizer, the authorizer among them unless the approval was escalated
// to a backup who voted. The fold does not check these: governance does,
// when a vote is cast. Who held which role is not on the record, so roles
// are not checked here.
func checkApprovers(t *bundleTask, r *Report) {
	c := t.task.Contract
	for _, a := range t.task.Actions {
		ap := a.Approval
		if ap == nil || !task.Approves(ap.Decision) {
			continue
		}
		item := fmt.Sprintf("task %s action %s approval %s", t.id, a.ActionId, ap.ApprovalId)
		approvers := task.Approvers(ap)
		if len(approvers) < task.RequiredApprovals(ap) {
			r.fail(SectionApprovals, item, "approved by %d of the %d approvers it needs", len(approvers), task.RequiredApprovals(ap))
		}
		for _, who := range approvers {
			if by := proposedBy(t.task, a, who); by != "" {
				r.fail(SectionApprovals, item, "approved by %s, who proposed %s", who, by)
			}
			if c.GetSeparationOfDuties() && task.Stakeholder(t.task, who) != "" {
				r.fail(SectionApprovals, item, "approved by %s, %s, under separation of duties", who, task.Stakeholder(t.task, who))
			}
		}
		if auth := c.GetAuthorizerRef(); auth != "" && !slices.Contains(approvers, auth) && !task.BackupApproved(ap) {
			r.fail(SectionApprovals, item, "the contract's authorizer %s is not among its approvers (%s)", auth, strings.Join(approvers, ", "))
		}
		r.Approvals++
	}
}

// proposedBy names the action who proposed, a or one a stems from, or "".
func proposedBy(t *stewardv1.Task, a *stewardv1.Action, who string) string {
	for cur, n := a, 0; cur != nil && n < 64; n++ {
		if cur.ProposedBy == who {
			return "action " + cur.ActionId
		}
		next := cur.AmendmentOf
		for _, id := range []string{cur.RetryOf, cur.EditOf, cur.Compensates} {
			if next == "" {
				next = id
			}
		}
		cur = task.FindAction(t, next)
	}
	return ""
}
