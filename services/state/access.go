package state

import (
	"context"
	"slices"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// The roles that may read any task's content (GetResult,
// GetArtifactContent): operators run Steward and answer for it, auditors
// review what tasks did, and only auditors record findings
// (RecordFinding). Both are granted by an --auth token file.
const (
	OperatorRole = access.Operator
	AuditorRole  = access.Auditor
)

// parties are the principals a task names: who may read its content. See
// mayRead.
type parties struct {
	taskID string
	// principals are the task's creator, its credential's principal (the
	// delegate it acts as), the contract's requester, authorizer,
	// accountable owner and acceptance owner, and every hand of its
	// delegation chain.
	principals []string
	// parent is the task it was delegated from, if any: its parties may
	// read this one's content too, as the work was theirs to hand out.
	parent string
}

// partiesOf returns the principals t names, copied: the view t belongs to
// moves on after the lock is released.
func partiesOf(t *stewardv1.Task) parties {
	k := t.GetContract()
	p := parties{taskID: k.GetTaskId(), parent: k.GetParentTaskId()}
	add := func(s string) {
		if s != "" && !slices.Contains(p.principals, s) {
			p.principals = append(p.principals, s)
		}
	}
	add(t.GetCreatedBy())
	add(t.GetCredential().GetCredential().GetPrincipal())
	add(k.GetRequesterRef())
	add(k.GetAuthorizerRef())
	add(k.GetAccountableOwnerRef())
	add(k.GetAcceptanceOwnerRef())
	for _, d := range k.GetDelegationChain() {
		add(d.GetFromRef())
		add(d.GetToRef())
	}
	return p
}

// mayRead is the one rule for who may read a task's content — its tools'
// results and its artifacts' bytes — and the only place it is written:
//
//   - without --auth (the Steward-Principal header, taken on trust, is no
//     proof of anything), everyone, as for every other call;
//   - a caller holding the operator or auditor role, any task;
//   - anyone else, a task that names them (partiesOf) or the parent task
//     it was delegated from names them.
//
// A caller without the right gets PermissionDenied rather than NotFound:
// that the task exists is not hidden from them (GetTask and ListTasks serve
// every task of a tenant to every caller of it; another tenant's task is
// NotFound at the edge before this), so a NotFound would hide nothing and
// only mislead. ancestor returns the parties of a task up the delegation.
func mayRead(who rpc.Identity, p parties, ancestor func(taskID string) (parties, bool)) error {
	if readsEveryTask(who) {
		return nil
	}
	named := p.principals
	// A delegation chain is short (each hop narrows a credential); the
	// bound only guards against a cycle no fold would let through.
	for at, hops := p.parent, 0; at != "" && hops < maxAncestors; hops++ {
		up, ok := ancestor(at)
		if !ok {
			break
		}
		named = append(slices.Clip(named), up.principals...)
		at = up.parent
	}
	if slices.Contains(named, who.Principal) {
		return nil
	}
	return errs.New(errs.PermissionDenied, "%s may not read the content of task %s: neither the task nor one it was delegated from names it (creator, requester, authorizer, owner or delegate), and it holds neither the %s nor the %s role",
		who.Principal, p.taskID, OperatorRole, AuditorRole)
}

// readsEveryTask reports whether who may read every task's content, before
// any task is looked at: without --auth, or holding the operator or auditor
// role (mayRead).
func readsEveryTask(who rpc.Identity) bool {
	return !who.Verified || who.HasRole(OperatorRole, AuditorRole)
}

// hideContent blanks the result bytes that actions of a task carry inline
// (Outcome.result: a result of at most 1 KiB; a settled one never is)
// unless who may read the task's content (mayRead): the same bytes
// GetResult would refuse them must not reach them through GetTask,
// GetAction or ListTasks. What stays — result_hash, result_ref, status —
// says that there is a result, not what it is. Requests stay too: they are
// shown to approvers and policy by design. actions must be the caller's
// copies out of the projection (Get, Action and List clone), never a view,
// which every reader shares. self is asked for only when who does not read
// every task: without --auth, or for an operator, a read costs nothing more.
func (p *Plane) hideContent(who rpc.Identity, self func() parties, actions ...*stewardv1.Action) {
	if readsEveryTask(who) || mayRead(who, self(), p.views.parties) == nil {
		return
	}
	for _, a := range actions {
		if a.Outcome != nil {
			a.Outcome.Result = nil
		}
	}
}

// mayStream returns an error unless who may receive the task's raw events
// (WatchTask, ReplayTask): they carry its small results inline under their
// hash, so they cannot be blanked as a view is, and are served only to who
// may read the task's content (mayRead). An operator or auditor is let
// through without looking at the view, which a broken history lacks: an
// auditor must be able to export one.
func (p *Plane) mayStream(ctx context.Context, who rpc.Identity, taskID string) error {
	if readsEveryTask(who) {
		return nil
	}
	return p.readable(ctx, who, taskID)
}

// maxAncestors bounds how far up a delegation mayRead looks.
const maxAncestors = 32
