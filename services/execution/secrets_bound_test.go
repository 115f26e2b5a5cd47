package execution_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestARequestQuotingASecretOverAndOverIsRefused: whoever has seen a
// commitment of a task may quote it in a later proposal of the task, in
// a field no schema marks secret, as often as the parameters' size
// allows. What the request would open to is bounded (action.MaxRevealed):
// the action is refused before dispatch, and the tool is not called with a
// body many times the size of any proposal.
func TestARequestQuotingASecretOverAndOverIsRefused(t *testing.T) {
	b, sealer := newSecretHarness(t)
	ts := startTool(t)
	b.register(ts, "login", false, func(c *stewardv1.ToolContract) {
		c.ParametersSchema = `{"properties":{"password":{"writeOnly":true}}}`
	})
	const taskID = "quoting-task"
	b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"login"}}}, &stewardv1.TaskStarted{})

	value := []byte(`"` + strings.Repeat("p", 200<<10) + `"`)
	c := sealer.Commit(taskID, value)
	quote := `{"$secret":"` + c + `"}`
	params := `{"password":` + quote + `,"echo":[` + strings.TrimSuffix(strings.Repeat(quote+",", 10), ",") + `]}`
	canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: "login", ToolVersion: "1", Target: "acct", Params: []byte(params)})
	if err != nil {
		t.Fatal(err)
	}
	id, hash := action.ID(taskID, "quoting"), action.RequestHash(canonical)
	a := &stewardv1.Action{
		ActionId: id, ProposalId: "quoting", Tool: "login", ToolVersion: "1", Target: "acct", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		Request: canonical, RequestHash: hash, ActionHash: action.Hash(id, hash), OpKey: action.OpKey(taskID, id),
		SealedSecrets: []*stewardv1.SealedSecret{{Commitment: c, Sealed: sealer.Seal(taskID, c, value)}},
	}
	b.Append(taskID, &stewardv1.ActionProposed{Action: a},
		&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-quoting", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm-" + id, ActionId: id, ActionHash: a.ActionHash, RequestHash: hash, SnapshotId: "s-quoting", IssuedAt: timestamppb.Now()}})
	got := b.WaitAction(taskID, id, func(a *stewardv1.Action) bool {
		return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_FAILED
	})
	if got.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED || !strings.Contains(got.Outcome.GetReason(), "refused before dispatch: a secret parameter does not open") {
		t.Errorf("the action: %v (%.200s); want refused before dispatch", got.Status, got.Outcome.GetReason())
	}
	if strings.Contains(got.Outcome.GetReason(), "ppp") {
		t.Errorf("the refusal quotes the secret value")
	}
	if n := ts.CallsFor(a.OpKey); n != 0 {
		t.Errorf("the tool was called %d times, with a body of %d quoted secrets", n, 11)
	}
}
