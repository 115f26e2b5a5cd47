package rpc

import (
	"context"
	"log/slog"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestAProcedureWithoutARuleIsRefused: the table fails closed.
func TestAProcedureWithoutARuleIsRefused(t *testing.T) {
	admin := Identity{Principal: "user:root", Roles: []string{"admin"}, Verified: true}
	err := authorize(context.Background(), nil, "/steward.v1.TaskService/Unwritten", admin, &stewardv1.PauseTaskRequest{})
	if !errs.Is(err, errs.PermissionDenied) {
		t.Fatalf("a procedure without a row: %v, want PermissionDenied", err)
	}
	// A party rule on a server without the hook fails too, rather than
	// letting the caller through.
	agent := Identity{Principal: "agent:a", Verified: true}
	if err := authorize(context.Background(), nil, "/steward.v1.TaskService/PauseTask", agent, &stewardv1.PauseTaskRequest{TaskId: "t1"}); err == nil {
		t.Fatal("a party rule without a hook let the caller through")
	}
}

// TestAStreamedRequestIsCheckedAsItArrives: a stream's request is not
// there when the edge runs, so a party rule is applied on Receive.
func TestAStreamedRequestIsCheckedAsItArrives(t *testing.T) {
	parties := func(context.Context, string) (access.TaskParties, error) {
		return access.TaskParties{Agents: []string{"agent:a"}}, nil
	}
	for who, allowed := range map[string]bool{"agent:a": true, "user:eve": false} {
		edge := &edgeInterceptor{log: slog.New(slog.DiscardHandler), parties: parties}
		check := edge.streamCheck(context.Background(), fakeConn{}.Spec().Procedure, Identity{Principal: who, Verified: true})
		c := checkedConn{StreamingHandlerConn: fakeConn{}, check: check}
		err := c.Receive(&stewardv1.PauseTaskRequest{})
		if allowed != (err == nil) || !allowed && connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("%s: %v, allowed %v", who, err, allowed)
		}
	}
}

// fakeConn receives a PauseTaskRequest for task t1.
type fakeConn struct{ connect.StreamingHandlerConn }

func (fakeConn) Spec() connect.Spec {
	return connect.Spec{Procedure: "/steward.v1.TaskService/PauseTask", StreamType: connect.StreamTypeServer}
}

func (fakeConn) Receive(m any) error {
	m.(*stewardv1.PauseTaskRequest).TaskId = "t1"
	return nil
}
