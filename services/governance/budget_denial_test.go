package governance_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestADenialsCostIsGuarded: a denial on
// revalidation now spends the task's budget (ActionDenied.cost_micros),
// but the budget guard reacts only to reported usage, outcomes and
// raises. A denial that takes the task to 100 % of its cost limit raises
// no alert and does not suspend the task.
func TestADenialsCostIsGuarded(t *testing.T) {
	e := newHarness(t)
	e.register(t, paidTool)
	e.start(t)
	c := credContract([]string{"paid"}, nil)
	c.Budget.MaxCostMicros = 70
	e.create(t, "t-guard", "agent:a", c)
	id := e.propose(t, "t-guard", "p1", "paid")
	first := e.waitStatus("t-guard", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	cred := e.credentialed("t-guard").Credential

	e.used(t, "t-guard", id, first.Permit.PermitId, 1, &stewardv1.CredentialRevoked{CredentialId: cred.CredentialId, Reason: "key leaked"})

	a := e.waitStatus("t-guard", id, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if a.Outcome.CostMicros != 70 {
		t.Fatalf("denial %v; want the call charged at 70", a.Outcome)
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		tk, _, err := e.Tasks.Load(context.Background(), "t-guard")
		if err != nil {
			t.Fatal(err)
		}
		return tk.BudgetUsed.GetCostMicros() == 70 && len(tk.BudgetUsed.GetAlerts()) > 0 && tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED,
			fmt.Sprintf("cost %d of 70, alerts %v, task %s: want the 50/80/100 %% alerts and the task suspended for its spent budget",
				tk.BudgetUsed.GetCostMicros(), tk.BudgetUsed.GetAlerts(), tk.Status)
	})
}
