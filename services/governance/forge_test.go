package governance_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// TestForgedCredentialWithASeenSignature: governance once remembered
// verified credentials by their signature alone, so a CredentialIssued whose
// credential bytes are forged but which carries the signature of a
// credential already verified was taken as verified and its forged bounds
// (a scope, no expiry) used to permit. It must be denied.
func TestForgedCredentialWithASeenSignature(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	ctx := context.Background()

	// A genuine task acts once: its credential's signature is now cached.
	e.create(t, "genuine", "user:ana", credContract([]string{"search"}, nil))
	genuine := e.credentialed("genuine")
	e.waitStatus("genuine", e.propose(t, "genuine", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)

	// Someone who can write to the log opens a task and gets a credential in
	// before governance: forged bytes, the genuine signature and key.
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprint("forged-", i)
		c := credContract([]string{"search", "wire"}, nil)
		c.TaskId = id
		ev, _ := event.New(event.Meta{ID: event.ID(id, event.TypeTaskCreated), TaskID: id, Actor: &stewardv1.Actor{Principal: "user:mallory", Plane: event.PlaneControl}}, &stewardv1.TaskCreated{Contract: c})
		if _, err := e.Log.Append(ctx, eventlog.Head{}, ev); err != nil {
			t.Fatal(err)
		}
		fake := proto.CloneOf(genuine.Credential)
		fake.TaskId, fake.CredentialId = id, "cred-forged"
		fake.AllowedTools, fake.Scopes, fake.ExpiresAt = []string{"search", "wire"}, []string{"payments:write"}, nil
		fake.MaxTokens = 0
		data, _ := proto.MarshalOptions{Deterministic: true}.Marshal(fake)
		_, err := e.Tasks.Update(ctx, id, func(*stewardv1.Task) (*stewardv1.Event, error) {
			// Names the plane that owns the type, as a forger would: the
			// signature is what must give it away.
			return event.New(event.Meta{TaskID: id, Actor: &stewardv1.Actor{Principal: "user:mallory", Plane: event.PlaneGovernance}}, &stewardv1.CredentialIssued{Credential: &stewardv1.SignedCredential{
				Credential: data, Signature: genuine.Signed.Signature, PublicKey: genuine.Signed.PublicKey}})
		})
		if err == nil {
			break
		}
		if !errs.Is(err, errs.FailedPrecondition) || i > 20 {
			t.Fatal(err)
		}
	}
	e.Append(id, &stewardv1.TaskStarted{})
	tk, _, _ := e.Tasks.Load(ctx, id)
	t.Logf("task %s holds credential %s, scopes %v, expires %v", id, tk.Credential.Credential.CredentialId, tk.Credential.Credential.Scopes, tk.Credential.Credential.ExpiresAt)

	a := e.propose(t, id, "w1", "wire")
	got := e.WaitTask(id, func(tk *stewardv1.Task) bool {
		s := task.FindAction(tk, a).GetStatus()
		return s != stewardv1.ActionStatus_ACTION_STATUS_PROPOSED && s != stewardv1.ActionStatus_ACTION_STATUS_EVALUATED
	})
	act := task.FindAction(got, a)
	t.Logf("wire under the forged credential: %s %q", act.Status, denialOf(act))
	if act.Status != stewardv1.ActionStatus_ACTION_STATUS_DENIED || !strings.Contains(denialOf(act), "does not verify") {
		t.Fatalf("a forged credential was trusted: the action is %s", act.Status)
	}
}

// TestDecisionsAndPermitsAreSigned: a decision made through Decide and the
// permit that follows carry the plane's signatures, which verify against
// its key and bind the action; an approval decision appended to the log
// by another hand, unsigned, is counted by the fold but gets no permit.
func TestDecisionsAndPermitsAreSigned(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	ctx := context.Background()
	e.create(t, "signed", "user:ana", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	wire := e.propose(t, "signed", "w1", "wire")
	if _, err := e.vote("signed", wire, authorizer("user:bo"), approve); err != nil {
		t.Fatal(err)
	}
	a := e.waitStatus("signed", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	if _, err := credential.VerifyPermit(a.Permit, a.SignedPermit, a.ActionId, a.ActionHash, e.signer.PublicKey()); err != nil {
		t.Errorf("the permit: %v", err)
	}
	recs, err := e.Log.Read(ctx, "signed")
	if err != nil {
		t.Fatal(err)
	}
	decisions := 0
	for _, r := range recs {
		if d := r.Event.GetApprovalDecided(); d != nil {
			decisions++
			if err := credential.VerifyDecision(d, e.signer.PublicKey()); err != nil {
				t.Errorf("the decision: %v", err)
			}
		}
	}
	if decisions != 1 {
		t.Errorf("%d decisions on the log, want 1", decisions)
	}

	// A forged approval: the fold takes the vote; governance permits nothing.
	forged := e.propose(t, "signed", "w2", "wire")
	a = e.waitStatus("signed", forged, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	e.Append("signed", &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: forged, ActionHash: a.ActionHash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:mallory"})
	e.Settle(governance.PlaneName)
	tk, _, err := e.Tasks.Load(ctx, "signed")
	if err != nil {
		t.Fatal(err)
	}
	if a := task.FindAction(tk, forged); a.Status != stewardv1.ActionStatus_ACTION_STATUS_APPROVED || a.Permit != nil {
		t.Errorf("after a forged approval the action is %v with permit %v; want approved, without one", a.Status, a.Permit)
	}
}

// TestEveryVoteThatCountsIsVerified: under a policy that asks two
// people, a forged first vote and a genuine second one complete the
// approval in the fold, but the genuine vote's reaction finds the forged
// one and permits nothing. A forged permit on that approval, sent back
// for revalidation, gets no permit either: the approval is asked for
// again.
func TestEveryVoteThatCountsIsVerified(t *testing.T) {
	e := newHarness(t)
	e.start(t, withBundle(t, twoForWires))
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	wire := e.propose(t, "t", "w1", "wire")
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	e.Append("t", &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: wire, ActionHash: a.ActionHash,
		Decision: approve, DecidedBy: "user:mallory"})
	if _, err := e.vote("t", wire, authorizer("user:di"), approve); err != nil {
		t.Fatal(err)
	}
	e.Settle(governance.PlaneName)
	a = e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_APPROVED)
	if a.Permit != nil || len(a.Approval.Votes) != 2 {
		t.Fatalf("a forged vote and a genuine one: permit %v, votes %v; want no permit", a.Permit, a.Approval.Votes)
	}

	permitID := "forged-" + wire
	e.Append("t", &stewardv1.ActionPermitted{
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "forged-snap", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW},
		Permit:   &stewardv1.ActionPermit{PermitId: permitID, ActionId: wire, ActionHash: a.ActionHash, RequestHash: a.RequestHash, SnapshotId: "forged-snap"},
	}, &stewardv1.ActionRevalidating{ActionId: wire, PermitId: permitID, Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED, Detail: "forged"})
	a = e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if a.Permit.GetPermitId() != permitID || len(a.Approval.GetVotes()) != 0 {
		t.Fatalf("revalidating a forged permit: permit %v, approval %v; want the approval asked for again", a.Permit, a.Approval)
	}
}

// TestForgedSnapshotGetsNoPermit: someone holding governance's NATS user
// (but not its key) appends a PolicyEvaluated that says ALLOW under the
// id governance derives for the proposal's round (snap- + event.ID(action,
// "proposal"), computable by anyone) before governance's own evaluation
// lands — governance lagging, restarting, or its durable consumer pulled
// by the forger. Governance must not take that snapshot for its own: the
// default bundle asks a person for a wire, and no permit may follow
// without one.
func TestForgedSnapshotGetsNoPermit(t *testing.T) {
	e := newHarness(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	wire := e.propose(t, "t", "w1", "wire")
	e.Append("t", &stewardv1.PolicyEvaluated{ActionId: wire, Snapshot: &stewardv1.PolicySnapshot{
		SnapshotId: "snap-" + event.ID(wire, "proposal")[:24], Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
	e.start(t)
	e.Settle(governance.PlaneName)
	e.WaitAction("t", wire, func(a *stewardv1.Action) bool {
		return a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_PROPOSED && a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_EVALUATED
	})
	e.Settle(governance.PlaneName)
	tk, _, err := e.Tasks.Load(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	a := task.FindAction(tk, wire)
	if a.Status == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED {
		_, verr := credential.VerifyPermit(a.Permit, a.SignedPermit, a.ActionId, a.ActionHash, e.signer.PublicKey())
		t.Fatalf("a forged ALLOW snapshot got a wire a permit without approval (signature verifies: %v)", verr == nil)
	}
	t.Logf("after a forged snapshot the wire is %s", a.Status)
}

// TestForgedSnapshotRacingGovernance: the same forgery against a running
// governance, landing while it evaluates (a forger watching the log and
// appending as soon as a proposal appears).
func TestForgedSnapshotRacingGovernance(t *testing.T) {
	e := newHarness(t)
	var once sync.Once
	var wire string
	e.onEvaluate = func() {
		once.Do(func() {
			e.Append("t", &stewardv1.PolicyEvaluated{ActionId: wire, Snapshot: &stewardv1.PolicySnapshot{
				SnapshotId: "snap-" + event.ID(wire, "proposal")[:24], Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
		})
	}
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	wire = action.ID("t", "w1")
	e.propose(t, "t", "w1", "wire")
	a := e.WaitAction("t", wire, func(a *stewardv1.Action) bool {
		return a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_PROPOSED && a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_EVALUATED
	})
	t.Logf("after a forged snapshot the wire is %s %q", a.Status, denialOf(a))
	if a.Status == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED {
		t.Fatalf("a forged ALLOW snapshot, appended while governance evaluated, got a wire a permit without approval")
	}
}

// cfoBundle is the default bundle with a wire's approver role changed
// from authorizer to cfo, and the engine that decides under it.
func cfoBundle(t *testing.T) *policy.Engine {
	t.Helper()
	rego, err := os.ReadFile("policy/default/steward.rego")
	if err != nil {
		t.Fatal(err)
	}
	const rule = `required_approver_roles contains "authorizer" if count(approval_reasons) > 0`
	if !strings.Contains(string(rego), rule) {
		t.Fatal("the default bundle's approver rule moved")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "steward.rego"), []byte(strings.Replace(string(rego), rule, strings.Replace(rule, "authorizer", "cfo", 1), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return engine
}

// TestAnOldVoteIsNotReplayedIntoANewApproval: an authorizer approved a
// wire, which was permitted. Policy then asks the CFO for wires. When the
// permit is revalidated (here: it expired, as execution records), policy
// asks for a new approval, of the CFO. Someone holding governance's NATS
// user, lagging governance behind, appends an approval under the FIRST
// approval's id, now claiming the roles policy asks for (cfo), a snapshot
// that says what policy says now, and a copy of the authorizer's old,
// genuinely signed decision. Every vote verifies (it is signed for that
// approval id, action and hash), the approval's roles are policy's: a
// permit followed, and the wire ran without the CFO.
func TestAnOldVoteIsNotReplayedIntoANewApproval(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	ctx := context.Background()
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	wire := e.propose(t, "t", "w1", "wire")
	if _, err := e.vote("t", wire, authorizer("user:bo"), approve); err != nil {
		t.Fatal(err)
	}
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	old := a.Approval
	e.Settle(governance.PlaneName)
	e.plane.Stop()
	var bo *stewardv1.Event
	recs, err := e.Log.Read(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Event.GetApprovalDecided() != nil {
			bo = r.Event
		}
	}

	// Execution finds the permit expired.
	e.Append("t", &stewardv1.ActionRevalidating{ActionId: wire, PermitId: a.Permit.PermitId, Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED, Detail: "expired"})
	// The forger, ahead of governance.
	engine := cfoBundle(t)
	e.Append("t", &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: old.ApprovalId, TaskId: "t", ActionId: wire, ActionHash: a.ActionHash,
		RequiredRoles: []string{"cfo"}, RequiredApprovals: 1, Tool: "wire", ToolVersion: "1"}})
	replay := proto.CloneOf(bo)
	replay.EventId = "replayed-" + bo.EventId
	e.AppendEvents("t", replay)
	e.Append("t", &stewardv1.PolicyEvaluated{ActionId: wire, Snapshot: &stewardv1.PolicySnapshot{
		SnapshotId: "snap-" + event.ID(wire, "approved")[:24], BundleRevision: engine.Revision(),
		Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, RequiredApproverRoles: []string{"cfo"}, RequiredApprovals: 1}})

	e.start(t, func(c *governance.Config) { c.Engine = engine })
	e.Settle(governance.PlaneName)
	tk, _, err := e.Tasks.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	a = task.FindAction(tk, wire)
	t.Logf("the wire is %s, permit %s, %q", a.Status, a.Permit.GetPermitId(), denialOf(a))
	if a.Status == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED && a.SignedPermit != nil {
		t.Fatalf("an old authorizer's vote, replayed into a forged approval, got a signed permit where policy asks the CFO")
	}

	// The forger goes on: an unsigned, expired permit on the approved
	// action, which execution sends back to governance (the one
	// exception to its signature check). Revalidation must not count the
	// forged approval again: it asks the CFO.
	forged := "forged-" + wire
	e.Append("t", &stewardv1.ActionPermitted{
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "forged-snap", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW},
		Permit:   &stewardv1.ActionPermit{PermitId: forged, ActionId: wire, ActionHash: a.ActionHash, RequestHash: a.RequestHash, SnapshotId: "forged-snap"},
	}, &stewardv1.ActionRevalidating{ActionId: wire, PermitId: forged, Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED, Detail: "unsigned and expired"})
	a = e.WaitAction("t", wire, func(a *stewardv1.Action) bool {
		return a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING && a.GetPermit().GetPermitId() != forged ||
			a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL
	})
	t.Logf("after a forged permit the wire is %s, permit %s, approval %v", a.Status, a.Permit.GetPermitId(), a.Approval.GetRequiredRoles())
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL || a.Approval.GetApprovalId() == old.ApprovalId {
		t.Fatalf("revalidating a forged permit counted the forged approval: %s", a.Status)
	}
}

// TestApproversSeeTheApprovalGovernanceOpened: the approval index serves
// GetApproval and ListApprovals, what approvers read before they decide.
// Someone holding governance's NATS user appends a second
// ApprovalRequested under an open approval's id, with the action's real
// hash but a harmless-looking tool, target and parameters. The task's
// fold refuses it (the action already awaits approval), but the index
// must not take it either: an approver would approve the real hash
// having read the forged terms.
func TestApproversSeeTheApprovalGovernanceOpened(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	ctx := context.Background()
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	wire := e.propose(t, "t", "w1", "wire")
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	genuine := a.Approval
	forged := proto.CloneOf(genuine)
	forged.Tool, forged.Target, forged.ParametersJson = "search", "acct:own", `{"q":"balance"}`
	forged.EffectClass, forged.ExpectedImpact, forged.Rollback = stewardv1.EffectClass_EFFECT_CLASS_READ, "search reads acct:own", ""
	ev, err := event.New(event.Meta{ID: "forged-approval", TaskID: "t", Actor: &stewardv1.Actor{Principal: "steward", Plane: event.PlaneGovernance}},
		&stewardv1.ApprovalRequested{Approval: forged})
	if err != nil {
		t.Fatal(err)
	}
	tk, _, err := e.Tasks.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Log.Append(ctx, eventlog.HeadOf(tk), ev); err != nil {
		t.Fatal(err)
	}
	if tk, _, err = e.Tasks.Load(ctx, "t"); err != nil {
		t.Logf("the task after the forged approval: %v", err)
	} else {
		t.Logf("the task's own approval after the forged one: %s %s", task.FindAction(tk, wire).Approval.GetTool(), task.FindAction(tk, wire).Approval.GetTarget())
	}
	seen, err := e.plane.Approvals().Fresh(ctx, e.Log, genuine.ApprovalId)
	if err != nil {
		t.Fatal(err)
	}
	if seen.Tool != genuine.Tool || seen.ParametersJson != genuine.ParametersJson || seen.Target != genuine.Target {
		t.Fatalf("approvers are shown %s %s %s for approval %s of a %s %s: the forged terms", seen.Tool, seen.Target, seen.ParametersJson, genuine.ApprovalId, genuine.Tool, genuine.Target)
	}
}

// TestAnApprovalShowingOtherTermsGetsNoPermit: someone holding
// governance's NATS user, ahead of governance, records the snapshot
// governance would (it asks an authorizer) and opens the approval under
// the id governance would use — but shows a harmless search where the
// action, by its hash, is a wire. An authorizer approves what they were
// shown; no permit may follow.
func TestAnApprovalShowingOtherTermsGetsNoPermit(t *testing.T) {
	e := newHarness(t)
	ctx := context.Background()
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	wire := e.propose(t, "t", "w1", "wire")
	tk, _, err := e.Tasks.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	a := task.FindAction(tk, wire)
	e.Append("t", &stewardv1.PolicyEvaluated{ActionId: wire, Snapshot: &stewardv1.PolicySnapshot{
		SnapshotId: "snap-" + event.ID(wire, "proposal")[:24], Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL,
		RequiredApproverRoles: []string{"authorizer"}, RequiredApprovals: 1}})
	e.Append("t", &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{
		ApprovalId: "apv-" + event.ID(wire, "approval")[:24], TaskId: "t", ActionId: wire, ActionHash: a.ActionHash,
		RequiredRoles: []string{"authorizer"}, RequiredApprovals: 1, RequestedBy: "agent",
		Tool: "search", ToolVersion: "1", Target: "acct:own", ParametersJson: `{"q":"balance"}`,
		EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, ExpectedImpact: "search reads acct:own"}})
	e.start(t)
	e.Settle(governance.PlaneName)
	if _, err := e.vote("t", wire, authorizer("user:bo"), approve); err != nil {
		t.Fatal(err)
	}
	e.Settle(governance.PlaneName)
	tk, _, err = e.Tasks.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	a = task.FindAction(tk, wire)
	t.Logf("the wire is %s, shown as %s %s", a.Status, a.Approval.GetTool(), a.Approval.GetTarget())
	if a.Status == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED {
		t.Fatalf("an approval that showed a search got a wire a permit")
	}
}
