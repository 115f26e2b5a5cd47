package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// TestCLIReviseContract revises a HIGH-risk task's contract mid-way
// through the real binary's CLI: the agent proposes (`tasks revise`, the
// criteria from a file), governance's default revision rule asks for an
// authorizer as well as the owner, the owner's approval alone leaves the
// old version in force, the proposer may not give the role's approval,
// the authorizer's makes version 2. The action proposed before stays under
// version 1, the one after is under version 2; the receipt shows both
// versions; `audit verify` accepts the history.
func TestCLIReviseContract(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	agent, owner, bo := newPerson(t, h.url, agentToken), newPerson(t, h.url, ownerToken), newPerson(t, h.url, approverToken)
	k := contract()
	k.RiskTier, k.AccountableOwnerRef = stewardv1.RiskTier_RISK_TIER_HIGH, "user:owner"
	k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "one", Expression: "size(artifacts) >= 1"}}
	id := h.create(t, "cli-revise-1", k)
	before := propose(t, h.agent, id, "search-before", "search", map[string]any{"q": "incidents"})

	criteria := writeFile(t, t.TempDir(), "criteria.json", `[{"id": "one", "expression": "size(artifacts) >= 1"}, {"id": "two", "expression": "size(artifacts) >= 2"}]`)
	out, _ := agent.run(0, "tasks", "revise", id, "--intent", "Summarise last month's incidents", "--criteria", filepath.Clean(criteria), "--reason", "the review moved to monthly")
	if !strings.Contains(out, "(version 2) of task "+id+" is open") {
		t.Fatalf("tasks revise:\n%s", out)
	}
	judged := waitServed(t, h.agent.clients, id, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
		r := task.OpenRevision(tk)
		return r != nil && r.Snapshot != nil, "the revision judged by policy"
	})
	rev := task.OpenRevision(judged)
	if !task.RevisionNeedsRole(rev) || strings.Join(rev.Snapshot.RequiredApproverRoles, ",") != "authorizer" {
		t.Fatalf("a HIGH task's revision was judged %v, want an authorizer's approval required", rev.Snapshot)
	}

	out, _ = owner.run(0, "tasks", "revision", "approve", id, rev.RevisionId)
	if !strings.Contains(out, "is open: waiting for a holder of authorizer; version 1 in force") {
		t.Fatalf("the owner's approval:\n%s", out)
	}
	if _, stderr := agent.run(4, "tasks", "revision", "approve", id, rev.RevisionId); !strings.Contains(stderr, "permission_denied") {
		t.Fatalf("the proposer's approval is not refused as it should be:\n%s", stderr)
	}
	out, _ = bo.run(0, "tasks", "revision", "approve", id, rev.RevisionId, "--comment", "monthly is fine")
	if !strings.Contains(out, "is approved") || !strings.Contains(out, "version 2 in force") {
		t.Fatalf("the authorizer's approval:\n%s", out)
	}
	after := propose(t, h.agent, id, "search-after", "search", map[string]any{"q": "last month"})

	tk := getTask(t, h.agent.clients, id)
	if tk.ContractVersion != 2 || tk.Contract.Intent != "Summarise last month's incidents" || len(tk.Contract.AcceptanceCriteria) != 2 {
		t.Fatalf("task after approval: version %d, intent %q, %d criteria", tk.ContractVersion, tk.Contract.Intent, len(tk.Contract.AcceptanceCriteria))
	}
	if v1, v2 := task.VersionOf(task.FindAction(tk, before.ActionId).ContractVersion), task.VersionOf(task.FindAction(tk, after.ActionId).ContractVersion); v1 != 1 || v2 != 2 {
		t.Fatalf("actions under versions %d and %d, want 1 and 2", v1, v2)
	}
	if out, _ := owner.run(0, "tasks", "show", id); !strings.Contains(out, "version 2 ("+tk.ContractHash[:11]) {
		t.Errorf("tasks show does not show version 2:\n%s", out)
	}

	rc, err := h.agent.query.GetReceipt(context.Background(), connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: id}))
	if err != nil {
		t.Fatal(err)
	}
	if vs := rc.Msg.Receipt.ContractVersions; len(vs) != 2 || vs[1].ContractHash != tk.ContractHash || strings.Join(vs[1].ApprovedBy, ",") != "user:owner,user:bo" {
		t.Fatalf("receipt versions = %v", vs)
	}
	md, _ := owner.run(0, "receipt", "--task", id)
	for _, want := range []string{"## Contract versions", vs0(rc.Msg.Receipt), tk.ContractHash, "the review moved to monthly"} {
		if !strings.Contains(md, want) {
			t.Errorf("the receipt does not say %q:\n%s", want, md)
		}
	}
	if out, _ := owner.run(0, "audit", "verify", "--task", id); !strings.Contains(out, "ok") {
		t.Errorf("audit verify of the revised task:\n%s", out)
	}
}

// vs0 is the hash of version 1 on r.
func vs0(r *stewardv1.Receipt) string { return r.ContractVersions[0].ContractHash }

// TestAuditBundleOfARevisedTask: an audit bundle of a task whose contract
// was revised mid-way, an action done under each version, verifies
// offline: the fold, the receipt recomputed and the policy decisions of
// its actions re-derived accept the revision's events; the revision's own
// snapshot, whose input is not kept, is said not re-evaluated.
func TestAuditBundleOfARevisedTask(t *testing.T) {
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	flags, _ := bundleSetup(t, tool, dir)
	p := startBinary(t, filepath.Join(dir, "data"), flags...)
	agent, owner := withToken(p.url, agentToken), withToken(p.url, approverToken)
	k := contract()
	k.AccountableOwnerRef = "user:bo"
	resp, err := agent.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "revised-bundle", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStatus(t, agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	first := propose(t, agent, id, "read-1", "search", map[string]any{"q": "incidents"})
	waitAction(t, agent.clients, id, first.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	rv, err := agent.tasks.ReviseContract(context.Background(), connect.NewRequest(&stewardv1.ReviseContractRequest{TaskId: id, Reason: "wider",
		Contract: &stewardv1.TaskContract{DesiredOutcome: "A two-page summary"}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.tasks.DecideContractRevision(context.Background(), connect.NewRequest(&stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rv.Msg.Revision.RevisionId, Approve: true})); err != nil {
		t.Fatal(err)
	}
	waitServed(t, agent.clients, id, 20*time.Second, func(tk *stewardv1.Task) (bool, string) { return tk.ContractVersion == 2, "version 2 in force" })
	second := propose(t, agent, id, "read-2", "search", map[string]any{"q": "more"})
	waitAction(t, agent.clients, id, second.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	file, keyFile := filepath.Join(dir, "task.bundle"), filepath.Join(dir, "key.pem")
	run(t, 0, "audit", "export", "--bundle", "--task", id, "--out", file, "--addr", p.url, "--token", auditorToken)
	run(t, 0, "audit", "key", "--addr", p.url, "--token", auditorToken, "--out", keyFile)
	if out := run(t, 0, "audit", "verify", "--bundle", file, "--trust-key", keyFile); !strings.Contains(out, "ok") || !strings.Contains(out, "of contract revision "+rv.Msg.Revision.RevisionId) {
		t.Fatalf("verify --bundle of the revised task (want ok, and the revision's snapshot said not re-evaluated):\n%s", out)
	}
}
