package governance_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
)

// TestCredentialIssuedOnCreation: a task gets a signed root credential
// from its contract, for its creator; a delegated task gets a narrower one
// for the delegate, with the chain, that verifies offline; redelivery
// issues nothing twice.
func TestCredentialIssuedOnCreation(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "parent", "user:ana", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	cs := e.credentialed("parent")
	c, err := credential.Verify(cs.Signed, e.signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if c.Principal != "user:ana" || c.TaskId != "parent" || len(c.AllowedTools) != 2 || c.MaxTokens != 1000 || len(cs.Chain) != 0 || c.KeyId != e.signer.KeyID() {
		t.Errorf("root credential %v", c)
	}

	e.delegate(t, "parent", "child", "agent:sub", credContract([]string{"search"}, nil))
	child := e.credentialed("child")
	leaf, err := credential.VerifyChain(child.Signed, child.Chain, e.signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Principal != "agent:sub" || leaf.ParentCredentialId != c.CredentialId || len(child.Chain) != 1 {
		t.Errorf("delegated credential %v, chain of %d", leaf, len(child.Chain))
	}

	// A second plane (a redelivery of every creation) issues nothing more.
	e.plane.Stop()
	if err := e.JS.DeleteConsumer(context.Background(), e.Log.Config().Stream, governance.PlaneName); err != nil {
		t.Fatal(err)
	}
	e.start(t)
	a := e.propose(t, "child", "p1", "search")
	e.waitStatus("child", a, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	// Tasks run in lanes of their own: the child's permit says nothing of
	// the parent's creation, redelivered. Once the plane is past every
	// event, a second issue would be on the log.
	e.Settle(governance.PlaneName)
	for _, id := range []string{"parent", "child"} {
		recs, err := e.Log.Read(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Event.Type == event.TypeCredentialIssued {
				n++
			}
		}
		if n != 1 {
			t.Errorf("task %s: %d credentials issued, want 1", id, n)
		}
	}
	tk, _, _ := e.Tasks.Load(context.Background(), "child")
	if p := task.FindAction(tk, a).Permit; p.GetCredentialRef() != leaf.CredentialId {
		t.Errorf("permit names credential %q, want %s", p.GetCredentialRef(), leaf.CredentialId)
	}
}

// TestCredentialRefusals: an action the credential does not cover is
// denied before policy, naming the credential and what failed.
func TestCredentialRefusals(t *testing.T) {
	e := newHarness(t)
	e.start(t, credentialTTL(time.Hour))
	// Policy would ask for approval of the wire; the missing scope denies
	// it first.
	e.create(t, "noscope", "user:ana", credContract([]string{"search", "wire"}, nil))
	e.credentialed("noscope")
	a := e.waitStatus("noscope", e.propose(t, "noscope", "w1", "wire"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, `does not hold scope "payments:write"`) || !strings.Contains(r, "cred-") || a.Snapshot != nil {
		t.Errorf("denial %q, snapshot %v: want the missing scope, before policy", r, a.Snapshot)
	}

	// A delegated task may not use the parent's tools it was not given.
	e.create(t, "wide", "user:ana", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	e.delegate(t, "wide", "narrow", "agent:sub", credContract([]string{"search"}, nil))
	e.credentialed("narrow")
	a = e.waitStatus("narrow", e.propose(t, "narrow", "w1", "wire"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "does not cover tool wire") {
		t.Errorf("denial %q", r)
	}
	e.waitStatus("narrow", e.propose(t, "narrow", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)

	// Expiry: the credential lasts the ttl.
	e.create(t, "brief", "user:ana", credContract([]string{"search"}, nil))
	c := e.credentialed("brief").Credential
	e.waitStatus("brief", e.propose(t, "brief", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.clock.Pass(c.ExpiresAt.AsTime())
	a = e.waitStatus("brief", e.propose(t, "brief", "s2", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "credential "+c.CredentialId+" expired") {
		t.Errorf("denial %q", r)
	}
}

// TestDeadlineEndsTheCredential: a deadline sooner than the ttl is when
// the credential expires. The plane runs without timers: with them, the
// deadline's own timer suspends the task as the clock passes it, and the
// proposal would race the suspension (CI lost that race once); the
// suspension has tests of its own (deadline_test.go).
func TestDeadlineEndsTheCredential(t *testing.T) {
	e := newHarness(t)
	e.start(t, func(c *governance.Config) { c.Timers = nil })
	k := credContract([]string{"search"}, nil)
	k.Deadline = timestamppb.New(e.clock.Now().Add(time.Hour))
	e.create(t, "dl", "user:ana", k)
	c := e.credentialed("dl").Credential
	if !c.ExpiresAt.AsTime().Equal(k.Deadline.AsTime()) {
		t.Fatalf("expires %v, want the deadline %v", c.ExpiresAt.AsTime(), k.Deadline.AsTime())
	}
	e.clock.Pass(k.Deadline.AsTime())
	a := e.waitStatus("dl", e.propose(t, "dl", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if !strings.Contains(denialOf(a), "expired") {
		t.Errorf("denial %q", denialOf(a))
	}
}

// TestRevocation: RevokeCredential checks its input and the caller's role;
// afterwards nothing is permitted to the task or to a task delegated from
// it, its open approval is closed, and revoking again changes nothing.
func TestRevocation(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	ctx := context.Background()
	e.create(t, "root", "user:ana", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	e.delegate(t, "root", "sub", "agent:sub", credContract([]string{"search"}, nil))
	e.credentialed("sub")
	wire := e.propose(t, "root", "w1", "wire")
	e.waitStatus("root", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)

	operator := rpc.Identity{Principal: "user:op", Roles: []string{access.Operator}, Verified: true}
	for _, tc := range []struct {
		who  rpc.Identity
		req  *stewardv1.RevokeCredentialRequest
		code errs.Code
		want string
	}{
		{operator, &stewardv1.RevokeCredentialRequest{Reason: "x"}, errs.Invalid, "task_id"},
		{operator, &stewardv1.RevokeCredentialRequest{TaskId: "no such/id", Reason: "x"}, errs.Invalid, "task_id"},
		{operator, &stewardv1.RevokeCredentialRequest{TaskId: "root"}, errs.Invalid, "reason"},
		{operator, &stewardv1.RevokeCredentialRequest{TaskId: "missing", Reason: "x"}, errs.NotFound, "missing"},
		// Who may (the operator role) is the role table's, enforced at the
		// RPC edge: e2e TestRoleTableEnforced.
	} {
		if _, err := e.plane.RevokeCredential(ctx, tc.who, tc.req); !errs.Is(err, tc.code) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v by %s: %v, want %v about %s", tc.req, tc.who.Principal, err, tc.code, tc.want)
		}
	}
	if n := e.Count("root", event.TypeCredentialRevoked); n != 0 {
		t.Fatalf("%d revocations after refused requests", n)
	}

	cs, err := e.plane.RevokeCredential(ctx, operator, &stewardv1.RevokeCredentialRequest{TaskId: "root", Reason: "leaked token"})
	if err != nil {
		t.Fatal(err)
	}
	if !cs.Revoked || cs.RevokedBy != "user:op" || cs.RevokedReason != "leaked token" {
		t.Fatalf("after revoking: %v", cs)
	}
	again, err := e.plane.RevokeCredential(ctx, operator, &stewardv1.RevokeCredentialRequest{TaskId: "root", Reason: "again"})
	if err != nil || again.RevokedReason != "leaked token" {
		t.Fatalf("revoking again: %v, %v", again, err)
	}
	if n := e.Count("root", event.TypeCredentialRevoked); n != 1 {
		t.Fatalf("%d revocations, want 1", n)
	}

	// The open approval is closed.
	a := e.waitStatus("root", wire, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.HasPrefix(r, "credential revoked: leaked token") || !a.Approval.GetWithdrawn() {
		t.Errorf("closed approval: %q, %v", r, a.Approval)
	}
	tk, _, _ := e.Tasks.Load(ctx, "root")
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Errorf("task is %v with its approval closed", tk.Status)
	}
	if ap, err := e.plane.Approvals().Fresh(ctx, e.Log, a.Approval.ApprovalId); err != nil || !ap.Withdrawn {
		t.Errorf("the approvals index still shows the closed approval open: %v, %v", ap, err)
	}
	for _, ap := range e.plane.Approvals().List("root", true) {
		t.Errorf("approval %s is listed as pending after the revocation", ap.ApprovalId)
	}
	if _, err := e.plane.Decide(ctx, rpc.Identity{Principal: "user:bo", Roles: []string{"authorizer"}}, &stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	}); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("deciding a closed approval: %v", err)
	}
	// Nothing new for the task ...
	a = e.waitStatus("root", e.propose(t, "root", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if !strings.Contains(denialOf(a), "credential revoked: leaked token") {
		t.Errorf("denial %q", denialOf(a))
	}
	// ... nor for its sub-task, whose own credential was not revoked.
	a = e.waitStatus("sub", e.propose(t, "sub", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "ancestor task root") {
		t.Errorf("sub-task denial %q", r)
	}
}

// TestApprovalAfterRevocationGetsNoPermit: an approval decided after the
// revocation (before the approval was closed) meets the check made before
// every permit.
func TestApprovalAfterRevocationGetsNoPermit(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	cs := e.credentialed("t")
	wire := e.propose(t, "t", "w1", "wire")
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	// Stop the plane so that the decision lands before it sees the
	// revocation, as with a person clicking at that moment.
	e.plane.Stop()
	e.Append("t", &stewardv1.CredentialRevoked{CredentialId: cs.Credential.CredentialId, Reason: "compromised"})
	d := &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: wire, ActionHash: a.ActionHash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo"}
	signed, err := e.signer.SignDecision(d) // as Decide signs it
	if err != nil {
		t.Fatal(err)
	}
	d.Signed = signed
	e.Append("t", d)
	e.start(t)
	a = e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if a.Permit != nil || !strings.Contains(denialOf(a), "credential revoked: compromised") {
		t.Errorf("after the approval: permit %v, reason %q", a.Permit, denialOf(a))
	}
}

// TestDelegationFromARevokedOrForeignParent: a sub-task of a revoked
// parent is refused; a sub-task whose parent's credential was signed by
// another key gets no credential, and its actions are denied saying why.
func TestDelegationFromARevokedOrForeignParent(t *testing.T) {
	e := newHarness(t)
	ctx := context.Background()
	// The parent's credential was issued by a plane with another key.
	e.create(t, "foreign", "user:ana", credContract([]string{"search"}, nil))
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	signed, err := credential.NewSigner(otherKey).Sign(credential.Root(&stewardv1.TaskContract{TaskId: "foreign", AllowedTools: []string{"search"}}, "user:ana", time.Now(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	e.Append("foreign", &stewardv1.CredentialIssued{Credential: signed})
	e.start(t)
	e.delegate(t, "foreign", "orphan", "agent:sub", credContract([]string{"search"}, nil))
	a := e.waitStatus("orphan", e.propose(t, "orphan", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "no credential") || !strings.Contains(r, "not trusted") {
		t.Errorf("denial %q", r)
	}

	e.create(t, "p", "user:ana", credContract([]string{"search"}, nil))
	e.credentialed("p")
	if _, err := e.plane.RevokeCredential(ctx, rpc.Identity{Principal: "user:op"}, &stewardv1.RevokeCredentialRequest{TaskId: "p", Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	e.delegate(t, "p", "late", "agent:sub", credContract([]string{"search"}, nil))
	a = e.waitStatus("late", e.propose(t, "late", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "credential revoked: stop") || !strings.Contains(r, "ancestor task p") {
		t.Errorf("denial %q", r)
	}
}

// TestLazyIssueAndCompensations: a task created while the plane ran
// without a signer gets its credential when it next proposes; a
// compensation is not held back by expiry, but is by revocation.
func TestLazyIssueAndCompensations(t *testing.T) {
	e := newHarness(t)
	e.create(t, "old", "user:ana", credContract([]string{"search"}, nil))
	// The creation was handled long ago, by a plane without credentials.
	e.start(t, withoutSigner)
	first := e.propose(t, "old", "s0", "search")
	e.waitStatus("old", first, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.plane.Stop()
	if tk, _, _ := e.Tasks.Load(context.Background(), "old"); tk.Credential != nil {
		t.Fatal("a plane without a signer issued a credential")
	}
	e.start(t, credentialTTL(time.Hour))
	e.waitStatus("old", e.propose(t, "old", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	cs := e.credentialed("old")

	// The first search ran and the task is being undone after the
	// credential expired.
	tk, _, err := e.Tasks.Load(context.Background(), "old")
	if err != nil {
		t.Fatal(err)
	}
	e.Append("old", &stewardv1.ActionClaimed{ActionId: first, PermitId: task.FindAction(tk, first).Permit.GetPermitId(), Worker: "w"})
	e.Append("old", &stewardv1.ActionDispatched{ActionId: first, Attempt: 1, Worker: "w"})
	e.Append("old", &stewardv1.ActionOutcomeRecorded{ActionId: first, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED}})
	e.clock.Pass(cs.Credential.ExpiresAt.AsTime())
	e.Append("old", &stewardv1.TaskCompensating{FinalStatus: stewardv1.TaskStatus_TASK_STATUS_FAILED, ActionIds: []string{first}, Reason: "undo"})
	undo := e.proposeCompensation(t, "old", first, "c1")
	a := e.waitStatus("old", undo, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	if a.Permit == nil {
		t.Fatal("no permit")
	}
	// Revocation stops even a compensation.
	if _, err := e.plane.RevokeCredential(context.Background(), rpc.Identity{Principal: "user:op"}, &stewardv1.RevokeCredentialRequest{TaskId: "old", Reason: "halt"}); err != nil {
		t.Fatal(err)
	}
	undo2 := e.proposeCompensation(t, "old", first, "c2")
	if a := e.waitStatus("old", undo2, stewardv1.ActionStatus_ACTION_STATUS_DENIED); !strings.Contains(denialOf(a), "credential revoked: halt") {
		t.Errorf("compensation after revocation: %q", denialOf(a))
	}
}

// TestCredentialKey returns the signer's public key.
func TestCredentialKey(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	k, err := e.plane.CredentialKey()
	if err != nil || !ed25519.PublicKey(k.PublicKey).Equal(e.signer.PublicKey()) || k.KeyId != e.signer.KeyID() {
		t.Errorf("key %v, %v", k, err)
	}
}

// TestOnlyTrustedSignaturesCount: a credential on the log that this
// governance did not sign — a forgery — permits nothing; one signed with
// an earlier key it was told to trust keeps working after a rotation.
func TestOnlyTrustedSignaturesCount(t *testing.T) {
	e := newHarness(t)
	sign := func(taskID string) (*stewardv1.SignedCredential, ed25519.PublicKey) {
		pub, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		c := credContract([]string{"search"}, nil)
		c.TaskId = taskID
		s, err := credential.NewSigner(key).Sign(credential.Root(c, "user:ana", time.Now(), time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return s, pub
	}
	forged, _ := sign("forged")
	rotated, oldKey := sign("rotated")
	for id, s := range map[string]*stewardv1.SignedCredential{"forged": forged, "rotated": rotated} {
		e.create(t, id, "user:ana", credContract([]string{"search"}, nil))
		e.Append(id, &stewardv1.CredentialIssued{Credential: s})
	}
	e.start(t, func(c *governance.Config) { c.TrustedKeys = []ed25519.PublicKey{oldKey} })

	a := e.waitStatus("forged", e.propose(t, "forged", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "does not verify") || !strings.Contains(r, "not trusted") {
		t.Errorf("forged credential: %q", r)
	}
	e.waitStatus("rotated", e.propose(t, "rotated", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
}
