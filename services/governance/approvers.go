package governance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// mayVote says why who may not cast decision on a's open approval in t,
// or nil when they may (docs/approvals.md). Everyone must hold one of the
// approval's roles, by name (an admin too: the record shows the vote as a
// holder's), and vote once. An approval must also come from someone
// with no stake in the action: none of those it was proposed on behalf of
// (proposers) and, under the contract's separation_of_duties, not the
// requester, the task's creator or a delegate; and when the contract names
// an authorizer, they must be among the approvers — a vote that would
// complete the approval without them is refused. A rejection needs only
// the role: it can only stop the action, never let it run; so does an
// amendment, whose action is judged afresh and approved by another.
func mayVote(t *stewardv1.Task, a *stewardv1.Action, who rpc.Identity, decision stewardv1.ApprovalDecision, now time.Time) (asBackup bool, err error) {
	return mayVoteOn(t, a.Approval, voteSubject{what: "action " + a.ActionId, by: proposers(t, a)}, who, decision, now)
}

// voteSubject is what an approval is about, for mayVoteOn: what it is, in
// words, and who put it forward (any of by).
type voteSubject struct {
	what string
	by   []stake
}

// stake is one who put an approval's subject forward, and how, in words.
type stake struct{ principal, proposed string }

// maxStakes bounds the walk down an action's chain of retries and
// compensations: each link is an action of the task, so the chain is
// short, and the bound keeps a malformed one from looping.
const maxStakes = 64

// proposers are those a was proposed on behalf of: its proposer and, down
// the actions it stands in for, theirs — the original of a retry Steward
// proposes (RECOVERY_MODE_RETRY), the action a compensation undoes, the
// action an edit replaced, and the action an approver amended (whose
// amendment is proposed in the approver's name: they never approve what
// they amended, nor the agent's edit of it).
// Steward proposes those in its own name, which is nobody's judgement:
// the person whose write a compensation undoes must not approve the
// irreversible call that undoes it.
func proposers(t *stewardv1.Task, a *stewardv1.Action) []stake {
	by := []stake{{a.ProposedBy, "proposed action " + a.ActionId}}
	for cur := a; len(by) < maxStakes; {
		var next *stewardv1.Action
		how := ""
		switch {
		case cur.AmendmentOf != "":
			next, how = task.FindAction(t, cur.AmendmentOf), "the amendment"
		case cur.RetryOf != "":
			next, how = task.FindAction(t, cur.RetryOf), "a retry"
		case cur.EditOf != "":
			// The agent's edit of an amendment is still the amender's
			// parameters put forward.
			next, how = task.FindAction(t, cur.EditOf), "an edit"
		default:
			next, how = task.FindAction(t, cur.Compensates), "the compensation"
		}
		if next == nil {
			break
		}
		by = append(by, stake{next.ProposedBy, fmt.Sprintf("proposed action %s, of which action %s is %s,", next.ActionId, cur.ActionId, how)})
		cur = next
	}
	return by
}

// mayVoteOn is mayVote for approval ap of subject: an action's, or a
// plan version's, whose submitter is its proposer. A vote who may cast is
// the backup's (asBackup) when ap stands escalated to them at now, by this
// plane's clock.
func mayVoteOn(t *stewardv1.Task, ap *stewardv1.Approval, subject voteSubject, who rpc.Identity, decision stewardv1.ApprovalDecision, now time.Time) (asBackup bool, err error) {
	backup := isBackup(t.Contract, ap, who, now)
	return backup, mayVoteAs(t, ap, subject, who, decision, backup)
}

// mayVoteAs is mayVoteOn's rule for who, the backup or not.
func mayVoteAs(t *stewardv1.Task, ap *stewardv1.Approval, subject voteSubject, who rpc.Identity, decision stewardv1.ApprovalDecision, backup bool) error {
	if !who.Holds(ap.RequiredRoles...) && !backup {
		return errs.New(errs.PermissionDenied, "%s may not decide approval %s: it needs one of the roles %s%s", who.Principal, ap.ApprovalId, strings.Join(ap.RequiredRoles, ", "), escalatedTo(t.Contract, ap))
	}
	if v := task.VoteOf(ap, who.Principal); v != nil {
		return errs.New(errs.AlreadyExists, "%s has already %s approval %s (%s); each approver decides once, and another must add theirs",
			who.Principal, decisionWord(v.Decision), ap.ApprovalId, tally(ap))
	}
	if !task.Approves(decision) {
		return nil // a rejection, or an amendment: it can only stop the action
	}
	c := t.Contract
	for _, s := range subject.by {
		if s.principal == who.Principal {
			return errs.New(errs.PermissionDenied, "%s %s and may not approve %s: an approval is someone else's judgement", who.Principal, s.proposed, subject.what)
		}
	}
	switch {
	case c.GetSeparationOfDuties() && task.Stakeholder(t, who.Principal) != "":
		return errs.New(errs.PermissionDenied, "%s may not approve %s: they are %s of task %s, and its contract separates duties",
			who.Principal, subject.what, task.Stakeholder(t, who.Principal), c.GetTaskId())
	}
	// Escalated, the backup stands in for the authorizer (who did not come).
	if authorizer := c.GetAuthorizerRef(); authorizer != "" && !backup && who.Principal != authorizer && !slices.Contains(task.Approvers(ap), authorizer) &&
		!task.BackupApproved(ap) && len(task.Approvers(ap))+1 >= task.RequiredApprovals(ap) {
		if task.RequiredApprovals(ap) == 1 {
			return errs.New(errs.PermissionDenied, "%s may not approve %s: task %s names %s as its authorizer, who alone may approve it",
				who.Principal, subject.what, c.GetTaskId(), authorizer)
		}
		return errs.New(errs.PermissionDenied, "%s may not give the last of %d approvals of %s: task %s names %s as its authorizer, who must be among the approvers",
			who.Principal, task.RequiredApprovals(ap), subject.what, c.GetTaskId(), authorizer)
	}
	return nil
}

// tally says how far ap's approvals are, e.g. "1 of 2 approvals".
func tally(ap *stewardv1.Approval) string {
	return fmt.Sprintf("%d of %d approvals", len(task.Approvers(ap)), task.RequiredApprovals(ap))
}

// escalatedTo says, for a refusal, who else may decide ap, an approval of
// a task under c, since it was escalated — and from when.
func escalatedTo(c *stewardv1.TaskContract, ap *stewardv1.Approval) string {
	if ap.GetEscalatedTo() == "" {
		return ""
	}
	from := ""
	if requested := ap.GetRequestedAt(); requested != nil {
		from = " from " + requested.AsTime().Add(task.ApprovalWaitsOf(c).Escalate).UTC().Format(time.RFC3339)
	}
	return ", or to be " + ap.GetEscalatedTo() + ", to whom it was escalated" + from
}
