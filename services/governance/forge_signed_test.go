package governance_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
)

// genuineTerms is the wire's action as governance leaves it awaiting
// approval in a harness of its own: its snapshot and approval request,
// each signed with that harness's key, which no other harness trusts.
func genuineTerms(t *testing.T) *stewardv1.Action {
	e := newHarness(t)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	wire := e.propose(t, "t", "w1", "wire")
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if a.SnapshotSigned == nil || a.Approval.GetRequestSigned() == nil {
		t.Fatalf("governance recorded an unsigned snapshot (%v) or approval request (%v)", a.SnapshotSigned, a.Approval.GetRequestSigned())
	}
	return a
}

// TestForgedSignedSnapshotsAndRequestsGetNoPermit: someone holding
// governance's NATS user, ahead of governance, appends the snapshot and
// the approval request governance would record for a wire — the same
// terms, so the checks made of unsigned ones (a fresh evaluation,
// termsHold) pass. Unsigned, as from a log older than these signatures,
// they are taken as before. Signed by a key governance does not trust, or
// by its own key over other terms, they are refused: the snapshot denies
// the action, the approval leads to no permit.
func TestForgedSignedSnapshotsAndRequestsGetNoPermit(t *testing.T) {
	genuine := genuineTerms(t)
	other := proto.CloneOf(genuine.Approval)
	other.Tool, other.ParametersJson = "search", `{"q":"balance"}`
	for _, tc := range []struct {
		name         string
		snapshotSig  func(*harness) *stewardv1.SignedEvent
		request      bool
		requestSig   func(*harness) *stewardv1.SignedEvent
		wantStatus   stewardv1.ActionStatus
		wantDenialOf string
	}{
		{name: "unsigned snapshot, as from an older log", snapshotSig: none, wantStatus: stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL},
		{name: "snapshot signed by an untrusted key", snapshotSig: func(*harness) *stewardv1.SignedEvent { return genuine.SnapshotSigned },
			wantStatus: stewardv1.ActionStatus_ACTION_STATUS_DENIED, wantDenialOf: "is not the one governance signed"},
		{name: "unsigned request, as from an older log", snapshotSig: none, request: true, requestSig: none, wantStatus: stewardv1.ActionStatus_ACTION_STATUS_PERMITTED},
		{name: "request signed by an untrusted key", snapshotSig: none, request: true,
			requestSig: func(*harness) *stewardv1.SignedEvent { return genuine.Approval.RequestSigned }, wantStatus: stewardv1.ActionStatus_ACTION_STATUS_APPROVED},
		{name: "request signed over other terms", snapshotSig: none, request: true, requestSig: func(e *harness) *stewardv1.SignedEvent {
			sig, err := credential.SignEvent(e.signer, &stewardv1.ApprovalRequested{Approval: credential.RequestTerms(other)})
			if err != nil {
				t.Fatal(err)
			}
			return sig
		}, wantStatus: stewardv1.ActionStatus_ACTION_STATUS_APPROVED},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newHarness(t)
			ctx := context.Background()
			e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
			wire := e.propose(t, "t", "w1", "wire")
			e.Append("t", &stewardv1.PolicyEvaluated{ActionId: wire, Snapshot: genuine.Snapshot, Signed: tc.snapshotSig(e)})
			if tc.request {
				e.Append("t", &stewardv1.ApprovalRequested{Approval: credential.RequestTerms(genuine.Approval), Signed: tc.requestSig(e)})
			}
			e.start(t)
			e.Settle(governance.PlaneName)
			if tc.request {
				if _, err := e.vote("t", wire, authorizer("user:bo"), approve); err != nil {
					t.Fatal(err)
				}
				e.Settle(governance.PlaneName)
			}
			tk, _, err := e.Tasks.Load(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			a := task.FindAction(tk, wire)
			t.Logf("the wire is %s %q", a.Status, denialOf(a))
			if a.Status != tc.wantStatus || !strings.Contains(denialOf(a), tc.wantDenialOf) {
				t.Fatalf("the wire is %s %q; want %s %q", a.Status, denialOf(a), tc.wantStatus, tc.wantDenialOf)
			}
		})
	}
}

func none(*harness) *stewardv1.SignedEvent { return nil }
