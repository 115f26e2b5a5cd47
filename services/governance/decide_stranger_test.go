package governance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestAStrangerLearnsNoActionHash: one with no role the approval asks
// for is refused for that before any hash is compared, so a wrong guess
// is not answered with the action's plain hash (which, for a request
// quoting a result, would let them test guesses); a wrong hash from an
// approver is refused naming the hash, which they may read.
func TestAStrangerLearnsNoActionHash(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	wire := e.propose(t, "t", "w1", "wire")
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)

	decide := func(who rpc.Identity) error {
		_, err := e.plane.Decide(context.Background(), who, &stewardv1.DecideApprovalRequest{
			ApprovalId: a.Approval.ApprovalId, ActionHash: "x", Decision: approve,
		})
		return err
	}
	err := decide(rpc.Identity{Principal: "user:eve"})
	if !errs.Is(err, errs.PermissionDenied) || strings.Contains(err.Error(), a.ActionHash) {
		t.Fatalf("eve, with no role, deciding with a wrong hash: %v; want permission_denied, not quoting %s", err, a.ActionHash)
	}
	if err := decide(authorizer("user:bo")); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), a.ActionHash) {
		t.Fatalf("an approver deciding with a wrong hash: %v; want invalid_argument naming %s", err, a.ActionHash)
	}
}
