package governance_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// awaitEscalation writes a running task whose one action, proposed by
// user:a, waits for a treasurer's approval (or required of them), asked
// for ago; its contract names an authorizer and, past escalate, a backup,
// under separation of duties.
func (e *harness) awaitEscalation(t *testing.T, id, backup string, ago, remind, escalate time.Duration, required uint32) {
	t.Helper()
	contract := &stewardv1.TaskContract{
		Intent: "pay", DesiredOutcome: "paid", RequesterRef: "user:req", AccountableOwnerRef: "user:req",
		AuthorizerRef: "user:auth", ApprovalBackupRef: backup, SeparationOfDuties: true,
		Timers: &stewardv1.TaskTimers{ApprovalRemindAfter: durationpb.New(remind), ApprovalEscalateAfter: durationpb.New(escalate),
			ApprovalSuspendAfter: durationpb.New(time.Hour)},
	}
	for _, p := range []event.Payload{
		&stewardv1.TaskCreated{Contract: contract},
		&stewardv1.TaskStarted{},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: actionID, ProposalId: "prop-1", Tool: "wire", ActionHash: "h", RequestHash: "r", ProposedBy: "user:a"}},
		&stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{
			ApprovalId: approvalID + "-" + id, TaskId: id, ActionId: actionID, ActionHash: "h",
			RequiredRoles: []string{"treasurer"}, RequiredApprovals: required, RequestedAt: timestamppb.New(time.Now().Add(-ago)),
		}},
	} {
		e.Append(id, p)
	}
}

// TestAWaitingApprovalIsEscalatedToTheBackup: reminded, then escalated to
// the contract's backup — each once, in that order, on the log — who,
// holding none of the approval's roles and before the escalation refused,
// may then approve it in the absent authorizer's stead; the proposer still
// may not, escalated or not. A backup by role: anyone holding it, but the
// proposer.
func TestAWaitingApprovalIsEscalatedToTheBackup(t *testing.T) {
	e := newHarness(t)
	e.awaitEscalation(t, "by-name", "user:backup", 2*time.Second, time.Second, 2*time.Second, 1)
	e.awaitEscalation(t, "by-role", "role:on-call", 0, time.Second, 2*time.Second, 1)
	e.start(t, withoutSigner)
	backup := rpc.Identity{Principal: "user:backup"}
	e.waitCounts(t, "by-name", func(n map[string]int, _ *stewardv1.Task) bool { return n[event.TypeApprovalEscalated] == 1 })
	recs := e.counts(t, "by-name")
	if recs[event.TypeApprovalReminded] != 1 {
		t.Fatalf("escalated with %d reminders before it, want 1", recs[event.TypeApprovalReminded])
	}
	if a := e.waitStatus("by-name", actionID, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL); a.Approval.EscalatedTo != "user:backup" || a.Approval.EscalatedAt == nil {
		t.Fatalf("the approval after its escalation: %v", a.Approval)
	}
	if _, err := e.vote("by-name", actionID, rpc.Identity{Principal: "user:a", Roles: []string{"treasurer"}}, approve); errs.CodeOf(err) != errs.PermissionDenied {
		t.Fatalf("the proposer approving the escalated approval: %v, want refused", err)
	}
	ap, err := e.vote("by-name", actionID, backup, approve)
	if err != nil || ap.Decision != approve {
		t.Fatalf("the backup approving: %v, %v", ap.GetDecision(), err)
	}

	// By role: before the escalation the role's holder may not decide;
	// after it they may, the proposer holding it too still may not.
	oncall := rpc.Identity{Principal: "user:oc", Roles: []string{"on-call"}}
	if _, err := e.vote("by-role", actionID, oncall, approve); errs.CodeOf(err) != errs.PermissionDenied {
		t.Fatalf("the backup role before the escalation: %v, want refused", err)
	}
	e.waitCounts(t, "by-role", func(n map[string]int, _ *stewardv1.Task) bool { return n[event.TypeApprovalEscalated] == 1 })
	proposer := rpc.Identity{Principal: "user:a", Roles: []string{"on-call"}}
	if _, err := e.vote("by-role", actionID, proposer, approve); errs.CodeOf(err) != errs.PermissionDenied || !strings.Contains(err.Error(), "proposed") {
		t.Fatalf("the proposer holding the backup role: %v, want refused as the proposer", err)
	}
	if ap, err := e.vote("by-role", actionID, oncall, approve); err != nil || ap.Decision != approve {
		t.Fatalf("the backup role's holder approving: %v, %v", ap.GetDecision(), err)
	}
}

// TestABackupByRoleStandsInForTheAuthorizerWhenEverItVotes: of two
// approvals the authorizer must be among, the backup by role gives the
// first — as the backup, on the record — and a treasurer may then give
// the last; before, that last vote was refused, a role's holder not being
// known for the backup once they had voted.
func TestABackupByRoleStandsInForTheAuthorizerWhenEverItVotes(t *testing.T) {
	e := newHarness(t)
	e.awaitEscalation(t, "two", "role:on-call", 2*time.Second, time.Second, 2*time.Second, 2)
	e.start(t, withoutSigner)
	e.waitCounts(t, "two", func(n map[string]int, _ *stewardv1.Task) bool { return n[event.TypeApprovalEscalated] == 1 })
	ap, err := e.vote("two", actionID, rpc.Identity{Principal: "user:oc", Roles: []string{"on-call"}}, approve)
	if err != nil || len(ap.Votes) != 1 || !ap.Votes[0].AsBackup {
		t.Fatalf("the backup's vote: %v, %v; want one vote, as the backup", ap.GetVotes(), err)
	}
	ap, err = e.vote("two", actionID, rpc.Identity{Principal: "user:t", Roles: []string{"treasurer"}}, approve)
	if err != nil || ap.Decision != approve || ap.Votes[1].AsBackup {
		t.Fatalf("the treasurer's last vote after the backup's: %v, %v", ap.GetDecision(), err)
	}
}

// TestAnEscalationGivesNothingBeforeItsTime: an ApprovalEscalated on the
// log before the contract's approval_escalate_after — appended by another
// hand than governance's timer, dated now or dated past the threshold —
// gives the backup nothing: it is judged by governance's clock when the
// vote comes, not by the event's time.
func TestAnEscalationGivesNothingBeforeItsTime(t *testing.T) {
	e := newHarness(t)
	e.awaitEscalation(t, "early", "user:backup", 0, 10*time.Minute, 30*time.Minute, 1)
	e.Append("early", &stewardv1.ApprovalEscalated{ApprovalId: approvalID + "-early", ActionId: actionID, ToRef: "user:backup"})
	e.awaitEscalation(t, "late-dated", "user:backup", 0, 10*time.Minute, 30*time.Minute, 1)
	ev, err := event.New(event.Meta{TaskID: "late-dated", Actor: &stewardv1.Actor{Principal: "steward", Plane: "governance"}, Time: time.Now().Add(31 * time.Minute)},
		&stewardv1.ApprovalEscalated{ApprovalId: approvalID + "-late-dated", ActionId: actionID, ToRef: "user:backup"})
	if err != nil {
		t.Fatal(err)
	}
	e.AppendEvents("late-dated", ev)
	e.start(t, withoutSigner)
	for _, id := range []string{"early", "late-dated"} {
		if a := e.waitStatus(id, actionID, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL); a.Approval.EscalatedTo != "user:backup" {
			t.Fatalf("%s: the forged escalation is not on the approval: %v", id, a.Approval)
		}
		_, err := e.vote(id, actionID, rpc.Identity{Principal: "user:backup"}, approve)
		if errs.CodeOf(err) != errs.PermissionDenied || !strings.Contains(err.Error(), "to whom it was escalated from ") {
			t.Fatalf("%s: the backup before its time: %v, want refused, saying from when they may decide", id, err)
		}
	}
}

// TestAnEscalationWaitsForThisPlanesClock: a governance whose clock is
// behind the server that fires its timers records the escalation when its
// own clock reaches it, not before — and the backup it names may decide.
func TestAnEscalationWaitsForThisPlanesClock(t *testing.T) {
	e := newHarness(t)
	e.clock.Advance(-1500 * time.Millisecond)
	e.awaitEscalation(t, "skew", "user:backup", 0, time.Second, 2*time.Second, 1)
	e.start(t, withoutSigner)
	e.waitCounts(t, "skew", func(n map[string]int, _ *stewardv1.Task) bool { return n[event.TypeApprovalEscalated] == 1 })
	if _, err := e.vote("skew", actionID, rpc.Identity{Principal: "user:backup"}, approve); err != nil {
		t.Fatalf("the backup after the escalation: %v", err)
	}
}

// TestABackupsVoteFromBeforeAsBackupStillStandsIn: a backup by name who
// voted after the escalation, recorded before votes said as_backup, stood
// in for the authorizer then, and still does: the last vote is taken.
func TestABackupsVoteFromBeforeAsBackupStillStandsIn(t *testing.T) {
	e := newHarness(t)
	e.awaitEscalation(t, "old", "user:backup", 3*time.Hour, time.Hour, 2*time.Hour, 2)
	e.Append("old", &stewardv1.ApprovalEscalated{ApprovalId: approvalID + "-old", ActionId: actionID, ToRef: "user:backup"})
	e.Append("old", &stewardv1.ApprovalDecided{ApprovalId: approvalID + "-old", ActionId: actionID, ActionHash: "h", Decision: approve, DecidedBy: "user:backup"})
	e.start(t, withoutSigner)
	if _, err := e.vote("old", actionID, rpc.Identity{Principal: "user:t", Roles: []string{"treasurer"}}, approve); err != nil {
		t.Fatalf("the treasurer's last vote after an older backup's: %v", err)
	}
}
