package governance_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// credEnv is a log, a request store, a few registered tools and a
// governance plane that signs credentials, on one embedded JetStream. The
// test plays the control and execution planes by appending their events.
type credEnv struct {
	log    *eventlog.Log
	bus    *stewardtest.Bus
	store  *action.Store
	signer *credential.Signer
	plane  *governance.Plane
}

// credTools are the registered tools: wire needs a scope.
var credTools = []*stewardv1.ToolContract{
	{Name: "search", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL},
	{Name: "wire", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, RequiredScopes: []string{"payments:write"}},
}

func newCredEnv(t *testing.T) *credEnv {
	t.Helper()
	ctx := context.Background()
	log, bus := stewardtest.OpenLog(t)
	store, err := action.OpenStore(ctx, bus.JS, action.RequestBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e := &credEnv{log: log, bus: bus, store: store, signer: credential.NewSigner(key)}
	for _, c := range credTools {
		ev, err := event.New(event.Meta{ID: event.ID("tool", c.Name, c.Version)}, &stewardv1.ToolRegistered{Contract: c})
		if err == nil {
			_, err = log.Append(ctx, eventlog.Head{}, ev)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// start starts a governance plane that signs with the env's key.
func (e *credEnv) start(t *testing.T, opts ...governance.Option) {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	tools := toolreg.New(logger)
	rctx, cancel := context.WithCancel(ctx)
	go tools.Run(rctx, e.log)
	e.plane = governance.New(e.log, logger, engine, tools, e.store, append([]governance.Option{governance.WithSigner(e.signer)}, opts...)...)
	if err := e.plane.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(e.plane.Stop); cancel() })
}

func credContract(tools, scopes []string) *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		Intent: "pay", DesiredOutcome: "paid", RequesterRef: "user:a", AccountableOwnerRef: "user:a",
		RiskTier: stewardv1.RiskTier_RISK_TIER_LOW, AllowedTools: tools, Scopes: scopes,
		Budget: &stewardv1.Budget{MaxTokens: 1000},
	}
}

// create writes a task's creation, by principal, and its start.
func (e *credEnv) create(t *testing.T, taskID, principal string, c *stewardv1.TaskContract) {
	t.Helper()
	c.TaskId = taskID
	ev, err := event.New(event.Meta{ID: event.ID(taskID, event.TypeTaskCreated), TaskID: taskID, Actor: &stewardv1.Actor{Principal: principal}}, &stewardv1.TaskCreated{Contract: c})
	if err == nil {
		_, err = e.log.Append(context.Background(), eventlog.Head{}, ev)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.do(t, taskID, &stewardv1.TaskStarted{})
}

// do appends p to taskID as the test.
func (e *credEnv) do(t *testing.T, taskID string, p event.Payload) *stewardv1.Task {
	t.Helper()
	tk, err := taskstore.Update(context.Background(), e.log, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{TaskID: taskID, Actor: &stewardv1.Actor{Principal: "test"}}, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// propose stores the canonical request of a call of tool and proposes it,
// as the control plane does.
func (e *credEnv) propose(t *testing.T, taskID, proposalID, tool string) string {
	t.Helper()
	var tc *stewardv1.ToolContract
	for _, c := range credTools {
		if c.Name == tool {
			tc = c
		}
	}
	params, _ := json.Marshal(map[string]any{"n": 1})
	canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: tool, ToolVersion: "1", Target: "acct:1", Params: params})
	if err != nil {
		t.Fatal(err)
	}
	ref, hash, err := e.store.Put(context.Background(), canonical)
	if err != nil {
		t.Fatal(err)
	}
	id := action.ID(taskID, proposalID)
	e.do(t, taskID, &stewardv1.ActionProposed{Action: &stewardv1.Action{
		ActionId: id, ProposalId: proposalID, Tool: tool, ToolVersion: "1", Target: "acct:1", EffectClass: tc.EffectClass,
		RequestRef: ref, RequestHash: hash, ActionHash: action.Hash(id, hash), OpKey: action.OpKey(taskID, id), ProposedBy: "agent",
	}})
	return id
}

// waitTask polls taskID until ok.
func (e *credEnv) waitTask(t *testing.T, taskID, what string, ok func(*stewardv1.Task) bool) *stewardv1.Task {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		tk, _, err := taskstore.Load(context.Background(), e.log, taskID)
		if err == nil && ok(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: never saw %s (err %v): %v", taskID, what, err, tk)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAction waits until the action reaches status and returns it.
func (e *credEnv) waitAction(t *testing.T, taskID, actionID string, status stewardv1.ActionStatus) *stewardv1.Action {
	t.Helper()
	tk := e.waitTask(t, taskID, "action "+actionID+" "+status.String(), func(tk *stewardv1.Task) bool {
		return task.FindAction(tk, actionID).GetStatus() == status
	})
	return task.FindAction(tk, actionID)
}

// credentialed waits for taskID's credential.
func (e *credEnv) credentialed(t *testing.T, taskID string) *stewardv1.CredentialState {
	t.Helper()
	return e.waitTask(t, taskID, "a credential", func(tk *stewardv1.Task) bool { return tk.Credential != nil }).Credential
}

// delegate writes a sub-task of parent as DelegateTask would: the chain
// names the delegate.
func (e *credEnv) delegate(t *testing.T, parent, child, delegate string, c *stewardv1.TaskContract) {
	t.Helper()
	pc := e.credentialed(t, parent).Credential
	c.ParentTaskId = parent
	c.DelegationChain = []*stewardv1.Delegation{{FromRef: pc.Principal, ToRef: delegate, CredentialRef: pc.CredentialId, DelegatedAt: timestamppb.Now()}}
	e.create(t, child, "agent:parent", c)
}

func denialOf(a *stewardv1.Action) string { return a.GetOutcome().GetReason() }

// TestCredentialIssuedOnCreation: a task gets a signed root credential
// from its contract, for its creator; a delegated task gets a narrower one
// for the delegate, with the chain, that verifies offline; redelivery
// issues nothing twice.
func TestCredentialIssuedOnCreation(t *testing.T) {
	e := newCredEnv(t)
	e.start(t)
	e.create(t, "parent", "user:ana", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	cs := e.credentialed(t, "parent")
	c, err := credential.Verify(cs.Signed, e.signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if c.Principal != "user:ana" || c.TaskId != "parent" || len(c.AllowedTools) != 2 || c.MaxTokens != 1000 || len(cs.Chain) != 0 || c.KeyId != e.signer.KeyID() {
		t.Errorf("root credential %v", c)
	}

	e.delegate(t, "parent", "child", "agent:sub", credContract([]string{"search"}, nil))
	child := e.credentialed(t, "child")
	leaf, err := credential.VerifyChain(child.Signed, child.Chain, e.signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Principal != "agent:sub" || leaf.ParentCredentialId != c.CredentialId || len(child.Chain) != 1 {
		t.Errorf("delegated credential %v, chain of %d", leaf, len(child.Chain))
	}

	// A second plane (a redelivery of every creation) issues nothing more.
	e.plane.Stop()
	if err := e.bus.JS.DeleteConsumer(context.Background(), e.log.Config().Stream, governance.PlaneName); err != nil {
		t.Fatal(err)
	}
	e.start(t)
	a := e.propose(t, "child", "p1", "search")
	e.waitAction(t, "child", a, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	for _, id := range []string{"parent", "child"} {
		recs, err := e.log.Read(context.Background(), id)
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
	tk, _, _ := taskstore.Load(context.Background(), e.log, "child")
	if p := task.FindAction(tk, a).Permit; p.GetCredentialRef() != leaf.CredentialId {
		t.Errorf("permit names credential %q, want %s", p.GetCredentialRef(), leaf.CredentialId)
	}
}

// TestCredentialRefusals: an action the credential does not cover is
// denied before policy, naming the credential and what failed.
func TestCredentialRefusals(t *testing.T) {
	e := newCredEnv(t)
	e.start(t, governance.WithCredentialTTL(5*time.Second)) // room for the cases before expiry on a slow machine
	// Policy would ask for approval of the wire; the missing scope denies
	// it first.
	e.create(t, "noscope", "user:ana", credContract([]string{"search", "wire"}, nil))
	e.credentialed(t, "noscope")
	a := e.waitAction(t, "noscope", e.propose(t, "noscope", "w1", "wire"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, `does not hold scope "payments:write"`) || !strings.Contains(r, "cred-") || a.Snapshot != nil {
		t.Errorf("denial %q, snapshot %v: want the missing scope, before policy", r, a.Snapshot)
	}

	// A delegated task may not use the parent's tools it was not given.
	e.create(t, "wide", "user:ana", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	e.delegate(t, "wide", "narrow", "agent:sub", credContract([]string{"search"}, nil))
	e.credentialed(t, "narrow")
	a = e.waitAction(t, "narrow", e.propose(t, "narrow", "w1", "wire"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "does not cover tool wire") {
		t.Errorf("denial %q", r)
	}
	e.waitAction(t, "narrow", e.propose(t, "narrow", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)

	// Expiry: the credential lasts the ttl.
	e.create(t, "brief", "user:ana", credContract([]string{"search"}, nil))
	c := e.credentialed(t, "brief").Credential
	e.waitAction(t, "brief", e.propose(t, "brief", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	time.Sleep(time.Until(c.ExpiresAt.AsTime()) + 50*time.Millisecond)
	a = e.waitAction(t, "brief", e.propose(t, "brief", "s2", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "credential "+c.CredentialId+" expired") {
		t.Errorf("denial %q", r)
	}
}

// TestDeadlineEndsTheCredential: a deadline sooner than the ttl is when
// the credential expires.
func TestDeadlineEndsTheCredential(t *testing.T) {
	e := newCredEnv(t)
	e.start(t)
	k := credContract([]string{"search"}, nil)
	k.Deadline = timestamppb.New(time.Now().Add(1500 * time.Millisecond))
	e.create(t, "dl", "user:ana", k)
	c := e.credentialed(t, "dl").Credential
	if !c.ExpiresAt.AsTime().Equal(k.Deadline.AsTime()) {
		t.Fatalf("expires %v, want the deadline %v", c.ExpiresAt.AsTime(), k.Deadline.AsTime())
	}
	time.Sleep(time.Until(k.Deadline.AsTime()) + 50*time.Millisecond)
	a := e.waitAction(t, "dl", e.propose(t, "dl", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if !strings.Contains(denialOf(a), "expired") {
		t.Errorf("denial %q", denialOf(a))
	}
}

// TestRevocation: RevokeCredential checks its input and the caller's role;
// afterwards nothing is permitted to the task or to a task delegated from
// it, its open approval is closed, and revoking again changes nothing.
func TestRevocation(t *testing.T) {
	e := newCredEnv(t)
	e.start(t)
	ctx := context.Background()
	e.create(t, "root", "user:ana", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	e.delegate(t, "root", "sub", "agent:sub", credContract([]string{"search"}, nil))
	e.credentialed(t, "sub")
	wire := e.propose(t, "root", "w1", "wire")
	e.waitAction(t, "root", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)

	operator := rpc.Identity{Principal: "user:op", Roles: []string{governance.OperatorRole}, Verified: true}
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
		{rpc.Identity{Principal: "agent:x", Verified: true}, &stewardv1.RevokeCredentialRequest{TaskId: "root", Reason: "x"}, errs.PermissionDenied, "operator"},
	} {
		if _, err := e.plane.RevokeCredential(ctx, tc.who, tc.req); !errs.Is(err, tc.code) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v by %s: %v, want %v about %s", tc.req, tc.who.Principal, err, tc.code, tc.want)
		}
	}
	if n := countType(t, e.log, "root", event.TypeCredentialRevoked); n != 0 {
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
	if n := countType(t, e.log, "root", event.TypeCredentialRevoked); n != 1 {
		t.Fatalf("%d revocations, want 1", n)
	}

	// The open approval is closed.
	a := e.waitAction(t, "root", wire, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.HasPrefix(r, "credential revoked: leaked token") || !a.Approval.GetWithdrawn() {
		t.Errorf("closed approval: %q, %v", r, a.Approval)
	}
	tk, _, _ := taskstore.Load(ctx, e.log, "root")
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Errorf("task is %v with its approval closed", tk.Status)
	}
	if ap, err := e.plane.Approvals().Fresh(ctx, e.log, a.Approval.ApprovalId); err != nil || !ap.Withdrawn {
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
	a = e.waitAction(t, "root", e.propose(t, "root", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if !strings.Contains(denialOf(a), "credential revoked: leaked token") {
		t.Errorf("denial %q", denialOf(a))
	}
	// ... nor for its sub-task, whose own credential was not revoked.
	a = e.waitAction(t, "sub", e.propose(t, "sub", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "ancestor task root") {
		t.Errorf("sub-task denial %q", r)
	}
}

// TestApprovalAfterRevocationGetsNoPermit: an approval decided after the
// revocation (before the approval was closed) meets the check made before
// every permit.
func TestApprovalAfterRevocationGetsNoPermit(t *testing.T) {
	e := newCredEnv(t)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	cs := e.credentialed(t, "t")
	wire := e.propose(t, "t", "w1", "wire")
	a := e.waitAction(t, "t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	// Stop the plane so that the decision lands before it sees the
	// revocation, as with a person clicking at that moment.
	e.plane.Stop()
	e.do(t, "t", &stewardv1.CredentialRevoked{CredentialId: cs.Credential.CredentialId, Reason: "compromised"})
	e.do(t, "t", &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: wire, ActionHash: a.ActionHash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo"})
	e.start(t)
	a = e.waitAction(t, "t", wire, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if a.Permit != nil || !strings.Contains(denialOf(a), "credential revoked: compromised") {
		t.Errorf("after the approval: permit %v, reason %q", a.Permit, denialOf(a))
	}
}

// TestDelegationFromARevokedOrForeignParent: a sub-task of a revoked
// parent is refused; a sub-task whose parent's credential was signed by
// another key gets no credential, and its actions are denied saying why.
func TestDelegationFromARevokedOrForeignParent(t *testing.T) {
	e := newCredEnv(t)
	ctx := context.Background()
	// The parent's credential was issued by a plane with another key.
	e.create(t, "foreign", "user:ana", credContract([]string{"search"}, nil))
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	signed, err := credential.NewSigner(otherKey).Sign(credential.Root(&stewardv1.TaskContract{TaskId: "foreign", AllowedTools: []string{"search"}}, "user:ana", time.Now(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	e.do(t, "foreign", &stewardv1.CredentialIssued{Credential: signed})
	e.start(t)
	e.delegate(t, "foreign", "orphan", "agent:sub", credContract([]string{"search"}, nil))
	a := e.waitAction(t, "orphan", e.propose(t, "orphan", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "no credential") || !strings.Contains(r, "not trusted") {
		t.Errorf("denial %q", r)
	}

	e.create(t, "p", "user:ana", credContract([]string{"search"}, nil))
	e.credentialed(t, "p")
	if _, err := e.plane.RevokeCredential(ctx, rpc.Identity{Principal: "user:op"}, &stewardv1.RevokeCredentialRequest{TaskId: "p", Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	e.delegate(t, "p", "late", "agent:sub", credContract([]string{"search"}, nil))
	a = e.waitAction(t, "late", e.propose(t, "late", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "credential revoked: stop") || !strings.Contains(r, "ancestor task p") {
		t.Errorf("denial %q", r)
	}
}

// TestLazyIssueAndCompensations: a task created while the plane ran
// without a signer gets its credential when it next proposes; a
// compensation is not held back by expiry, but is by revocation.
func TestLazyIssueAndCompensations(t *testing.T) {
	e := newCredEnv(t)
	e.create(t, "old", "user:ana", credContract([]string{"search"}, nil))
	// The creation was handled long ago, by a plane without credentials.
	e.start(t, governance.WithSigner(nil))
	first := e.propose(t, "old", "s0", "search")
	e.waitAction(t, "old", first, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.plane.Stop()
	if tk, _, _ := taskstore.Load(context.Background(), e.log, "old"); tk.Credential != nil {
		t.Fatal("a plane without a signer issued a credential")
	}
	e.start(t, governance.WithCredentialTTL(3*time.Second)) // s1 is permitted before expiry, even on a slow machine
	e.waitAction(t, "old", e.propose(t, "old", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	cs := e.credentialed(t, "old")

	// The first search ran and the task is being undone after the
	// credential expired.
	tk, _, err := taskstore.Load(context.Background(), e.log, "old")
	if err != nil {
		t.Fatal(err)
	}
	e.do(t, "old", &stewardv1.ActionClaimed{ActionId: first, PermitId: task.FindAction(tk, first).Permit.GetPermitId(), Worker: "w"})
	e.do(t, "old", &stewardv1.ActionDispatched{ActionId: first, Attempt: 1, Worker: "w"})
	e.do(t, "old", &stewardv1.ActionOutcomeRecorded{ActionId: first, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED}})
	time.Sleep(time.Until(cs.Credential.ExpiresAt.AsTime()) + 50*time.Millisecond)
	e.do(t, "old", &stewardv1.TaskCompensating{FinalStatus: stewardv1.TaskStatus_TASK_STATUS_FAILED, ActionIds: []string{first}, Reason: "undo"})
	undo := e.proposeCompensation(t, "old", first, "c1")
	a := e.waitAction(t, "old", undo, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	if a.Permit == nil {
		t.Fatal("no permit")
	}
	// Revocation stops even a compensation.
	if _, err := e.plane.RevokeCredential(context.Background(), rpc.Identity{Principal: "user:op"}, &stewardv1.RevokeCredentialRequest{TaskId: "old", Reason: "halt"}); err != nil {
		t.Fatal(err)
	}
	undo2 := e.proposeCompensation(t, "old", first, "c2")
	if a := e.waitAction(t, "old", undo2, stewardv1.ActionStatus_ACTION_STATUS_DENIED); !strings.Contains(denialOf(a), "credential revoked: halt") {
		t.Errorf("compensation after revocation: %q", denialOf(a))
	}
}

// proposeCompensation proposes a search that undoes action of, as the
// control plane would (the test tool undoes with itself).
func (e *credEnv) proposeCompensation(t *testing.T, taskID, of, proposalID string) string {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"undo": of})
	canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: "search", ToolVersion: "1", Target: "acct:1", Params: params})
	if err != nil {
		t.Fatal(err)
	}
	ref, hash, err := e.store.Put(context.Background(), canonical)
	if err != nil {
		t.Fatal(err)
	}
	id := action.ID(taskID, proposalID)
	e.do(t, taskID, &stewardv1.ActionProposed{Action: &stewardv1.Action{
		ActionId: id, ProposalId: proposalID, Tool: "search", ToolVersion: "1", Target: "acct:1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		RequestRef: ref, RequestHash: hash, ActionHash: action.Hash(id, hash), OpKey: action.OpKey(taskID, id), ProposedBy: "steward", Compensates: of,
	}})
	return id
}

// TestCredentialKey returns the signer's public key.
func TestCredentialKey(t *testing.T) {
	e := newCredEnv(t)
	e.start(t)
	k, err := e.plane.CredentialKey()
	if err != nil || !ed25519.PublicKey(k.PublicKey).Equal(e.signer.PublicKey()) || k.KeyId != e.signer.KeyID() {
		t.Errorf("key %v, %v", k, err)
	}
}

func countType(t *testing.T, log *eventlog.Log, taskID, typ string) int {
	t.Helper()
	recs, err := log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event.Type == typ {
			n++
		}
	}
	return n
}

// TestOnlyTrustedSignaturesCount: a credential on the log that this
// governance did not sign — a forgery — permits nothing; one signed with
// an earlier key it was told to trust keeps working after a rotation.
func TestOnlyTrustedSignaturesCount(t *testing.T) {
	e := newCredEnv(t)
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
		e.do(t, id, &stewardv1.CredentialIssued{Credential: s})
	}
	e.start(t, governance.WithTrustedKeys(oldKey))

	a := e.waitAction(t, "forged", e.propose(t, "forged", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denialOf(a); !strings.Contains(r, "does not verify") || !strings.Contains(r, "not trusted") {
		t.Errorf("forged credential: %q", r)
	}
	e.waitAction(t, "rotated", e.propose(t, "rotated", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
}
