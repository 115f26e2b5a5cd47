package e2e_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
)

// credentialSetup writes tools (wire needs the payments:write scope) and
// tokens for an agent, an approver and an operator, and returns the flags.
func credentialSetup(t *testing.T, tool *stewardtest.Tool, dir string) []string {
	t.Helper()
	tools := fmt.Sprintf(`{"tools": [
	  {"name": "search", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}},
	  {"name": "wire", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "requiredScopes": ["payments:write"], "http": {"url": %q}}
	]}`, tool.URL+"/search", tool.URL+"/wire")
	tokens := fmt.Sprintf(`{"tokens": [
	  {"token": %q, "principal": "agent:lead", "roles": []},
	  {"token": %q, "principal": "user:bo", "roles": ["authorizer"]},
	  {"token": %q, "principal": "user:ops", "roles": ["operator"]}
	]}`, agentToken, approverToken, operatorToken)
	return []string{"--tools", writeFile(t, dir, "tools.json", tools), "--auth", writeFile(t, dir, "tokens.json", tokens)}
}

// TestCredentialsEndToEnd runs the real binary: every task is issued a
// signed credential; a delegated sub-task acts under a narrower one and is
// refused a tool that needs a scope it was not given; a widening
// delegation is refused naming the field; the sub-task's chain verifies
// offline against the governance key, and not against another; revoking
// the parent's credential closes its open approval and stops permits to it
// and to its sub-task; an expired credential stops permits.
func TestCredentialsEndToEnd(t *testing.T) {
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	p := startBinary(t, data, credentialSetup(t, tool, dir)...)
	agent, approver, operator := withToken(p.url, agentToken), withToken(p.url, approverToken), withToken(p.url, operatorToken)
	ctx := context.Background()

	k := contract()
	k.AllowedTools = []string{"search", "wire"}
	k.Scopes = []string{"payments:write"}
	k.AuthorizerRef = "user:bo"
	resp, err := agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "lead", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	parentID := resp.Msg.Task.Contract.TaskId
	waitStatus(t, agent.clients, parentID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	parentCred := waitCredential(t, agent.clients, parentID).Credential
	if parentCred.Principal != "agent:lead" || len(parentCred.Scopes) != 1 {
		t.Fatalf("the parent's credential %v", parentCred)
	}

	// With --auth, only the agent a task belongs to does its work.
	if _, err := approver.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: parentID, ProposalId: "not-mine", Tool: "search", Target: "acct:42",
	})); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "agent:lead") {
		t.Fatalf("a proposal by someone else: %v, want permission_denied naming the owner", err)
	}
	if _, err := approver.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: parentID})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("marking someone else's task produced: %v", err)
	}

	// A sub-task with the same tools but not the scope.
	sub := contract()
	sub.AllowedTools = []string{"search", "wire"}
	sub.AuthorizerRef = "user:bo"
	sub.Budget = &stewardv1.Budget{MaxTokens: 10_000} // reserved from the parent's 50,000
	delegated, err := agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: parentID, Contract: sub, DelegateRef: "agent:researcher", RequestId: "researcher-1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	childID := delegated.Msg.Task.Contract.TaskId
	if got, err := agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: parentID})); err != nil || got.Msg.Task.BudgetUsed.GetTokens() != 10_000 {
		t.Fatalf("the parent reserved %v for its sub-task (%v), want 10,000 tokens", got.Msg.GetTask().GetBudgetUsed(), err)
	}
	if hop := delegated.Msg.Task.Contract.DelegationChain; len(hop) != 1 || hop[0].ToRef != "agent:researcher" || hop[0].CredentialRef != parentCred.CredentialId {
		t.Fatalf("delegation chain %v", hop)
	}
	waitStatus(t, agent.clients, childID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	childCred := waitCredential(t, agent.clients, childID)
	if c := childCred.Credential; c.Principal != "agent:researcher" || c.ParentCredentialId != parentCred.CredentialId || len(childCred.Chain) != 1 {
		t.Fatalf("the sub-task's credential %v", childCred)
	}
	wire := propose(t, agent, childID, "wire-1", "wire", map[string]any{"amount": 5})
	_, denied := waitAction(t, agent.clients, childID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if r := denied.Outcome.GetReason(); !strings.Contains(r, `does not hold scope "payments:write"`) || !strings.Contains(r, childCred.Credential.CredentialId) {
		t.Errorf("the sub-task's wire was denied with %q", r)
	}
	read := propose(t, agent, childID, "read-1", "search", map[string]any{"q": "x"})
	waitAction(t, agent.clients, childID, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	// Widening delegations are refused, naming the field, and create
	// nothing.
	for field, change := range map[string]func(*stewardv1.TaskContract){
		"contract.allowed_tools[1]":  func(c *stewardv1.TaskContract) { c.AllowedTools = []string{"search", "shell"} },
		"contract.scopes[0]":         func(c *stewardv1.TaskContract) { c.Scopes = []string{"payments:admin"} },
		"contract.budget.max_tokens": func(c *stewardv1.TaskContract) { c.Budget = &stewardv1.Budget{MaxTokens: 60_000} },
		"contract.deadline":          func(c *stewardv1.TaskContract) { c.Deadline = timestamppb.New(time.Now().Add(365 * 24 * time.Hour)) },
	} {
		wide := contract()
		change(wide)
		_, err := agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
			ParentTaskId: parentID, Contract: wide, DelegateRef: "agent:x", RequestId: "wide-" + field,
		}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), field) {
			t.Errorf("widening %s: %v", field, err)
		}
		_, err = agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: control.TaskIDFor("agent:lead", "wide-"+field)}))
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("widening %s created a task: %v", field, err)
		}
	}

	// The sub-task's chain verifies offline, against the governance key.
	exported := filepath.Join(dir, "child.events")
	run(t, 0, "audit", "export", "--task", childID, "--out", exported, "--addr", p.url, "--token", agentToken)
	keyFile := filepath.Join(dir, "governance.pem")
	run(t, 0, "audit", "key", "--addr", p.url, "--token", agentToken, "--out", keyFile)
	stored, err := credential.LoadKey(filepath.Join(data, "credential.key"))
	if err != nil {
		t.Fatalf("the dev server keeps its key in its data directory: %v", err)
	}
	if served, err := credential.LoadPublicKey(keyFile); err != nil || !served.Equal(stored.Public()) {
		t.Fatalf("audit key printed another key than the one in the data directory: %v", err)
	}
	out := run(t, 0, "audit", "verify", "--file", exported, "--trust-key", keyFile)
	if !strings.Contains(out, "credential "+childCred.Credential.CredentialId) || !strings.Contains(out, "chain of 2 verified") || !strings.Contains(out, "(trusted)") {
		t.Errorf("verify with the governance key:\n%s", out)
	}
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	otherKey := writeFile(t, dir, "other.hex", hex.EncodeToString(pub))
	out = run(t, 3, "audit", "verify", "--file", exported, "--trust-key", otherKey)
	if !strings.Contains(out, "credential of task "+childID) || !strings.Contains(out, "link 0") || !strings.Contains(out, "not trusted") {
		t.Errorf("verify with another key:\n%s", out)
	}
	if out := run(t, 0, "audit", "verify", "--file", exported); !strings.Contains(out, "not pinned") {
		t.Errorf("verify without a key:\n%s", out)
	}
	// A history with no credential in it shows nothing a key could check.
	bare := filepath.Join(dir, "bare.events")
	firstEventOnly(t, exported, bare)
	if out := run(t, 3, "audit", "verify", "--file", bare, "--trust-key", keyFile); !strings.Contains(out, "no credential to check") {
		t.Errorf("verify a history without a credential against a key:\n%s", out)
	}

	// Revocation: only an operator may; it closes the parent's open
	// approval and stops permits to the parent and to its sub-task.
	// A proposal id is a request id: the sub-task's "wire-1" is taken.
	parentWire := propose(t, agent, parentID, "parent-wire-1", "wire", map[string]any{"amount": 7})
	_, waiting := waitAction(t, agent.clients, parentID, parentWire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	revoke := &stewardv1.RevokeCredentialRequest{TaskId: parentID, Reason: "agent key leaked"}
	if _, err := agent.governance.RevokeCredential(ctx, connect.NewRequest(revoke)); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("revoke by the agent: %v, want permission_denied", err)
	}
	rv, err := operator.governance.RevokeCredential(ctx, connect.NewRequest(revoke))
	if err != nil {
		t.Fatal(err)
	}
	if cs := rv.Msg.Credential; !cs.Revoked || cs.RevokedBy != "user:ops" {
		t.Fatalf("revoked credential %v", cs)
	}
	_, closed := waitAction(t, agent.clients, parentID, parentWire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if !strings.HasPrefix(closed.Outcome.GetReason(), "credential revoked: agent key leaked") {
		t.Errorf("closed approval reason %q", closed.Outcome.GetReason())
	}
	_, err = approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: waiting.Approval.ApprovalId, ActionHash: parentWire.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("approving after the revocation: %v, want failed_precondition", err)
	}
	for _, id := range []string{parentID, childID} {
		a := propose(t, agent, id, "after-revoke-"+id, "search", map[string]any{"q": "y"})
		_, d := waitAction(t, agent.clients, id, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
		if !strings.Contains(d.Outcome.GetReason(), "credential revoked: agent key leaked") {
			t.Errorf("task %s after the revocation: %q", id, d.Outcome.GetReason())
		}
	}
	if _, err := agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: parentID, Contract: contract(), DelegateRef: "agent:x", RequestId: "delegate-after-revoke",
	})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("delegating from a revoked parent: %v, want failed_precondition", err)
	}
	if n := tool.CallsFor(parentWire.OpKey) + tool.CallsFor(wire.OpKey); n != 0 {
		t.Errorf("the wire tool was called %d times", n)
	}

	// Expiry: a credential ends at the task's deadline, and a sub-task's
	// with its parent's. Past it the parent is suspended (docs/deadline.md);
	// the sub-task, with no deadline of its own, runs on, and its actions
	// are denied for the expired credential.
	short := contract()
	short.Deadline = timestamppb.New(time.Now().Add(3 * time.Second))
	resp, err = agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "short", Contract: short}))
	if err != nil {
		t.Fatal(err)
	}
	shortID := resp.Msg.Task.Contract.TaskId
	waitStatus(t, agent.clients, shortID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	cs := waitCredential(t, agent.clients, shortID)
	if !cs.Credential.ExpiresAt.AsTime().Equal(short.Deadline.AsTime()) {
		t.Errorf("expires %v, want the deadline %v", cs.Credential.ExpiresAt.AsTime(), short.Deadline.AsTime())
	}
	shortSub := contract()
	shortSub.Budget = &stewardv1.Budget{MaxTokens: 10_000}
	dresp, err := agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: shortID, Contract: shortSub, DelegateRef: "agent:helper", RequestId: "short-sub"}))
	if err != nil {
		t.Fatal(err)
	}
	subID := dresp.Msg.Task.Contract.TaskId
	subCred := waitCredential(t, agent.clients, subID).Credential
	if !subCred.ExpiresAt.AsTime().Equal(short.Deadline.AsTime()) {
		t.Errorf("the sub-task's credential expires %v, want the parent's deadline %v", subCred.ExpiresAt.AsTime(), short.Deadline.AsTime())
	}
	waitPast(t, short.Deadline.AsTime())
	late := propose(t, agent, subID, "late", "search", map[string]any{"q": "z"})
	_, d := waitAction(t, agent.clients, subID, late.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if !strings.Contains(d.Outcome.GetReason(), "credential "+subCred.CredentialId+" expired") || d.Permit != nil {
		t.Errorf("after the deadline: %q", d.Outcome.GetReason())
	}
	waitServed(t, agent.clients, shortID, 15*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.SuspendedFor == stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE, fmt.Sprintf("%v (%s), want suspended at its deadline", tk.Status, tk.StatusReason)
	})

	// The key survives a restart: the data directory keeps it.
	p.stop(t)
	p = startBinary(t, data, credentialSetup(t, tool, dir)...)
	run(t, 0, "audit", "key", "--addr", p.url, "--token", agentToken, "--out", filepath.Join(dir, "again.pem"))
	again, err := os.ReadFile(filepath.Join(dir, "again.pem"))
	if before, _ := os.ReadFile(keyFile); err != nil || string(again) != string(before) {
		t.Errorf("the credential key changed across a restart: %v", err)
	}
}

// firstEventOnly writes the first event of the export at from to to.
func firstEventOnly(t *testing.T, from, to string) {
	t.Helper()
	f, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := audit.ReadEvents(f)
	if err != nil || len(events) == 0 {
		t.Fatalf("read %s: %d events, %v", from, len(events), err)
	}
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := audit.WriteEvent(out, events[0]); err != nil {
		t.Fatal(err)
	}
}
