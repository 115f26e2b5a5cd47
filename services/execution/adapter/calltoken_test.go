package adapter_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/calltoken"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/adapter"
)

// TestCallsAndStatusQueriesCarryAToken: a tool that takes only signed
// requests takes a call and a status query from an adapter with a call
// signer, each token naming the attempt and hashes, and refuses the same
// from one without (a deterministic failure with the tool's reason).
func TestCallsAndStatusQueriesCarryAToken(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	tool := stewardtest.StartTool(t)
	guarded := httptest.NewUnstartedServer(nil)
	url := "http://" + guarded.Listener.Addr().String()
	contract := httpTool(url+"/call", url+"/status", 5*time.Second)
	var seen []*calltoken.Claims
	v := calltoken.NewVerifier(calltoken.NewKeySet(pub), contract.GetHttp().GetUrl(), calltoken.WithReplayCache(calltoken.NewMemoryReplayCache()))
	guarded.Config.Handler = v.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := calltoken.FromContext(r.Context())
		seen = append(seen, c)
		tool.Config.Handler.ServeHTTP(w, r)
	}))
	guarded.Start()
	t.Cleanup(guarded.Close)

	req := httpRequest(contract, "op-1")
	req.RequestHash, req.Attempt = "rh-1", 2
	signed := adapter.NewHTTP(guarded.Client(), adapter.WithCallSigner(calltoken.NewSigner(key), nil))
	if res := signed.Call(context.Background(), req); res.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("the signed call: %v %s", res.Status, res.Reason)
	}
	if ans, err := signed.Status(context.Background(), req); err != nil || ans.State != adapter.StateSucceeded {
		t.Fatalf("the signed status query: %+v %v", ans, err)
	}
	if len(seen) != 2 || seen[0].Attempt != 2 || seen[0].RequestHash != "rh-1" || seen[0].BodyHash != calltoken.BodyHash(req.Body) ||
		seen[1].Method != "GET" || seen[1].OpKey != "op-1" || seen[1].BodyHash != "" {
		t.Errorf("the tool saw the claims %+v", seen)
	}

	res := adapter.NewHTTP(guarded.Client()).Call(context.Background(), req)
	if res.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED || res.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC ||
		!strings.Contains(res.Reason, calltoken.Header) {
		t.Errorf("an unsigned call: %v %v %q; want failed, deterministic, naming the missing token", res.Status, res.FailureClass, res.Reason)
	}
}
