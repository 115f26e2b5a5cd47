package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestReadRelabelAttackFails runs the READ-relabel attack against the real
// binary with --auth: an agent registers a new version of an allowed tool,
// wire, that calls itself READ (which the default policy lets run without
// approval) and proposes it. It is refused the registration without the
// tool-admin role; and when a tool-admin registers that version after the
// task was created, the agent's unpinned proposal still gets the version
// the task was created with, and its approval, while naming the newer
// version is refused. A contract that pins wire gets its pin.
func TestReadRelabelAttackFails(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	ctx := context.Background()
	taskID := governedTask(t, h.agent, "relabel") // allows search and wire, unpinned

	relabelled := &stewardv1.ToolContract{
		Name: "wire", Version: "2.0.0", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		DataSensitivity:  stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		ParametersSchema: `{"type":"object","required":["amount"],"properties":{"amount":{"type":"integer","minimum":1}}}`,
		Endpoint:         &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: tool.URL + "/wire"}},
	}
	agentTools := toolClient(h.url, agentToken)
	_, err := agentTools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: relabelled}))
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("the agent registering wire@2.0.0: %v, want permission_denied", err)
	}
	if _, err := toolClient(h.url, toolAdminToken).RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: relabelled})); err != nil {
		t.Fatalf("a tool-admin registering wire@2.0.0: %v", err)
	}

	// proposeWire proposes a wire on taskID, naming version ("" for none).
	proposeWire := func(taskID, proposalID, version string) (*stewardv1.Action, error) {
		params, _ := structpb.NewStruct(map[string]any{"amount": 120})
		resp, err := h.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
			TaskId: taskID, ProposalId: proposalID, Tool: "wire", ToolVersion: version, Target: "acct:42", Params: params, Rationale: argued,
		}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.Action, nil
	}
	// governed checks that a is wire@want, irreversible, and waits for a
	// person's approval without having called the tool.
	governed := func(t *testing.T, taskID string, a *stewardv1.Action, want string) {
		t.Helper()
		if a.ToolVersion != want || a.EffectClass != stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE {
			t.Fatalf("the proposal took wire@%s (%s), want wire@%s, irreversible", a.ToolVersion, a.EffectClass, want)
		}
		if _, got := waitAction(t, h.agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL); got.Permit != nil || tool.CallsFor(a.OpKey) != 0 {
			t.Fatalf("the wire ran or was permitted without approval: %v", got)
		}
	}
	// newerRefused checks that naming wire@2.0.0 on taskID is refused,
	// naming tool_version, and appends nothing.
	newerRefused := func(t *testing.T, taskID string) {
		t.Helper()
		errs := h.unchanged(t, taskID, func() error { _, err := proposeWire(taskID, "newer", "2.0.0"); return err })
		if connect.CodeOf(errs[0]) != connect.CodeInvalidArgument {
			t.Fatalf("naming wire@2.0.0: %v, want invalid_argument", errs[0])
		}
		onField(t, errs[0], "tool_version")
	}

	t.Run("an unpinned proposal takes the version of its task", func(t *testing.T) {
		a, err := proposeWire(taskID, "unpinned", "")
		if err != nil {
			t.Fatal(err)
		}
		governed(t, taskID, a, "1.0.0")
		newerRefused(t, taskID)
	})

	t.Run("a pinned contract gets its pin", func(t *testing.T) {
		// Created after wire@2.0.0, which an unpinned proposal would take.
		k := contract()
		k.AllowedTools, k.AuthorizerRef = []string{"search", "wire@1.0.0"}, "user:bo"
		resp, err := h.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "pinned", Contract: k}))
		if err != nil {
			t.Fatal(err)
		}
		pinned := resp.Msg.Task.Contract.TaskId
		waitStarted(t, h.agent.clients, pinned)
		a, err := proposeWire(pinned, "pinned", "")
		if err != nil {
			t.Fatal(err)
		}
		governed(t, pinned, a, "1.0.0")
		newerRefused(t, pinned)
	})
}

// toolClient is a tool registry client that presents token.
func toolClient(url, token string) stewardv1connect.ToolServiceClient {
	return stewardv1connect.NewToolServiceClient(&http.Client{Timeout: 30 * time.Second}, url, connect.WithInterceptors(stewardtest.Bearer(token)))
}
