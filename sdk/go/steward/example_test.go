package steward_test

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// contract is a task's contract that lets it use the example tools.
func contract(intent string) *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		Intent:              intent,
		DesiredOutcome:      "the customer's record",
		RequesterRef:        "user:ana",
		AccountableOwnerRef: "user:ana",
		RiskTier:            stewardv1.RiskTier_RISK_TIER_LOW,
		Budget:              &stewardv1.Budget{MaxTokens: 10_000},
		AllowedTools:        []string{"lookup", "publish"},
	}
}

// A read runs at once: ProposeAndWait returns it ended.
func ExampleClient_ProposeAndWait() {
	ctx := context.Background()
	c := steward.New(stewardURL, steward.WithToken(agentToken))
	task, err := c.CreateTask(ctx, &stewardv1.CreateTaskRequest{Contract: contract("Look a customer up")})
	if err != nil {
		fmt.Println(err)
		return
	}
	params, _ := structpb.NewStruct(map[string]any{"customer": "c-42"})
	a, err := c.ProposeAndWait(ctx, &stewardv1.ProposeActionRequest{TaskId: task.Contract.TaskId, Tool: "lookup", Target: "crm", Params: params})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Tool, a.Status)
	// Output: lookup ACTION_STATUS_SUCCEEDED
}

// An irreversible write waits for a person: ProposeAndWait returns it
// awaiting approval, and the agent goes on with other work.
func ExampleClient_ProposeAndWait_approval() {
	ctx := context.Background()
	c := steward.New(stewardURL, steward.WithToken(agentToken))
	k := contract("Publish the report")
	k.RiskTier = stewardv1.RiskTier_RISK_TIER_MEDIUM
	task, err := c.CreateTask(ctx, &stewardv1.CreateTaskRequest{Contract: k})
	if err != nil {
		fmt.Println(err)
		return
	}
	params, _ := structpb.NewStruct(map[string]any{"path": "reports/q3.md", "content": "# Q3"})
	a, err := c.ProposeAndWait(ctx, &stewardv1.ProposeActionRequest{TaskId: task.Contract.TaskId, Tool: "publish", Target: "drive", Params: params,
		Rationale: &stewardv1.ActionRationale{ExpectedImpact: "everyone on the drive can read the report",
			RollbackPlan: "publish a correction: a published file cannot be unpublished"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Tool, a.Status)
	// Output: publish ACTION_STATUS_AWAITING_APPROVAL
}

// Bad input comes back as an *Error naming the field.
func ExampleError() {
	c := steward.New(stewardURL, steward.WithToken(agentToken))
	bad := contract("")
	_, err := c.CreateTask(context.Background(), &stewardv1.CreateTaskRequest{Contract: bad})
	if e, ok := err.(*steward.Error); ok {
		fmt.Println(e.Code, e.Field)
	}
	// Output: invalid_argument contract.intent
}
