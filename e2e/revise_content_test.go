package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// TestRevisionApproverTheTaskDoesNotName: a holder of the role a HIGH
// task's revision needs decides it without being named by the task, as a
// budget owner raises a budget. The task DecideContractRevision answers
// them with is the one GetTask would show them: an action's result and
// its plain digest are content they may not read.
func TestRevisionApproverTheTaskDoesNotName(t *testing.T) {
	ctx := context.Background()
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	owner, di := withToken(h.url, ownerToken), withToken(h.url, secondApproverToken) // user:di, authorizer, not named
	k := contract()
	k.RiskTier, k.AccountableOwnerRef = stewardv1.RiskTier_RISK_TIER_HIGH, "user:owner"
	id := h.create(t, "revise-content", k)
	read := propose(t, h.agent, id, "read-1", "search", map[string]any{"q": "incidents"})
	waitAction(t, h.agent.clients, id, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if a := task.FindAction(getTask(t, h.agent.clients, id), read.ActionId); a.GetOutcome().GetResultHash() == "" {
		t.Fatalf("action %s has no result to hide: %v", read.ActionId, a.GetOutcome())
	}

	rv, err := h.agent.tasks.ReviseContract(ctx, connect.NewRequest(&stewardv1.ReviseContractRequest{TaskId: id, Reason: "wider",
		Contract: &stewardv1.TaskContract{DesiredOutcome: "A two-page summary"}}))
	if err != nil {
		t.Fatal(err)
	}
	waitServed(t, h.agent.clients, id, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
		r := task.OpenRevision(tk)
		return r != nil && task.RevisionNeedsRole(r), "the revision judged to need an authorizer"
	})
	if _, err := owner.tasks.DecideContractRevision(ctx, connect.NewRequest(&stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rv.Msg.Revision.RevisionId, Approve: true})); err != nil {
		t.Fatal(err)
	}
	resp, err := di.tasks.DecideContractRevision(ctx, connect.NewRequest(&stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rv.Msg.Revision.RevisionId, Approve: true, Comment: "fine"}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Msg.Task.ContractVersion != 2 {
		t.Fatalf("the authorizer's approval left version %d in force, want 2", resp.Msg.Task.ContractVersion)
	}
	a := task.FindAction(resp.Msg.Task, read.ActionId)
	if o := a.GetOutcome(); o.GetResult() != nil || o.GetResultRef() != "" || !strings.HasPrefix(o.GetResultHash(), "hmac-sha256:") {
		t.Fatalf("the authorizer the task does not name is answered with action %s's result %v, ref %q, hash %q: want none, and a keyed digest", a.ActionId, o.GetResult(), o.GetResultRef(), o.GetResultHash())
	}
}
