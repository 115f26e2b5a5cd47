package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestATenantsToolIsRefusedInsideAtTheCall runs the egress rule's second
// check against the binary (docs/tenants.md#tools): acme registers a
// tool on loopback while --tool-egress-allow lets it; after a restart
// without the flag, its call is refused on the connection — the action
// fails deterministic at once, naming the rule and the address — and
// the tool never sees it. Found by the review of issue 27 (finding 4).
func TestATenantsToolIsRefusedInsideAtTheCall(t *testing.T) {
	tool := stewardtest.StartTool(t)
	data := t.TempDir()
	auth := []string{"--auth", writeFile(t, t.TempDir(), "tokens.json", tokensFile)}
	p := startBinary(t, data, append(auth, "--tool-egress-allow", "127.0.0.0/8")...)
	probe := tool.Contract("probe", "/probe")
	probe.EffectClass, probe.ParametersSchema = stewardv1.EffectClass_EFFECT_CLASS_READ, `{"type":"object"}`
	if _, err := toolClient(p.url, acmeToolAdminToken).RegisterTool(context.Background(), connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: probe})); err != nil {
		t.Fatalf("acme registers a tool on loopback, allowed: %v", err)
	}
	p.stop(t)

	p = startBinary(t, data, auth...)
	acme := withToken(p.url, acmeAgentToken)
	k := contract()
	k.AllowedTools = []string{"probe"}
	taskID := createTaskWith(t, acme.clients, "egress-acme", k)
	waitStarted(t, acme.clients, taskID)
	a := propose(t, acme, taskID, "probe", "probe", map[string]any{"q": "x"})
	_, got := waitAction(t, acme.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_FAILED)
	if o := got.Outcome; o.GetFailureClass() != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC || got.Attempt != 1 ||
		!strings.Contains(o.GetReason(), "refused by the egress rule") || !strings.Contains(o.GetReason(), "127.0.0.1") {
		t.Errorf("acme's call to loopback, no longer allowed: %v after %d attempts; want failed deterministic at once, naming the rule and the address", o, got.Attempt)
	}
	if n := tool.CallsTo("/probe"); n != 0 {
		t.Errorf("the tool on loopback saw %d calls; want none", n)
	}
}

// TestAToolsFileClashWithATenantsToolWarnsAndStarts: acme registered
// wire, then the platform adds wire to its --tools file. The restart
// goes on: the platform's wire is left out with a warning naming the
// tool and the tenant, the rest of the file is registered, acme keeps
// its wire, and no other tenant may take the name. Found by the review
// of issue 27 (finding 7), where the platform then failed to start.
func TestAToolsFileClashWithATenantsToolWarnsAndStarts(t *testing.T) {
	ctx := context.Background()
	tool := stewardtest.StartTool(t)
	data := t.TempDir()
	auth := []string{"--auth", writeFile(t, t.TempDir(), "tokens.json", tokensFile)}
	p := startBinary(t, data, auth...)
	wire := tool.Contract("wire", "/wire")
	wire.GetHttp().Url, wire.StatusQuery, wire.GetHttp().StatusUrl = "http://192.0.2.1/wire", false, ""
	if _, err := toolClient(p.url, acmeToolAdminToken).RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: wire})); err != nil {
		t.Fatal(err)
	}
	p.stop(t)

	tools := writeFile(t, t.TempDir(), "tools.json", `{"tools": [`+strings.Join(governedTools(tool), ",")+`]}`)
	p = startBinary(t, data, append(auth, "--tools", tools)...)
	if w := p.logged(); !strings.Contains(w, "a --tools tool is not registered") || !strings.Contains(w, "wire@1.0.0") || !strings.Contains(w, "tenant=acme") {
		t.Errorf("the clash is not reported naming the tool and the tenant; log:\n%s", w)
	}
	get := func(token, name string) (*stewardv1.Tool, error) {
		got, err := toolClient(p.url, token).GetTool(ctx, connect.NewRequest(&stewardv1.GetToolRequest{Name: name}))
		if err != nil {
			return nil, err
		}
		return got.Msg.Tool, nil
	}
	if got, err := get(toolAdminToken, "search"); err != nil || got.Tenant != "" {
		t.Errorf("the rest of the file, search: %v, %v; want global", got, err)
	}
	if got, err := get(acmeAgentToken, "wire"); err != nil || got.Tenant != "acme" {
		t.Errorf("acme's wire after the clash: %v, %v; want acme's still", got, err)
	}
	if _, err := get(globexAgentToken, "wire"); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("globex gets wire: %v; want not_found, the platform's left out", err)
	}
	_, err := toolClient(p.url, globexAdminToken).RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: wire}))
	if connect.CodeOf(err) != connect.CodeAlreadyExists || !strings.Contains(err.Error(), "reserved for a platform tool") || strings.Contains(err.Error(), "acme") {
		t.Errorf("globex registers wire: %v; want already_exists, reserved, naming no tenant", err)
	}
}
