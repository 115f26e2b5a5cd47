package adapter_test

import (
	"context"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/adapter"
)

// TestTheTransportNeverResendsACall: Go's transport resends a request with
// an Idempotency-Key on a fresh connection when a reused one fails, which
// did an irreversible tool's work twice behind Steward's back. Found by an
// independent review.
func TestTheTransportNeverResendsACall(t *testing.T) {
	// The second call does the work, then its connection dies before the
	// answer.
	srv := stewardtest.StartTool(t).Script("/", stewardtest.OK, stewardtest.Answer{Work: true, Drop: true})
	a := adapter.NewHTTP(srv.Client())
	tool := &stewardv1.ToolContract{Name: "wire", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE,
		Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: srv.URL}}}
	call := func(key string) adapter.Result {
		return a.Call(context.Background(), adapter.Request{TaskID: "t", ActionID: "a", OpKey: key, Tool: tool, Body: []byte(`{}`)})
	}
	if r := call("warm"); r.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("warm-up: %v %s", r.Status, r.Reason) // leaves a keep-alive connection
	}
	r := call("k")
	if calls := srv.Calls(); calls != 2 || r.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || !r.Arrived {
		t.Fatalf("%d requests reached the tool, result %v (arrived %v): want 2 in all and the second unknown", calls, r.Status, r.Arrived)
	}
}
