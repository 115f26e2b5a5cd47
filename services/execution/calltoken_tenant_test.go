package execution_test

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"testing"

	"github.com/steward-run/steward/pkg/calltoken"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestATenantsToolGetsSignedCalls: a tenant's HTTP tool is called through
// an adapter of its own (under the egress rule), and that adapter signs
// as the global one does: the call carries a token the published key
// verifies, for the tool's URL and the body sent. Found when merging the
// egress rule with call tokens (issue 27): the tenants' adapter was built
// without the signer.
func TestATenantsToolGetsSignedCalls(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer := calltoken.NewSigner(key)
	b := newHarness(t, breaker.Config{})
	b.plane.Stop()
	b.cfg.HTTPOptions = []adapter.HTTPOption{adapter.WithCallSigner(signer, nil)}
	b.start()
	ts := startTool(t)
	k := ts.Contract("signed", callPath)
	if _, _, err := b.plane.Register(context.Background(), "acme", "admin", k); err != nil {
		t.Fatal(err)
	}
	taskID := "t-signed"
	b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"signed"}}, Tenant: "acme"}, &stewardv1.TaskStarted{})
	a, permitted := b.allow(taskID, "p1", "signed", "x")
	b.Append(taskID, permitted)
	b.WaitAction(taskID, a.ActionId, status(succeededS))
	reqs := ts.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the tenant's tool saw %d requests, want 1", len(reqs))
	}
	v := calltoken.NewVerifier(calltoken.NewKeySet(signer.PublicKey()), k.GetHttp().GetUrl())
	c, err := v.Verify(reqs[0].Header.Get(calltoken.Header), http.MethodPost, reqs[0].Body)
	if err != nil {
		t.Fatalf("the tenant's tool checks its call's token: %v", err)
	}
	if c.ActionID != a.ActionId || c.TaskID != taskID {
		t.Errorf("the token names action %s of task %s, want %s of %s", c.ActionID, c.TaskID, a.ActionId, taskID)
	}
}
