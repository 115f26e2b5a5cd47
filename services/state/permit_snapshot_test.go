package state_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// actInOne is act with policy's allow recorded with the permit, as
// governance records an allow with nothing to wait for.
func actInOne(id, rev string) []event.Payload {
	steps := act(id, "search", "acct:1", rev)
	snap := steps[1].(*stewardv1.PolicyEvaluated).Snapshot
	snap.Reasons = []string{"reads are allowed"}
	permit := steps[2].(*stewardv1.ActionPermitted).Permit
	permit.SnapshotId = snap.SnapshotId
	return append([]event.Payload{steps[0], &stewardv1.ActionPermitted{Permit: permit, Snapshot: snap}}, steps[3:]...)
}

// TestSnapshotRecordedWithItsPermitIsReadAsASnapshot: the receipt names
// the policy revision of a snapshot recorded with its permit, and the
// timeline says, in the permit's one entry, what policy said.
func TestSnapshotRecordedWithItsPermitIsReadAsASnapshot(t *testing.T) {
	env := stewardtest.NewEnv(t)
	history := append(running(), actInOne("act-1", "rev-C")...)
	history = append(history, succeededOutcome("act-1", 1))
	env.Append("one", history...)
	q, _ := serveState(t, env)

	r := getReceipt(t, q, "one").Receipt
	if !slices.Equal(r.PolicyRevisions, []string{"rev-C"}) {
		t.Errorf("policy revisions %v, want [rev-C]", r.PolicyRevisions)
	}
	if len(r.Calls) != 1 || r.Calls[0].PolicyRevision != "rev-C" || r.Calls[0].SnapshotId != "s-act-1" ||
		r.Calls[0].Decision != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW {
		t.Errorf("calls: %v", r.Calls)
	}

	recs, err := env.Log.Read(context.Background(), "one")
	if err != nil {
		t.Fatal(err)
	}
	entries := state.Timeline(recs)
	if len(entries) != len(recs) {
		t.Fatalf("%d timeline entries for %d events", len(entries), len(recs))
	}
	var permitted string
	for _, e := range entries {
		if e.Type == event.TypeActionPermitted {
			permitted = e.Summary
		}
	}
	for _, want := range []string{"said allow for action act-1: reads are allowed", "Permit pm-act-1 issued for action act-1"} {
		if !strings.Contains(permitted, want) {
			t.Errorf("the permit's entry %q does not say %q", permitted, want)
		}
	}
}
