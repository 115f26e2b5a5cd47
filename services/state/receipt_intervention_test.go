package state_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestAResumeByTheTasksOwnAgentIsNoIntervention: the task's agent is
// whoever created it as well as whom its credential names (as access and
// liveness take it); its own resume is no person's intervention, a
// person's is (found by review).
func TestAResumeByTheTasksOwnAgentIsNoIntervention(t *testing.T) {
	var evs []*stewardv1.Event
	for _, step := range []struct {
		who string
		p   event.Payload
	}{
		{stewardtest.Principal, &stewardv1.TaskCreated{Contract: contract(1)}}, {"steward", &stewardv1.TaskStarted{}},
		{stewardtest.Principal, &stewardv1.TaskPaused{Reason: "wait"}}, {stewardtest.Principal, &stewardv1.TaskResumed{}},
		{"user:ops", &stewardv1.TaskPaused{Reason: "hold"}}, {"user:ops", &stewardv1.TaskResumed{}},
	} {
		ev := stewardtest.Event(t, "resumes", step.p)
		ev.Actor.Principal = step.who
		evs = append(evs, ev)
	}
	recs := sealed(t, evs)
	r, err := state.BuildReceipt(recs)
	if err != nil {
		t.Fatal(err)
	}
	none := r.Breakdown.Milestones[len(r.Breakdown.Milestones)-1]
	if none.Kind != stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_NO_MILESTONE || none.Interventions != 1 {
		t.Errorf("the no-milestone row %v: want 1 intervention, the person's resume, not the agent's", none)
	}
}

// sealed is evs as a sealed history, at sequences 1, 2, ….
func sealed(t *testing.T, evs []*stewardv1.Event) []*stewardv1.EventRecord {
	t.Helper()
	var out []*stewardv1.EventRecord
	var prev []byte
	for i, ev := range evs {
		if _, err := event.Seal(ev, prev); err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		out = append(out, &stewardv1.EventRecord{Sequence: uint64(i + 1), Event: ev})
	}
	return out
}
