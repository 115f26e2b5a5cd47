package execution_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestSecretsOpenJustBeforeTheCall: the tool receives the clear value of a
// sealed secret, and its echo of it is kept redacted, in its answer as in
// the status query's that settles an unknown outcome; a sealed value that
// does not commit to the request's commitment is refused before dispatch,
// and the tool is not called.
func TestSecretsOpenJustBeforeTheCall(t *testing.T) {
	b, sealer := newSecretHarness(t)
	ts := startTool(t)
	b.register(ts, "login", false, func(c *stewardv1.ToolContract) {
		c.ParametersSchema = `{"properties":{"password":{"type":"string","writeOnly":true}}}`
	})
	const taskID = "secret-task"
	slow := startTool(t, stewardtest.Late)
	b.register(slow, "slow_login", true, func(c *stewardv1.ToolContract) {
		c.ParametersSchema = `{"properties":{"password":{"type":"string","writeOnly":true}}}`
	})
	b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"login", "slow_login"}}}, &stewardv1.TaskStarted{})
	tool := "login"
	run := func(pid, value string, sealed []byte) *stewardv1.Action {
		c := sealer.Commit(taskID, []byte(`"`+value+`"`))
		if sealed == nil {
			sealed = sealer.Seal(taskID, c, []byte(`"`+value+`"`))
		}
		canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: tool, ToolVersion: "1", Target: "acct",
			Params: []byte(`{"password":{"$secret":"` + c + `"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		id, hash := action.ID(taskID, pid), action.RequestHash(canonical)
		a := &stewardv1.Action{
			ActionId: id, ProposalId: pid, Tool: tool, ToolVersion: "1", Target: "acct", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
			Request: canonical, RequestHash: hash, ActionHash: action.Hash(id, hash), OpKey: action.OpKey(taskID, id),
			SealedSecrets: []*stewardv1.SealedSecret{{Commitment: c, Sealed: sealed}},
		}
		b.Append(taskID, &stewardv1.ActionProposed{Action: a},
			&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + pid, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
			&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm-" + id, ActionId: id, ActionHash: a.ActionHash, RequestHash: hash, SnapshotId: "s-" + pid, IssuedAt: timestamppb.Now()}})
		return b.WaitAction(taskID, id, func(a *stewardv1.Action) bool {
			return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_FAILED
		})
	}

	ok := run("good", "pw-clear", nil)
	if ok.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("the action with a sound secret: %v (%s)", ok.Status, ok.Outcome.GetReason())
	}
	w := ts.Worked()
	if len(w) != 1 || !strings.Contains(string(w[0].Params), `"password":"pw-clear"`) {
		t.Fatalf("the tool got %v; want the clear password", w)
	}
	if strings.Contains(string(ok.Outcome.GetResult()), "pw-clear") || !strings.Contains(string(ok.Outcome.GetResult()), "[secret]") {
		t.Errorf("the kept result is %s; want the echoed password redacted", ok.Outcome.GetResult())
	}

	// Sealed for the same commitment, but holding another value.
	forged := sealer.Seal(taskID, sealer.Commit(taskID, []byte(`"pw-forged"`)), []byte(`"pw-other"`))
	bad := run("forged", "pw-forged", forged)
	if bad.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED || !strings.Contains(bad.Outcome.GetReason(), "refused before dispatch: a secret parameter does not open") {
		t.Errorf("a sealed value that does not match: %v (%s); want refused before dispatch", bad.Status, bad.Outcome.GetReason())
	}
	if n := ts.CallsFor(bad.OpKey); n != 0 {
		t.Errorf("the tool was called %d times for the refused action", n)
	}

	// A call whose answer never came, settled by the status query, whose
	// answer echoes the request: kept redacted too.
	tool = "slow_login"
	settled := run("slow", "pw-slow", nil)
	if settled.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || settled.SettledBy != "status query" {
		t.Fatalf("the slow call: %v settled by %q", settled.Status, settled.SettledBy)
	}
	result, err := b.Results.Result(context.Background(), settled.Outcome.Result, settled.Outcome.ResultRef, settled.Outcome.ResultHash)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(result), "pw-slow") || !strings.Contains(string(result), "[secret]") {
		t.Errorf("the settled result is %s; want the echoed password redacted", result)
	}
}

// newSecretHarness is a harness whose execution plane opens sealed values with
// the sealer it returns.
func newSecretHarness(t *testing.T) (*harness, *secret.Sealer) {
	t.Helper()
	sealer, err := secret.New([]byte(strings.Repeat("k", secret.KeySize)))
	if err != nil {
		t.Fatal(err)
	}
	b := newHarness(t, breaker.Config{})
	b.plane.Stop()
	b.cfg.Secrets = sealer
	b.start()
	return b, sealer
}
