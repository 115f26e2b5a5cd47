package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestMilestonesEndToEnd runs the real binary (policy by OPA): a task's
// phases are on its view in order; the proposal past a milestone's cap is
// refused and the task waits for a person, naming the milestone; the
// agent's progress shows; `steward tasks show` prints the milestones table
// and the current one; an operator's resume lets the milestone go on.
func TestMilestonesEndToEnd(t *testing.T) {
	tool := stewardtest.StartTool(t)
	tools := fmt.Sprintf(`{"name": "search", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	  "costMicrosPerCall": 10, "http": {"url": %q}}`, tool.URL+"/search")
	h := startSteward(t, setup{tools: []string{tools}})
	agent, ctx := h.agent, context.Background()
	k := contract()
	k.Budget = &stewardv1.Budget{MaxCostMicros: 1000, Currency: "USD", Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "collect", MaxCostMicros: 500}}}
	k.Milestones = []*stewardv1.Milestone{{MilestoneId: "collect", Title: "Collect incidents", MaxActions: 1}, {MilestoneId: "write", Title: "Write the summary"}}
	id := h.create(t, "milestones", k)

	a := proposeIn(t, agent, id, "s1", "collect")
	waitAction(t, agent.clients, id, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	_, err := agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "s2", Tool: "search",
		Params: query("more"), MilestoneId: "collect"}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "milestone collect") {
		t.Fatalf("a proposal past the milestone's cap: %v", err)
	}
	tk := waitStatus(t, agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT)
	if tk.OpenInput.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_MILESTONE_CAP || tk.OpenInput.GetMilestoneId() != "collect" {
		t.Fatalf("waiting with %v; want the milestone cap, naming collect", tk.OpenInput)
	}
	resp, err := agent.tasks.ReportProgress(ctx, connect.NewRequest(&stewardv1.ReportProgressRequest{TaskId: id, MilestoneId: "collect", Percent: 50, Note: "half the sources"}))
	if err != nil || !resp.Msg.Recorded || resp.Msg.CurrentMilestone != "collect" {
		t.Fatalf("report: %v, %v", resp, err)
	}

	out, _ := newPerson(t, h.url, operatorToken).run(0, "tasks", "show", id)
	for _, want := range []string{"milestone:", "collect (Collect incidents), 1 of 2", "*collect", "at_cap", "50% half the sources", "1/1", "10/500 micros", "write", "pending"} {
		if !strings.Contains(out, want) {
			t.Fatalf("tasks show does not say %q:\n%s", want, out)
		}
	}

	if _, err := h.operator.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: id, Reason: "one more source"})); err != nil {
		t.Fatal(err)
	}
	b := proposeIn(t, agent, id, "s2", "collect")
	tk, _ = waitAction(t, agent.clients, id, b.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if m := tk.Milestones[0]; m.ActionsUsed != 2 || m.MaxActions != 2 || m.CostMicros != 20 {
		t.Fatalf("collect after the resume: %v; want 2 of 2 used, 20 spent", m)
	}
}

// proposeIn proposes a search tagged with milestone.
func proposeIn(t *testing.T, c authed, taskID, proposalID, milestone string) *stewardv1.Action {
	t.Helper()
	resp, err := c.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: proposalID, Tool: "search", Params: query(proposalID), MilestoneId: milestone}))
	if err != nil {
		t.Fatalf("propose %s: %v", proposalID, err)
	}
	return resp.Msg.Action
}

func query(q string) *structpb.Struct {
	s, _ := structpb.NewStruct(map[string]any{"q": q})
	return s
}
