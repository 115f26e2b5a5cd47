package state_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAgentsTurnHidesNeitherOwedWorkNorADeadAgent: a watched task is its
// agent's turn, and not marked, only while nothing is owed by the control
// plane and the ladder can still end its agent's silence. Marked, all
// quiet past their threshold: a watched task whose transient failure's
// retry (RECOVERY_MODE_RETRY) was never proposed — control re-drives it
// only on the mark; one whose agent was asked and whose ladder has no
// suspension rung; one whose contract sets agent_ask_after to zero (no
// ladder runs). Not marked: one asked whose ladder suspends, and an idle
// one never asked.
func TestAgentsTurnHidesNeitherOwedWorkNorADeadAgent(t *testing.T) {
	env := stewardtest.NewEnv(t)
	withSuspend := watchedContract()
	withSuspend.Timers.AgentSuspendAfter = durationpb.New(3 * time.Hour)
	zeroAsk := stallContract()
	zeroAsk.Timers.AgentAskAfter = durationpb.New(0)
	retrying := watchedContract()
	retrying.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	asked := &stewardv1.AgentAsked{Question: "still working?", SilentFor: durationpb.New(time.Hour)}
	histories := []struct {
		id      string
		history []event.Payload
		marked  bool
	}{
		{"retry-owed", failedTransiently(retrying), true},
		{"asked-no-suspend", []event.Payload{&stewardv1.TaskCreated{Contract: watchedContract()}, &stewardv1.TaskStarted{}, asked}, true},
		{"asked-suspends", []event.Payload{&stewardv1.TaskCreated{Contract: withSuspend}, &stewardv1.TaskStarted{}, asked}, false},
		{"zero-ask", []event.Payload{&stewardv1.TaskCreated{Contract: zeroAsk}, &stewardv1.TaskStarted{}}, true},
		{"idle-never-asked", []event.Payload{&stewardv1.TaskCreated{Contract: watchedContract()}, &stewardv1.TaskStarted{}}, false},
		// Created last, looked at last (lookOnce).
		{"last", []event.Payload{&stewardv1.TaskCreated{Contract: stallContract()}, &stewardv1.TaskStarted{}}, true},
	}
	for _, h := range histories {
		env.Append(h.id, h.history...)
	}
	lookOnce(t, env, "last")
	for _, h := range histories {
		want := 0
		if h.marked {
			want = 1
		}
		if n := env.Count(h.id, event.TypeTaskStalled); n != want {
			t.Errorf("%s: %d stall marks, want %d", h.id, n, want)
		}
	}
}

// failedTransiently returns the events of a running task under contract
// c whose action act-1 ran and failed transiently, and was not retried.
func failedTransiently(c *stewardv1.TaskContract) []event.Payload {
	out := []event.Payload{&stewardv1.TaskCreated{Contract: c}, &stewardv1.TaskStarted{},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "act-1", ProposalId: "p1", Tool: "wire", ActionHash: "h", RequestHash: "r"}}}
	for _, s := range runSteps("act-1") {
		out = append(out, s.payload)
	}
	return append(out, &stewardv1.ActionOutcomeRecorded{ActionId: "act-1", Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, Reason: "503"}})
}
