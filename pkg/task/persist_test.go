package task_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// copyOf is what taskstore's Load hands out: the task's top level and
// lists its own, every message it holds shared.
func copyOf(t *stewardv1.Task) *stewardv1.Task {
	c := &stewardv1.Task{}
	src, dst := t.ProtoReflect(), c.ProtoReflect()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsList() {
			l := dst.Mutable(fd).List()
			for i := range v.List().Len() {
				l.Append(v.List().Get(i))
			}
			return true
		}
		dst.Set(fd, v)
		return true
	})
	return c
}

// TestFoldLeavesEarlierCopiesAndItsEvents: in every build, not
// only under -race, and for every kind of part — an action other than
// the one an event changes, a list inside a part, the events the fold
// now shares sub-messages with — folding an event leaves a copy of the
// task made before it reading as the task did, and leaves every event
// folded so far as it was stored.
func TestFoldLeavesEarlierCopiesAndItsEvents(t *testing.T) {
	now := timestamppb.Now()
	histories := map[string][]event.Payload{
		"two votes, a permit": append(awaitingTwo(), voteBy("user:bo", approveVote), voteBy("user:di", approveVote),
			&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p1", ActionId: "a1", ActionHash: "h1", RequestHash: "r1"}}),
		"retry and outcome": append(append([]event.Payload{created(), started()}, dispatchedAction("a1")...),
			&stewardv1.ActionWaiting{ActionId: "a1", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: now, NextAttempt: 2, Reason: "503"},
			&stewardv1.ActionDispatched{ActionId: "a1", Attempt: 2, Worker: "w1"},
			&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 2, FinishedAt: now, ResultRef: "x", ResultHash: "y"}}),
		"paused with a permit": append(append([]event.Payload{created(), started()}, dispatchedAction("a1")[:3]...),
			&stewardv1.TaskPaused{}, &stewardv1.TaskResumed{}),
		"plan step ends": append(runningPlan(),
			&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY}},
			&stewardv1.ActionDenied{ActionId: "a1", Reasons: []string{"no"}}),
		"plan approval": append(planAsked(), planVoteOf("h1", "user:di", approveVote)),
		"decisions cite context": {created(), started(), attached("c1"), attached("c2"),
			recorded("d1", stewardv1.Provenance_PROVENANCE_REPORTED, 0, "c1"), recorded("d2", stewardv1.Provenance_PROVENANCE_REPORTED, 0, "c1", "c2")},
		"withdrawn while awaiting": append(awaitingTwo(), voteBy("user:bo", approveVote), &stewardv1.ActionWithdrawn{ActionId: "a1", Reason: "changed my mind"}),
	}
	for name, payloads := range histories {
		t.Run(name, func(t *testing.T) {
			recs := stewardtest.History(t, "t1", payloads...)
			stored := make([]*stewardv1.Event, len(recs))
			for i, r := range recs {
				stored[i] = proto.CloneOf(r.Event)
			}
			tk := &stewardv1.Task{}
			for i, r := range recs {
				before, view := proto.CloneOf(tk), copyOf(tk)
				if err := task.Apply(tk, r.Event, r.Sequence); err != nil {
					t.Fatalf("event %d (%s): %v", i, r.Event.Type, err)
				}
				if !proto.Equal(view, before) {
					t.Fatalf("folding %s changed what a copy of the task made before it reads:\n got %v\nwant %v", r.Event.Type, view, before)
				}
				for j := range i + 1 {
					if !proto.Equal(recs[j].Event, stored[j]) {
						t.Fatalf("folding %s changed event %d (%s), which the task shares parts of", r.Event.Type, j, recs[j].Event.Type)
					}
				}
			}
		})
	}
}
