package auditbundle

import (
	"fmt"
	"slices"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// checkApprovers checks, from the events alone, that every approval
// that let an action or a plan version go on was given by people
// governance would have let approve (docs/approvals.md): enough distinct
// approvers, none of whom proposed the action or one it amends, retries,
// edits or compensates, or submitted the plan; under separation of
// duties none of the requester, the creator, the credential's principal
// or a delegate; and, when the contract names an authorizer, the
// authorizer among them unless the approval was escalated to a backup who
// voted. The fold does not check these: governance does, when a vote is
// cast, so each approval is judged on the task as it stood then — the
// task is folded again, and every approval checked at the vote that
// decided it (a plan version's too, which a later version replaces). Who
// held which role is not on the record (a vote names its voter, not their
// roles), so roles are not checked here.
func checkApprovers(t *bundleTask, r *Report) {
	tk := &stewardv1.Task{}
	for _, rec := range t.recs {
		if task.Apply(tk, rec.Event, rec.Sequence) != nil {
			return // the replay folded it: not reached
		}
		if d := rec.Event.GetApprovalDecided(); d != nil {
			checkDecided(t.id, tk, d.ApprovalId, r)
		}
	}
}

// checkDecided checks approval id of tk, an action's or its plan's, if it
// stands approved: just decided, since a decided approval takes no vote.
func checkDecided(taskID string, tk *stewardv1.Task, id string, r *Report) {
	var ap *stewardv1.Approval
	var by []stake
	var item string
	if p := tk.Plan; id != "" && p.GetApproval().GetApprovalId() == id {
		ap, item = p.Approval, fmt.Sprintf("task %s plan version %d approval %s", taskID, p.Version, id)
		by = []stake{{p.SubmittedBy, "submitted the plan"}}
	}
	for _, a := range tk.Actions {
		if a.Approval.GetApprovalId() == id {
			ap, item = a.Approval, fmt.Sprintf("task %s action %s approval %s", taskID, a.ActionId, id)
			by = proposedBy(tk, a)
		}
	}
	if ap == nil || !task.Approves(ap.Decision) {
		return
	}
	c := tk.Contract
	approvers := task.Approvers(ap)
	if len(approvers) < task.RequiredApprovals(ap) {
		r.fail(SectionApprovals, item, "approved by %d of the %d approvers it needs", len(approvers), task.RequiredApprovals(ap))
	}
	for _, who := range approvers {
		if i := slices.IndexFunc(by, func(s stake) bool { return s.principal == who }); i >= 0 {
			r.fail(SectionApprovals, item, "approved by %s, who %s", who, by[i].did)
		}
		if c.GetSeparationOfDuties() && task.Stakeholder(tk, who) != "" {
			r.fail(SectionApprovals, item, "approved by %s, %s, under separation of duties", who, task.Stakeholder(tk, who))
		}
	}
	if auth := c.GetAuthorizerRef(); auth != "" && !slices.Contains(approvers, auth) && !task.BackupApproved(ap) {
		r.fail(SectionApprovals, item, "the contract's authorizer %s is not among its approvers (%s)", auth, strings.Join(approvers, ", "))
	}
	r.Approvals++
}

// stake is one who put an approval's subject forward, and what they did.
type stake struct{ principal, did string }

// proposedBy are who proposed a and the actions a stems from.
func proposedBy(t *stewardv1.Task, a *stewardv1.Action) []stake {
	var out []stake
	for cur, n := a, 0; cur != nil && n < 64; n++ {
		out = append(out, stake{cur.ProposedBy, "proposed action " + cur.ActionId})
		next := cur.AmendmentOf
		for _, id := range []string{cur.RetryOf, cur.EditOf, cur.Compensates} {
			if next == "" {
				next = id
			}
		}
		cur = task.FindAction(t, next)
	}
	return out
}
