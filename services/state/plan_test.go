package state_test

import (
	"context"
	"slices"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestGetTaskShowsThePlan: GetTask shows the task's plan, its steps as
// what remains, and, once governance lets it run, the steps that may
// start now; none while the plan waits for governance.
func TestGetTaskShowsThePlan(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	search := func(id string, deps ...string) *stewardv1.Step {
		return &stewardv1.Step{Id: id, DependsOn: deps, Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: id}}}
	}
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{search("a"), search("b", "a"), search("c")}}
	env.Append("t1", append(running(), &stewardv1.PlanSubmitted{Plan: p, PlanHash: "h1"})...)
	client, _ := serveState(t, env)
	get := func() *stewardv1.Task {
		t.Helper()
		resp, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg.Task
	}
	tk := get()
	if tk.Plan.GetVersion() != 1 || len(tk.Plan.Steps) != 3 || len(tk.Plan.Ready) != 0 {
		t.Fatalf("pending plan = %v, want its steps and none ready", tk.Plan)
	}
	if !slices.Equal(tk.Progress.GetRemaining(), []string{"a", "b", "c"}) {
		t.Fatalf("remaining = %v, want the plan's steps", tk.Progress.GetRemaining())
	}
	env.Append("t1", &stewardv1.PlanEvaluated{Version: 1, PlanHash: "h1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
	if got := get().Plan.GetReady(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("ready = %v, want a and c, which depend on nothing", got)
	}
}
