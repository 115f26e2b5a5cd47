package control_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/control"
)

func validRequest(requestID string) *stewardv1.CreateTaskRequest {
	return &stewardv1.CreateTaskRequest{RequestId: requestID, Contract: &stewardv1.TaskContract{
		Intent: "i", DesiredOutcome: "o", RequesterRef: "user:a", AccountableOwnerRef: "user:a",
		RiskTier: stewardv1.RiskTier_RISK_TIER_LOW,
	}}
}

// TestConcurrentCreatesMakeOneTask races many creates of one request id:
// exactly one creates, the rest get the same task.
func TestConcurrentCreatesMakeOneTask(t *testing.T) {
	r := idleHarness(t)
	ctl, log := r.ctl, r.Log
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]int{}
	created := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, ok, err := ctl.CreateTask(context.Background(), "t", validRequest("once"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[tk.Contract.TaskId]++
			if ok {
				created++
			}
		}()
	}
	wg.Wait()
	if len(ids) != 1 || created != 1 {
		t.Fatalf("tasks %v, created %d times; want one task created once", ids, created)
	}
	recs, err := log.Read(context.Background(), control.TaskIDFor("t", "once"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d events stored, want 1", len(recs))
	}
}

// TestConcurrentCommandsFollowTheStateMachine races pause and cancel: every
// command either wins a sequence or is refused as illegal; the chain holds.
func TestConcurrentCommandsFollowTheStateMachine(t *testing.T) {
	r := idleHarness(t)
	ctl, log := r.ctl, r.Log
	ctx := context.Background()
	tk, _, err := ctl.CreateTask(ctx, "t", validRequest("race"))
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p event.Payload = &stewardv1.TaskPaused{}
			if i%2 == 1 {
				p = &stewardv1.TaskResumed{}
			}
			if i == 11 {
				p = &stewardv1.TaskCancelled{}
			}
			_, err := ctl.Apply(ctx, "t", id, p)
			switch {
			case err == nil:
				mu.Lock()
				accepted++
				mu.Unlock()
			case errs.Is(err, errs.FailedPrecondition), errs.Is(err, errs.Conflict):
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	recs, err := log.Read(ctx, id) // verifies the chain
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+accepted {
		t.Fatalf("%d events stored, %d commands accepted", len(recs), accepted)
	}
}

// TestStartReactionIsIdempotent delivers the same created event to the
// control plane's reaction several times: one start event, not several.
func TestStartReactionIsIdempotent(t *testing.T) {
	r := idleHarness(t)
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", validRequest("redeliver"))
	if err != nil {
		t.Fatal(err)
	}
	r.start(t)
	r.running(tk.Contract.TaskId)
	// Redeliver: a fresh plane reads the stream from the start, the
	// task's creation again among it.
	r.redeliver(t)
	if n := r.task(t, tk.Contract.TaskId).EventCount; n != 2 {
		t.Fatalf("after redelivery the task has %d events, want 2", n)
	}
}

// TestCommandWithRequestIDIsSafeToRetry repeats a pause with the same
// request id: the repeat succeeds and appends nothing; without a request id
// the repeat is refused: the task is paused already.
func TestCommandWithRequestIDIsSafeToRetry(t *testing.T) {
	r := idleHarness(t)
	ctl := r.ctl
	ctx := context.Background()
	tk, _, err := ctl.CreateTask(ctx, "t", validRequest("retry"))
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	for range 2 {
		got, err := ctl.PauseTask(ctx, rpc.Identity{Principal: "t"}, &stewardv1.PauseTaskRequest{TaskId: id, RequestId: "pause-1"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED || got.EventCount != 2 {
			t.Fatalf("after pause: %v", got)
		}
	}
	if _, err := ctl.PauseTask(ctx, rpc.Identity{Principal: "t"}, &stewardv1.PauseTaskRequest{TaskId: id}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a second pause without a request id: %v, want failed precondition", err)
	}
}

func TestValidationNamesTheField(t *testing.T) {
	r := idleHarness(t)
	ctl := r.ctl
	tests := []struct {
		name  string
		edit  func(*stewardv1.TaskContract)
		field string
	}{
		{"no desired outcome", func(c *stewardv1.TaskContract) { c.DesiredOutcome = "" }, "contract.desired_outcome"},
		{"no accountable owner", func(c *stewardv1.TaskContract) { c.AccountableOwnerRef = "" }, "contract.accountable_owner_ref"},
		{"parent set by the client", func(c *stewardv1.TaskContract) { c.ParentTaskId = "t-parent" }, "contract.parent_task_id"},
		{"criterion description past the limit", func(c *stewardv1.TaskContract) {
			c.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "c", Expression: "true", Description: strings.Repeat("d", control.MaxTextLen+1)}}
		}, "contract.acceptance_criteria[0].description"},
		{"milestones overflow the task budget", func(c *stewardv1.TaskContract) {
			c.Budget = &stewardv1.Budget{MaxTokens: 10, Milestones: []*stewardv1.MilestoneBudget{
				{MilestoneId: "a", MaxTokens: 1}, {MilestoneId: "b", MaxTokens: 1<<63 - 1},
			}}
		}, "contract.budget.milestones[1].max_tokens"},
		{"milestones add up past the budget", func(c *stewardv1.TaskContract) {
			c.Budget = &stewardv1.Budget{MaxCostMicros: 10, Currency: "EUR", Milestones: []*stewardv1.MilestoneBudget{
				{MilestoneId: "a", MaxCostMicros: 6}, {MilestoneId: "b", MaxCostMicros: 6},
			}}
		}, "contract.budget.milestones[1].max_cost_micros"},
		{"timestamp JSON cannot carry", func(c *stewardv1.TaskContract) {
			c.Deadline = &timestamppb.Timestamp{Seconds: 1 << 62}
		}, "contract.deadline"},
		{"task id set by the client", func(c *stewardv1.TaskContract) { c.TaskId = "mine" }, "contract.task_id"},
		{"credential set by the client", func(c *stewardv1.TaskContract) { c.CredentialRef = "cred-forged" }, "contract.credential_ref"},
		{"delegation claimed on create", func(c *stewardv1.TaskContract) {
			c.DelegationChain = []*stewardv1.Delegation{{FromRef: "a", ToRef: "b"}}
		}, "contract.delegation_chain"},
		{"reviewer without an owner", func(c *stewardv1.TaskContract) {
			c.AcceptanceOwnerRef = ""
			c.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "r", RequiresReviewer: true}}
		}, "contract.acceptance_criteria[0].requires_reviewer"},
		{"requester accepts under separation of duties", func(c *stewardv1.TaskContract) {
			c.SeparationOfDuties, c.AcceptanceOwnerRef = true, c.RequesterRef
		}, "contract.acceptance_owner_ref"},
		{"pin without a version", func(c *stewardv1.TaskContract) { c.AllowedTools = []string{"search", "wire@"} }, "contract.allowed_tools[1]"},
		{"pin without a name", func(c *stewardv1.TaskContract) { c.AllowedTools = []string{"@1.0.0"} }, "contract.allowed_tools[0]"},
		{"pin with two versions", func(c *stewardv1.TaskContract) { c.AllowedTools = []string{"wire@1@2"} }, "contract.allowed_tools[0]"},
		{"a tool both bare and pinned", func(c *stewardv1.TaskContract) {
			c.AllowedTools = []string{"wire@1.0.0", "search", "wire"}
		}, "contract.allowed_tools[2]"},
		{"empty scope", func(c *stewardv1.TaskContract) { c.Scopes = []string{"repo:read", ""} }, "contract.scopes[1]"},
		{"long context digest", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://x", Digest: strings.Repeat("d", 300)}}
		}, "contract.context_refs[0].digest"},
		{"input without uri", func(c *stewardv1.TaskContract) {
			c.InputSnapshot = &stewardv1.InputSnapshot{Inputs: []*stewardv1.ContextRef{{}}}
		}, "contract.input_snapshot.inputs[0].uri"},
		{"bad currency", func(c *stewardv1.TaskContract) { c.Budget = &stewardv1.Budget{Currency: "euro"} }, "contract.budget.currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest("")
			tt.edit(req.Contract)
			_, _, err := ctl.CreateTask(context.Background(), "t", req)
			var e *errs.Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("err = %v, want one naming %s", err, tt.field)
			}
		})
	}
}

// TestSeparationOfDutiesCountsTheCreator: whoever creates a task may not
// be its acceptance owner under separation of duties, whatever the
// contract names as requester.
func TestSeparationOfDutiesCountsTheCreator(t *testing.T) {
	r := idleHarness(t)
	ctl := r.ctl
	req := validRequest("sod")
	req.Contract.RequesterRef, req.Contract.AcceptanceOwnerRef, req.Contract.SeparationOfDuties = "user:someone-else", "user:owner", true
	_, _, err := ctl.CreateTask(context.Background(), "user:owner", req)
	if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "contract.acceptance_owner_ref") {
		t.Fatalf("err = %v, want invalid contract.acceptance_owner_ref", err)
	}
	if _, _, err := ctl.CreateTask(context.Background(), "agent", req); err != nil {
		t.Fatalf("created by someone else: %v", err)
	}
}
