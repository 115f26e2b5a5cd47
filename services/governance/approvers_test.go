package governance_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// twoForWires is a rule added to the default bundle: a wire needs two
// distinct approvers.
const twoForWires = "\napprovals_needed contains 2 if tool_name == \"wire\"\n"

// withBundle makes the plane decide under the default bundle plus rules.
func withBundle(t *testing.T, rules string) func(*governance.Config) {
	t.Helper()
	rego, err := os.ReadFile("policy/default/steward.rego")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "steward.rego"), append(rego, rules...), 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *governance.Config) { c.Engine = engine }
}

func authorizer(principal string) rpc.Identity {
	return rpc.Identity{Principal: principal, Roles: []string{"authorizer"}}
}

// vote decides the open approval of actionID as who.
func (e *harness) vote(taskID, actionID string, who rpc.Identity, d stewardv1.ApprovalDecision) (*stewardv1.Approval, error) {
	a := e.waitStatus(taskID, actionID, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	return e.plane.Decide(context.Background(), who, &stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: d, Comment: "by " + who.Principal,
	})
}

const (
	approve = stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE
	reject  = stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT
)

// TestTwoApprovers: under a policy that asks two people, the first
// approval is a vote and the action waits; the same person again is
// refused, naming them; the second distinct approval decides it, and the
// permit follows. The approval carries the proposer's rationale and the
// votes, in the index as in the fold.
func TestTwoApprovers(t *testing.T) {
	e := newHarness(t)
	e.start(t, withBundle(t, twoForWires))
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	wire := e.propose(t, "t", "w1", "wire")

	first, err := e.vote("t", wire, authorizer("user:bo"), approve)
	if err != nil {
		t.Fatal(err)
	}
	if first.RequiredApprovals != 2 || first.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED || len(first.Votes) != 1 || first.Votes[0].Principal != "user:bo" {
		t.Fatalf("after one approval of two: %v", first)
	}
	if r := first.GetRationale(); r.GetExpectedImpact() == "" || r.GetRollbackPlan() == "" {
		t.Fatalf("the approval does not show the proposer's rationale: %v", first.Rationale)
	}
	_, err = e.vote("t", wire, authorizer("user:bo"), approve)
	if !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), "user:bo") || !strings.Contains(err.Error(), "1 of 2 approvals") {
		t.Fatalf("a repeated approver: %v, want already exists naming them", err)
	}
	if a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL); a.Permit != nil || len(a.Approval.Votes) != 1 {
		t.Fatalf("one approval of two let the action on: %v", a)
	}

	second, err := e.vote("t", wire, authorizer("user:di"), approve)
	if err != nil {
		t.Fatal(err)
	}
	if second.Decision != approve || second.DecidedBy != "user:di" || !slices.Equal(task.Approvers(second), []string{"user:bo", "user:di"}) {
		t.Fatalf("after the second approval: %v", second)
	}
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	if a.Approval.DecidedBy != "user:di" || len(a.Approval.Votes) != 2 || a.Snapshot.GetRequiredApprovals() != 2 {
		t.Fatalf("permitted action's approval: %v, snapshot %v", a.Approval, a.Snapshot)
	}
}

// TestRejectionDecidesAtOnce: one rejection decides an approval that
// needed two approvals.
func TestRejectionDecidesAtOnce(t *testing.T) {
	e := newHarness(t)
	e.start(t, withBundle(t, twoForWires))
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	wire := e.propose(t, "t", "w1", "wire")
	if _, err := e.vote("t", wire, authorizer("user:bo"), approve); err != nil {
		t.Fatal(err)
	}
	ap, err := e.vote("t", wire, authorizer("user:di"), reject)
	if err != nil {
		t.Fatal(err)
	}
	if ap.Decision != reject || ap.DecidedBy != "user:di" || len(ap.Votes) != 2 {
		t.Fatalf("after a rejection: %v", ap)
	}
	e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_REJECTED)
}

// TestWhoMayApprove: the proposer never; under separation of duties, not
// the requester, the creator or a delegate; when the contract names an
// authorizer, not anyone else for the last approval. A rejection needs
// only the role.
func TestWhoMayApprove(t *testing.T) {
	denied := func(t *testing.T, err error, says string) {
		t.Helper()
		if !errs.Is(err, errs.PermissionDenied) || !strings.Contains(err.Error(), says) {
			t.Fatalf("got %v, want permission denied saying %q", err, says)
		}
	}
	t.Run("the proposer", func(t *testing.T) {
		e := newHarness(t)
		e.start(t)
		e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
		wire := e.proposeAction(t, "t", "w1", "wire", "", "user:bo", map[string]any{"n": 1})
		_, err := e.vote("t", wire, authorizer("user:bo"), approve)
		denied(t, err, "user:bo proposed action")
		if _, err := e.vote("t", wire, authorizer("user:di"), approve); err != nil {
			t.Fatal(err)
		}
		e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	})
	t.Run("the proposer may reject", func(t *testing.T) {
		e := newHarness(t)
		e.start(t)
		e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
		wire := e.proposeAction(t, "t", "w1", "wire", "", "user:bo", map[string]any{"n": 1})
		if _, err := e.vote("t", wire, authorizer("user:bo"), reject); err != nil {
			t.Fatal(err)
		}
		e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_REJECTED)
	})
	t.Run("separation of duties", func(t *testing.T) {
		e := newHarness(t)
		e.start(t)
		c := credContract([]string{"wire"}, []string{"payments:write"})
		c.SeparationOfDuties, c.RequesterRef = true, "user:req"
		e.create(t, "root", "user:ana", c)
		wire := e.propose(t, "root", "w1", "wire")
		_, err := e.vote("root", wire, authorizer("user:req"), approve)
		denied(t, err, "the requester")
		_, err = e.vote("root", wire, authorizer("user:ana"), approve)
		denied(t, err, "the creator")
		if _, err := e.vote("root", wire, authorizer("user:bo"), approve); err != nil {
			t.Fatal(err)
		}
		e.waitStatus("root", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	})
	t.Run("a delegate under separation of duties", func(t *testing.T) {
		e := newHarness(t)
		e.start(t)
		e.create(t, "root", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
		e.credentialed("root")
		c := credContract([]string{"wire"}, []string{"payments:write"})
		c.SeparationOfDuties = true
		e.delegate(t, "root", "t", "user:del", c)
		e.credentialed("t")
		wire := e.propose(t, "t", "w1", "wire")
		_, err := e.vote("t", wire, authorizer("user:del"), approve)
		denied(t, err, "")
		if _, err := e.vote("t", wire, authorizer("user:bo"), approve); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the authorizer alone, of one", func(t *testing.T) {
		e := newHarness(t)
		e.start(t)
		c := credContract([]string{"wire"}, []string{"payments:write"})
		c.AuthorizerRef = "user:bo"
		e.create(t, "t", "user:ana", c)
		wire := e.propose(t, "t", "w1", "wire")
		_, err := e.vote("t", wire, authorizer("user:di"), approve)
		denied(t, err, "names user:bo as its authorizer, who alone may approve")
		if _, err := e.vote("t", wire, authorizer("user:bo"), approve); err != nil {
			t.Fatal(err)
		}
		e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	})
	t.Run("the authorizer among two", func(t *testing.T) {
		e := newHarness(t)
		e.start(t, withBundle(t, twoForWires))
		c := credContract([]string{"wire"}, []string{"payments:write"})
		c.AuthorizerRef = "user:bo"
		e.create(t, "t", "user:ana", c)
		wire := e.propose(t, "t", "w1", "wire")
		if _, err := e.vote("t", wire, authorizer("user:di"), approve); err != nil {
			t.Fatalf("a first approval by another: %v", err)
		}
		_, err := e.vote("t", wire, authorizer("user:eve"), approve)
		denied(t, err, "may not give the last of 2 approvals")
		if _, err := e.vote("t", wire, authorizer("user:bo"), approve); err != nil {
			t.Fatal(err)
		}
		e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	})
	t.Run("an admin without the role", func(t *testing.T) {
		// admin passes the role table, but an approval is a judgement
		// the policy asks of a role: an admin's approval would read in
		// the record as one by a holder of it.
		e := newHarness(t)
		e.start(t)
		e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
		wire := e.propose(t, "t", "w1", "wire")
		admin := rpc.Identity{Principal: "user:root", Roles: []string{access.Admin}, Verified: true}
		_, err := e.vote("t", wire, admin, approve)
		denied(t, err, "needs one of the roles authorizer")
		both := rpc.Identity{Principal: "user:root", Roles: []string{access.Admin, "authorizer"}, Verified: true}
		if _, err := e.vote("t", wire, both, approve); err != nil {
			t.Fatalf("an admin given the role by name: %v", err)
		}
		e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	})
	t.Run("anyone with the role may reject", func(t *testing.T) {
		e := newHarness(t)
		e.start(t)
		c := credContract([]string{"wire"}, []string{"payments:write"})
		c.AuthorizerRef = "user:bo"
		e.create(t, "t", "user:ana", c)
		wire := e.propose(t, "t", "w1", "wire")
		if _, err := e.vote("t", wire, authorizer("user:di"), reject); err != nil {
			t.Fatal(err)
		}
		e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_REJECTED)
	})
}

// TestPolicyWithoutRationaleDenies: the default bundle denies a high-risk
// change whose proposer gave no expected impact and rollback plan, and
// says which.
func TestPolicyWithoutRationaleDenies(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	id := e.proposeWith(t, "t", "w1", "wire", "", "agent", map[string]any{"n": 1}, &stewardv1.ActionRationale{Alternatives: []string{"not to pay"}})
	a := e.waitStatus("t", id, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "rationale.expected_impact") || !strings.Contains(r, "rationale.rollback_plan") {
		t.Fatalf("denial: %q, want it to name the missing rationale", r)
	}
}
