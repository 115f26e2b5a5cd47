package state_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// withTree makes a three-level tree of delegation:
//
//	r    spent 10, reserved for a, b and c
//	├ a  spent 20, reserved for a1 and a2
//	│ ├ a1  spent 7, its latest action in milestone "collect"
//	│ └ a2  spent nothing
//	├ b  spent 5
//	└ c  spent nothing
func withTree(t *testing.T, env *stewardtest.Env) {
	t.Helper()
	k := func(id, parent string) *stewardv1.TaskContract {
		c := objectiveContract(id, parent)
		c.ObjectiveId = ""
		c.Budget = &stewardv1.Budget{MaxTokens: 1000, Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "collect", MaxTokens: 100}}}
		return c
	}
	spent := func(n int64) *stewardv1.BudgetConsumed {
		return &stewardv1.BudgetConsumed{Tokens: n, CostMicros: n * 10, Source: "model:m"}
	}
	reserve := func(child string) *stewardv1.BudgetConsumed {
		return &stewardv1.BudgetConsumed{Tokens: 100, CostMicros: 1000, Source: task.DelegationReserveSource + child}
	}
	env.Append("r", &stewardv1.TaskCreated{Contract: k("root", "")}, &stewardv1.TaskStarted{}, spent(10), reserve("a"), reserve("b"), reserve("c"))
	env.Append("a", &stewardv1.TaskCreated{Contract: k("a", "r")}, &stewardv1.TaskStarted{}, spent(20), reserve("a1"), reserve("a2"))
	env.Append("b", &stewardv1.TaskCreated{Contract: k("b", "r")}, &stewardv1.TaskStarted{}, spent(5))
	env.Append("c", &stewardv1.TaskCreated{Contract: k("c", "r")})
	env.Append("a1", &stewardv1.TaskCreated{Contract: k("a1", "a")}, &stewardv1.TaskStarted{}, spent(7),
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "x1", ProposalId: "p-x1", Tool: "search", ToolVersion: "1", Target: "q",
			ActionHash: "h", RequestHash: "r", OpKey: "op", MilestoneId: "collect"}})
	env.Append("a2", &stewardv1.TaskCreated{Contract: k("a2", "a")})
}

func tree(t *testing.T, q stewardv1connect.QueryServiceClient, req *stewardv1.GetTaskTreeRequest) *stewardv1.TaskTreeNode {
	t.Helper()
	resp, err := q.GetTaskTree(context.Background(), connect.NewRequest(req))
	if err != nil {
		t.Fatalf("GetTaskTree %v: %v", req, err)
	}
	return resp.Msg.Root
}

// TestTaskTreeHasSpendPerNodeAndSubtree: GetTaskTree returns the three
// levels, each node with what it spent itself (its reservations for
// sub-tasks left out), its subtree's total and its milestone.
func TestTaskTreeHasSpendPerNodeAndSubtree(t *testing.T) {
	env := stewardtest.NewEnv(t)
	withTree(t, env)
	q, _ := serveState(t, env)
	root := tree(t, q, &stewardv1.GetTaskTreeRequest{TaskId: "r"})
	if root.Tokens != 10 || root.SubtreeTokens != 42 || root.SubtreeCostMicros != 420 || root.SubtreeTasks != 6 || root.ChildCount != 3 {
		t.Fatalf("root %v: want 10 own, 42 (420 micros) in 6 tasks, 3 children", root)
	}
	if len(root.Children) != 3 || root.ChildrenPageToken != "" {
		t.Fatalf("root lists %d children (token %q), want all 3", len(root.Children), root.ChildrenPageToken)
	}
	a := root.Children[0]
	if a.TaskId != "a" || a.Tokens != 20 || a.SubtreeTokens != 27 || len(a.Children) != 2 {
		t.Fatalf("a %v: want 20 own, 27 in its subtree, 2 children", a)
	}
	a1 := a.Children[0]
	if a1.TaskId != "a1" || a1.Tokens != 7 || a1.SubtreeTokens != 7 || a1.MilestoneId != "collect" || a1.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("a1 %v: want 7 spent, milestone collect, running", a1)
	}
}

// TestTaskTreePagesChildren: past max_children a node lists a page of its
// sub-tasks and a token for the rest; past max_depth none, with a token;
// the tokens, with the node's id, list the rest, and a token of one node
// is refused for another.
func TestTaskTreePagesChildren(t *testing.T) {
	env := stewardtest.NewEnv(t)
	withTree(t, env)
	q, _ := serveState(t, env)
	root := tree(t, q, &stewardv1.GetTaskTreeRequest{TaskId: "r", MaxChildren: 2, MaxDepth: 1})
	if len(root.Children) != 2 || root.Children[0].TaskId != "a" || root.Children[1].TaskId != "b" || root.ChildrenPageToken == "" {
		t.Fatalf("first page %v, want a and b and a token", root.Children)
	}
	a := root.Children[0]
	if len(a.Children) != 0 || a.ChildCount != 2 || a.ChildrenPageToken == "" || a.SubtreeTokens != 27 {
		t.Fatalf("a past the depth: %v, want no children listed, 2 counted, a token, 27 in its subtree", a)
	}
	rest := tree(t, q, &stewardv1.GetTaskTreeRequest{TaskId: "r", MaxChildren: 2, MaxDepth: 1, PageToken: root.ChildrenPageToken})
	if len(rest.Children) != 1 || rest.Children[0].TaskId != "c" || rest.ChildrenPageToken != "" {
		t.Fatalf("second page %v (token %q), want c alone", rest.Children, rest.ChildrenPageToken)
	}
	below := tree(t, q, &stewardv1.GetTaskTreeRequest{TaskId: "a", PageToken: a.ChildrenPageToken})
	if len(below.Children) != 2 || below.Children[0].TaskId != "a1" || below.Children[1].TaskId != "a2" {
		t.Fatalf("a's children %v, want a1 and a2", below.Children)
	}
	_, err := q.GetTaskTree(context.Background(), connect.NewRequest(&stewardv1.GetTaskTreeRequest{TaskId: "b", PageToken: a.ChildrenPageToken}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("a's token for b: %v, want invalid argument", err)
	}
	_, err = q.GetTaskTree(context.Background(), connect.NewRequest(&stewardv1.GetTaskTreeRequest{TaskId: "r", MaxDepth: 17}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("max_depth 17: %v, want invalid argument", err)
	}
}
