package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestCLIPeopleAnswer answers for tasks with the people's commands and
// finds each answer on the task's log in its author's name: a question
// (`questions ls|answer`: InputProvided), an unknown outcome (`actions
// settle`: ActionSettled, the tool's work done once) and a budget
// (`budget raise`: BudgetRaised, refused to anyone but a budget owner).
func TestCLIPeopleAnswer(t *testing.T) {
	ctx := context.Background()
	tool := stewardtest.StartTool(t).Always("/charge", stewardtest.Late)
	h := startSteward(t, setup{tools: []string{fmt.Sprintf(`{"name": "charge", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE",
	  "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "timeout": "1s", "http": {"url": %q}}`, tool.URL+"/charge")}})
	ops := newPerson(t, h.url, operatorToken)
	k := contract()
	k.AllowedTools = []string{"charge"}
	taskID := h.create(t, "cli-people-1", k)

	ask := &stewardv1.RequestInputRequest{TaskId: taskID, Question: "Include the outage?", Choices: []string{"yes", "no"}, RequestId: "ask-1"}
	if _, err := h.agent.tasks.RequestInput(ctx, connect.NewRequest(ask)); err != nil {
		t.Fatal(err)
	}
	if out, _ := ops.run(0, "questions", "ls"); !strings.Contains(out, taskID+"  asked") || !strings.Contains(out, "Include the outage?  yes | no") {
		t.Fatalf("questions ls:\n%s", out)
	}
	out, _ := ops.run(0, "questions", "ls", "-o", "json")
	var waiting stewardv1.Task
	if err := protojson.Unmarshal([]byte(out), &waiting); err != nil || waiting.OpenInput.GetQuestion() != ask.Question {
		t.Fatalf("questions ls -o json: a Task a line, its open_input the question: %v\n%s", err, out)
	}
	ops.run(4, "questions", "answer", taskID, "maybe")
	ops.run(0, "questions", "answer", taskID, "yes")
	if ev := lastOfType(t, h, taskID, event.TypeInputProvided); ev.GetInputProvided().GetAnswer() != "yes" || ev.Actor.GetPrincipal() != "user:ops" {
		t.Fatalf("the answer on the log: %v", ev)
	}
	waitStatus(t, h.agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)

	params, _ := structpb.NewStruct(map[string]any{"amount": 5})
	pr, err := h.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "c1", Tool: "charge", Target: "card:1", Params: params}))
	if err != nil {
		t.Fatal(err)
	}
	actionID := pr.Msg.Action.ActionId
	waitAction(t, h.agent.clients, taskID, actionID, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
	ops.run(2, "actions", "settle", taskID, actionID, "--state", "perhaps", "--reason", "r")
	out, _ = ops.run(0, "actions", "settle", taskID, actionID, "--state", "succeeded", "--reason", "the statement shows one charge", "--result", `{"charged": true}`)
	if !strings.Contains(out, "action "+actionID+" is succeeded, settled by user:ops") {
		t.Errorf("actions settle printed %q", out)
	}
	if s := lastOfType(t, h, taskID, event.TypeActionSettled).GetActionSettled(); s.SettledBy != "user:ops" || s.State != stewardv1.SettleState_SETTLE_STATE_SUCCEEDED || s.ResultRef == "" {
		t.Fatalf("the settlement on the log: %v", s)
	}
	if n := tool.Executions(pr.Msg.Action.OpKey); n != 1 {
		t.Errorf("the tool did the work %d times, want 1", n)
	}

	ops.run(2, "budget", "raise", taskID, "--reason", "no amount")
	if _, stderr := ops.run(4, "budget", "raise", taskID, "--tokens", "60000"); !strings.Contains(stderr, "permission_denied") {
		t.Errorf("a raise by an operator: %s", stderr)
	}
	fin := newPerson(t, h.url, funderToken)
	out, _ = fin.run(0, "budget", "raise", taskID, "--tokens", "60000", "--reason", "the review needs more", "-o", "json")
	var raised stewardv1.Task
	if err := protojson.Unmarshal([]byte(out), &raised); err != nil || raised.Contract.GetBudget().GetMaxTokens() != 60000 {
		t.Fatalf("budget raise -o json: %v\n%s", err, out)
	}
	if ev := lastOfType(t, h, taskID, event.TypeBudgetRaised); ev.GetBudgetRaised().GetMaxTokens() != 60000 || ev.Actor.GetPrincipal() != "user:fin" {
		t.Fatalf("the raise on the log: %v", ev)
	}
}
