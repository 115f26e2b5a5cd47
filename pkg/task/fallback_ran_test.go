package task_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestUnderFallbackCountsWhatRan: a cleared engagement makes the work
// "under a fallback" only through an action sent to the stand-in (or a
// decision); one denied before it ran shaped nothing.
func TestUnderFallbackCountsWhatRan(t *testing.T) {
	tk := &stewardv1.Task{
		FallbackEngagements: []*stewardv1.FallbackEngagement{{FallbackId: "fb", ClearedAt: timestamppb.Now(), ActionIds: []string{"a1"}}},
		Actions:             []*stewardv1.Action{{ActionId: "a1", Status: stewardv1.ActionStatus_ACTION_STATUS_DENIED}},
	}
	if task.UnderFallback(tk) {
		t.Fatal("an action denied before it ran counts as work under the fallback")
	}
	tk.Actions[0].FirstDispatchedAt = timestamppb.Now()
	if !task.UnderFallback(tk) {
		t.Fatal("an action sent to the stand-in does not count")
	}
	tk.Actions[0].FirstDispatchedAt = nil
	tk.FallbackEngagements[0].ClearedAt = nil
	if !task.UnderFallback(tk) {
		t.Fatal("an engaged fallback does not count")
	}
}
