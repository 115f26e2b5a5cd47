package control_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestProposalDraftedBeforeAClearIsNotRecordedOnTheFallback: a proposal
// drafted on the stand-in while the fallback was engaged, recorded after
// the task went back to its primary, is refused as a conflict (the
// client's retry drafts it again, on the primary), never recorded to run
// on the stand-in under no engagement.
func TestProposalDraftedBeforeAClearIsNotRecordedOnTheFallback(t *testing.T) {
	r, id := fallbackHarness(t, fetchFallback(&stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{transient}}, 10*time.Minute))
	a1 := r.propose(t, id, "p1", "fetch", "x", url)
	r.run(t, id, a1.ActionId, failed(transient, "503"), nil, time.Now())
	onFallback(t, r.propose(t, id, "p2", "fetch", "x", url))
	stale := proto.CloneOf(r.task(t, id)) // fb engaged

	r.clock.Advance(11 * time.Minute)
	onPrimary(t, r.propose(t, id, "p3", "fetch", "x", url)) // the way back: cleared

	req := &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p4", Tool: "fetch", Target: "x", Params: mustStruct(t, url)}
	if err := r.ctl.ProposeDraftedOn(context.Background(), stale, req); !errs.Is(err, errs.Conflict) {
		t.Fatalf("a proposal drafted on the stand-in, recorded after the clear: %v; want a conflict", err)
	}
	for _, a := range r.task(t, id).Actions {
		if a.ProposalId == "p4" {
			t.Fatalf("p4 recorded on %s (fallback %q) after the fallback was cleared", a.Tool, a.FallbackId)
		}
	}
	onPrimary(t, r.propose(t, id, "p4", "fetch", "x", url)) // the retry
}
