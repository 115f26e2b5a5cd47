package state_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAPlanThatWaitsOnADeclaredClockIsNotMarked: a stall mark
// suspends its task after stall_suspend_after (governance/stall.go), so a
// task whose plan legitimately waits — a wait step not yet due, a sub-task
// at work, a plan approval asked of a person — must not be marked: each
// has its own clock (the wait's timer, the child's own watchdog, the
// approval's reminder and suspension).
func TestAPlanThatWaitsOnADeclaredClockIsNotMarked(t *testing.T) {
	env := stewardtest.NewEnv(t)
	planned := func(step *stewardv1.Step, after ...event.Payload) []event.Payload {
		p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{step}}
		h := []event.Payload{&stewardv1.TaskCreated{Contract: stallContract()}, &stewardv1.TaskStarted{},
			&stewardv1.PlanSubmitted{Plan: p, PlanHash: "h1"}}
		return append(h, after...)
	}
	allow := &stewardv1.PlanEvaluated{Version: 1, PlanHash: "h1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}}
	wait := &stewardv1.Step{Id: "w", Kind: &stewardv1.Step_Wait{Wait: &stewardv1.WaitStep{Wait: &stewardv1.WaitStep_Duration{Duration: durationpb.New(24 * time.Hour)}}}}
	sub := &stewardv1.Step{Id: "s", Kind: &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{Contract: contract(2), DelegateRef: "agent:sub"}}}
	histories := []struct {
		id      string
		history []event.Payload
	}{
		{"wait-step", planned(wait, allow, &stewardv1.PlanStepStarted{Version: 1, StepId: "w", Attempt: 1, WaitUntil: timestamppb.New(time.Now().Add(24 * time.Hour))})},
		{"sub-task-step", planned(sub, allow, &stewardv1.PlanStepStarted{Version: 1, StepId: "s", Attempt: 1, SubTaskId: "c1"})},
		{"plan-approval-asked", planned(wait,
			&stewardv1.PlanEvaluated{Version: 1, PlanHash: "h1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
			&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "apv-plan-1", PlanVersion: 1, PlanHash: "h1", RequiredRoles: []string{"authorizer"}, RequestedAt: timestamppb.Now()}})},
		// Created last, looked at last (lookOnce): marked, as before.
		{"last", []event.Payload{&stewardv1.TaskCreated{Contract: stallContract()}, &stewardv1.TaskStarted{}}},
	}
	for _, h := range histories {
		env.Append(h.id, h.history...)
	}
	lookOnce(t, env, "last")
	for _, h := range histories[:len(histories)-1] {
		if n := env.Count(h.id, event.TypeTaskStalled); n != 0 {
			t.Errorf("%s: %d stall marks, want none: it waits on a clock of its own, and a mark that stands suspends it", h.id, n)
		}
	}
}
