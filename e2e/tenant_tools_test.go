package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestToolsAreGlobalOrPerTenant runs tenants acme and globex and the
// default tenant against the real binary (docs/tenants.md#tools): acme's
// tool-admin registers deploy, which is acme's alone — globex and the
// default tenant do not see it, and a globex task that names it is
// refused as naming an unknown tool — while acme's task runs it; the
// global tools, registered by the platform, are seen and run by both; a
// tenant cannot take a global tool's name, nor the platform a tenant's,
// and neither refusal names a tenant.
func TestToolsAreGlobalOrPerTenant(t *testing.T) {
	tool := stewardtest.StartTool(t)
	// search and wire: global; acme's deploy calls the kit's tool on
	// loopback, which the platform allows tenants' tools here.
	h := startSteward(t, setup{tools: governedTools(tool), flags: []string{"--tool-egress-allow", "127.0.0.0/8"}})
	ctx := context.Background()
	acme, globex := withToken(h.url, acmeAgentToken), withToken(h.url, globexAgentToken)
	acmeTools, globexTools := toolClient(h.url, acmeToolAdminToken), toolClient(h.url, globexAdminToken)
	defaultTools, defaultAgentTools := toolClient(h.url, toolAdminToken), toolClient(h.url, agentToken)
	deploy := tool.Contract("deploy", "/deploy")
	deploy.EffectClass, deploy.ParametersSchema = stewardv1.EffectClass_EFFECT_CLASS_READ, `{"type":"object"}`

	reg, err := acmeTools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: deploy}))
	if err != nil || !reg.Msg.Created || reg.Msg.Tool.Tenant != "acme" {
		t.Fatalf("acme's tool-admin registers deploy: %v, %v; want it created, acme's", reg, err)
	}
	listed := func(c toolsClient) []string {
		t.Helper()
		resp, err := c.ListTools(ctx, connect.NewRequest(&stewardv1.ListToolsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range resp.Msg.Tools {
			names = append(names, tl.Tenant+"/"+tl.Contract.Name)
		}
		return names
	}
	if got, want := listed(toolClient(h.url, acmeAgentToken)), []string{"acme/deploy", "/search", "/wire"}; !slices.Equal(got, want) {
		t.Errorf("acme lists %v, want %v", got, want)
	}

	t.Run("another tenant does not see it", func(t *testing.T) {
		for name, c := range map[string]toolsClient{"globex's admin": globexTools, "globex's agent": toolClient(h.url, globexAgentToken), "the default tenant's agent": defaultAgentTools} {
			_, err := c.GetTool(ctx, connect.NewRequest(&stewardv1.GetToolRequest{Name: "deploy"}))
			_, absent := c.GetTool(ctx, connect.NewRequest(&stewardv1.GetToolRequest{Name: "nothing"}))
			if connect.CodeOf(err) != connect.CodeNotFound || strings.ReplaceAll(err.Error(), "deploy", "nothing") != absent.Error() {
				t.Errorf("%s gets acme's deploy: %v; want not_found, as a tool that does not exist (%v)", name, err, absent)
			}
			if got, want := listed(c), []string{"/search", "/wire"}; !slices.Equal(got, want) {
				t.Errorf("%s lists %v, want %v", name, got, want)
			}
		}
		k := contract()
		k.AllowedTools = []string{"search", "deploy"}
		taskID := createTaskWith(t, globex.clients, "tools-globex", k)
		waitStarted(t, globex.clients, taskID) // its credential too, before counting
		events := func() uint32 {
			t.Helper()
			got, err := globex.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
			if err != nil {
				t.Fatal(err)
			}
			return got.Msg.Task.EventCount
		}
		before := events()
		_, err := globex.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
			TaskId: taskID, ProposalId: "deploy", Tool: "deploy", Target: "prod", Rationale: argued,
		}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `tool "deploy" is not registered`) {
			t.Fatalf("globex proposes acme's deploy: %v; want invalid_argument, an unknown tool", err)
		}
		onField(t, err, "tool")
		if after := events(); after != before {
			t.Errorf("the refused proposal took globex's task from %d to %d events", before, after)
		}
		// The global tool is globex's as every tenant's.
		a := propose(t, globex, taskID, "search", "search", map[string]any{"q": "x"})
		waitAction(t, globex.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	})

	t.Run("its tenant's task runs it, and the global tools", func(t *testing.T) {
		k := contract()
		k.AllowedTools = []string{"search", "deploy"}
		taskID := createTaskWith(t, acme.clients, "tools-acme", k)
		for _, name := range []string{"deploy", "search"} {
			a := propose(t, acme, taskID, name, name, map[string]any{"q": "x"})
			waitAction(t, acme.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
			if got := tool.Executions(a.OpKey); got != 1 {
				t.Errorf("acme's %s ran %d times, want once", name, got)
			}
		}
	})

	t.Run("a name is one tool for a task", func(t *testing.T) {
		search := tool.Contract("search", "/search")
		_, err := acmeTools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: search}))
		if connect.CodeOf(err) != connect.CodeAlreadyExists || !strings.Contains(err.Error(), "global tool") {
			t.Errorf("acme registers search, a global tool's name: %v; want already_exists", err)
		}
		deploy2 := tool.Contract("deploy", "/deploy")
		deploy2.Version = "2"
		_, err = defaultTools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: deploy2}))
		if connect.CodeOf(err) != connect.CodeAlreadyExists || strings.Contains(err.Error(), "acme") {
			t.Errorf("the platform registers deploy, a tenant's tool's name: %v; want already_exists, naming no tenant", err)
		}
		if _, err := defaultAgentTools.GetTool(ctx, connect.NewRequest(&stewardv1.GetToolRequest{Name: "deploy"})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("after the refusal the default tenant gets deploy: %v; want not_found still", err)
		}
		// Two tenants may each have a tool of one name.
		reg, err := globexTools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: deploy2}))
		if err != nil || reg.Msg.Tool.Tenant != "globex" {
			t.Fatalf("globex registers its own deploy: %v, %v", reg, err)
		}
		got, err := acmeTools.GetTool(ctx, connect.NewRequest(&stewardv1.GetToolRequest{Name: "deploy"}))
		if err != nil || got.Msg.Tool.Tenant != "acme" || got.Msg.Tool.Contract.Version != "1" {
			t.Errorf("acme's deploy after globex's: %v, %v; want acme's own, version 1", got, err)
		}
	})
}

// toolsClient is what these tests ask of a ToolService client.
type toolsClient interface {
	GetTool(context.Context, *connect.Request[stewardv1.GetToolRequest]) (*connect.Response[stewardv1.GetToolResponse], error)
	ListTools(context.Context, *connect.Request[stewardv1.ListToolsRequest]) (*connect.Response[stewardv1.ListToolsResponse], error)
}
