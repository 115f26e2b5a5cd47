package execution_test

import (
	"context"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestASmallResultTravelsInlineAndALargeOneIsStored: a result of at most
// action.MaxInlineRequest bytes is recorded in the outcome itself, with
// nothing stored; a larger one is stored by hash and referenced. Either
// reads back, checked against its hash.
func TestASmallResultTravelsInlineAndALargeOneIsStored(t *testing.T) {
	ctx := context.Background()
	large := `{"big":"` + strings.Repeat("x", action.MaxInlineRequest) + `"}`
	ts := startTool(t, stewardtest.Answer{Work: true, Body: large})
	b := newHarness(t, breaker.Config{})
	b.register(ts, "charge", false, nil)

	taskID, actionID := b.permit("t-large", "charge", "card-1")
	o := b.WaitAction(taskID, actionID, status(succeededS)).Outcome
	if len(o.Result) != 0 || !strings.HasPrefix(o.ResultRef, "kv://"+action.ResultBucket+"/") {
		t.Fatalf("a %d-byte result: inline %d bytes, ref %q; want it stored", len(large), len(o.Result), o.ResultRef)
	}
	if got, err := b.Results.Result(ctx, o.Result, o.ResultRef, o.ResultHash); err != nil || string(got) != large {
		t.Fatalf("the stored result reads back as %d bytes, %v", len(got), err)
	}

	taskID, actionID = b.permit("t-small", "charge", "card-2")
	o = b.WaitAction(taskID, actionID, status(succeededS)).Outcome
	if len(o.Result) == 0 || o.ResultRef != "" || action.RequestHash(o.Result) != o.ResultHash {
		t.Fatalf("a small result: inline %q, ref %q, hash %s; want it inline under its hash", o.Result, o.ResultRef, o.ResultHash)
	}
	if _, err := b.Results.Get(ctx, action.Ref(action.ResultBucket, taskID, o.ResultHash), o.ResultHash); err == nil {
		t.Error("a small result was stored too")
	}
}
