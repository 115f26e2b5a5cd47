package policycanary

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/auditbundle"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policystore"
)

// TestInputsKeptOneTaskAtATime: a canary over many tasks holds only the
// current task's inputs, not every input the stream sent — 10,000s of
// snapshots with large inputs must not all stay in memory.
func TestInputsKeptOneTaskAtATime(t *testing.T) {
	allow := func(context.Context, []byte, time.Time, bool) (auditbundle.Decision, error) {
		return auditbundle.Decision{Decision: "allow"}, nil
	}
	c := New(allow, "rev")
	input, _ := json.Marshal(map[string]string{"pad": string(make([]byte, 1024))})
	for i := range 1000 {
		task := fmt.Sprintf("t-%d", i)
		for j := range 2 {
			rec := &stewardv1.RecordedSnapshot{TaskId: task, Kind: stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_ACTION,
				Snapshot: &stewardv1.PolicySnapshot{SnapshotId: fmt.Sprintf("s-%d-%d", i, j), InputHash: policystore.InputHash(input), InputKept: true,
					Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}}
			if j == 0 {
				rec.Input = input // sent once; the task's second snapshot of it carries none
			}
			c.Add(context.Background(), rec)
		}
		if len(c.inputs) > 1 {
			t.Fatalf("after task %d the canary holds %d inputs, want the current task's only", i, len(c.inputs))
		}
	}
	if r := c.Report(); r.Reevaluated != 2000 {
		t.Errorf("re-evaluated %d of 2000 (not re-evaluable %v)", r.Reevaluated, r.NotReevaluable)
	}
}
