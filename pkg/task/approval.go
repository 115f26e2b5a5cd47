package task

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// An approval is decided by votes. Each ApprovalDecided is one principal's
// vote, appended to Approval.votes; the approval is decided — decision,
// decided_by, comment and decided_at set — at the first rejection, or once
// RequiredApprovals distinct principals have approved, decided_by then
// being the last of them. A principal votes once: a second vote by the
// same principal is refused. Who may vote at all (roles, the proposer,
// separation of duties, the contract's authorizer) is governance's to
// check before it appends the vote (services/governance/approve.go).

// RequiredApprovals is how many distinct approvals ap needs: its
// required_approvals, zero meaning one.
func RequiredApprovals(ap *stewardv1.Approval) int {
	return max(1, int(ap.GetRequiredApprovals()))
}

// VoteOf returns principal's vote on ap, or nil if they have not voted.
func VoteOf(ap *stewardv1.Approval, principal string) *stewardv1.ApprovalVote {
	for _, v := range ap.GetVotes() {
		if v.Principal == principal {
			return v
		}
	}
	return nil
}

// Approvers returns the principals who approved ap, in the order they did:
// an answer that a person executes the action approves it too.
func Approvers(ap *stewardv1.Approval) []string {
	var out []string
	for _, v := range ap.GetVotes() {
		if Approves(v.Decision) {
			out = append(out, v.Principal)
		}
	}
	return out
}

// Approves reports whether d lets the action be done: approve, or a
// person executes it.
func Approves(d stewardv1.ApprovalDecision) bool {
	return d == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE || d == stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES
}

// CastVote records d, decided at at, as a vote on ap, which it changes
// (pass a copy), and decides ap when the vote is a rejection or the last
// approval it needs. It reports whether ap is decided now. The caller has
// checked that d is a vote ap may take (approve or reject, by someone who
// has not voted, while ap is undecided).
func CastVote(ap *stewardv1.Approval, d *stewardv1.ApprovalDecided, at *timestamppb.Timestamp) bool {
	ap.Votes = append(ap.Votes, &stewardv1.ApprovalVote{Principal: d.DecidedBy, Decision: d.Decision, Comment: d.Comment, DecidedAt: at, Signed: d.Signed, AsBackup: d.AsBackup})
	if Approves(d.Decision) && len(Approvers(ap)) < RequiredApprovals(ap) {
		return false
	}
	ap.Decision, ap.DecidedBy, ap.Comment, ap.DecidedAt = d.Decision, d.DecidedBy, d.Comment, at
	ap.AmendedParamsJson, ap.AmendedActionId = d.AmendedParamsJson, d.AmendedActionId
	return true
}

// EnoughApprovals reports whether approval asked for at least as many
// approvals as snapshot requires: an approval given by fewer people than
// policy now wants does not stand.
func EnoughApprovals(snapshot *stewardv1.PolicySnapshot, approval *stewardv1.Approval) bool {
	return RequiredApprovals(approval) >= max(1, int(snapshot.GetRequiredApprovals()))
}

// approvalStands reports whether a revalidated action's snapshot lets a
// new permit follow: it allows the action, or it asks for an approval and
// the one already given (approval) was asked of the same roles, and of at
// least as many approvers.
// Governance, which owns the permit, names the default role when policy
// names none; here an approval given counts for that.
func approvalStands(snapshot *stewardv1.PolicySnapshot, approval *stewardv1.Approval) bool {
	switch snapshot.GetDecision() {
	case stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
		return true
	case stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL:
		roles := snapshot.GetRequiredApproverRoles()
		return approval.GetDecision() == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE &&
			(len(roles) == 0 || SameRoles(roles, approval.GetRequiredRoles())) && EnoughApprovals(snapshot, approval)
	}
	return false
}

// SameRoles reports whether a and b name the same roles, in any order.
func SameRoles(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, r := range a {
		seen[r] = true
	}
	for _, r := range b {
		if !seen[r] {
			return false
		}
	}
	return true
}

// approvalRequest opens the approval policy asks for, bound to the
// action's hash.
func approvalRequest(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	ap := ev.GetApprovalRequested().GetApproval()
	tr := &actionChange{id: ap.GetActionId(), from: []stewardv1.ActionStatus{evaluated, revalidating}, to: awaitingApproval}
	tr.check = func(a *stewardv1.Action) error {
		if ap.ActionHash != a.ActionHash {
			return fmt.Errorf("approval %s is for hash %s, the action's is %s", ap.ApprovalId, ap.ActionHash, a.ActionHash)
		}
		return nil
	}
	tr.apply = func(a *stewardv1.Action) { a.Approval = requested(ev) }
	return tr
}

// requested is the approval ev opens, with the request's signature kept
// on it: governance checks it before anything follows the approval.
func requested(ev *stewardv1.Event) *stewardv1.Approval {
	ap := proto.CloneOf(ev.GetApprovalRequested().GetApproval())
	ap.RequestSigned = ev.GetApprovalRequested().GetSigned()
	return ap
}

// vote records one approver's decision.
func vote(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	// One vote (approval.go): the action stays awaiting approval until
	// the vote that decides it.
	d := ev.GetApprovalDecided()
	tr := &actionChange{id: d.ActionId, from: []stewardv1.ActionStatus{awaitingApproval}}
	tr.check = func(a *stewardv1.Action) error {
		switch {
		case a.Approval.GetApprovalId() != d.ApprovalId:
			return fmt.Errorf("approval %s is not the action's open approval", d.ApprovalId)
		case d.ActionHash != a.ActionHash:
			return fmt.Errorf("the decision is for hash %s, the action's is %s", d.ActionHash, a.ActionHash)
		case VoteOf(a.Approval, d.DecidedBy) != nil:
			return fmt.Errorf("%s has voted on approval %s already; each approver votes once", d.DecidedBy, d.ApprovalId)
		}
		return checkDecision(t, a, d)
	}
	tr.apply = func(a *stewardv1.Action) {
		a.Approval = proto.CloneOf(a.Approval)
		if !CastVote(a.Approval, d, ev.Time) {
			return // more approvals to come
		}
		tr.to = approved
		switch d.Decision {
		case stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES:
			tr.to = personExecuting
		case stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND:
			tr.to = rejected
			a.AmendedAs = d.AmendedActionId
			a.Outcome = &stewardv1.Outcome{Status: rejected, Reason: "amended by " + d.DecidedBy + ": replaced by action " + d.AmendedActionId + orEmpty(": ", d.Comment), FinishedAt: ev.Time}
		case stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
			tr.to = rejected
			a.Outcome = &stewardv1.Outcome{Status: rejected, Reason: "rejected by " + d.DecidedBy + orEmpty(": ", d.Comment), FinishedAt: ev.Time}
			if mayHaveWorked(a) {
				tr.to = unknown
				a.Outcome.Status, a.Outcome.FailureClass, a.Outcome.Attempt = unknown, stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN, a.Attempt
				a.Outcome.Reason = stoppedAfterCalls("rejected", a, a.Outcome.Reason)
			}
		}
	}
	return tr
}

// reminder notes that the approvers of an open approval were reminded.
func reminder(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	r := ev.GetApprovalReminded()
	tr := &actionChange{id: r.ActionId, from: []stewardv1.ActionStatus{awaitingApproval}}
	tr.check = func(a *stewardv1.Action) error {
		if a.Approval.GetApprovalId() != r.ApprovalId {
			return fmt.Errorf("approval %s is not the action's open approval", r.ApprovalId)
		}
		return nil
	}
	return tr
}

// escalation notes that an open approval went to the contract's backup
// (ApprovalEscalated), who may decide it since.
func escalation(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	e := ev.GetApprovalEscalated()
	tr := &actionChange{id: e.ActionId, from: []stewardv1.ActionStatus{awaitingApproval}}
	tr.check = func(a *stewardv1.Action) error { return checkEscalation(t, a.Approval, e) }
	tr.apply = func(a *stewardv1.Action) { a.Approval = escalated(a.Approval, e, ev) }
	return tr
}

// checkEscalation checks that e escalates ap, t's open approval, to the
// backup t's contract names, and for the first time.
func checkEscalation(t *stewardv1.Task, ap *stewardv1.Approval, e *stewardv1.ApprovalEscalated) error {
	switch backup := t.Contract.GetApprovalBackupRef(); {
	case ap.GetApprovalId() != e.ApprovalId:
		return fmt.Errorf("approval %s is not the open approval", e.ApprovalId)
	case backup == "" || e.ToRef != backup:
		return fmt.Errorf("approval %s escalated to %q, not the contract's backup %q", e.ApprovalId, e.ToRef, backup)
	case ap.GetEscalatedTo() != "":
		return fmt.Errorf("approval %s was escalated already, to %s", e.ApprovalId, ap.GetEscalatedTo())
	}
	return nil
}

// escalated is a copy of ap escalated by e.
func escalated(ap *stewardv1.Approval, e *stewardv1.ApprovalEscalated, ev *stewardv1.Event) *stewardv1.Approval {
	ap = proto.CloneOf(ap)
	ap.EscalatedTo, ap.EscalatedAt = e.ToRef, ev.Time
	return ap
}

// Stakeholder names the part principal plays in asking for t's work — its
// requester, its creator, a delegate in its chain or the principal its
// credential was issued to — or "" for none.
func Stakeholder(t *stewardv1.Task, principal string) string {
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

// BackupApproved reports whether the backup ap was escalated to approved it,
// as the backup (ApprovalVote.as_backup): a role's holder is known by
// the part they voted in, not by the roles they hold now. A vote recorded
// before votes said so counts as the backup's when its voter is the backup
// by name and voted after the escalation, as the rule then was.
func BackupApproved(ap *stewardv1.Approval) bool {
	to, at := ap.GetEscalatedTo(), ap.GetEscalatedAt()
	return slices.ContainsFunc(ap.GetVotes(), func(v *stewardv1.ApprovalVote) bool {
		if v.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
			return false
		}
		byName := to != "" && !strings.HasPrefix(to, "role:") && v.Principal == to && at != nil && !v.GetDecidedAt().AsTime().Before(at.AsTime())
		return v.AsBackup || byName
	})
}

// ChangedSinceApproval says why snap, the fresh snapshot of what
// approval is about (what, in words), no longer supports the approval, or
// "" if it does. revision is the one in force as governance checks: a
// snapshot recorded under another no longer says what policy says. One
// rule for governance and the offline verifier (pkg/auditbundle).
func ChangedSinceApproval(snap *stewardv1.PolicySnapshot, approval *stewardv1.Approval, revision, what string) string {
	switch {
	case snap.GetBundleRevision() != revision:
		// The snapshot was recorded before a crash and the bundle has
		// changed since: it no longer says what policy says now.
		return "the bundle was replaced after this check"
	case snap.GetDecision() == stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
		return ""
	case snap.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL:
		return "it now denies " + what
	case !SameRoles(snap.GetRequiredApproverRoles(), approval.GetRequiredRoles()):
		return fmt.Sprintf("it now asks for approval by %s, not %s", strings.Join(snap.GetRequiredApproverRoles(), ", "), strings.Join(approval.GetRequiredRoles(), ", "))
	case !EnoughApprovals(snap, approval):
		return fmt.Sprintf("it now asks for %d approvals, not %d", snap.GetRequiredApprovals(), RequiredApprovals(approval))
	}
	return ""
}

// DefaultApproverRole decides approvals for which policy named no role
// (governance opens them so).
const DefaultApproverRole = "authorizer"

// PlanChangedReason is the reason governance records first on a plan's
// evaluation after its approval when policy no longer supports the
// approval (ChangedSinceApproval says why): the version is denied.
func PlanChangedReason(why string) string {
	return "policy changed after the approval: " + why + "; submit the plan again"
}
