package governance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// mayVote says why who may not cast decision on a's open approval in t,
// or nil when they may (docs/approvals.md). Everyone must hold one of the
// approval's roles, by name (an admin too: the record shows the vote as a
// holder's), and vote once. An approval must also come from someone
// with no stake in the action: not the principal that proposed it and,
// under the contract's separation_of_duties, not the requester, the
// task's creator or a delegate; and when the contract names an
// authorizer, they must be among the approvers — a vote that would
// complete the approval without them is refused. A rejection needs only
// the role: it can only stop the action, never let it run.
func mayVote(t *stewardv1.Task, a *stewardv1.Action, who rpc.Identity, decision stewardv1.ApprovalDecision) error {
	subject := voteSubject{what: "action " + a.ActionId, proposed: "proposed action " + orOriginal(a), by: []string{a.ProposedBy}}
	if a.RetryOf != "" {
		// A retry Steward proposes under RECOVERY_MODE_RETRY is still the
		// original proposer's action.
		subject.by = append(subject.by, task.FindAction(t, a.RetryOf).GetProposedBy())
	}
	return mayVoteOn(t, a.Approval, subject, who, decision)
}

// voteSubject is what an approval is about, for mayVoteOn: what it is, in
// words; how its proposer put it forward; and who did (any of by).
type voteSubject struct {
	what, proposed string
	by             []string
}

// mayVoteOn is mayVote for approval ap of subject: an action's, or a
// plan version's, whose submitter is its proposer.
func mayVoteOn(t *stewardv1.Task, ap *stewardv1.Approval, subject voteSubject, who rpc.Identity, decision stewardv1.ApprovalDecision) error {
	if !who.Holds(ap.RequiredRoles...) {
		return errs.New(errs.PermissionDenied, "%s may not decide approval %s: it needs one of the roles %s", who.Principal, ap.ApprovalId, strings.Join(ap.RequiredRoles, ", "))
	}
	if v := task.VoteOf(ap, who.Principal); v != nil {
		return errs.New(errs.AlreadyExists, "%s has already %s approval %s (%s); each approver decides once, and another must add theirs",
			who.Principal, decisionWord(v.Decision), ap.ApprovalId, tally(ap))
	}
	if decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
		return nil
	}
	c := t.Contract
	switch {
	case slices.Contains(subject.by, who.Principal):
		return errs.New(errs.PermissionDenied, "%s %s and may not approve it: an approval is someone else's judgement", who.Principal, subject.proposed)
	case c.GetSeparationOfDuties() && stakeholder(t, who.Principal) != "":
		return errs.New(errs.PermissionDenied, "%s may not approve %s: they are %s of task %s, and its contract separates duties",
			who.Principal, subject.what, stakeholder(t, who.Principal), c.GetTaskId())
	}
	if authorizer := c.GetAuthorizerRef(); authorizer != "" && who.Principal != authorizer && !slices.Contains(task.Approvers(ap), authorizer) &&
		len(task.Approvers(ap))+1 >= task.RequiredApprovals(ap) {
		if task.RequiredApprovals(ap) == 1 {
			return errs.New(errs.PermissionDenied, "%s may not approve %s: task %s names %s as its authorizer, who alone may approve it",
				who.Principal, subject.what, c.GetTaskId(), authorizer)
		}
		return errs.New(errs.PermissionDenied, "%s may not give the last of %d approvals of %s: task %s names %s as its authorizer, who must be among the approvers",
			who.Principal, task.RequiredApprovals(ap), subject.what, c.GetTaskId(), authorizer)
	}
	return nil
}

// orOriginal names a, or, for a retry, a and the action it retries.
func orOriginal(a *stewardv1.Action) string {
	if a.RetryOf != "" {
		return a.ActionId + " (a retry of " + a.RetryOf + ")"
	}
	return a.ActionId
}

// stakeholder names the part principal plays in asking for t's work — its
// requester, its creator, a delegate in its chain or the principal its
// credential was issued to — or "" for none.
func stakeholder(t *stewardv1.Task, principal string) string {
	c := t.Contract
	switch {
	case principal == c.GetRequesterRef():
		return "the requester"
	case principal == t.CreatedBy:
		return "the creator"
	case principal == t.Credential.GetCredential().GetPrincipal():
		return "the principal its credential was issued to"
	}
	for _, d := range c.GetDelegationChain() {
		if principal == d.GetToRef() {
			return "a delegate"
		}
	}
	return ""
}

// tally says how far ap's approvals are, e.g. "1 of 2 approvals".
func tally(ap *stewardv1.Approval) string {
	return fmt.Sprintf("%d of %d approvals", len(task.Approvers(ap)), task.RequiredApprovals(ap))
}
