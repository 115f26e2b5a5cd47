package policycanary_test

import (
	"context"
	"fmt"
	"time"

	"github.com/steward-run/steward/pkg/auditbundle"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policycanary"
)

// A candidate that retires the search tool tightens a recorded allow of
// it, and the canary's exit code says so.
func Example() {
	retired := func(_ context.Context, _ []byte, _ time.Time, _ bool) (auditbundle.Decision, error) {
		return auditbundle.Decision{Decision: "deny", Reasons: []string{"search is retired"}}, nil
	}
	canary := policycanary.New(retired, "sha256:next")
	canary.Add(context.Background(), &stewardv1.RecordedSnapshot{
		TaskId: "t1", ActionId: "a1", Tool: "search", Kind: stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_ACTION,
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", InputHash: "55461889753e2f8ffe7ae5c9384a8ef25dff3d1ee5b46d9acbd0f161230a5d78", InputKept: true, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW},
		Input:    []byte(`{"action": {"tool": "search"}}`),
	})
	r := canary.Report()
	for _, g := range r.Groups {
		fmt.Println(g.Direction, g.Count, g.Tool, g.Transition, g.Reason)
	}
	fmt.Println("exit", r.ExitCode())
	// Output:
	// tightened 1 search allow → deny search is retired
	// exit 2
}
