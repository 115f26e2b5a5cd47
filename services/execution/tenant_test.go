package execution_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestRegisterKeepsANameToOneToolPerTenant: a tenant may not take a global
// tool's name, nor the default tenant a tenant's (refused without naming
// the tenant); two tenants may each have a tool of one name, even the
// same version, and each tenant's registration is idempotent on its own.
// A tenant may not register a built-in tool.
func TestRegisterKeepsANameToOneToolPerTenant(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	ctx := context.Background()
	register := func(tenant, name, url string) (*stewardv1.Tool, bool, error) {
		c := ts.Contract(name, callPath)
		c.GetHttp().Url += url
		return b.plane.Register(ctx, tenant, "admin", c)
	}
	if _, _, err := register("", "search", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := register("acme", "search", ""); !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), "global tool") {
		t.Errorf("a tenant takes a global tool's name: %v, want already exists", err)
	}
	for _, tenant := range []string{"acme", "beta"} {
		tool, created, err := register(tenant, "deploy", "?"+tenant)
		if err != nil || !created || tool.Tenant != tenant {
			t.Fatalf("%s registers deploy: %v, %v, %v", tenant, tool, created, err)
		}
	}
	if tool, created, err := register("acme", "deploy", "?acme"); err != nil || created || tool.Tenant != "acme" || !strings.HasSuffix(tool.Contract.GetHttp().Url, "?acme") {
		t.Errorf("acme registers its deploy again: %v, %v, %v; want its own, not created", tool, created, err)
	}
	if _, _, err := register("acme", "deploy", "?other"); !errs.Is(err, errs.AlreadyExists) {
		t.Errorf("acme changes its deploy@1: %v, want already exists", err)
	}
	_, _, err := register("", "deploy", "")
	if !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), "a tenant's tool") || strings.Contains(err.Error(), "acme") || strings.Contains(err.Error(), "beta") {
		t.Errorf("the default tenant takes a tenant's name: %v, want already exists naming no tenant", err)
	}
	builtin := &stewardv1.ToolContract{Name: "scratch", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		Endpoint:        &stewardv1.ToolContract_Builtin{Builtin: &stewardv1.BuiltinEndpoint{Kind: "file.write"}}}
	var bad *errs.Error
	if _, _, err := b.plane.Register(ctx, "acme", "admin", builtin); !errors.As(err, &bad) || bad.Code != errs.Invalid || bad.Field != "contract.builtin" {
		t.Errorf("a tenant registers a built-in tool: %v; want invalid contract.builtin", err)
	}
	// A model's key file is read on this host: a tenant's would send any
	// file Steward can read to the tenant's base_url.
	keyed := &stewardv1.ToolContract{Name: "llm", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		Endpoint: &stewardv1.ToolContract_Model{Model: &stewardv1.ModelEndpoint{BaseUrl: "https://models.example/v1", Model: "m", Provider: "p",
			MaxTokens: 10, KeyFile: "/etc/steward/secret.key"}}}
	if _, _, err := b.plane.Register(ctx, "acme", "admin", keyed); !errors.As(err, &bad) || bad.Code != errs.Invalid || bad.Field != "contract.model.key_file" {
		t.Errorf("a tenant registers a model tool with a key file: %v; want invalid contract.model.key_file", err)
	}
	// So are an MCP tool's credential files.
	for _, f := range []struct{ field, token, oauth string }{{"contract.mcp.token_file", "/etc/steward/mcp.token", ""}, {"contract.mcp.oauth_file", "", "/etc/steward/oauth.json"}} {
		mcpTool := &stewardv1.ToolContract{Name: "pay", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE,
			DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
			Endpoint: &stewardv1.ToolContract_Mcp{Mcp: &stewardv1.McpEndpoint{Url: "https://mcp.example/mcp", Tool: "pay", TokenFile: f.token, OauthFile: f.oauth,
				SchemaDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}}
		if _, _, err := b.plane.Register(ctx, "acme", "admin", mcpTool); !errors.As(err, &bad) || bad.Code != errs.Invalid || bad.Field != f.field {
			t.Errorf("a tenant registers an MCP tool with a credential file: %v; want invalid %s", err, f.field)
		}
	}
	recs, err := b.Log.ReadTool(ctx, "deploy")
	if err != nil || len(recs) != 2 {
		t.Errorf("deploy's chain: %d registrations, %v; want acme's and beta's", len(recs), err)
	}
}

// TestATenantsToolRunsOnlyForItsTenantAndHasItsOwnBreaker: a task of
// another tenant that names a tenant's tool is refused before dispatch,
// as for a tool that does not exist; the tenant's own task runs it; and
// the tool's failures open a breaker of the tenant's, never the global one
// of the same service key, which a global tool's calls count on.
func TestATenantsToolRunsOnlyForItsTenantAndHasItsOwnBreaker(t *testing.T) {
	b := newHarness(t, breaker.Config{Window: 10 * time.Second, MinRequests: 2, FailureRate: 0.5, CoolDown: 2 * time.Second})
	ts := startTool(t, stewardtest.Fail(503), stewardtest.Fail(503))
	c := ts.Contract("charge", callPath)
	c.ServiceKey = "bank"
	c.RetryPolicy.MaxAttempts = 10
	if _, _, err := b.plane.Register(context.Background(), "acme", "admin", c); err != nil {
		t.Fatal(err)
	}
	run := func(taskID, tenant string) *stewardv1.Action {
		t.Helper()
		k := &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"charge"}}
		b.Append(taskID, &stewardv1.TaskCreated{Contract: k, Tenant: tenant}, &stewardv1.TaskStarted{})
		a, permitted := b.allow(taskID, "p1", "charge", "card-1")
		b.Append(taskID, permitted)
		return a
	}
	other := run("t-beta", "beta")
	a := b.WaitAction("t-beta", other.ActionId, status(failedS))
	if !strings.Contains(a.Outcome.GetReason(), "the tool is not registered here") {
		t.Errorf("beta's task runs acme's tool: %v; want refused as not registered", a.Outcome)
	}
	mine := run("t-acme", "acme")
	if a := b.WaitAction("t-acme", mine.ActionId, status(succeededS)); ts.Executions(a.OpKey) != 1 {
		t.Errorf("acme's task: work done %d times, want 1", ts.Executions(a.OpKey))
	}
	for tenant, opened := range map[string]bool{"acme": true, "": false, "beta": false} {
		changes, err := b.Log.ReadService(context.Background(), tenant, "bank")
		if err != nil {
			t.Fatal(err)
		}
		if got := len(changes) > 0; got != opened {
			t.Errorf("breaker bank of tenant %q: %d changes; want some only for acme, whose tool failed", tenant, len(changes))
		}
		for _, r := range changes {
			if r.Event.GetBreakerChanged().Tenant != tenant {
				t.Errorf("breaker bank of tenant %q holds %v", tenant, r.Event.GetBreakerChanged())
			}
		}
	}
}
