package governance_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestMilestoneSpentByAnAction: an action in a milestone charges its
// call's cost to it; the guard raises the milestone's alerts and, at 100
// %, suspends the task, and while the milestone stays spent no action of
// the task — in the milestone or not — gets a permit.
func TestMilestoneSpentByAnAction(t *testing.T) {
	e := newHarness(t)
	e.register(t, paidTool)
	e.start(t)
	c := credContract([]string{"paid"}, nil)
	c.Budget = &stewardv1.Budget{MaxCostMicros: 1000, Currency: "USD", Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m1", MaxCostMicros: 70}}}
	e.create(t, "t-m", "agent:a", c)
	rationale := &stewardv1.ActionRationale{ExpectedImpact: "reads acct:1", RollbackPlan: "none needed"}
	id := e.proposeWith(t, "t-m", "p1", "paid", "", "agent", map[string]any{"n": 1}, rationale,
		func(a *stewardv1.Action) { a.MilestoneId = "m1" })
	permit := e.waitStatus("t-m", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED).Permit.PermitId
	e.Append("t-m",
		&stewardv1.ActionClaimed{ActionId: id, PermitId: permit, Worker: "w1"},
		&stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w1", PermitId: permit},
		&stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1, CostMicros: 70}})
	e.waitCounts(t, "t-m", func(n map[string]int, tk *stewardv1.Task) bool {
		return n[event.TypeBudgetAlerted] == 3 && tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED
	})
	tk := e.Append("t-m", &stewardv1.TaskResumed{Reason: "go on"})
	if got := strings.Join(tk.BudgetUsed.Alerts, " "); got != "cost:50:m1 cost:80:m1 cost:100:m1" || tk.BudgetUsed.CostMicros != 70 {
		t.Fatalf("usage %v; want the milestone's three alerts, 70 spent", tk.BudgetUsed)
	}
	other := e.propose(t, "t-m", "p2", "paid")
	if why := denialOf(e.waitStatus("t-m", other, stewardv1.ActionStatus_ACTION_STATUS_DENIED)); !strings.Contains(why, "milestone m1") {
		t.Fatalf("denied with %q; want the spent milestone named", why)
	}
}
