package governance_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestApprovedActionKeepsItsTrace: an action that waits for a person stays
// one trace: the vote recorded by DecideApproval, and the permit that
// follows it, carry the trace the action was proposed in, not the trace
// of the approver's call (which the vote's span links to).
func TestApprovedActionKeepsItsTrace(t *testing.T) {
	const proposal = "4bf92f3577b34da6a3ce929d0e0e4736"
	e := newHarness(t)
	e.traceParent = "00-" + proposal + "-00f067aa0ba902b7-01"
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	wire := e.propose(t, "t", "w1", "wire")
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)

	call := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{9, 9, 9}, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled}))
	if _, err := e.plane.Decide(call, authorizer("user:bo"), &stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: approve}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	recs, err := e.Log.Read(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, rec := range recs {
		switch rec.Event.Payload.(type) {
		case *stewardv1.Event_ApprovalRequested, *stewardv1.Event_ApprovalDecided, *stewardv1.Event_ActionPermitted:
			seen++
			if f := strings.Split(rec.Event.TraceParent, "-"); len(f) != 4 || f[1] != proposal {
				t.Errorf("%s carries %q; want the proposal's trace %s", rec.Event.Type, rec.Event.TraceParent, proposal)
			}
		}
	}
	if seen != 3 {
		t.Fatalf("saw %d of the approval's, the vote's and the permit's events; want 3", seen)
	}
}
