// Package content says who may read a task's content and takes it out of
// what is shown to anyone else. A task's content is what its tools
// answered and everything derived from it — results, the requests an
// action carries (a compensation quotes the result it undoes; a plan step
// computes its parameters from earlier results), plan step results
// (checkpoint answers, sub-task results), people's answers — and the
// artifacts it holds. The rule for who may read it is written once, here
// (Named), and applied by the state plane (GetTask, GetAction, ListTasks,
// GetTimeline, GetReceipt) and by governance (ListApprovals, GetApproval).
// See docs/results.md.
//
// The functions are pure, and safe for concurrent use on distinct values.
package content

import (
	"slices"

	"github.com/steward-run/steward/pkg/access"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// Parties are the principals a task names: who may read its content.
type Parties struct {
	TaskID string
	// Principals are the task's creator, its credential's principal (the
	// delegate it acts as), the contract's requester, authorizer,
	// accountable owner and acceptance owner, and every hand of its
	// delegation chain.
	Principals []string
	// Parent is the task it was delegated from, if any: its parties may
	// read this one's content too, as the work was theirs to hand out.
	Parent string
}

// PartiesOf returns the principals t names, copied: the view t belongs to
// may move on once its lock is released.
func PartiesOf(t *stewardv1.Task) Parties {
	k := t.GetContract()
	p := Parties{TaskID: k.GetTaskId(), Parent: k.GetParentTaskId()}
	add := func(s string) {
		if s != "" && !slices.Contains(p.Principals, s) {
			p.Principals = append(p.Principals, s)
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

// MaxAncestors bounds how far up a delegation Named looks. A delegation
// chain is short (each hop narrows a credential); the bound only guards
// against a cycle no fold would let through.
const MaxAncestors = 32

// Named reports whether principal is named by the task p describes or by
// one it was delegated from (ancestor returns the parties of a task up the
// delegation, false when it does not know it): a sub-task's work was its
// parent's people's to hand out; not the other way, a sub-agent does not
// read its parent's content. Roles (operator, auditor) are the caller's
// to check first.
func Named(principal string, p Parties, ancestor func(taskID string) (Parties, bool)) bool {
	named := p.Principals
	for at, hops := p.Parent, 0; at != "" && hops < MaxAncestors; hops++ {
		up, ok := ancestor(at)
		if !ok {
			break
		}
		named = append(slices.Clip(named), up.Principals...)
		at = up.Parent
	}
	return slices.Contains(named, principal)
}

// Reads reports whether who may read the content of the task self
// describes: everyone without --auth (the Steward-Principal header, taken
// on trust, proves nothing; as for every other call), a holder of the
// operator or auditor role any task, anyone else a task that names them
// (Named).
func Reads(who rpc.Identity, self Parties, ancestor func(taskID string) (Parties, bool)) bool {
	return !who.Verified || who.HasRole(access.Operator, access.Auditor) || Named(who.Principal, self, ancestor)
}
