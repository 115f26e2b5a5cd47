package governance_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestDeclaredMilestoneSpentSuspends: a declared milestone's budget line
// spent to 100 % by a model decision tagged with it suspends the task, as
// the task's own budget does, naming the milestone; the milestone's state
// shows its spend against its line.
func TestDeclaredMilestoneSpentSuspends(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	c := credContract(nil, nil)
	c.Milestones = []*stewardv1.Milestone{{MilestoneId: "collect", Title: "Collect"}, {MilestoneId: "report", Title: "Report"}}
	c.Budget = &stewardv1.Budget{MaxCostMicros: 1000, Currency: "USD", Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "collect", MaxCostMicros: 70}}}
	e.create(t, "t-phase", "agent:a", c)
	e.Append("t-phase", &stewardv1.DecisionRecorded{Decision: &stewardv1.Decision{DecisionId: "d1", MilestoneId: "collect",
		Call: &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a", CostMicros: 70, Provenance: stewardv1.Provenance_PROVENANCE_REPORTED}}})
	e.waitCounts(t, "t-phase", func(n map[string]int, tk *stewardv1.Task) bool {
		return n[event.TypeBudgetAlerted] == 3 && tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED
	})
	tk := e.WaitTask("t-phase", func(*stewardv1.Task) bool { return true })
	if tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT || !strings.Contains(tk.StatusReason, "milestone collect") {
		t.Fatalf("suspended for %s (%s); want the spent milestone named", tk.SuspendedFor, tk.StatusReason)
	}
	if m := tk.Milestones[0]; m.CostMicros != 70 || m.MaxCostMicros != 70 || m.Status != stewardv1.MilestoneStatus_MILESTONE_STATUS_ACTIVE {
		t.Fatalf("collect %v; want 70 of 70 spent, active", m)
	}
}
