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
