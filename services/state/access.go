package state

import (
	"context"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/content"
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

// parties are the principals a task names: who may read its content
// (content.Parties, content.PartiesOf).
type parties = content.Parties

func partiesOf(t *stewardv1.Task) parties { return content.PartiesOf(t) }

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
	if content.Reads(who, p, ancestor) {
		return nil
	}
	return errs.New(errs.PermissionDenied, "%s may not read the content of task %s: neither the task nor one it was delegated from names it (creator, requester, authorizer, owner or delegate), and it holds neither the %s nor the %s role",
		who.Principal, p.TaskID, OperatorRole, AuditorRole)
}

// readsEveryTask reports whether who may read every task's content, before
// any task is looked at: without --auth, or holding the operator or auditor
// role (mayRead).
func readsEveryTask(who rpc.Identity) bool {
	return !who.Verified || who.HasRole(OperatorRole, AuditorRole)
}

// blind returns what takes a task's content out of who's copy of it
// (content.Blind: results, requests unless who approves them, plan step
// results, keyed digests), or nil when who may read the content
// (mayRead): the bytes GetResult would refuse them must not reach them
// through GetTask, GetAction, ListTasks, GetReceipt or GetTimeline. The
// Blind must be applied to the caller's copies out of the projection
// (Get, Action and List clone), never to a view, which every reader
// shares. self is asked for only when who does not read every task:
// without --auth, or for an operator, a read costs nothing more.
func (p *Plane) blind(who rpc.Identity, self func() parties) *content.Blind {
	if readsEveryTask(who) || mayRead(who, self(), p.views.parties) == nil {
		return nil
	}
	return &content.Blind{Digest: p.cfg.Digest, Roles: who.Roles}
}

// blindLog is blind for a read of taskID's log (GetTimeline, GetReceipt),
// which does not wait for the views: a task the views do not hold yet, or
// hold broken, names nobody, and its content is hidden from all but who
// reads every task.
func (p *Plane) blindLog(who rpc.Identity, taskID string) *content.Blind {
	return p.blind(who, func() parties { self, _ := p.views.parties(taskID); return self })
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
