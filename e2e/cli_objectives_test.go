package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestCLIObjectivesAndTaskTree: through the real binary, an agent sets an
// objective with `steward objectives create`; a task of it, a sub-task and
// a sub-sub-task are made, and the deepest spends; `objectives get` shows
// the three tasks and what they spent; `tasks tree` shows the three
// levels, the spend where it was spent and the total at the top; and a
// task past the objective's budget is refused.
func TestCLIObjectivesAndTaskTree(t *testing.T) {
	h := startSteward(t, setup{})
	ctx := context.Background()
	agent := newPerson(t, h.url, agentToken)
	out, _ := agent.run(0, "objectives", "create", "Ship the Q3 report", "--max-tokens", "60000", "--request-id", "q3")
	id := strings.TrimSpace(out)
	if again, _ := agent.run(0, "objectives", "create", "Ship the Q3 report", "--max-tokens", "60000", "--request-id", "q3"); strings.TrimSpace(again) != id {
		t.Fatalf("the same create again made %q, want %q", again, id)
	}
	k := contract()
	k.ObjectiveId = id
	root := h.create(t, "obj-root", k)
	sub := contract()
	sub.Budget = &stewardv1.Budget{MaxTokens: 20_000}
	child := delegateTo(t, withToken(h.url, agentToken), root, "agent:researcher", "obj-child", sub)
	sub.Budget = &stewardv1.Budget{MaxTokens: 5_000}
	researcher := withToken(h.url, subAgentToken)
	grandchild := delegateTo(t, researcher, child, "agent:researcher", "obj-grandchild", sub)
	if _, err := researcher.tasks.ReportUsage(ctx, connect.NewRequest(&stewardv1.ReportUsageRequest{
		TaskId: grandchild, Tokens: 1200, Model: "m", RequestId: "obj-usage"})); err != nil {
		t.Fatal(err)
	}

	ops := newPerson(t, h.url, operatorToken)
	out, _ = ops.run(0, "objectives", "get", id)
	for _, want := range []string{"Ship the Q3 report", "1200 tokens", "50000 of 60000 tokens reserved", root, child, grandchild} {
		if !strings.Contains(out, want) {
			t.Errorf("objectives get lacks %q:\n%s", want, out)
		}
	}
	out, _ = ops.run(0, "objectives", "ls")
	if !strings.Contains(out, id) {
		t.Errorf("objectives ls lacks %s:\n%s", id, out)
	}

	out, _ = ops.run(0, "tasks", "tree", root, "-o", "json")
	var top stewardv1.TaskTreeNode
	if err := protojson.Unmarshal([]byte(out), &top); err != nil {
		t.Fatalf("tasks tree -o json: %v\n%s", err, out)
	}
	if top.TaskId != root || top.SubtreeTokens != 1200 || top.SubtreeTasks != 3 || len(top.Children) != 1 {
		t.Fatalf("root %v: want 1200 tokens in 3 tasks, 1 child", &top)
	}
	mid := top.Children[0]
	if mid.TaskId != child || len(mid.Children) != 1 || mid.Children[0].TaskId != grandchild || mid.Children[0].Tokens != 1200 {
		t.Fatalf("below the root %v: want %s, then %s with 1200 tokens", mid, child, grandchild)
	}
	if out, _ := ops.run(0, "tasks", "tree", root); !strings.Contains(out, "    "+grandchild) {
		t.Errorf("tasks tree does not indent the third level:\n%s", out)
	}

	over := contract()
	over.ObjectiveId = id
	over.Budget = &stewardv1.Budget{MaxTokens: 20_000}
	_, err := withToken(h.url, agentToken).tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "obj-over", Contract: over}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "contract.budget.max_tokens") {
		t.Fatalf("a task past the objective's budget: %v", err)
	}
	if out, _ := agent.run(0, "objectives", "close", id, "--reason", "shipped"); !strings.Contains(out, "done") {
		t.Errorf("objectives close: %s", out)
	}
}

// delegateTo delegates a sub-task of parent to delegate, as a, and waits
// for it to run.
func delegateTo(t *testing.T, a authed, parent, delegate, requestID string, k *stewardv1.TaskContract) string {
	t.Helper()
	resp, err := a.tasks.DelegateTask(context.Background(), connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: parent, Contract: k, DelegateRef: delegate, RequestId: requestID}))
	if err != nil {
		t.Fatalf("delegate %s: %v", requestID, err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStarted(t, a.clients, id) // its credential too: the delegate acts as it next
	return id
}

// TestObjectivesInServicesMode: with each plane its own process, an
// objective the control plane records is read by the state plane with
// the task that reserved out of it.
func TestObjectivesInServicesMode(t *testing.T) {
	urls := startServices(t, nil)
	control, state := newClients(urls["control"]), newClients(urls["state"])
	ctx := context.Background()
	resp, err := control.tasks.CreateObjective(ctx, connect.NewRequest(&stewardv1.CreateObjectiveRequest{
		RequestId: "services-q3", Intent: "ship Q3", Budget: &stewardv1.ObjectiveBudget{MaxTokens: 80_000}}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Objective.ObjectiveId
	k := contract()
	k.ObjectiveId = id
	task, err := control.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "services-obj", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := state.query.GetObjective(ctx, connect.NewRequest(&stewardv1.GetObjectiveRequest{ObjectiveId: id}))
	if err != nil {
		t.Fatal(err)
	}
	if o := got.Msg.Objective; o.ReservedTokens != 50_000 || len(got.Msg.Tasks) != 1 || got.Msg.Tasks[0].Contract.TaskId != task.Msg.Task.Contract.TaskId {
		t.Fatalf("the state plane serves %v with tasks %v", o, got.Msg.Tasks)
	}
}
