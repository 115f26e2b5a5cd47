package task_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

func budgeted() event.Payload {
	c := created()
	c.(*stewardv1.TaskCreated).Contract.Budget = &stewardv1.Budget{
		MaxTokens: 100, MaxCostMicros: 1000,
		Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m1", MaxCostMicros: 400}},
	}
	return c
}

func TestSpendingAddsUpAndIsChecked(t *testing.T) {
	costly := dispatchedAction("a1")
	costly = append(costly, &stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, Attempt: 1, CostMicros: 300,
	}})
	steps := append([]event.Payload{budgeted(), started(), &stewardv1.BudgetConsumed{Tokens: 40, CostMicros: 200, MilestoneId: "m1"}}, costly...)
	tk, err := task.Fold(stewardtest.History(t, "t1", steps...))
	if err != nil {
		t.Fatal(err)
	}
	u := tk.BudgetUsed
	if u.Tokens != 40 || u.CostMicros != 500 || len(u.Milestones) != 1 || u.Milestones[0].CostMicros != 200 {
		t.Fatalf("usage %v", u)
	}
	if _, spent := task.Spent(tk); spent {
		t.Error("spent with 500 of 1000")
	}
	for name, bad := range map[string]event.Payload{
		"negative tokens":   &stewardv1.BudgetConsumed{Tokens: -1},
		"overflow":          &stewardv1.BudgetConsumed{CostMicros: math.MaxInt64},
		"unknown milestone": &stewardv1.BudgetConsumed{CostMicros: 1, MilestoneId: "m9"},
		"a lower limit":     &stewardv1.BudgetRaised{MaxCostMicros: 900},
		"no limit":          &stewardv1.BudgetRaised{},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := task.Fold(stewardtest.History(t, "t1", append(steps, bad)...)); err == nil {
				t.Fatal("folded; want a refusal")
			}
		})
	}
	tk, err = task.Fold(stewardtest.History(t, "t1", append(steps, &stewardv1.BudgetConsumed{CostMicros: 250, MilestoneId: "m1"})...))
	if err != nil {
		t.Fatal(err)
	}
	line, spent := task.Spent(tk)
	if !spent || line.MilestoneID != "m1" || !strings.Contains(line.String(), "cost 450 of 400 micros (milestone m1)") {
		t.Errorf("spent %v: %s", spent, line)
	}
	tk, err = task.Fold(stewardtest.History(t, "t1", append(steps, &stewardv1.BudgetAlerted{Dimension: "cost", Percent: 50, Used: 500, Limit: 1000}, &stewardv1.BudgetRaised{MaxCostMicros: 2000})...))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Contract.Budget.MaxCostMicros != 2000 || tk.Contract.Budget.MaxTokens != 100 || len(tk.BudgetUsed.Alerts) != 0 {
		t.Errorf("after a raise: budget %v, alerts %v", tk.Contract.Budget, tk.BudgetUsed.Alerts)
	}
}

func TestSuspensionKeepsItsCause(t *testing.T) {
	spent := &stewardv1.TaskSuspended{Reason: "spent", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT}
	tk, err := task.Fold(stewardtest.History(t, "t1", budgeted(), started(), spent))
	if err != nil || tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT {
		t.Fatalf("suspended for %v (%v)", tk.GetSuspendedFor(), err)
	}
	tk, err = task.Fold(stewardtest.History(t, "t1", budgeted(), started(), spent, resumed()))
	if err != nil || tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_UNSPECIFIED {
		t.Fatalf("after the resume, suspended for %v (%v)", tk.GetSuspendedFor(), err)
	}
}

// TestActionCostIsChargedToItsMilestone charges what an action in a
// milestone costs — on its outcome, or on a denial after calls made — to
// the milestone as well as the task, and refuses a proposal naming a
// milestone the budget does not have.
func TestActionCostIsChargedToItsMilestone(t *testing.T) {
	inMilestone := func(id, milestone string) []event.Payload {
		steps := dispatchedAction(id)
		steps[0].(*stewardv1.ActionProposed).Action.MilestoneId = milestone
		return steps
	}
	steps := []event.Payload{budgeted(), started()}
	steps = append(steps, inMilestone("a1", "m1")...)
	steps = append(steps, &stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1, CostMicros: 300,
	}})
	steps = append(steps, inMilestone("a2", "m1")...)
	steps = append(steps,
		&stewardv1.ActionWaiting{ActionId: "a2", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: timestamppb.Now(), NextAttempt: 2},
		&stewardv1.ActionRevalidating{ActionId: "a2", PermitId: "pa2", Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY, Detail: "test"},
		&stewardv1.ActionDenied{ActionId: "a2", Reasons: []string{"revoked"}, CostMicros: 150})
	steps = append(steps, dispatchedAction("a3")...)
	steps = append(steps, &stewardv1.ActionOutcomeRecorded{ActionId: "a3", Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1, CostMicros: 7,
	}})
	tk, err := task.Fold(stewardtest.History(t, "t1", steps...))
	if err != nil {
		t.Fatal(err)
	}
	u := tk.BudgetUsed
	if u.CostMicros != 457 || len(u.Milestones) != 1 || u.Milestones[0].MilestoneId != "m1" || u.Milestones[0].CostMicros != 450 {
		t.Fatalf("usage %v; want 457 for the task, 450 for m1", u)
	}
	if line, spent := task.Spent(tk); !spent || line.MilestoneID != "m1" {
		t.Errorf("spent %v (%s); want milestone m1 spent", spent, line)
	}
	_, err = task.Fold(stewardtest.History(t, "t1", append([]event.Payload{budgeted(), started()}, inMilestone("a9", "m9")...)...))
	if !strings.Contains(fmt.Sprint(err), "milestone_id") {
		t.Errorf("a proposal in milestone m9: %v; want a refusal naming milestone_id", err)
	}
}
