package state_test

import (
	"context"
	"slices"
	"strings"
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

// TestTimelineTellsThePlan: the timeline says who submitted which plan
// version, what a revision did, and what policy said of it.
func TestTimelineTellsThePlan(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	step := &stewardv1.Step{Id: "a", Kind: &stewardv1.Step_Wait{Wait: &stewardv1.WaitStep{}}}
	v := func(n uint32) *stewardv1.Plan {
		return &stewardv1.Plan{Version: n, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{step}}
	}
	env.Append("t1", append(running(),
		&stewardv1.PlanSubmitted{Plan: v(1), PlanHash: "0123456789abcdef"},
		&stewardv1.PlanSubmitted{Plan: v(2), PlanHash: "fedcba9876543210", Revision: &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"a"}}},
		&stewardv1.PlanEvaluated{Version: 2, PlanHash: "fedcba9876543210", Snapshot: &stewardv1.PolicySnapshot{BundleRevision: "r1",
			Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY, Reasons: []string{"no waits on Fridays"}}})...)
	client, _ := serveState(t, env)
	resp, err := client.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range resp.Msg.Entries {
		said = append(said, e.Summary)
	}
	all := strings.Join(said, "\n")
	for _, want := range []string{
		"submitted plan version 1 (1 steps, hash 0123456789ab…)",
		"submitted plan version 2 (1 steps, hash fedcba987654…), revising version 1: 1 kept, 0 changed, 0 added, 0 withdrawn",
		"Policy r1 said deny for plan version 2: no waits on Fridays",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("timeline does not say %q:\n%s", want, all)
		}
	}
}
