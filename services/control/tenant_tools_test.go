package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestAProposalSeesItsTenantsToolsAndTheGlobalOnes: a task's proposals
// take its own tenant's tools and the global ones; a tool of another
// tenant is refused as one that is not registered, naming the tool field,
// even when the task's contract allows a tool of that name.
func TestAProposalSeesItsTenantsToolsAndTheGlobalOnes(t *testing.T) {
	r := newHarness(t) // write@1 is global, registered before any task
	r.registerFor(t, "acme", &stewardv1.ToolContract{Name: "deploy", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, ParametersSchema: `{"type":"object"}`})
	taskOf := func(tenant string) string {
		t.Helper()
		ctx := rpc.WithIdentity(context.Background(), rpc.Identity{Principal: "t", Tenant: tenant, Verified: true})
		req := validRequest("tools-" + tenant)
		req.Contract.AllowedTools = []string{"write", "deploy"}
		tk, _, err := r.ctl.CreateTask(ctx, "t", req)
		if err != nil {
			t.Fatal(err)
		}
		r.running(tk.Contract.TaskId)
		return tk.Contract.TaskId
	}
	acme, beta := taskOf("acme"), taskOf("beta")
	if a := r.propose(t, acme, "p1", "deploy", "prod", map[string]any{}); a.ToolVersion != "1" {
		t.Errorf("acme's proposal took deploy@%s, want its own deploy@1", a.ToolVersion)
	}
	for _, taskID := range []string{acme, beta} {
		if a := r.propose(t, taskID, "p2", "write", "doc", map[string]any{"text": "x"}); a.ToolVersion != "1" {
			t.Errorf("%s: the global write@%s, want write@1", taskID, a.ToolVersion)
		}
	}
	seq := r.last(t)
	_, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: beta, ProposalId: "p3", Tool: "deploy", Target: "prod"})
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "tool" || !strings.Contains(err.Error(), `tool "deploy" is not registered`) {
		t.Errorf("beta proposes acme's deploy: %v; want an invalid tool, not registered", err)
	}
	if r.last(t) != seq {
		t.Error("the refused proposal wrote to the log")
	}
}
