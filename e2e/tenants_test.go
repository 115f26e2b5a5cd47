package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
)

// taskCall is one RPC that names a task, called with taskID.
type taskCall struct {
	name string
	call func(ctx context.Context, c authed, ops stewardv1connect.ActionServiceClient, taskID string) error
}

// taskCalls are every RPC whose request names a task (the role table's
// task field), but CreateTask, which names none, and GetApproval and
// DecideApproval, which name an approval.
var taskCalls = []taskCall{
	{"GetTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
		return err
	}},
	{"GetAction", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.query.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: id, ActionId: "a"}))
		return err
	}},
	{"GetTimeline", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: id}))
		return err
	}},
	{"GetReceipt", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: id}))
		return err
	}},
	{"GetResult", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.query.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: id, ActionId: "a"}))
		return err
	}},
	{"GetArtifactContent", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		return drain(c.query.GetArtifactContent(ctx, connect.NewRequest(&stewardv1.GetArtifactContentRequest{TaskId: id, Name: "report.md"})))
	}},
	{"WatchTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		return watchFirst(ctx, c.query, id)
	}},
	{"ReplayTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		return drain(c.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: id})))
	}},
	{"VerifyTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.audit.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: id}))
		return err
	}},
	{"RecordFinding", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.audit.RecordFinding(ctx, connect.NewRequest(&stewardv1.RecordFindingRequest{TaskId: id, Kind: stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION, Description: "x"}))
		return err
	}},
	{"ListApprovals", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: id}))
		return err
	}},
	{"RevokeCredential", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.governance.RevokeCredential(ctx, connect.NewRequest(&stewardv1.RevokeCredentialRequest{TaskId: id, Reason: "x"}))
		return err
	}},
	{"RenewCredential", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.governance.RenewCredential(ctx, connect.NewRequest(&stewardv1.RenewCredentialRequest{TaskId: id, Reason: "x"}))
		return err
	}},
	{"SettleAction", func(ctx context.Context, _ authed, ops stewardv1connect.ActionServiceClient, id string) error {
		_, err := ops.SettleAction(ctx, connect.NewRequest(&stewardv1.SettleActionRequest{TaskId: id, ActionId: "a", Reason: "x"}))
		return err
	}},
	{"PauseTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: id}))
		return err
	}},
	{"ResumeTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: id}))
		return err
	}},
	{"CancelTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: id, Reason: "x"}))
		return err
	}},
	{"FailTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.FailTask(ctx, connect.NewRequest(&stewardv1.FailTaskRequest{TaskId: id, Reason: "x"}))
		return err
	}},
	{"ReportUsage", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.ReportUsage(ctx, connect.NewRequest(&stewardv1.ReportUsageRequest{TaskId: id, Tokens: 1}))
		return err
	}},
	{"RaiseBudget", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.RaiseBudget(ctx, connect.NewRequest(&stewardv1.RaiseBudgetRequest{TaskId: id}))
		return err
	}},
	{"ProposeAction", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p", Tool: "search"}))
		return err
	}},
	{"DelegateTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{ParentTaskId: id, Contract: contract(), DelegateRef: "agent:sub"}))
		return err
	}},
	{"SubmitArtifact", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{TaskId: id}))
		return err
	}},
	{"MarkProduced", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: id}))
		return err
	}},
	{"AcceptTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.AcceptTask(ctx, connect.NewRequest(&stewardv1.AcceptTaskRequest{TaskId: id}))
		return err
	}},
	{"ReturnTask", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.ReturnTask(ctx, connect.NewRequest(&stewardv1.ReturnTaskRequest{TaskId: id}))
		return err
	}},
	{"ExtendDeadline", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.ExtendDeadline(ctx, connect.NewRequest(&stewardv1.ExtendDeadlineRequest{TaskId: id}))
		return err
	}},
	{"RequestInput", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: id}))
		return err
	}},
	{"ProvideInput", func(ctx context.Context, c authed, _ stewardv1connect.ActionServiceClient, id string) error {
		_, err := c.tasks.ProvideInput(ctx, connect.NewRequest(&stewardv1.ProvideInputRequest{TaskId: id, Answer: "x"}))
		return err
	}},
}

// TestTenantsDoNotSeeEachOther runs two tenants, acme and globex, and the
// default tenant against the real binary (docs/tenants.md): the same
// request id in each makes its own task; a task of acme is not_found for
// every caller of another tenant — its agent's namesake, an admin, an
// approver — on every RPC that names it, in the very words of a task that
// does not exist; lists leave it out; its approval is not found either;
// and nothing they tried changed it.
func TestTenantsDoNotSeeEachOther(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	ctx := context.Background()
	acme, acmeApprover := withToken(h.url, acmeAgentToken), withToken(h.url, acmeApproverToken)
	globexAgent, globexAdmin, globexApprover := withToken(h.url, globexAgentToken), withToken(h.url, globexAdminToken), withToken(h.url, globexApproverToken)
	outsiders := []struct {
		name string
		c    authed
		ops  stewardv1connect.ActionServiceClient
	}{
		{"globex's agent:summariser", globexAgent, actionClient(h.url, globexAgentToken)},
		{"globex's admin", globexAdmin, actionClient(h.url, globexAdminToken)},
		{"globex's approver", globexApprover, actionClient(h.url, globexApproverToken)},
		{"the default tenant's operator", h.operator, h.ops},
		{"the default tenant's admin", withToken(h.url, adminToken), actionClient(h.url, adminToken)},
	}

	// The same request id, by the same principal name, in three tenants.
	taskID := governedTask(t, acme, "tenants-1")
	globexTask := governedTask(t, globexAgent, "tenants-1")
	defaultTask := governedTask(t, h.agent, "tenants-1")
	if taskID == globexTask || taskID == defaultTask || globexTask == defaultTask {
		t.Fatalf("one request id in three tenants made tasks %s, %s, %s; want three", taskID, globexTask, defaultTask)
	}
	if want := control.TaskIDIn(requestid.For("acme", "agent:summariser"), "tenants-1"); taskID != want {
		t.Fatalf("acme's task is %s, want %s", taskID, want)
	}
	got, err := acme.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil || got.Msg.Task.Tenant != "acme" {
		t.Fatalf("acme's own task: %v, %v; want it, of tenant acme", got, err)
	}
	wire := propose(t, acme, taskID, "wire-1", "wire", map[string]any{"amount": 120})
	waitAction(t, acme.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	list, err := acmeApprover.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{PendingOnly: true}))
	if err != nil || len(list.Msg.Approvals) != 1 || list.Msg.Approvals[0].TaskId != taskID {
		t.Fatalf("acme's approver lists %v, %v; want acme's one approval", list, err)
	}
	ap := list.Msg.Approvals[0]
	before, err := acme.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}

	// A task id no tenant has: what another tenant's task must look like.
	nowhere := control.TaskIDIn(requestid.For("acme", "agent:nobody"), "never")
	for _, o := range outsiders {
		t.Run(o.name, func(t *testing.T) {
			for _, tc := range taskCalls {
				err := tc.call(ctx, o.c, o.ops, taskID)
				if connect.CodeOf(err) != connect.CodeNotFound {
					t.Errorf("%s on acme's task: %v; want not_found", tc.name, err)
					continue
				}
				absent := tc.call(ctx, o.c, o.ops, nowhere)
				if a, b := connect.CodeOf(absent), strings.ReplaceAll(err.Error(), taskID, nowhere); a != connect.CodeNotFound || absent.Error() != b {
					t.Errorf("%s: acme's task answers %q, a task that does not exist %v: the answers differ", tc.name, b, absent)
				}
			}
			tasks, err := o.c.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: 100}))
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range tasks.Msg.Tasks {
				if tk.Contract.TaskId == taskID {
					t.Errorf("ListTasks shows acme's task")
				}
			}
			aps, err := o.c.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(aps.Msg.Approvals, func(a *stewardv1.Approval) bool { return a.TaskId == taskID }) {
				t.Errorf("ListApprovals shows acme's approval")
			}
			_, err = o.c.governance.GetApproval(ctx, connect.NewRequest(&stewardv1.GetApprovalRequest{ApprovalId: ap.ApprovalId}))
			if connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("GetApproval of acme's approval: %v; want not_found", err)
			}
			_, err = o.c.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
				ApprovalId: ap.ApprovalId, ActionHash: ap.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
			}))
			if connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("DecideApproval of acme's approval: %v; want not_found", err)
			}
		})
	}

	// Globex lists its own task, and not acme's.
	mine, err := globexAdmin.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: 100}))
	if err != nil || len(mine.Msg.Tasks) != 1 || mine.Msg.Tasks[0].Contract.TaskId != globexTask {
		t.Fatalf("globex's admin lists %v, %v; want globex's one task", mine, err)
	}
	// Nothing the outsiders tried touched acme's task, and acme goes on.
	after, err := acme.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil || after.Msg.Task.EventCount != before.Msg.Task.EventCount || after.Msg.Task.Status != before.Msg.Task.Status {
		t.Fatalf("acme's task after the outsiders: %v, %v; it was %v", after, err, before.Msg.Task)
	}
	if _, err := acmeApprover.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: ap.ApprovalId, ActionHash: ap.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		t.Fatalf("acme's approver: %v", err)
	}
	waitAction(t, acme.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
}

// TestAJWTsTenantClaim: a JWT's tenant claim is its caller's tenant as a
// token file's "tenant" is: the same principal of the same tenant is one
// caller whichever way it signs in (its request id finds its task), and a
// JWT of another tenant, or of none, finds no such task, an admin's too.
func TestAJWTsTenantClaim(t *testing.T) {
	const issuer = "https://id.example.test"
	idp := stewardtest.NewJWTIssuer(t, issuer, "steward", "e2e-key")
	h := startSteward(t, setup{inProcess: true, flags: []string{
		"--jwt-jwks", idp.WriteJWKS(t, t.TempDir()), "--jwt-issuer", issuer, "--jwt-audience", "steward",
	}})
	ctx := context.Background()
	as := func(tenant, principal string, roles ...string) authed {
		claims := idp.Claims(principal, roles...)
		if tenant != "" {
			claims["tenant"] = tenant
		}
		return withToken(h.url, idp.Sign(t, claims))
	}
	byJWT := createTask(t, as("acme", "agent:summariser").clients, "jwt-1")
	if byJWT.Tenant != "acme" {
		t.Fatalf("a task made under a JWT of acme is of tenant %q", byJWT.Tenant)
	}
	byFile := createTask(t, withToken(h.url, acmeAgentToken).clients, "jwt-1")
	if byFile.Contract.TaskId != byJWT.Contract.TaskId {
		t.Fatalf("acme's agent:summariser made %s by JWT and %s by token file under one request id; want one task", byJWT.Contract.TaskId, byFile.Contract.TaskId)
	}
	for name, c := range map[string]authed{"globex's admin": as("globex", "user:root", "admin"), "an admin of no tenant": as("", "user:root", "admin")} {
		_, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: byJWT.Contract.TaskId}))
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("%s reads acme's task: %v; want not_found", name, err)
		}
	}
	if _, err := as("acme", "user:cy").query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: byJWT.Contract.TaskId})); err != nil {
		t.Errorf("another caller of acme reads acme's task: %v", err)
	}
}
