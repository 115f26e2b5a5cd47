package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/cmd/steward/app"
	"github.com/steward-run/steward/pkg/auditbundle"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// acmeAuditorToken is an auditor of another tenant, acme.
const acmeAuditorToken = "e2e-acme-auditor-token-012345678"

// bundleSetup writes a policy bundle (a copy of the default), tools and
// tokens: an agent, an authorizer and an auditor. It returns the flags
// and the policy file a test edits to make a new revision.
func bundleSetup(t *testing.T, tool *stewardtest.Tool, dir string) ([]string, string) {
	t.Helper()
	policyDir := filepath.Join(dir, "policy")
	if err := os.MkdirAll(policyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"steward.rego", "plan.rego"} {
		src, err := os.ReadFile(filepath.Join("..", "services", "governance", "policy", "default", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, policyDir, name, string(src))
	}
	tools := fmt.Sprintf(`{"tools": [
	  {"name": "search", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}},
	  {"name": "wire", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}}
	]}`, tool.URL+"/search", tool.URL+"/wire")
	tokens := fmt.Sprintf(`{"tokens": [
	  {"token": %q, "principal": "agent:lead", "roles": []},
	  {"token": %q, "principal": "user:bo", "roles": ["authorizer"]},
	  {"token": %q, "principal": "user:audrey", "roles": ["auditor"]},
	  {"token": %q, "principal": "user:audrey", "roles": ["auditor"], "tenant": "acme"}
	]}`, agentToken, approverToken, auditorToken, acmeAuditorToken)
	return []string{"--policy-dir", policyDir, "--tools", writeFile(t, dir, "tools.json", tools), "--auth", writeFile(t, dir, "tokens.json", tokens)},
		filepath.Join(policyDir, "steward.rego")
}

// TestAuditBundleEndToEnd runs the real binary and a real HTTP tool: a
// task acts under one policy revision, delegates a sub-task, and after
// the bundle is edited on disk and reloaded (its reads get another
// reason) has an irreversible call approved under the next revision. Its
// bundle, exported by an auditor (not the agent, nor another tenant's
// auditor), holds both revisions, and verifies offline: chains,
// credentials, signatures under the trusted key, approvers, requests,
// results, tools, receipts recomputed, and every snapshot re-evaluated
// the same under its own revision (and not under the other). One byte
// flipped in any section is found and named by section and event or item.
func TestAuditBundleEndToEnd(t *testing.T) {
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	flags, regoFile := bundleSetup(t, tool, dir)
	p := startBinary(t, filepath.Join(dir, "data"), flags...)
	agent, approver := withToken(p.url, agentToken), withToken(p.url, approverToken)
	ctx := context.Background()

	k := contract()
	k.AllowedTools, k.AuthorizerRef = []string{"search", "wire"}, "user:bo"
	resp, err := agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "bundle", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	waitStatus(t, agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	// A request and a result past 1 KiB are stored by reference.
	big := propose(t, agent, taskID, "big", "search", map[string]any{"q": strings.Repeat("incident ", 200)})
	_, done := waitAction(t, agent.clients, taskID, big.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	first := done.Snapshot.BundleRevision
	if done.RequestRef == "" || done.Outcome.GetResultRef() == "" {
		t.Fatalf("the big call's request %q and result %q should be stored by reference", done.RequestRef, done.Outcome.GetResultRef())
	}
	sub := contract()
	sub.Budget = &stewardv1.Budget{MaxTokens: 10_000}
	delegated, err := agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: taskID, Contract: sub, DelegateRef: "agent:lead", RequestId: "bundle-sub",
	}))
	if err != nil {
		t.Fatal(err)
	}
	childID := delegated.Msg.Task.Contract.TaskId
	waitStatus(t, agent.clients, childID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	read := propose(t, agent, childID, "child-read", "search", map[string]any{"q": "x"})
	waitAction(t, agent.clients, childID, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	// A new revision: governance reloads it within a second; probes show
	// when it decides.
	src, err := os.ReadFile(regoFile)
	if err != nil {
		t.Fatal(err)
	}
	// Revision two gives reads another reason: a snapshot re-evaluated
	// under the wrong revision would not match.
	two := strings.Replace(string(src), `"reads change nothing"`, `"reads change nothing (revision two)"`, 1)
	writeFile(t, filepath.Dir(regoFile), filepath.Base(regoFile), two)
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		probe := propose(t, agent, taskID, fmt.Sprintf("probe-%d", i), "search", map[string]any{"q": "probe"})
		_, a := waitAction(t, agent.clients, taskID, probe.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if a.Snapshot.BundleRevision != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("governance still decides under %s", first)
		}
	}
	wire := propose(t, agent, taskID, "wire", "wire", map[string]any{"amount": 5})
	_, waiting := waitAction(t, agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: waiting.Approval.ApprovalId, ActionHash: wire.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		t.Fatal(err)
	}
	waitAction(t, agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	// Only the auditor role exports a bundle.
	file := filepath.Join(dir, "task.bundle")
	if out := run(t, 1, "audit", "export", "--bundle", "--task", taskID, "--out", file, "--addr", p.url, "--token", agentToken); !strings.Contains(out, "permission_denied") {
		t.Errorf("the agent exported a bundle: %s", out)
	}
	if out := run(t, 1, "audit", "export", "--bundle", "--task", taskID, "--out", file, "--addr", p.url, "--token", acmeAuditorToken); !strings.Contains(out, "not_found") {
		t.Errorf("another tenant's auditor exported a bundle: %s", out)
	}
	auditor := stewardv1connect.NewAuditServiceClient(http.DefaultClient, p.url, connect.WithInterceptors(stewardtest.Bearer(auditorToken)))
	stream, err := auditor.ExportBundle(ctx, connect.NewRequest(&stewardv1.ExportBundleRequest{}))
	if err == nil {
		for stream.Receive() {
		}
		err = stream.Err()
	}
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "task_id") {
		t.Errorf("ExportBundle without a task: %v, want invalid_argument naming task_id", err)
	}
	run(t, 0, "audit", "export", "--bundle", "--task", taskID, "--out", file, "--addr", p.url, "--token", auditorToken)
	keyFile := filepath.Join(dir, "key.pem")
	run(t, 0, "audit", "key", "--addr", p.url, "--token", auditorToken, "--out", keyFile)
	began := time.Now()
	out := run(t, 0, "audit", "verify", "--bundle", file, "--trust-key", keyFile)
	took := time.Since(began)
	if !strings.Contains(out, "ok: 2 tasks") || !strings.Contains(out, "trusted keys") || !strings.Contains(out, "1 approvals allowed") || !strings.Contains(out, "2 receipts recomputed") {
		t.Errorf("verify --bundle:\n%s", out)
	}
	b := readBundle(t, file)
	if info, err := os.Stat(file); err == nil {
		inputs := 0
		for _, in := range b.Inputs {
			inputs += len(in.Data)
		}
		t.Logf("bundle: %d bytes, %d tasks, %d inputs (%d bytes), %d revisions; verify --bundle took %s (the binary's start included)",
			info.Size(), len(b.Tasks), len(b.Inputs), inputs, len(b.Policies), took)
	}
	if len(b.Policies) != 2 || len(b.Requests) == 0 || len(b.Results) == 0 || len(b.Tools) < 2 {
		t.Fatalf("the bundle holds %d revisions, %d requests, %d results, %d tools", len(b.Policies), len(b.Requests), len(b.Results), len(b.Tools))
	}
	// The snapshots were decided under both revisions, each of which the
	// bundle holds: verify re-evaluated each under its own.
	revisions := map[string]int{}
	for _, bt := range b.Tasks {
		for _, e := range bt.Events {
			ev, _ := event.Open(e.Data)
			if s := ev.GetPolicyEvaluated().GetSnapshot(); s != nil {
				revisions[s.BundleRevision]++
			} else if s := ev.GetActionPermitted().GetSnapshot(); s != nil {
				revisions[s.BundleRevision]++
			}
		}
	}
	if len(revisions) != 2 || revisions[b.Policies[0].Revision] == 0 || revisions[b.Policies[1].Revision] == 0 {
		t.Errorf("snapshots by revision %v; the bundle holds %s and %s", revisions, b.Policies[0].Revision, b.Policies[1].Revision)
	}
	// Under one revision for all, the other's snapshots do not re-evaluate
	// the same: verify does evaluate each under its own.
	wrong := app.BundleChecks(nil)
	restore := wrong.Restore
	wrong.Restore = func(ctx context.Context, _ *stewardv1.PolicySources) (auditbundle.Evaluator, error) {
		return restore(ctx, b.Policies[0])
	}
	if rep := auditbundle.Verify(ctx, b, wrong); rep.OK() || !strings.Contains(rep.Failures[0].Reason, "re-evaluates differently") {
		t.Errorf("every snapshot re-evaluated under one revision: %v", rep.Failures)
	}
	rep := auditbundle.Verify(ctx, b, auditbundle.Checks{})
	if rep.Snapshots < 4 {
		t.Errorf("%d snapshots in the bundle", rep.Snapshots)
	}
	if want := fmt.Sprintf("%d of %d policy snapshots re-evaluated the same", rep.Snapshots, rep.Snapshots); !strings.Contains(out, want) {
		t.Errorf("verify --bundle does not say %q:\n%s", want, out)
	}
	heads, err := auditor.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("task %s: %d events, last sequence ", taskID, heads.Msg.EventCount); !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("head %x", heads.Msg.HeadHash)) {
		t.Errorf("verify --bundle does not print the head VerifyTask gives (%q, head %x):\n%s", want, heads.Msg.HeadHash, out)
	}
	flipEverySection(t, file, taskID, childID, dir, keyFile)
}

// readBundle reads a bundle file.
func readBundle(t *testing.T, file string) *stewardv1.AuditBundle {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := auditbundle.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func taskOf(b *stewardv1.AuditBundle, taskID string) *stewardv1.BundleTask {
	for _, bt := range b.Tasks {
		if bt.TaskId == taskID {
			return bt
		}
	}
	return nil
}
