package task

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

const (
	revisionOpen     = stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_OPEN
	revisionApproved = stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_APPROVED
	revisionRejected = stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_REJECTED

	asOwner    = stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_OWNER
	asApprover = stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_POLICY_APPROVER
	asProposer = stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_PROPOSER
)

// revisionStep folds the revision of a task's contract: its proposal,
// governance's evaluation of it and people's decisions. Who may decide in
// what capacity is checked here, so an auditor's replay checks it too —
// all but holding a role, which only the caller's identity shows (the
// control plane checks it). A revision takes effect at the event that
// completes its approvals: the owner's (their proposal counts), and a
// role holder's when policy asks for one, after policy has judged it.
func revisionStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ContractRevisionProposed:
		commit, err = revisionProposal(t, ev, p.ContractRevisionProposed)
	case *stewardv1.Event_ContractRevisionEvaluated:
		commit, err = revisionEvaluation(t, ev, p.ContractRevisionEvaluated)
	case *stewardv1.Event_ContractRevisionDecided:
		commit, err = revisionDecision(t, ev, p.ContractRevisionDecided)
	default:
		return nil, false, nil
	}
	return commit, true, err
}

// revisionProposal checks a proposed revision: the task not ended, none
// open, the next version, the hash of the contract it carries, and no
// change but to the revisable fields.
func revisionProposal(t *stewardv1.Task, ev *stewardv1.Event, p *stewardv1.ContractRevisionProposed) (func(), error) {
	id, who := t.Contract.GetTaskId(), ev.Actor.GetPrincipal()
	hash, err := ContractHash(p.Contract)
	if err != nil {
		return nil, err
	}
	switch open := OpenRevision(t); {
	case Terminal(t.Status):
		return nil, illegal(t, "revise the contract of")
	case open != nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s already has an open contract revision %s (version %d): decide it first", id, open.RevisionId, open.Version)
	case len(t.ContractRevisions) >= MaxContractRevisions:
		return nil, RevisionsExhausted(t)
	case p.RevisionId == "" || FindRevision(t, p.RevisionId) != nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s: contract revision %s has no id or was proposed already", id, errs.Quote(p.RevisionId))
	case p.Version != ContractVersion(t)+1:
		return nil, errs.New(errs.FailedPrecondition, "task %s: contract revision is version %d; the version in force is %d", id, p.Version, ContractVersion(t))
	case p.ContractHash != hash:
		return nil, errs.New(errs.FailedPrecondition, "task %s: contract revision %s carries a contract that hashes to %s, not %s", id, p.RevisionId, hash, p.ContractHash)
	case p.ProposedBy != who:
		return nil, errs.New(errs.FailedPrecondition, "task %s: contract revision %s names %s as proposer, but %s proposed it", id, p.RevisionId, p.ProposedBy, who)
	case strings.TrimSpace(p.Reason) == "":
		return nil, errs.Field("reason", "is required: say why the contract changes")
	case !sameTerms(Revised(t.Contract, p.Contract), p.Contract):
		return nil, errs.New(errs.FailedPrecondition, "task %s: contract revision %s changes more than intent, desired_outcome, acceptance_criteria, milestones and budget.milestones", id, p.RevisionId)
	}
	changed := Changed(t.Contract, p.Contract)
	if len(changed) == 0 {
		return nil, errs.Field("contract", "changes nothing: it is the version in force")
	}
	return func() {
		r := &stewardv1.ContractRevision{
			RevisionId: p.RevisionId, Version: p.Version, ContractHash: p.ContractHash, Contract: proto.CloneOf(p.Contract),
			Reason: p.Reason, ProposedBy: who, ProposedAt: ev.Time, Changed: changed, State: revisionOpen,
		}
		if who == t.Contract.GetAccountableOwnerRef() {
			r.OwnerApprovedBy = who // the owner's proposal is their approval
		}
		t.ContractRevisions = append(slices.Clip(t.ContractRevisions), r)
	}, nil
}

// sameTerms reports whether a and b are one contract but for
// credential_ref, which the fold moves.
func sameTerms(a, b *stewardv1.TaskContract) bool {
	a, b = proto.CloneOf(a), proto.CloneOf(b)
	a.CredentialRef, b.CredentialRef = "", ""
	return proto.Equal(a, b)
}

// revisionEvaluation records governance's judgement of the open revision:
// a deny rejects it, and an allow may complete it.
func revisionEvaluation(t *stewardv1.Task, ev *stewardv1.Event, e *stewardv1.ContractRevisionEvaluated) (func(), error) {
	r, err := openRevision(t, e.RevisionId, e.ContractHash)
	switch {
	case err != nil:
		return nil, err
	case r.Snapshot != nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s: contract revision %s was evaluated already", t.Contract.GetTaskId(), r.RevisionId)
	case e.Snapshot == nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s: the evaluation of contract revision %s has no snapshot", t.Contract.GetTaskId(), r.RevisionId)
	}
	return func() {
		r := openCopy(t)
		r.Snapshot = proto.CloneOf(e.Snapshot)
		if e.Snapshot.Decision == stewardv1.PolicyDecision_POLICY_DECISION_DENY {
			closeRevision(r, ev, revisionRejected, "denied by policy: "+strings.Join(e.Snapshot.Reasons, "; "))
			return
		}
		takeEffect(t, r, ev)
	}, nil
}

// revisionDecision checks one person's decision on the open revision, in
// the capacity it names (mayDecideRevision).
func revisionDecision(t *stewardv1.Task, ev *stewardv1.Event, e *stewardv1.ContractRevisionDecided) (func(), error) {
	r, err := openRevision(t, e.RevisionId, e.ContractHash)
	if err != nil {
		return nil, err
	}
	d := e.Decision
	if d.GetDecidedBy() != ev.Actor.GetPrincipal() {
		return nil, errs.New(errs.FailedPrecondition, "task %s: a decision on contract revision %s names %s, but %s made it", t.Contract.GetTaskId(), r.RevisionId, d.GetDecidedBy(), ev.Actor.GetPrincipal())
	}
	if err := MayDecideRevision(t, r, d.GetDecidedBy(), d.GetCapacity(), d.GetRole(), d.GetApprove()); err != nil {
		return nil, err
	}
	return func() {
		r := openCopy(t)
		d := proto.CloneOf(d)
		d.DecidedAt = ev.Time
		r.Decisions = append(r.Decisions, d)
		switch {
		case !d.Approve:
			closeRevision(r, ev, revisionRejected, "rejected by "+d.DecidedBy+": "+d.Comment)
			return
		case d.Capacity == asOwner:
			r.OwnerApprovedBy = d.DecidedBy
		default:
			r.PolicyApprovedBy = d.DecidedBy
		}
		takeEffect(t, r, ev)
	}, nil
}

// MayDecideRevision says why who may not decide r, t's open revision, in
// capacity (holding role, for a policy approver), or nil when they may.
// The accountable owner approves once, unless their proposal was their
// approval. Where policy asks for a role's approval, it comes once policy
// has judged, and from someone other than the proposer and the owner who
// approved it: four eyes. A rejection only stops a change: the owner may
// reject while it is open, a role's holder whoever proposed it, and the
// proposer may withdraw their own.
func MayDecideRevision(t *stewardv1.Task, r *stewardv1.ContractRevision, who string, capacity stewardv1.ContractRevisionCapacity, role string, approve bool) error {
	id := t.Contract.GetTaskId()
	deny := func(format string, args ...any) error {
		return errs.New(errs.PermissionDenied, "%s may not decide contract revision %s of task %s: "+format, append([]any{who, r.RevisionId, id}, args...)...)
	}
	switch capacity {
	case asOwner:
		switch {
		case who != t.Contract.GetAccountableOwnerRef():
			return deny("only its accountable owner %s decides as owner", t.Contract.GetAccountableOwnerRef())
		case approve && r.OwnerApprovedBy != "":
			return deny("its accountable owner approved it already")
		}
	case asApprover:
		switch {
		case !RevisionNeedsRole(r):
			return deny("its policy snapshot asks for no role's approval")
		case role == "":
			return deny("they hold none of the roles its policy snapshot asks for (%s)", strings.Join(r.Snapshot.GetRequiredApproverRoles(), ", "))
		case !slices.Contains(r.Snapshot.GetRequiredApproverRoles(), role):
			return deny("role %s is not one its policy snapshot asks for (%s)", errs.Quote(role), strings.Join(r.Snapshot.GetRequiredApproverRoles(), ", "))
		case !approve:
			// A rejection only stops a change: the role is enough.
		case who == r.ProposedBy:
			return deny("they proposed it")
		case who == r.OwnerApprovedBy:
			return deny("they approved it as its accountable owner")
		case r.PolicyApprovedBy != "":
			return deny("a holder of its role approved it already")
		}
	case asProposer:
		if approve || who != r.ProposedBy {
			return deny("its proposer may only withdraw it (reject)")
		}
	default:
		return deny("they decide in no capacity")
	}
	return nil
}

// openRevision is t's open revision if it is id with hash, or why not.
func openRevision(t *stewardv1.Task, id, hash string) (*stewardv1.ContractRevision, error) {
	r := OpenRevision(t)
	switch {
	case Terminal(t.Status):
		return nil, illegal(t, "decide a contract revision of")
	case r == nil || r.RevisionId != id:
		return nil, errs.New(errs.FailedPrecondition, "task %s has no open contract revision %s", t.Contract.GetTaskId(), errs.Quote(id))
	case r.ContractHash != hash:
		return nil, errs.New(errs.FailedPrecondition, "task %s: contract revision %s is bound to %s, not %s", t.Contract.GetTaskId(), id, r.ContractHash, hash)
	}
	return r, nil
}

// openCopy replaces t's open revision with a copy, and returns it to
// change: a task the fold returned may be shared with readers.
func openCopy(t *stewardv1.Task) *stewardv1.ContractRevision {
	n := len(t.ContractRevisions) - 1
	t.ContractRevisions = slices.Clone(t.ContractRevisions)
	r := proto.CloneOf(t.ContractRevisions[n])
	t.ContractRevisions[n] = r
	return r
}

func closeRevision(r *stewardv1.ContractRevision, ev *stewardv1.Event, state stewardv1.ContractRevisionState, reason string) {
	r.State, r.ClosedAt, r.ClosedReason = state, ev.Time, reason
}

// takeEffect makes r the contract in force when it has every approval it
// needs: the owner's, and policy's judgement — with a role holder's when
// it asks for one.
func takeEffect(t *stewardv1.Task, r *stewardv1.ContractRevision, ev *stewardv1.Event) {
	if r.OwnerApprovedBy == "" || r.Snapshot == nil || (RevisionNeedsRole(r) && r.PolicyApprovedBy == "") {
		return
	}
	closeRevision(r, ev, revisionApproved, "approved")
	approvedBy := []string{r.OwnerApprovedBy}
	if r.PolicyApprovedBy != "" {
		approvedBy = append(approvedBy, r.PolicyApprovedBy)
	}
	versions := slices.Clip(t.ContractVersions)
	if len(versions) == 0 {
		versions = append(versions, firstContractVersion(t))
	}
	t.Contract = Revised(t.Contract, r.Contract)
	t.ContractVersion, t.ContractHash = r.Version, r.ContractHash
	t.ContractVersions = append(versions, &stewardv1.ContractVersion{
		Version: r.Version, ContractHash: r.ContractHash, RevisionId: r.RevisionId, Reason: r.Reason,
		ProposedBy: r.ProposedBy, ApprovedBy: approvedBy, ProposedAt: r.ProposedAt, EffectiveAt: ev.Time,
		Changed: slices.Clone(r.Changed),
	})
}

// RevisionsExhausted is the refusal of a proposal past
// MaxContractRevisions.
func RevisionsExhausted(t *stewardv1.Task) error {
	return &errs.Error{Code: errs.TooLarge, Field: "task_id",
		Message: fmt.Sprintf("task %s has had %d contract revisions proposed, the most one task may", t.Contract.GetTaskId(), MaxContractRevisions)}
}
