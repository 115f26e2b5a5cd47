package rpc

import (
	"context"
	"testing"

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
