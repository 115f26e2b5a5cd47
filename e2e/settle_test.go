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

// TestUnknownOutcomeWaitsForAPersonToSettleIt runs the real binary with a
// tool that does the work but answers after the caller's timeout and offers
// no status query: the outcome is unknown, the task reconciles, nothing is
// assumed, and only a person with the operator role settles it.
func TestUnknownOutcomeWaitsForAPersonToSettleIt(t *testing.T) {
	// The tool does the work and holds its answer past the 1s timeout:
	// the caller never hears.
	tool := stewardtest.StartTool(t).Always("/charge", stewardtest.Late)
	tools := fmt.Sprintf(`{"name": "charge", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	  "timeout": "1s", "http": {"url": %q}}`, tool.URL+"/charge")
	h := startSteward(t, setup{tools: []string{tools}})

	agent := h.agent
	k := contract()
	k.AllowedTools = []string{"charge"}
	taskID := h.create(t, "settle", k)
	params, _ := structpb.NewStruct(map[string]any{"amount": 5})
	pr, err := agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "c1", Tool: "charge", Target: "card:1", Params: params}))
	if err != nil {
		t.Fatal(err)
	}
	actionID := pr.Msg.Action.ActionId
	tk, _ := waitAction(t, agent.clients, taskID, actionID, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RECONCILING {
		t.Fatalf("task is %v, want reconciling", tk.Status)
	}

	settle := func(token string, req *stewardv1.SettleActionRequest) (*stewardv1.Action, error) {
		resp, err := actionClient(h.url, token).SettleAction(context.Background(), connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return resp.Msg.Action, nil
	}
	result, _ := structpb.NewValue(map[string]any{"charged": true})
	req := &stewardv1.SettleActionRequest{TaskId: taskID, ActionId: actionID, State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, Result: result, Reason: "the card statement shows one charge"}
	if _, err := settle(agentToken, req); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("settle by the agent: %v, want permission_denied", err)
	}
	if _, err := settle(operatorToken, &stewardv1.SettleActionRequest{TaskId: taskID, ActionId: actionID, State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED}); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("settle without a reason: %v, want invalid_argument", err)
	}
	a, err := settle(operatorToken, req)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.SettledBy != "user:ops" || a.Outcome.ResultRef == "" {
		t.Fatalf("settled action: %v by %q, result %q", a.Status, a.SettledBy, a.Outcome.GetResultRef())
	}
	waitStatus(t, agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	if n := tool.CallsFor(a.OpKey); n != 1 {
		t.Errorf("the tool was called %d times, want 1", n)
	}
	if n := tool.Executions(a.OpKey); n != 1 {
		t.Errorf("the tool did the work %d times, want 1", n)
	}
	tl, err := agent.query.GetTimeline(context.Background(), connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range tl.Msg.Entries {
		said = append(said, e.Summary)
	}
	if !strings.Contains(strings.Join(said, "\n"), "user:ops settled the unknown outcome of action "+actionID+": succeeded: the card statement") {
		t.Errorf("timeline does not tell the settlement:\n%s", strings.Join(said, "\n"))
	}
	if _, err := settle(operatorToken, &stewardv1.SettleActionRequest{TaskId: taskID, ActionId: "act-nope", State: stewardv1.SettleState_SETTLE_STATE_FAILED, Reason: "x"}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("settle of a missing action: %v, want not_found", err)
	}
}
