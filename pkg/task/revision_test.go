package task_test

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// by is payload as an event of task t1, recorded by principal.
func by(t *testing.T, principal string, payload event.Payload) *stewardv1.Event {
	ev := stewardtest.Event(t, "t1", payload)
	ev.Actor.Principal = principal
	return ev
}

// sealed folds evs, in order, as the log holds them.
func sealed(t *testing.T, evs ...*stewardv1.Event) (*stewardv1.Task, error) {
	t.Helper()
	var prev []byte
	recs := make([]*stewardv1.EventRecord, 0, len(evs))
	for i, ev := range evs {
		if _, err := event.Seal(ev, prev); err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		recs = append(recs, &stewardv1.EventRecord{Sequence: uint64(i + 1), Event: ev})
	}
	return task.Fold(recs)
}

// revisable is a running task of owner user:own, with a plan whose step a
// ran action a1, and a revision of its intent proposed by the agent.
func revisable(t *testing.T) (evs []*stewardv1.Event, revised *stewardv1.TaskContract, hash string) {
	t.Helper()
	k := &stewardv1.TaskContract{TaskId: "t1", Intent: "i", AccountableOwnerRef: "user:own"}
	revised = proto.CloneOf(k)
	revised.Intent = "i, and j"
	hash, err := task.ContractHash(revised)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(runningPlan()[1:], &stewardv1.ContractRevisionProposed{RevisionId: "rev-1", Version: 2, ContractHash: hash, Contract: revised, Reason: "more", ProposedBy: "agent"}) {
		evs = append(evs, by(t, "agent", p))
	}
	return append([]*stewardv1.Event{by(t, "agent", &stewardv1.TaskCreated{Contract: k})}, evs...), revised, hash
}

// TestFoldRevisesTheContract: a plan step started before a revision takes
// effect stays under version 1, one started after is under version 2; the
// revision takes effect at the owner's decision once policy allowed it.
func TestFoldRevisesTheContract(t *testing.T) {
	evs, _, hash := revisable(t)
	evs = append(evs,
		by(t, "steward", &stewardv1.ContractRevisionEvaluated{RevisionId: "rev-1", ContractHash: hash, Snapshot: &stewardv1.PolicySnapshot{Decision: planAllow}}),
		by(t, "user:own", &stewardv1.ContractRevisionDecided{RevisionId: "rev-1", ContractHash: hash, Decision: &stewardv1.ContractRevisionDecision{
			DecidedBy: "user:own", Approve: true, Capacity: stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_OWNER}}),
		by(t, "agent", stepAction("b1", "")), by(t, "agent", &stewardv1.PlanStepStarted{Version: 1, StepId: "b", ActionId: "b1", Attempt: 1}))
	tk, err := sealed(t, evs...)
	if err != nil {
		t.Fatal(err)
	}
	if tk.ContractVersion != 2 || tk.ContractHash != hash || tk.Contract.Intent != "i, and j" || len(tk.ContractVersions) != 2 {
		t.Fatalf("version %d hash %s intent %q, %d versions; want version 2", tk.ContractVersion, tk.ContractHash, tk.Contract.Intent, len(tk.ContractVersions))
	}
	if a, b := task.VersionOf(task.FindStep(tk, "a").ContractVersion), task.VersionOf(task.FindStep(tk, "b").ContractVersion); a != 1 || b != 2 {
		t.Fatalf("steps under versions %d and %d, want 1 and 2", a, b)
	}
	if a1, b1 := task.VersionOf(task.FindAction(tk, "a1").ContractVersion), task.VersionOf(task.FindAction(tk, "b1").ContractVersion); a1 != 1 || b1 != 2 {
		t.Fatalf("actions under versions %d and %d, want 1 and 2", a1, b1)
	}
}

// ev is evs as a list of their own.
func ev(evs ...*stewardv1.Event) []*stewardv1.Event { return evs }

// TestFoldRefusesRevisionEvents: what the fold refuses, so that an
// auditor's replay refuses it too.
func TestFoldRefusesRevisionEvents(t *testing.T) {
	base, revised, hash := revisable(t)
	wider := proto.CloneOf(revised)
	wider.RiskTier = stewardv1.RiskTier_RISK_TIER_LOW
	widerHash, _ := task.ContractHash(wider)
	decide := func(who string, c stewardv1.ContractRevisionCapacity) *stewardv1.Event {
		return by(t, who, &stewardv1.ContractRevisionDecided{RevisionId: "rev-1", ContractHash: hash, Decision: &stewardv1.ContractRevisionDecision{DecidedBy: who, Approve: true, Capacity: c}})
	}
	owner := stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_OWNER
	tests := []struct {
		name string
		evs  []*stewardv1.Event
		code errs.Code
	}{
		{"a second open revision", slices.Concat(base, ev(by(t, "agent", &stewardv1.ContractRevisionProposed{RevisionId: "rev-2", Version: 2, ContractHash: hash, Contract: revised, Reason: "r", ProposedBy: "agent"}))), errs.FailedPrecondition},
		{"a contract that does not hash to its hash", slices.Concat(base[:len(base)-1], ev(by(t, "agent", &stewardv1.ContractRevisionProposed{RevisionId: "rev-1", Version: 2, ContractHash: "beef", Contract: revised, Reason: "r", ProposedBy: "agent"}))), errs.FailedPrecondition},
		{"a change of an unrevisable field", slices.Concat(base[:len(base)-1], ev(by(t, "agent", &stewardv1.ContractRevisionProposed{RevisionId: "rev-1", Version: 2, ContractHash: widerHash, Contract: wider, Reason: "r", ProposedBy: "agent"}))), errs.FailedPrecondition},
		{"another version", slices.Concat(base[:len(base)-1], ev(by(t, "agent", &stewardv1.ContractRevisionProposed{RevisionId: "rev-1", Version: 3, ContractHash: hash, Contract: revised, Reason: "r", ProposedBy: "agent"}))), errs.FailedPrecondition},
		{"no reason", slices.Concat(base[:len(base)-1], ev(by(t, "agent", &stewardv1.ContractRevisionProposed{RevisionId: "rev-1", Version: 2, ContractHash: hash, Contract: revised, ProposedBy: "agent"}))), errs.Invalid},
		{"a stranger as owner", slices.Concat(base, ev(decide("user:x", owner))), errs.PermissionDenied},
		{"the proposer as policy's approver", slices.Concat(base, ev(decide("agent", stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_POLICY_APPROVER))), errs.PermissionDenied},
		{"an ended task", slices.Concat(base[:len(base)-1], ev(by(t, "agent", cancelled()), base[len(base)-1])), errs.FailedPrecondition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := sealed(t, tt.evs...); !errs.Is(err, tt.code) {
				t.Fatalf("err = %v, want %v", err, tt.code)
			}
		})
	}
}

// TestFoldBoundsRevisions: the fold, an auditor's replay too, refuses a
// proposal past task.MaxContractRevisions, as the control plane does.
func TestFoldBoundsRevisions(t *testing.T) {
	evs, revised, hash := revisable(t)
	proposal := evs[len(evs)-1]
	tk, err := sealed(t, evs[:len(evs)-1]...)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Check(tk, proposal); err != nil {
		t.Fatalf("the first proposal: %v", err)
	}
	for i := range task.MaxContractRevisions {
		tk.ContractRevisions = append(tk.ContractRevisions, &stewardv1.ContractRevision{RevisionId: fmt.Sprintf("old-%d", i), Version: 2, ContractHash: hash, Contract: revised,
			State: stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_REJECTED})
	}
	if err := task.Check(tk, proposal); !errs.Is(err, errs.TooLarge) {
		t.Fatalf("proposal %d: %v, want TooLarge", task.MaxContractRevisions+1, err)
	}
}
