package execution_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/breaker"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestTheRequestSentIsTheOneHashed dispatches an action whose request is
// inline and one whose request is stored: each is sent exactly as hashed.
// A stored request that does not hash to the permit's hash is refused
// before dispatch, and the tool hears nothing.
func TestTheRequestSentIsTheOneHashed(t *testing.T) {
	for _, c := range []struct {
		name string
		form func(b *harness, a *stewardv1.Action, canonical []byte)
		want stewardv1.ActionStatus
	}{
		{"inline", func(_ *harness, a *stewardv1.Action, canonical []byte) { a.Request, a.RequestRef = canonical, "" }, succeededS},
		{"stored", func(*harness, *stewardv1.Action, []byte) {}, succeededS},
		{"stored, another request under the ref", func(b *harness, a *stewardv1.Action, _ []byte) {
			ref, _, err := b.Requests.Put(context.Background(), "t-evil", []byte(`{"params":{"evil":true}}`))
			if err != nil {
				b.t.Fatal(err)
			}
			a.RequestRef = ref
		}, failedS},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newHarness(t, breaker.Config{})
			ts := startTool(t)
			b.register(ts, "charge", false, nil)
			taskID := "t-" + strings.NewReplacer(" ", "-", ",", "").Replace(c.name)
			b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"charge"}}}, &stewardv1.TaskStarted{})
			a := b.ProposedAction(taskID, "p1", "charge", "card-1")
			canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: "charge", ToolVersion: "1", Target: "card-1", Params: []byte(`{}`)})
			if err != nil || action.RequestHash(canonical) != a.RequestHash {
				t.Fatalf("canonical %s, %v: not the kit's request", canonical, err)
			}
			c.form(b, a, canonical)
			b.Append(taskID, &stewardv1.ActionProposed{Action: a},
				&stewardv1.PolicyEvaluated{ActionId: a.ActionId, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
				&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm1", ActionId: a.ActionId, ActionHash: a.ActionHash, RequestHash: a.RequestHash, SnapshotId: "s1", IssuedAt: timestamppb.Now()}})
			got := b.WaitAction(taskID, a.ActionId, status(c.want))
			reqs := ts.Requests()
			if c.want == failedS {
				if len(reqs) != 0 || !strings.Contains(got.Outcome.GetReason(), "does not match the permit") {
					t.Fatalf("tool got %d calls, outcome %q; want none, refused for the hash", len(reqs), got.Outcome.GetReason())
				}
				return
			}
			if len(reqs) != 1 || !bytes.Equal(reqs[0].Body, canonical) {
				t.Fatalf("tool got %d calls; want one with body %s", len(reqs), canonical)
			}
		})
	}
}
