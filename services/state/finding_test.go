package state_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestRecordFindingOpenMode records findings without --auth, where anyone
// named by Steward-Principal may: on a cancelled task, about one of its
// actions; GetTask shows it. Bad input is refused naming the field, and a
// request id is one finding on one task.
func TestRecordFindingOpenMode(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	h := append(running(), act("a1", "wire", "acct:1", "r1")...)
	env.Append("t1", append(h, succeededOutcome("a1", 1), &stewardv1.TaskCancelled{})...)
	env.Append("t2", running()...)
	query, audit := serveState(t, env)

	record := func(req *stewardv1.RecordFindingRequest) (*stewardv1.RecordFindingResponse, error) {
		r := connect.NewRequest(req)
		r.Header().Set(rpc.PrincipalHeader, "user:audrey")
		resp, err := audit.RecordFinding(ctx, r)
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}
	violation := stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION
	for _, tt := range []struct {
		req  *stewardv1.RecordFindingRequest
		code connect.Code
		says string
	}{
		{&stewardv1.RecordFindingRequest{Kind: violation, Description: "x"}, connect.CodeInvalidArgument, "task_id"},
		{&stewardv1.RecordFindingRequest{TaskId: "t1", Kind: 7, Description: "x"}, connect.CodeInvalidArgument, "kind"},
		{&stewardv1.RecordFindingRequest{TaskId: "t1", Kind: violation, Description: strings.Repeat("x", 4097)}, connect.CodeResourceExhausted, "description"},
		{&stewardv1.RecordFindingRequest{TaskId: "t1", Kind: violation, Description: "x", ActionId: "a9"}, connect.CodeInvalidArgument, "action_id"},
		{&stewardv1.RecordFindingRequest{TaskId: "t9", Kind: violation, Description: "x"}, connect.CodeNotFound, "t9"},
	} {
		if _, err := record(tt.req); connect.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("RecordFinding(%v) = %v, want %v saying %q", tt.req, err, tt.code, tt.says)
		}
	}

	req := &stewardv1.RecordFindingRequest{TaskId: "t1", RequestId: "f1", Kind: violation, ActionId: "a1", Description: "wired without a ticket"}
	got, err := record(req)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Created || got.Finding.RecordedBy != "user:audrey" || got.Finding.ActionId != "a1" {
		t.Fatalf("recorded: %v", got)
	}
	if again, err := record(req); err != nil || again.Created || again.Finding.FindingId != got.Finding.FindingId {
		t.Fatalf("a repeat: %v %v, want the same finding, not created", again, err)
	}
	if _, err := record(&stewardv1.RecordFindingRequest{TaskId: "t2", RequestId: "f1", Kind: violation, Description: "wired without a ticket"}); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("the request id on another task: %v, want already_exists", err)
	}
	tk, err := query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	if fs := tk.Msg.Task.Findings; len(fs) != 1 || fs[0].FindingId != got.Finding.FindingId || tk.Msg.Task.Status != stewardv1.TaskStatus_TASK_STATUS_CANCELLED {
		t.Fatalf("GetTask shows findings %v on a %v task", fs, tk.Msg.Task.Status)
	}
}
