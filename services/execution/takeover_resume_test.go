package execution_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/execution/breaker"
)

// addProposed adds a second action (proposal pid) to taskID, evaluated
// (allowed), and returns a func that permits it.
func (b *bed) addProposed(taskID, pid, tool, target string) (string, func()) {
	b.t.Helper()
	ctx := context.Background()
	canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: tool, ToolVersion: "1", Target: target, Params: []byte(`{}`)})
	if err != nil {
		b.t.Fatal(err)
	}
	ref, reqHash, err := b.requests.Put(ctx, canonical)
	if err != nil {
		b.t.Fatal(err)
	}
	actionID := action.ID(taskID, pid)
	a := &stewardv1.Action{
		ActionId: actionID, ProposalId: pid, Tool: tool, ToolVersion: "1", Target: target,
		EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		RequestRef:  ref, RequestHash: reqHash, ActionHash: action.Hash(actionID, reqHash), OpKey: action.OpKey(taskID, actionID),
	}
	b.append(taskID, &stewardv1.ActionProposed{Action: a})
	b.append(taskID, &stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s2", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
	return actionID, func() {
		b.append(taskID, &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{
			PermitId: "pm-" + actionID, ActionId: actionID, ActionHash: a.ActionHash, RequestHash: reqHash, SnapshotId: "s2", IssuedAt: timestamppb.Now(),
		}})
	}
}

// TestResumeIsNotBlockedByAnotherWorkersLiveCall: action A's call is
// in flight at another, live worker (it heartbeats). The task is paused;
// action B is permitted meanwhile; the task resumes. The resume is the only
// event that brings B's permit back, so it must claim B now, not when A's
// call ends. carryOn returns at the first error, and hold answers a live
// lease with errs.Later, so B waits for as long as A's call lasts.
func TestResumeIsNotBlockedByAnotherWorkersLiveCall(t *testing.T) {
	b := newBed(t, breaker.Config{})
	ts := startScriptedTool(t, "ok", "ok")
	b.register(ts, "charge", false, nil)
	b.plane.Stop()
	taskID, actionA := b.permit("t-hol", "charge", "card-a")
	b.append(taskID, &stewardv1.ActionClaimed{ActionId: actionA, PermitId: "pm-" + actionA, Worker: "other"})
	b.append(taskID, &stewardv1.ActionDispatched{ActionId: actionA, Attempt: 1, Worker: "other"})
	actionB, permitB := b.addProposed(taskID, "p2", "charge", "card-b")
	b.append(taskID, &stewardv1.TaskPaused{Reason: "hold on"})
	permitB() // a paused task may hold a permit; it is claimed on resume

	// "other" is alive: it heartbeats A every lease/3 while its call goes on.
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for beat := uint32(1); !stop.Load(); beat++ {
			b.append(taskID, &stewardv1.ActionHeartbeat{ActionId: actionA, Attempt: 1, Beat: beat})
			time.Sleep(b.cfg.Lease / 3)
		}
	}()
	defer func() {
		if !stop.Swap(true) {
			<-done
		}
	}()

	b.start()
	b.append(taskID, &stewardv1.TaskResumed{Reason: "go on"})

	stewardtest.Eventually(t, 4*time.Second, func() (bool, string) {
		tk, _, err := taskstore.Load(context.Background(), b.log, taskID)
		if err != nil {
			t.Fatal(err)
		}
		return task.FindAction(tk, actionB).Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED,
			fmt.Sprintf("B's permit unclaimed after the resume (lease %s) while A's worker heartbeats: the resume is stuck behind another worker's live call", b.cfg.Lease)
	})
}
