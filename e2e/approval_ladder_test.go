package e2e_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// TestAnApprovalClimbsItsLadder: an approval asked for two seconds ago,
// on a ladder of one, two and three seconds (written to the log as
// governance would have, below CreateTask's minutes), is reminded, escalated
// to the backup — before whom the proposer is still refused — and
// suspends the task, each once, on the log, and each told on the timeline
// as docs/approvals.md says; governance runs on the kit's log with its
// durable timers and real OPA.
func TestAnApprovalClimbsItsLadder(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	const id, act, apv = "ladder-approval", "act-1", "apv-ladder"
	env.Append(id,
		&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{
			TaskId: id, Intent: "pay", DesiredOutcome: "paid", RequesterRef: "user:req", AccountableOwnerRef: "user:req",
			ApprovalBackupRef: "user:backup", Timers: &stewardv1.TaskTimers{ApprovalRemindAfter: durationpb.New(time.Second),
				ApprovalEscalateAfter: durationpb.New(2 * time.Second), ApprovalSuspendAfter: durationpb.New(3 * time.Second)},
		}},
		&stewardv1.TaskStarted{},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: act, ProposalId: "p1", Tool: "wire", ActionHash: "h", RequestHash: "r", ProposedBy: "user:a"}},
		&stewardv1.PolicyEvaluated{ActionId: act, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: apv, TaskId: id, ActionId: act, ActionHash: "h",
			RequiredRoles: []string{"treasurer"}, RequestedAt: timestamppb.New(time.Now().Add(-2 * time.Second))}},
	)
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	gov := governance.New(env.Log, env.Logger, governance.Config{Tasks: env.Tasks, Engine: engine, Tools: env.Tools, Requests: env.Requests, Timers: env.Timers})
	if err := gov.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gov.Stop)

	env.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Actions[0].GetApproval().GetEscalatedTo() != "" })
	proposer := rpc.Identity{Principal: "user:a", Roles: []string{"treasurer"}}
	if _, err := gov.Decide(ctx, proposer, &stewardv1.DecideApprovalRequest{ApprovalId: apv, ActionHash: "h", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE}); errs.CodeOf(err) != errs.PermissionDenied {
		t.Fatalf("the proposer approving the escalated approval: %v; want refused", err)
	}
	env.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED })
	tellsOnce(t, env, id, map[string]string{
		event.TypeApprovalReminded:  "its approvers were reminded",
		event.TypeApprovalEscalated: "it went to the backup, user:backup, who may decide it now",
		event.TypeTaskSuspended:     "approval " + apv + " for action " + act + " waited longer than 3s",
	})
}
