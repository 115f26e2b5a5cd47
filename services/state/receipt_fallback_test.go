package state_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestReceiptShowsFallbacks: a task whose primary failed transiently, ran
// on its declared fallback and came back shows the engagement on its
// receipt — id, primary → fallback, the failure that engaged it, the
// action under it, its clearing — in JSON, markdown and the timeline; a
// warning names it; and the result produced after is marked as made under
// a fallback.
func TestReceiptShowsFallbacks(t *testing.T) {
	const id = "task-fallback"
	k := contract(1)
	k.TaskId, k.AllowedTools = id, []string{"fetch", "mirror"}
	k.Fallbacks = []*stewardv1.Fallback{{Id: "fb", Kind: stewardv1.FallbackKind_FALLBACK_KIND_TOOL, Primary: "fetch", Fallback: "mirror",
		Trigger: &stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT}}}}
	under := act("act-2", "mirror", "x", "rev-A")
	under[0].(*stewardv1.ActionProposed).Action.FallbackOf, under[0].(*stewardv1.ActionProposed).Action.FallbackId = "fetch", "fb"
	h := []event.Payload{&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{}}
	h = append(h, act("act-1", "fetch", "x", "rev-A")...)
	h = append(h, &stewardv1.ActionOutcomeRecorded{ActionId: "act-1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED,
		FailureClass: stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, Reason: "503", Attempt: 1}})
	h = append(h, &stewardv1.FallbackEngaged{FallbackId: "fb", Evidence: &stewardv1.FallbackEvidence{Trigger: "failure_class", ActionId: "act-1",
		FailureClass: stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT}})
	h = append(h, under...)
	h = append(h, succeededOutcome("act-2", 1), &stewardv1.FallbackCleared{FallbackId: "fb", Evidence: &stewardv1.FallbackEvidence{Trigger: "retry_after"}},
		&stewardv1.TaskProduced{Round: 1})
	recs := stewardtest.History(t, id, h...)
	r, err := state.BuildReceipt(recs)
	if err != nil {
		t.Fatal(err)
	}
	e := r.FallbackEngagements
	if len(e) != 1 || e[0].Primary != "fetch" || e[0].Fallback != "mirror" || e[0].EngagedBy.GetActionId() != "act-1" ||
		e[0].ClearedAt == nil || len(e[0].ActionIds) != 1 || e[0].ActionIds[0] != "act-2" {
		t.Fatalf("engagements = %v; want fb, fetch → mirror, engaged by act-1, act-2 under it, cleared", e)
	}
	if !r.ProducedUnderFallback {
		t.Error("the result is not marked as produced under a fallback")
	}
	md := state.ReceiptMarkdown(r)
	for _, want := range []string{"## Fallbacks", "The result was produced under a fallback.", "`fb` | tool | fetch → mirror | action act-1 failed transient", "act-2 |",
		"| fallback | `fb` | declared fallback fb: mirror stood in for fetch"} {
		if !strings.Contains(md, want) {
			t.Errorf("the receipt does not say %q:\n%s", want, md)
		}
	}
	if got := state.Summary(recs[8].Event); !strings.Contains(got, "Fallback fb engaged: action act-1 failed transient") {
		t.Errorf("the timeline says %q of the engagement", got)
	}
}
