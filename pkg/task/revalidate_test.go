package task_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// The steps of a revalidation, for action a1 of dispatchedAction.
var (
	allow      = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
	askRoles   = stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
	approve    = stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE
	retryAfter = stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY
)

func retryWait() *stewardv1.ActionWaiting {
	return &stewardv1.ActionWaiting{ActionId: "a1", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: timestamppb.New(time.Now()), NextAttempt: 2}
}

func revalidating(permit string, reason stewardv1.RevalidationReason) *stewardv1.ActionRevalidating {
	return &stewardv1.ActionRevalidating{ActionId: "a1", PermitId: permit, Reason: reason, Detail: "test"}
}

func snapshot(id string, d stewardv1.PolicyDecision, roles ...string) *stewardv1.PolicyEvaluated {
	return &stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: id, Decision: d, RequiredApproverRoles: roles}}
}

func newPermit(id string) *stewardv1.ActionPermitted {
	return &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: id, ActionId: "a1", ActionHash: "ha1", RequestHash: "ra1"}}
}

func dispatchUnder(permit string, attempt uint32) *stewardv1.ActionDispatched {
	return &stewardv1.ActionDispatched{ActionId: "a1", Attempt: attempt, Worker: "w1", PermitId: permit}
}

// firstDispatch is dispatchedAction's first dispatch, naming its permit as
// a dispatch does now.
func firstDispatch() []event.Payload {
	steps := dispatchedAction("a1")
	steps[len(steps)-1] = dispatchUnder("pa1", 1)
	return steps
}

func TestRevalidatedRetryGetsANewPermitAndTheNextAttempt(t *testing.T) {
	tk, err := fold(t, firstDispatch(), one(
		retryWait(),
		revalidating("pa1", retryAfter),
	))
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING || a.Attempt != 1 || a.WaitUntil != nil || a.ClaimedBy != "w1" || a.DispatchedPermitId != "pa1" || a.FirstDispatchedAt == nil {
		t.Fatalf("action %v", a)
	}
	tk, err = fold(t, firstDispatch(), one(
		retryWait(),
		revalidating("pa1", retryAfter),
		snapshot("s2", allow),
		newPermit("p2"),
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p2", Worker: "w2"},
		dispatchUnder("p2", 2),
		&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 2}},
	))
	if err != nil {
		t.Fatal(err)
	}
	a = tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.Attempt != 2 || a.Permit.PermitId != "p2" || a.DispatchedPermitId != "p2" || a.Snapshot.SnapshotId != "s2" {
		t.Fatalf("action %v", a)
	}
}

func TestRevalidationOutcomes(t *testing.T) {
	start := append(firstDispatch(), retryWait(), revalidating("pa1", retryAfter))
	t.Run("approval of the same roles still counts", func(t *testing.T) {
		// A first approval by "finance", then a retry revalidated under a
		// policy that still asks "finance".
		steps := []event.Payload{
			&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ActionHash: "ha1", RequestHash: "ra1"}},
			snapshot("s1", askRoles, "finance"),
			&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "ha1", RequiredRoles: []string{"finance"}}},
			&stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "ha1", Decision: approve, DecidedBy: "bo"},
			snapshot("s1b", askRoles, "finance"),
			newPermit("pa1"),
			&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "pa1", Worker: "w1"},
			dispatchUnder("pa1", 1),
			retryWait(),
			revalidating("pa1", retryAfter),
			snapshot("s2", askRoles, "finance"),
		}
		if _, err := fold(t, steps, one(newPermit("p2"))); err != nil {
			t.Fatalf("permit after an approval of the same roles: %v", err)
		}
		more := snapshot("s2", askRoles, "finance")
		more.Snapshot.RequiredApprovals = 2
		steps[len(steps)-1] = more
		if _, err := fold(t, steps, one(newPermit("p2"))); !errs.Is(err, errs.FailedPrecondition) {
			t.Fatalf("permit on one approval although two are asked for now: %v, want refused", err)
		}
		steps[len(steps)-1] = snapshot("s2", askRoles, "treasury")
		if _, err := fold(t, steps, one(newPermit("p2"))); !errs.Is(err, errs.FailedPrecondition) {
			t.Fatalf("permit although other roles are asked for: %v, want refused", err)
		}
		tk, err := fold(t, steps, one(
			&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap2", ActionId: "a1", ActionHash: "ha1", RequiredRoles: []string{"treasury"}}},
			&stewardv1.ApprovalDecided{ApprovalId: "ap2", ActionId: "a1", ActionHash: "ha1", Decision: approve, DecidedBy: "cy"},
			snapshot("s3", askRoles, "treasury"),
			newPermit("p2"),
		))
		if err != nil {
			t.Fatalf("a new approval, then a new permit: %v", err)
		}
		if a := tk.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED || a.Approval.ApprovalId != "ap2" || a.Attempt != 1 {
			t.Fatalf("action %v", a)
		}
	})
	// A call made may have done the work (a write, its outcome not
	// known): the action is unknown, to be settled, not denied.
	t.Run("denied after a call that may have worked: unknown, charged", func(t *testing.T) {
		tk, err := fold(t, start, one(
			snapshot("s2", stewardv1.PolicyDecision_POLICY_DECISION_DENY),
			&stewardv1.ActionDenied{ActionId: "a1", SnapshotId: "s2", Reasons: []string{"frozen"}, CostMicros: 70},
		))
		if err != nil {
			t.Fatal(err)
		}
		a := tk.Actions[0]
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || !strings.Contains(a.Outcome.Reason, "frozen") || !strings.Contains(a.Outcome.Reason, "may have done the work") ||
			a.Outcome.CostMicros != 70 || a.Outcome.Attempt != 1 || tk.BudgetUsed.GetCostMicros() != 70 {
			t.Fatalf("action %v, used %v", a, tk.BudgetUsed)
		}
	})
}

func TestOneDispatchPerPermit(t *testing.T) {
	tests := []struct {
		name  string
		steps []event.Payload
	}{
		{"a retry under the permit already used", one(retryWait(), dispatchUnder("pa1", 2))},
		{"a dispatch under another permit", one(retryWait(), dispatchUnder("p9", 2))},
		{"revalidation of another permit", one(retryWait(), revalidating("p9", retryAfter))},
		{"revalidation without a reason", one(retryWait(), revalidating("pa1", stewardv1.RevalidationReason_REVALIDATION_REASON_UNSPECIFIED))},
		{"revalidation of a dispatched action", one(revalidating("pa1", retryAfter))},
		{"the old permit again", one(retryWait(), revalidating("pa1", retryAfter), snapshot("s2", allow), newPermit("pa1"))},
		{"a permit while the snapshot denies", one(retryWait(), revalidating("pa1", retryAfter), snapshot("s2", stewardv1.PolicyDecision_POLICY_DECISION_DENY), newPermit("p2"))},
		{"a cost on a denial before any call", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := append(firstDispatch(), tt.steps...)
			if tt.steps == nil {
				steps = append(dispatchedAction("a1")[:2], &stewardv1.ActionDenied{ActionId: "a1", CostMicros: 5})
			}
			_, err := fold(t, steps)
			if !errs.Is(err, errs.FailedPrecondition) {
				t.Fatalf("err = %v, want refused", err)
			}
		})
	}
}

func TestResumeMakesPermitsStale(t *testing.T) {
	permitted := dispatchedAction("a1")[:3]
	paused := []event.Payload{&stewardv1.TaskPaused{}, &stewardv1.TaskResumed{}}
	tk, err := fold(t, permitted, paused)
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; !a.PermitStale || a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED {
		t.Fatalf("action %v: want its permit stale", a)
	}
	claimed := dispatchedAction("a1")[:4]
	if _, err := fold(t, claimed, paused, one(dispatchUnder("pa1", 1))); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("dispatch under a stale permit: %v, want refused", err)
	}
	tk, err = fold(t, claimed, paused, one(
		revalidating("pa1", stewardv1.RevalidationReason_REVALIDATION_REASON_RESUME),
		snapshot("s2", allow),
		newPermit("p2"),
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p2", Worker: "w1"},
		dispatchUnder("p2", 1),
	))
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; a.PermitStale || a.Status != stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED || a.Attempt != 1 {
		t.Fatalf("action %v", a)
	}
	// An old ledger's dispatch names no permit, and is taken as it was.
	if _, err := fold(t, claimed, paused, one(&stewardv1.ActionDispatched{ActionId: "a1", Attempt: 1})); err != nil {
		t.Fatalf("an old ledger's dispatch after a resume: %v", err)
	}
}

func TestNotAcceptedRedispatchIsRevalidated(t *testing.T) {
	tk, err := fold(t, firstDispatch(), one(
		&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, Attempt: 1}},
		&stewardv1.ActionSettled{ActionId: "a1", State: stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED, SettledBy: "status query"},
		revalidating("pa1", stewardv1.RevalidationReason_REVALIDATION_REASON_NOT_ACCEPTED),
		snapshot("s2", allow),
		newPermit("p2"),
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p2", Worker: "w1"},
		dispatchUnder("p2", 2),
	))
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; !a.Redispatched || a.Attempt != 2 || a.DispatchedPermitId != "p2" {
		t.Fatalf("action %v", a)
	}
}

func TestFirstDispatchTimeStaysOnANewPermit(t *testing.T) {
	recs := stewardtest.History(t, "t1", append(append([]event.Payload{created(), started()}, firstDispatch()...),
		retryWait(), revalidating("pa1", retryAfter), snapshot("s2", allow), newPermit("p2"),
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p2", Worker: "w1"}, dispatchUnder("p2", 2))...)
	tk, err := task.Fold(recs)
	if err != nil {
		t.Fatal(err)
	}
	var first *timestamppb.Timestamp
	for _, r := range recs {
		if r.Event.GetActionDispatched() != nil {
			first = r.Event.Time
			break
		}
	}
	if got := tk.Actions[0].FirstDispatchedAt; !got.AsTime().Equal(first.AsTime()) {
		t.Fatalf("first_dispatched_at = %v, want the first dispatch's time %v", got.AsTime(), first.AsTime())
	}
}

// TestARetryRefusedUnderItsNewPermitIsUnknown: a retry claimed under a new
// permit may still not go out (the tool's key retention ran out); its
// outcome is then unknown, as from a wait. A claim never dispatched cannot
// be unknown.
func TestARetryRefusedUnderItsNewPermitIsUnknown(t *testing.T) {
	unknownOutcome := &stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, Attempt: 1}}
	if _, err := fold(t, firstDispatch(), one(
		retryWait(), revalidating("pa1", retryAfter), snapshot("s2", allow), newPermit("p2"),
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p2", Worker: "w1"},
		unknownOutcome,
	)); err != nil {
		t.Fatalf("unknown after a claim under a new permit: %v", err)
	}
	if _, err := fold(t, dispatchedAction("a1")[:4], one(unknownOutcome)); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("unknown for a claim never dispatched: %v, want refused", err)
	}
}
