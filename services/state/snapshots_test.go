package state_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// evaluated is an action of tool proposed and evaluated at at.
func evaluated(id, tool string, at time.Time) []event.Payload {
	return []event.Payload{
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "p-" + id, Tool: tool, ToolVersion: "1.0.0", ActionHash: "h-" + id, RequestHash: "r-" + id, OpKey: "op-" + id}},
		&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + id, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW,
			EvaluatedAt: timestamppb.New(at)}},
	}
}

// listSnapshots returns the snapshot ids req streams, or its error.
func listSnapshots(t *testing.T, audit stewardv1connect.AuditServiceClient, req *stewardv1.ListPolicySnapshotsRequest) ([]string, error) {
	t.Helper()
	stream, err := audit.ListPolicySnapshots(context.Background(), connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var ids []string
	for stream.Receive() {
		s := stream.Msg().Snapshot
		ids = append(ids, s.TaskId+"/"+s.Tool+"/"+s.Snapshot.GetSnapshotId())
	}
	return ids, stream.Err()
}

// TestListPolicySnapshots: the snapshots of every task, each with its
// task and tool, in the range asked (since inclusive, until exclusive),
// up to the limit; another tenant, a range backwards and a limit past the
// most are refused, naming what.
func TestListPolicySnapshots(t *testing.T) {
	env := stewardtest.NewEnv(t)
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	env.Append("one", append(running(), evaluated("a1", "search", t0)...)...)
	two := append(running(), evaluated("b1", "wire", t0.Add(time.Hour))...)
	env.Append("two", append(two, evaluated("b2", "search", t0.Add(2*time.Hour))...)...)
	_, audit := serveState(t, env)
	at := func(h int) *timestamppb.Timestamp { return timestamppb.New(t0.Add(time.Duration(h) * time.Hour)) }
	for _, c := range []struct {
		name string
		req  *stewardv1.ListPolicySnapshotsRequest
		want []string
	}{
		{"all", &stewardv1.ListPolicySnapshotsRequest{}, []string{"one/search/s-a1", "two/wire/s-b1", "two/search/s-b2"}},
		{"since", &stewardv1.ListPolicySnapshotsRequest{Since: at(1)}, []string{"two/wire/s-b1", "two/search/s-b2"}},
		{"until", &stewardv1.ListPolicySnapshotsRequest{Until: at(1)}, []string{"one/search/s-a1"}},
		{"limit", &stewardv1.ListPolicySnapshotsRequest{Limit: 2}, []string{"one/search/s-a1", "two/wire/s-b1"}},
	} {
		got, err := listSnapshots(t, audit, c.req)
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
	for _, c := range []struct {
		req   *stewardv1.ListPolicySnapshotsRequest
		code  connect.Code
		field string
	}{
		{&stewardv1.ListPolicySnapshotsRequest{Tenant: "acme"}, connect.CodeNotFound, "acme"},
		{&stewardv1.ListPolicySnapshotsRequest{Since: at(2), Until: at(1)}, connect.CodeInvalidArgument, "until"},
		{&stewardv1.ListPolicySnapshotsRequest{Limit: 1_000_001}, connect.CodeInvalidArgument, "limit"},
		{&stewardv1.ListPolicySnapshotsRequest{Since: &timestamppb.Timestamp{Nanos: -1}}, connect.CodeInvalidArgument, "since"},
	} {
		_, err := listSnapshots(t, audit, c.req)
		if connect.CodeOf(err) != c.code || err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: %v, want %v naming %s", c.req, err, c.code, c.field)
		}
	}
}
