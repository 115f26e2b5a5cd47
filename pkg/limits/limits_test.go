package limits_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
)

func TestCheckRefusesOversizedIDsAndLists(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name  string
		req   proto.Message
		field string // "" when the request is within its limits
	}{
		{"task id at its limit", &stewardv1.GetTaskRequest{TaskId: long(limits.MaxTaskID)}, ""},
		{"task id of 1 MB", &stewardv1.GetTaskRequest{TaskId: long(1 << 20)}, "task_id"},
		{"parent task id", &stewardv1.DelegateTaskRequest{ParentTaskId: long(65)}, "parent_task_id"},
		{"request id", &stewardv1.CancelTaskRequest{TaskId: "t", RequestId: long(limits.MaxRequestID + 1)}, "request_id"},
		{"approval id", &stewardv1.DecideApprovalRequest{ApprovalId: long(limits.MaxID + 1)}, "approval_id"},
		{"action hash", &stewardv1.DecideApprovalRequest{ApprovalId: "a", ActionHash: long(limits.MaxID + 1)}, "action_hash"},
		{"action id", &stewardv1.SettleActionRequest{TaskId: "t", ActionId: long(limits.MaxID + 1)}, "action_id"},
		{"tool name", &stewardv1.GetToolRequest{Name: long(limits.MaxID + 1)}, "name"},
		{"page token", &stewardv1.ListTasksRequest{PageToken: long(limits.MaxID + 1)}, "page_token"},
		{"a ref in the contract", &stewardv1.CreateTaskRequest{Contract: &stewardv1.TaskContract{RequesterRef: long(limits.MaxID + 1)}}, "contract.requester_ref"},
		{"statuses at the limit", &stewardv1.ListTasksRequest{Statuses: make([]stewardv1.TaskStatus, limits.MaxList)}, ""},
		{"100,000 statuses", &stewardv1.ListTasksRequest{Statuses: make([]stewardv1.TaskStatus, 100_000)}, "statuses"},
		{"return reasons", &stewardv1.ReturnTaskRequest{TaskId: "t", Reasons: make([]string, limits.MaxList+1)}, "reasons"},
		{"a nested list", &stewardv1.CreateTaskRequest{Contract: &stewardv1.TaskContract{
			InputSnapshot: &stewardv1.InputSnapshot{Inputs: make([]*stewardv1.ContextRef, limits.MaxList+1)},
		}}, "contract.input_snapshot.inputs"},
		{"an id inside a list entry", &stewardv1.CreateTaskRequest{Contract: &stewardv1.TaskContract{
			Budget: &stewardv1.Budget{Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "a"}, {MilestoneId: long(limits.MaxID + 1)}}},
		}}, "contract.budget.milestones[1].milestone_id"},
		{"a tool's required scopes", &stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{RequiredScopes: make([]string, limits.MaxList+1)}}, "contract.required_scopes"},
		{"free text is the handler's", &stewardv1.CancelTaskRequest{TaskId: "t", Reason: long(1 << 20)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := limits.Check(tt.req.ProtoReflect())
			if tt.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.TooLarge || e.Field != tt.field {
				t.Fatalf("err = %v, want too large naming %s", err, tt.field)
			}
			if len(e.Error()) > 200 {
				t.Errorf("the message is %d bytes: it echoes the input", len(e.Error()))
			}
		})
	}
}

// TestCheckLeavesParametersAlone: a proposal's parameters are the tool's
// JSON, checked against its schema; a long list in them is not a field of
// the request.
func TestCheckLeavesParametersAlone(t *testing.T) {
	items := make([]any, 1000)
	for i := range items {
		items[i] = i
	}
	params, err := structpb.NewStruct(map[string]any{"items": items})
	if err != nil {
		t.Fatal(err)
	}
	if err := limits.Check((&stewardv1.ProposeActionRequest{TaskId: "t", Params: params}).ProtoReflect()); err != nil {
		t.Fatalf("refused: %v", err)
	}
}

func TestDuration(t *testing.T) {
	const least, most = time.Minute, time.Hour
	tests := []struct {
		name string
		d    *durationpb.Duration
		ok   bool
	}{
		{"unset", nil, true},
		{"zero: the default", durationpb.New(0), true},
		{"the least", durationpb.New(least), true},
		{"the most", durationpb.New(most), true},
		{"a nanosecond", durationpb.New(time.Nanosecond), false},
		{"past the most", durationpb.New(most + time.Nanosecond), false},
		{"negative", durationpb.New(-time.Minute), false},
		{"10,000 years", &durationpb.Duration{Seconds: 10_000 * 365 * 24 * 3600}, false},
		{"not a duration", &durationpb.Duration{Seconds: 1, Nanos: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := limits.Duration("timers.x", tt.d, least, most)
			var e *errs.Error
			switch {
			case tt.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tt.ok && (!errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "timers.x"):
				t.Fatalf("err = %v, want invalid timers.x", err)
			}
		})
	}
}
