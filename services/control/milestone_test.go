package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// phasedRequest is a task declaring collect (a cap of 2) and then report.
func phasedRequest(requestID string) *stewardv1.CreateTaskRequest {
	req := validRequest(requestID)
	req.Contract.AllowedTools = []string{"search"}
	req.Contract.Milestones = []*stewardv1.Milestone{
		{MilestoneId: "collect", Title: "Collect the news", MaxActions: 2},
		{MilestoneId: "report", Title: "Write the summary"},
	}
	return req
}

func (r *harness) phasedTask(t *testing.T, requestID string) string {
	t.Helper()
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", phasedRequest(requestID))
	if err != nil {
		t.Fatal(err)
	}
	r.running(tk.Contract.TaskId)
	return tk.Contract.TaskId
}

// TestMilestoneCapStopsTheTask: the proposal past a milestone's cap is
// refused and stops the task, waiting for input with the milestone's cause
// and name, while another milestone's proposals go on until then; a
// person's resume lets the milestone go on with max_actions more, and its
// decisions count against the cap as its proposals do.
func TestMilestoneCapStopsTheTask(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.phasedTask(t, "milestone-cap")
	propose := func(proposalID, milestone string) error {
		_, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: proposalID, Tool: "search", Target: proposalID, MilestoneId: milestone})
		return err
	}
	for _, p := range []string{"p1", "p2"} {
		if err := propose(p, "collect"); err != nil {
			t.Fatal(err)
		}
	}
	if err := propose("r1", "report"); err != nil {
		t.Fatalf("another milestone's proposal: %v", err)
	}
	if tk := r.task(t, id); tk.Milestones[0].Status != stewardv1.MilestoneStatus_MILESTONE_STATUS_AT_CAP || tk.CurrentMilestone != "collect" {
		t.Fatalf("milestones %v, current %s; want collect at its cap and current", tk.Milestones, tk.CurrentMilestone)
	}
	err := propose("p3", "collect")
	if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "milestone collect") {
		t.Fatalf("a proposal past the milestone's cap: %v, want a refusal naming it", err)
	}
	tk := r.task(t, id)
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT || tk.OpenInput.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_MILESTONE_CAP ||
		tk.OpenInput.GetMilestoneId() != "collect" || !strings.Contains(tk.StatusReason, "Collect the news") {
		t.Fatalf("after the cap: %s (%s), input %v", tk.Status, tk.StatusReason, tk.OpenInput)
	}
	if err := propose("p3", "collect"); !errs.Is(err, errs.FailedPrecondition) || r.Count(id, event.TypeTaskNeedsInput) != 1 {
		t.Fatalf("a retry while stopped: %v, %d stops; want one stop", err, r.Count(id, event.TypeTaskNeedsInput))
	}
	if _, err := r.ctl.ResumeTask(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "go on"}); err != nil {
		t.Fatal(err)
	}
	if err := propose("p3", "collect"); err != nil {
		t.Fatalf("after a resume: %v", err)
	}
	record := func(d string) error {
		dec := aDecision(d)
		dec.MilestoneId = "collect"
		_, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: dec})
		return err
	}
	if err := record("d1"); err != nil { // the fourth of four
		t.Fatal(err)
	}
	if m := r.task(t, id).Milestones[0]; m.ActionsUsed != 4 || m.MaxActions != 4 || m.ActionsGranted != 2 {
		t.Fatalf("collect %v; want 4 of 4 used, 2 granted", m)
	}
	if err := record("d2"); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a decision past the cap: %v", err)
	}
	if tk := r.task(t, id); tk.OpenInput.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_MILESTONE_CAP || r.Count(id, event.TypeTaskNeedsInput) != 2 {
		t.Fatalf("after a decision past the cap: %s, %v", tk.Status, tk.OpenInput)
	}
}

// TestMilestonesAreCheckedOnCreate: each refusal of a contract's
// milestones, or of a budget line or tag naming none of them, names the
// field; a contract without milestones keeps its budget lines as before.
func TestMilestonesAreCheckedOnCreate(t *testing.T) {
	r := newHarness(t)
	for _, tc := range []struct {
		name  string
		edit  func(*stewardv1.TaskContract)
		field string
	}{
		{"no id", func(c *stewardv1.TaskContract) { c.Milestones[1].MilestoneId = "" }, "contract.milestones[1].milestone_id"},
		{"an id twice", func(c *stewardv1.TaskContract) { c.Milestones[1].MilestoneId = "collect" }, "contract.milestones[1].milestone_id"},
		{"an id with a colon", func(c *stewardv1.TaskContract) { c.Milestones[0].MilestoneId = "a:b" }, "contract.milestones[0].milestone_id"},
		{"no title", func(c *stewardv1.TaskContract) { c.Milestones[0].Title = "" }, "contract.milestones[0].title"},
		{"a description past 4 KiB", func(c *stewardv1.TaskContract) { c.Milestones[1].Description = strings.Repeat("d", 4097) }, "contract.milestones[1].description"},
		{"a cap past the limit", func(c *stewardv1.TaskContract) { c.Milestones[0].MaxActions = 1 << 30 }, "contract.milestones[0].max_actions"},
		{"a budget line naming none", func(c *stewardv1.TaskContract) {
			c.Budget = &stewardv1.Budget{MaxTokens: 10, Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "collect", MaxTokens: 5}, {MilestoneId: "other", MaxTokens: 1}}}
		}, "contract.budget.milestones[1].milestone_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := phasedRequest("bad-" + strings.ReplaceAll(tc.name, " ", "-"))
			tc.edit(req.Contract)
			_, _, err := r.ctl.CreateTask(context.Background(), "t", req)
			if e := (*errs.Error)(nil); !errors.As(err, &e) || (e.Code != errs.Invalid && e.Code != errs.TooLarge) || e.Field != tc.field {
				t.Fatalf("%v; want invalid_argument (or too large) on %s", err, tc.field)
			}
		})
	}
	id := r.phasedTask(t, "tags")
	var e *errs.Error
	_, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p", Tool: "search", Target: "x", MilestoneId: "analyse"})
	if !errors.As(err, &e) || e.Field != "milestone_id" {
		t.Fatalf("a proposal tagged with an undeclared milestone: %v", err)
	}
	dec := aDecision("d")
	dec.MilestoneId = "analyse"
	if _, _, err := r.ctl.RecordDecision(context.Background(), "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: dec}); !errors.As(err, &e) || e.Field != "decision.milestone_id" {
		t.Fatalf("a decision tagged with an undeclared milestone: %v", err)
	}
	lines := validRequest("lines")
	lines.Contract.Budget = &stewardv1.Budget{MaxTokens: 10, Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m1", MaxTokens: 5}}}
	if tk, _, err := r.ctl.CreateTask(context.Background(), "t", lines); err != nil || len(tk.Milestones) != 0 {
		t.Fatalf("budget lines without milestones: %v, %v", err, tk.GetMilestones())
	}
}

// TestReportProgressRecordsNews: a report is recorded once — a repeat is
// not news — and shows on the milestone; a report of 100 on a milestone no
// plan step names makes it done and moves the current milestone on; a bad
// percent, an undeclared milestone or an ended task is refused.
func TestReportProgressRecordsNews(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.phasedTask(t, "progress")
	report := func(milestone string, percent uint32, note string) (*stewardv1.ReportProgressResponse, error) {
		return r.ctl.ReportProgress(ctx, "agent", &stewardv1.ReportProgressRequest{TaskId: id, MilestoneId: milestone, Percent: percent, Note: note})
	}
	for i := range 2 {
		resp, err := report("collect", 40, "3 of 8 sources")
		if err != nil || resp.Recorded != (i == 0) || resp.Milestone.GetPercent() != 40 || resp.Milestone.GetNote() != "3 of 8 sources" ||
			resp.Milestone.GetStatus() != stewardv1.MilestoneStatus_MILESTONE_STATUS_ACTIVE {
			t.Fatalf("report %d: %v, %v", i, resp, err)
		}
	}
	if n := r.Count(id, event.TypeMilestoneProgressed); n != 1 {
		t.Fatalf("%d reports recorded; want 1", n)
	}
	resp, err := report("collect", 100, "all sources read")
	if err != nil || !resp.Recorded || resp.Milestone.GetStatus() != stewardv1.MilestoneStatus_MILESTONE_STATUS_DONE || resp.CurrentMilestone != "report" {
		t.Fatalf("a report of 100: %v, %v", resp, err)
	}
	var e *errs.Error
	for _, tc := range []struct {
		milestone string
		percent   uint32
		note      string
		field     string
	}{
		{"collect", 101, "", "percent"},
		{"analyse", 10, "", "milestone_id"},
		{"", 10, "", "milestone_id"},
		{"report", 10, strings.Repeat("n", 201), "note"},
	} {
		if _, err := report(tc.milestone, tc.percent, tc.note); !errors.As(err, &e) || e.Field != tc.field {
			t.Fatalf("report %q %d: %v; want a refusal naming %s", tc.milestone, tc.percent, err, tc.field)
		}
	}
	if _, err := r.ctl.CancelTask(ctx, "user:a", &stewardv1.CancelTaskRequest{TaskId: id, Reason: "no longer needed"}); err != nil {
		t.Fatal(err)
	}
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_CANCELLED })
	if _, err := report("report", 10, ""); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a report on an ended task: %v", err)
	}
}

// TestRaisingAMilestoneLineResumes: a task suspended because a milestone's
// budget line is spent cannot be resumed by hand; a budget owner's raise
// of that line — above it, and with every line still within the task's
// limits — lifts it, starts that milestone's alerts over (the task's
// stay) and resumes the task.
func TestRaisingAMilestoneLineResumes(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	req := phasedRequest("raise-line")
	req.Contract.Budget = &stewardv1.Budget{MaxCostMicros: 100, Currency: "USD", Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "collect", MaxCostMicros: 50}}}
	tk, _, err := r.ctl.CreateTask(ctx, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.running(id)
	if _, err := r.ctl.ReportUsage(ctx, "agent", &stewardv1.ReportUsageRequest{TaskId: id, CostMicros: 50, MilestoneId: "collect", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	r.Append(id, &stewardv1.BudgetAlerted{Dimension: "cost", Percent: 50, Used: 50, Limit: 100},
		&stewardv1.BudgetAlerted{Dimension: "cost", Percent: 100, Used: 50, Limit: 50, MilestoneId: "collect"},
		&stewardv1.TaskSuspended{Reason: "spent", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT})
	if _, err := r.ctl.ResumeTask(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "go on"}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a resume by hand while the line is spent: %v", err)
	}
	var e *errs.Error
	for _, tc := range []struct {
		milestone string
		cost      int64
		field     string
	}{
		{"report", 80, "milestone_id"},      // no line to raise
		{"collect", 40, "max_cost_micros"},  // not above it
		{"collect", 101, "max_cost_micros"}, // past the task's
	} {
		_, err := r.ctl.RaiseBudget(ctx, "user:fin", &stewardv1.RaiseBudgetRequest{TaskId: id, MilestoneId: tc.milestone, MaxCostMicros: tc.cost, Reason: "more"})
		if !errors.As(err, &e) || e.Field != tc.field {
			t.Fatalf("raise %s to %d: %v; want a refusal naming %s", tc.milestone, tc.cost, err, tc.field)
		}
	}
	tk, err = r.ctl.RaiseBudget(ctx, "user:fin", &stewardv1.RaiseBudgetRequest{TaskId: id, MilestoneId: "collect", MaxCostMicros: 80, Reason: "the sources cost more"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.Contract.Budget.Milestones[0].MaxCostMicros != 80 || tk.Contract.Budget.MaxCostMicros != 100 ||
		strings.Join(tk.BudgetUsed.Alerts, " ") != "cost:50" || tk.Milestones[0].MaxCostMicros != 80 {
		t.Fatalf("after the raise: %s, budget %v, alerts %v", tk.Status, tk.Contract.Budget, tk.BudgetUsed.Alerts)
	}
}

// TestPlanStepsWaitAtTheirMilestonesCap: a plan whose steps are tagged
// with a milestone of cap 1 runs the first; the second's proposal stops the
// task for a person and proposes nothing, and the plan waits with it; the
// resume grants the milestone one more and the plan goes on to its end.
func TestPlanStepsWaitAtTheirMilestonesCap(t *testing.T) {
	r := newHarness(t)
	id := r.planTaskWith(t, "plan-cap", func(c *stewardv1.TaskContract) {
		c.Budget = nil
		c.Milestones = []*stewardv1.Milestone{{MilestoneId: "collect", Title: "Collect", MaxActions: 1}}
	}, nil)
	one, two := act("one", nil, "search", "a", nil), act("two", []string{"one"}, "search", "b", nil)
	one.MilestoneId, two.MilestoneId = "collect", "collect"
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{one, two}})
	_, first := r.step(id, "one", stepRunning)
	r.run(t, id, first.ActionId, succeeded(), []byte(`{}`), time.Now())
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	r.settle()
	tk = r.task(t, id)
	if tk.OpenInput.GetMilestoneId() != "collect" || len(tk.Actions) != 1 || task.FindStep(tk, "two").GetStatus() != stewardv1.StepStatus_STEP_STATUS_PENDING {
		t.Fatalf("at the cap: %s, input %v, %d actions, step two %v", tk.Status, tk.OpenInput, len(tk.Actions), task.FindStep(tk, "two"))
	}
	if _, err := r.ctl.ResumeTask(context.Background(), rpc.Identity{Principal: "user:a"}, &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "go on"}); err != nil {
		t.Fatal(err)
	}
	_, second := r.step(id, "two", stepRunning)
	r.run(t, id, second.ActionId, succeeded(), []byte(`{}`), time.Now())
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool {
		return tk.Milestones[0].Status == stewardv1.MilestoneStatus_MILESTONE_STATUS_DONE
	})
	if tk.CurrentMilestone != "" || r.Count(id, event.TypeTaskNeedsInput) != 1 {
		t.Fatalf("after the plan: current %q, %d stops", tk.CurrentMilestone, r.Count(id, event.TypeTaskNeedsInput))
	}
}
